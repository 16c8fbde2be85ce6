// SPDX-License-Identifier: Apache-2.0
import Bus
#if canImport(Glibc)
import Glibc
#endif

/// The varlink certification, both ways, against the reference implementation (CI runs it):
///   varlink-certification serve PATH    serve org.varlink.certification for the reference client
///   varlink-certification client PATH   walk the reference server through every step
let arguments = CommandLine.arguments
guard arguments.count == 3, ["serve", "client"].contains(arguments[1]) else {
    StandardError.write("usage: varlink-certification serve|client SOCKET-PATH\n")
    exit(64)
}
do {
    if arguments[1] == "serve" {
        try await CertificationService.serve(path: arguments[2])
    } else {
        try CertificationClient.run(path: arguments[2])
    }
} catch {
    StandardError.write("certification failed: \(error)\n")
    exit(1)
}
