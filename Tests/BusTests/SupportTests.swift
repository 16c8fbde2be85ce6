import Bus
import Glibc
import Testing

@Suite struct SupportTests {
    @Test func editDistanceSuggestsOnlyCloseWords() {
        #expect(EditDistance.between("stauts", "status") == 2)
        #expect(EditDistance.closest(to: "stauts", in: ["ping", "status", "shutdown"]) == "status")
        #expect(EditDistance.closest(to: "xyzzy", in: ["ping", "status"]) == nil)
    }

    @Test func trimmingRemovesOuterWhitespaceOnly() {
        #expect("  a b \n".trimmingWhitespace() == "a b")
        #expect("".trimmingWhitespace() == "")
        #expect(" \t\r\n ".trimmingWhitespace() == "")
        #expect("untouched".trimmingWhitespace() == "untouched")
        #expect("x".trimmingWhitespace() == "x")
        #expect("\u{00A0}café au lait\u{2003}".trimmingWhitespace() == "café au lait")
        #expect("  é ".trimmingWhitespace() == "é")
        #expect("a\r\n".trimmingWhitespace() == "a")
        #expect("  a b ".dropFirst().trimmingWhitespace() == "a b")
        #expect("  ".dropFirst().trimmingWhitespace() == "")
    }

    @Test func makeDirectoriesCreatesMissingParentsWithTheMode() throws {
        let base = "/tmp/appd-fs-\(getpid())-\(Int.random(in: 0...1_000_000))"
        try FileSystem.makeDirectories(base + "/a/b", mode: 0o700)
        try FileSystem.makeDirectories(base + "/a/b", mode: 0o700)  // again: fine
        var info = stat()
        #expect(stat(base + "/a/b", &info) == 0)
        #expect(info.st_mode & 0o777 == 0o700)
        #expect(FileSystem.parent(of: base + "/a/b") == base + "/a")
        rmdir(base + "/a/b"); rmdir(base + "/a"); rmdir(base)
    }
}
