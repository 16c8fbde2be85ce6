// SPDX-License-Identifier: Apache-2.0
import AppdClient
import Contracts
import Observation

/// Decides the screen from the auth state: sign-in, onboarding or home. The state comes from
/// `AuthServing.states()` (the current one first), so it is right from the first frame.
@MainActor @Observable
public final class SessionController {
    public enum Route: Equatable, Sendable {
        case launching
        case signIn(message: String?)
        case onboarding
        case home(User)
    }

    public private(set) var route = Route.launching
    private let auth: any AuthServing

    public init(auth: any AuthServing) { self.auth = auth }

    /// Follows the auth state until the calling task is cancelled (a `.task` modifier).
    public func follow() async {
        for await state in await auth.states() { route = Self.route(for: state) }
    }

    public static func route(for state: AuthState) -> Route {
        switch state {
        case .signedOut: .signIn(message: nil)
        case .sessionEnded(.accountDisabled): .signIn(message: "This account is disabled.")
        case .sessionEnded: .signIn(message: "You were signed out. Please sign in again.")
        case .signedIn(let user): user.onboarded ? .home(user) : .onboarding
        }
    }
}
