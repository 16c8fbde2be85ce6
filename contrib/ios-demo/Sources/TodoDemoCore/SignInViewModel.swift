// SPDX-License-Identifier: Apache-2.0
import AppdClient
import Observation

/// The sign-in screen: email and password, or a guest. The session controller moves on by
/// itself when the state changes; this only shows what went wrong.
@MainActor @Observable
public final class SignInViewModel {
    public var email = ""
    public var password = ""
    public private(set) var error: AppError?
    public private(set) var busy = false
    private let auth: any AuthServing

    public init(auth: any AuthServing) { self.auth = auth }

    public func signIn() async { await run { _ = try await $0.signIn(email: self.email, password: self.password) } }
    public func signUp() async { await run { _ = try await $0.signUp(email: self.email, password: self.password) } }
    public func continueAsGuest() async { await run { _ = try await $0.signInAsGuest() } }
    public func finishOnboarding() async { await run { _ = try await $0.completeOnboarding() } }

    private func run(_ action: (any AuthServing) async throws -> Void) async {
        busy = true
        defer { busy = false }
        do {
            try await action(auth)
            error = nil
        } catch {
            self.error = AppError(error)
        }
    }
}
