// SPDX-License-Identifier: Apache-2.0
import CFuzz
import FuzzTargets

#if canImport(Glibc)
import Glibc
#endif

// appd's fuzzers: APPD_FUZZ_TARGET=<target> appd-fuzz [libFuzzer options] [corpus dirs].
// Built with -sanitize=fuzzer (Tests/Fuzz/run) this is libFuzzer; in a plain build it runs each
// given file once (regression mode).
nonisolated(unsafe) var selected = getenv("APPD_FUZZ_TARGET").map { String(cString: $0) } ?? ""  // safe: set once before the driver starts
guard FuzzTargets.names.contains(selected) else {
    print("set APPD_FUZZ_TARGET to one of: \(FuzzTargets.names.joined(separator: " "))")
    exit(64)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    FuzzTargets.run(selected, bytes)
    return 0
}

var argc = CommandLine.argc
var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzzOne(data, size) })
