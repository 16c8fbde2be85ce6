// SPDX-License-Identifier: Apache-2.0
import Auth
import Crypto

extension AuthPlugin {
    /// Auth for tests: cheap scrypt (2^10), the harness's clock, options adjusted by `configure`.
    public static func testing(clock: TestClock? = nil, _ configure: (inout AuthService.Options) -> Void = { _ in }) throws -> AuthPlugin {
        var options = AuthService.Options()
        options.scrypt = Scrypt.Parameters(logN: 10, r: 8, p: 1)
        configure(&options)
        guard let clock else { return try AuthPlugin(options: options) }
        return try AuthPlugin(options: options, clock: { clock.now })
    }
}
