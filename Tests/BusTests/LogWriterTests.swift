// SPDX-License-Identifier: Apache-2.0
@testable import BusCore
@testable import Runtime
import Glibc
import Testing

/// The log writer appd bootstraps with: lines leave the caller's path, arrive whole and in
/// order, a flush waits for them, and a flood is bounded and said to be.
@Suite struct LogWriterTests {
    /// A pipe: (read end, write end); the read end non-blocking.
    func pipePair() throws -> (Int32, Int32) {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK)
        return (fds[0], fds[1])
    }

    func drain(_ fd: Int32) -> String {
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = read(fd, &chunk, chunk.count)
            if n <= 0 { break }
            out += chunk[0..<n]
        }
        return String(decoding: out, as: UTF8.self)
    }

    @Test func linesArriveInOrderAndFlushWaitsForThem() throws {
        let (reader, writerEnd) = try pipePair()
        defer { close(reader); close(writerEnd) }
        let writer = LogWriter(fd: writerEnd, journald: false)
        for n in 0..<500 { writer.log(LogRecord(label: "t", level: .info, message: "line \(n)", metadata: ["n": String(n)])) }
        #expect(writer.flush(timeout: .seconds(10)))
        let lines = drain(reader).split(separator: "\n")
        #expect(lines.count == 500)
        #expect(lines.first == "info t: line 0 n=0" && lines.last == "info t: line 499 n=499")
        #expect(lines.enumerated().allSatisfy { $0.element == "info t: line \($0.offset) n=\($0.offset)" })
    }

    @Test func aFloodIsBoundedAndSaysHowManyLinesWereDropped() throws {
        let (reader, writerEnd) = try pipePair()
        defer { close(reader); close(writerEnd) }
        // The pipe holds 64 KiB: with nobody reading, the writer blocks on its first batch and
        // the queue fills up to its limit.
        let writer = LogWriter(fd: writerEnd, journald: false, limit: 10)
        let big = String(repeating: "x", count: 70_000)
        writer.log(LogRecord(label: "t", level: .info, message: big, metadata: [:]))
        var text = ""
        // Keep logging until the queue is full and lines are refused, then read everything.
        for n in 0..<2000 { writer.log(LogRecord(label: "t", level: .info, message: "m\(n)", metadata: [:])) }
        var flushed = false
        for _ in 0..<200 where !flushed {
            text += drain(reader)
            flushed = writer.flush(timeout: .milliseconds(10))
        }
        text += drain(reader)
        #expect(flushed)
        let lines = text.split(separator: "\n")
        let kept = lines.filter { $0.hasPrefix("info t: m") }.count
        // Every line is written or counted as dropped (in one note per batch that dropped some).
        let dropped = lines.filter { $0.contains("log lines dropped") }.map { Int($0.split(separator: " ")[2]) ?? 0 }.reduce(0, +)
        #expect(dropped > 0 && kept + dropped == 2000, "kept \(kept), dropped \(dropped)")
    }

    @Test func journaldPrefixes() throws {
        let (reader, writerEnd) = try pipePair()
        defer { close(reader); close(writerEnd) }
        let writer = LogWriter(fd: writerEnd, journald: true)
        writer.log(LogRecord(label: "appd", level: .warning, message: "careful", metadata: [:]))
        #expect(writer.flush())
        #expect(drain(reader) == "<4>warning appd: careful\n")
    }
}
