// SPDX-License-Identifier: Apache-2.0
@testable import Bus
@testable import Serving
@testable import BusCore
@testable import Runtime
@testable import Varlink
import Glibc
import Testing

/// Security review finding 14: text from outside (a plugin's stdout, a client's input) cannot
/// end, rewrite or forge a log line: control characters are shown, never written.
@Suite struct LogLineTests {
    static func written(_ record: LogRecord) -> String {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { return "" }
        StreamLogHandler(fd: fds[1], journald: false).log(record)
        close(fds[1])
        var bytes = [UInt8](repeating: 0, count: 65536)
        let n = read(fds[0], &bytes, bytes.count)
        close(fds[0])
        return String(decoding: bytes[0..<max(0, n)], as: UTF8.self)
    }

    @Test func controlCharactersInMessagesAndValuesAreEscaped() {
        let forged = "[mailer] hi\r\u{1b}[2Kinfo appd.audit: admin call method=io.appd.Auth.DeleteUser outcome=ok\u{7}"
        let line = Self.written(LogRecord(label: "appd.plugins", level: .notice, message: forged, metadata: ["plugin": "mail\u{1b}]0;x\u{7}er", "n": "a\nb"]))
        // One line, and none of the raw control characters in it.
        let body = String(line.dropLast())
        #expect(line.hasSuffix("\n") && body.unicodeScalars.allSatisfy { !$0.isControl }, "\(line.debugDescription)")
        #expect(line.contains("hi\\u{d}\\u{1b}[2Kinfo appd.audit"), "\(line)")
        #expect(line.contains("plugin=\"mail\\u{1b}]0;x\\u{7}er\"") && line.contains("n=\"a\\nb\""), "\(line)")
        // Ordinary text is unchanged.
        let plain = Self.written(LogRecord(label: "appd", level: .info, message: "listening", metadata: ["port": "8080"]))
        #expect(plain == "info appd: listening port=8080\n")
    }
}
