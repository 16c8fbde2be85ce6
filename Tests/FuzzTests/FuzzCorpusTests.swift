// SPDX-License-Identifier: Apache-2.0
import FuzzTargets
import Glibc
import Testing

/// Every seed-corpus file and every saved crash (Tests/Fuzz) through its fuzz target, in the
/// plain test build: a parser change that crashes on one of them fails here, not only under
/// the fuzzer.
@Suite struct FuzzCorpusTests {
    static let root: String = {
        var path = #filePath
        for _ in 0..<2 { path = String(path[..<(path.lastIndex(of: "/") ?? path.endIndex)]) }
        return path + "/Fuzz"
    }()

    static func files(_ directory: String) -> [String] {
        guard let dir = opendir(directory) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: entry.pointee.d_name) { $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) } }
            if !name.hasPrefix(".") && name != "README" { names.append(directory + "/" + name) }
        }
        return names.sorted()
    }

    static func read(_ path: String) -> [UInt8] {
        guard let file = fopen(path, "rb") else { return [] }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = fread(&chunk, 1, chunk.count, file)
            if n == 0 { break }
            bytes += chunk[0..<n]
        }
        return bytes
    }

    @Test(arguments: FuzzTargets.names)
    func seedCorpus(_ target: String) {
        let files = Self.files(Self.root + "/corpus/" + target)
        #expect(!files.isEmpty, "no seed corpus for \(target)")
        for file in files { FuzzTargets.run(target, Self.read(file)) }
    }

    @Test func savedCrashes() {
        for file in Self.files(Self.root + "/regressions") {
            let name = String(file.split(separator: "/").last ?? "")
            guard let target = FuzzTargets.names.first(where: { name.hasPrefix($0 + "-") }) else {
                Issue.record("\(name): name regressions <target>-<what>")
                continue
            }
            FuzzTargets.run(target, Self.read(file))
        }
    }

    @Test func inputsThatAreNotTheirFormatAreRefusedQuietly() {
        for target in FuzzTargets.names {
            for input in [[], [0], [0xff, 0xfe, 0x00, 0x7b], Array(repeating: 0x5b, count: 3000), Array("{\"a\":".utf8)] as [[UInt8]] {
                FuzzTargets.run(target, input)
            }
        }
    }
}
