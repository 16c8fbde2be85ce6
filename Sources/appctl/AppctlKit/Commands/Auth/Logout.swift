// SPDX-License-Identifier: Apache-2.0
import Contracts

struct Logout: Leaf {
    static let path = ["logout"]
    static let abstract = "End this session and forget it."

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        let store = SessionStore.standard()
        defer { try? store.save(nil, for: context.options.socketPath) }
        guard store.session(for: context.options.socketPath) != nil else {
            print("not signed in")
            return ExitCode.ok
        }
        do throws(AppctlError) {
            _ = try context.call(AuthInterface.SignOut())
        } catch .daemon(let reply) where ExitCode.forError(reply) == ExitCode.notSignedIn {
            // Already over on the daemon's side (Unauthenticated, SessionExpired): forgetting it is all that is left.
        }
        print("signed out")
        return ExitCode.ok
    }
}
