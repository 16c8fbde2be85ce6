// SPDX-License-Identifier: Apache-2.0
import BusCore
import CImage
import Runtime

/// Thumbnails of JPEG and PNG images (a JPEG each, fitting a square of the size asked),
/// made on a thread of their own, never on a loop, from at most `maxSourcePixels` decoded
/// pixels (a JPEG is decoded at 1/2–1/8 of its size by libjpeg when that covers the size).
enum Thumbnailer {
    private static let pool = BlockingPool(name: "appd-thumbnails", threads: 1, queueLimit: 64)

    /// The types it makes thumbnails of.
    static func makes(_ contentType: String) -> Bool { contentType == "image/jpeg" || contentType == "image/png" }

    /// A thumbnail of `bytes` fitting `maxSide` × `maxSide`, on the thumbnail thread, given up
    /// on after `timeout` (the work itself runs to its end; what bounds it is the pixels).
    static func make(_ bytes: [UInt8], contentType: String, maxSide: Int, maxSourcePixels: Int, timeout: Duration) async throws -> [UInt8] {
        try await withTimeout(timeout, timeoutError: { ThumbnailError("making a thumbnail took longer than \(timeout)") }) {
            try await pool.run { try thumbnail(bytes, png: contentType == "image/png", maxSide: maxSide, maxSourcePixels: maxSourcePixels) }
        }
    }

    /// The blocking work of `make`.
    static func thumbnail(_ bytes: [UInt8], png: Bool, maxSide: Int, maxSourcePixels: Int) throws(ThumbnailError) -> [UInt8] {
        var out: UnsafeMutablePointer<UInt8>?
        var length = 0, width: Int32 = 0, height: Int32 = 0
        var error = [CChar](repeating: 0, count: 256)
        let status = bytes.withUnsafeBufferPointer { data in
            appd_image_thumbnail(
                data.baseAddress, data.count, png ? 1 : 0, Int32(maxSide), 82, maxSourcePixels, &out, &length, &width, &height, &error, error.count)
        }
        guard status == 0, let out else { throw ThumbnailError(String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)) }
        defer { appd_image_free(out) }
        return Array(UnsafeBufferPointer(start: out, count: length))
    }

    /// A JPEG of `width` × `height` RGB pixels.
    static func encode(rgb: [UInt8], width: Int, height: Int, quality: Int = 90) throws(ThumbnailError) -> [UInt8] {
        var out: UnsafeMutablePointer<UInt8>?
        var length = 0
        var error = [CChar](repeating: 0, count: 256)
        let status = rgb.withUnsafeBufferPointer { appd_image_encode_rgb($0.baseAddress, Int32(width), Int32(height), Int32(quality), &out, &length, &error, error.count) }
        guard status == 0, let out else { throw ThumbnailError(String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)) }
        defer { appd_image_free(out) }
        return Array(UnsafeBufferPointer(start: out, count: length))
    }
}

/// An image could not be made into a thumbnail: it does not decode, or is too large to.
struct ThumbnailError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
