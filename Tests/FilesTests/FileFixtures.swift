// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import Auth
import Bus
import Contracts
@testable import Files
import HTTP
import PluginKit
import TestSupport

typealias Harness = PluginHarness

extension PluginHarness {
    /// Auth and files wired as appd wires them, the files in the harness's own directory.
    static func files(_ configure: (inout FilesOptions) -> Void = { _ in }) async throws -> PluginHarness {
        var options = FilesOptions(directory: try TestScope.required(by: "the files harness").directory("appd-files") + "/files")
        configure(&options)
        let chosen = options
        return try await make { clock in
            [try AuthPlugin.testing(clock: clock) { $0.accessTokenLifetime = .seconds(400 * 86_400) }, try FilesPlugin(options: chosen)]
        }
    }

    var files: FilesPlugin { plugin(FilesPlugin.self) }

    /// What `/files` answers `request` (with `body`), as the HTTP server would hand it over.
    func http(_ method: String, _ target: String, token: String? = nil, headers: [String: String] = [:], body: [UInt8] = []) async -> HTTPResponse {
        var fields = HTTPHeaderFields()
        if let token { fields["authorization"] = "Bearer \(token)" }
        for (name, value) in headers { fields[name.lowercased()] = value }
        let request = HTTPServerRequest(method: method, target: target, headers: fields, contentLength: body.count)
        guard let route = PluginHTTPRoute.resolve(request.path, in: files.httpRoutes(context)) else { return HTTPResponse(status: 599) }
        return await route.handler(request, body)
    }

    /// Uploads `bytes` as `type` for `user`; the reply's file, or the refusal.
    func upload(_ bytes: [UInt8], type: String, as user: TestUser, name: String? = nil, key: String? = nil) async -> (status: Int, file: StoredFile?, body: JSONValue?) {
        var headers = ["Content-Type": type]
        if let key { headers["Idempotency-Key"] = key }
        let target = name.map { "/files?name=\($0)" } ?? "/files"
        let response = await http("POST", target, token: user.accessToken, headers: headers, body: bytes)
        let json = try? JSONParser.parse(response.body)
        return (response.status, try? json?["file"]?.decode(as: StoredFile.self), json)
    }
}

/// Image headers built by hand, each only as much of its format as a reader of headers needs.
enum Samples {
    static func be16(_ v: Int) -> [UInt8] { [UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
    static func be32(_ v: Int) -> [UInt8] { [UInt8(v >> 24 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
    static func segment(_ marker: UInt8, _ body: [UInt8]) -> [UInt8] { [0xFF, marker] + be16(body.count + 2) + body }

    /// An EXIF APP1 body (big-endian TIFF) with IFD0 holding Make, the orientation and a GPS pointer.
    static func exif(orientation: Int) -> [UInt8] {
        var tiff: [UInt8] = [0x4D, 0x4D, 0x00, 0x2A] + be32(8) + be16(3)
        tiff += be16(0x010F) + be16(2) + be32(4) + Array("ACME".utf8)  // Make, inline
        tiff += be16(0x0112) + be16(3) + be32(1) + be16(orientation) + [0, 0]
        tiff += be16(0x8825) + be16(4) + be32(1) + be32(50)  // GPS IFD pointer
        tiff += be32(0)
        tiff += Array("GPS 52.5200 N 13.4050 E".utf8)
        return Array("Exif".utf8) + [0, 0] + tiff
    }

    /// SOI, JFIF, EXIF (GPS), IPTC, a comment, tables, the frame (width × height), the scan, EOI.
    static func jpeg(width: Int = 640, height: Int = 480, orientation: Int = 6) -> [UInt8] {
        var b: [UInt8] = [0xFF, 0xD8]
        b += segment(0xE0, Array("JFIF".utf8) + [0, 1, 1, 0, 0, 1, 0, 1, 0, 0])
        b += segment(0xE1, exif(orientation: orientation))
        b += segment(0xED, Array("Photoshop 3.0".utf8) + [0] + Array("IPTC city=Berlin".utf8))
        b += segment(0xFE, Array("taken at home".utf8))
        b += segment(0xDB, [0] + Array(repeating: 1, count: 64))
        b += segment(0xC0, [8] + be16(height) + be16(width) + [1, 1, 0x11, 0])
        b += segment(0xDA, [1, 1, 0, 0, 63, 0])
        b += [0x12, 0x34, 0xFF, 0x00, 0x56, 0xFF, 0xD9]
        return b
    }

    static func png(width: Int, height: Int, text: String? = nil) -> [UInt8] {
        func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] { be32(data.count) + Array(type.utf8) + data + [0, 0, 0, 0] }
        var b: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        b += chunk("IHDR", be32(width) + be32(height) + [8, 2, 0, 0, 0])
        if let text { b += chunk("tEXt", Array("Comment".utf8) + [0] + Array(text.utf8)) + chunk("eXIf", Array(exif(orientation: 1).dropFirst(6))) }
        b += chunk("IDAT", [1, 2, 3]) + chunk("IEND", [])
        return b
    }

    static func gif(width: Int, height: Int) -> [UInt8] {
        Array("GIF89a".utf8) + [UInt8(width & 0xFF), UInt8(width >> 8), UInt8(height & 0xFF), UInt8(height >> 8), 0, 0, 0, 0x3B]
    }

    static func webpVP8X(width: Int, height: Int) -> [UInt8] {
        let w = width - 1, h = height - 1
        return Array("RIFF".utf8) + [0, 0, 0, 0] + Array("WEBPVP8X".utf8) + [10, 0, 0, 0, 0, 0, 0, 0]
            + [UInt8(w & 0xFF), UInt8(w >> 8 & 0xFF), UInt8(w >> 16 & 0xFF), UInt8(h & 0xFF), UInt8(h >> 8 & 0xFF), UInt8(h >> 16 & 0xFF)]
    }

    static func heic(width: Int, height: Int) -> [UInt8] {
        be32(24) + Array("ftypheic".utf8) + [0, 0, 0, 0] + Array("mif1heic".utf8)
            + be32(20) + Array("ispe".utf8) + [0, 0, 0, 0] + be32(width / 8) + be32(height / 8)
            + be32(20) + Array("ispe".utf8) + [0, 0, 0, 0] + be32(width) + be32(height)
    }

    static let pdf = Array("%PDF-1.7\n1 0 obj << >> endobj\ntrailer << >>\n%%EOF\n".utf8)
}
