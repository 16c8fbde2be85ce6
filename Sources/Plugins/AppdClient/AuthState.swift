// SPDX-License-Identifier: Apache-2.0
import Contracts

/// Where the app stands with its user — what a template's `SessionController` routes on, as
/// supabase-swift's `authStateChanges` and Firebase's state listener are used.
public enum AuthState: Sendable, Equatable {
    /// No session: none was stored (or the store could not be read), or the user signed out.
    case signedOut
    /// Signed in as this user: from the stored session at launch, after any sign-in (password,
    /// Apple, Google, guest, upgrade) and after each refresh that changed the user.
    case signedIn(User)
    /// The session ended without the user signing out on this device: appd refused to refresh
    /// it. The app shows its sign-in screen and may say why.
    case sessionEnded(SessionEndReason)
}

/// Why appd refused to go on with a session.
public enum SessionEndReason: Sendable, Equatable {
    /// The session is gone: signed out elsewhere (`SignOutEverywhere`), the password changed
    /// or was reset, the account was deleted, or the refresh token expired or was used twice.
    case revoked
    /// An administrator disabled the account.
    case accountDisabled

    init(_ error: AuthError) {
        self = error == .accountDisabled ? .accountDisabled : .revoked
    }
}
