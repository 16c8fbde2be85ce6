// SPDX-License-Identifier: Apache-2.0
import BusCore

/// `io.appd.Auth`: the wire contract of accounts and sessions.
public enum AuthInterface {
    public static let idl = """
        # Accounts and sessions. A connection signs in once with Authenticate; every later
        # call on it carries the session to the gates.
        interface io.appd.Auth

        # An account as its owner sees it.
        type User (
          id: string,
          email: string,
          displayName: ?string,
          onboarded: bool,
          # Whether the email is known to reach the user (an Apple or Google account vouched for it).
          emailVerified: bool,
          # A guest account (SignInAnonymously): no email ("") and no credentials until upgraded.
          guest: bool,
          # The profile picture: a file of io.appd.Files (SetAvatar), GET /files/<id> or SignURL.
          avatarFileId: ?string,
          createdAt: string
        )

        # Tokens of a signed-in session. Keep them secret: they are shown only once.
        type Session (
          accessToken: string,
          refreshToken: string,
          # When the access token expires (RFC 3339); Refresh gets a new one.
          expiresAt: string,
          user: User
        )

        # Creates an account and signs in to it (session; none while requireVerifiedEmail is on:
        # sign in once the email is verified). The password needs 8 to 1024 bytes and must differ
        # from the email. An email that already has an account is answered the same way — a user
        # and a session of the same shape that lead nowhere (the session fails at its first use;
        # signing in needs that account's password) — and its owner is told
        # (auth.signUpRepeated), so the reply tells nobody which emails have accounts.
        method SignUp(
          # The address to sign in with (unique, any case).
          email: string,
          # 8 to 1024 bytes, not the email address.
          password: string,
          # The name to show (up to 100 characters).
          displayName: ?string
        ) -> (user: User, session: ?Session)

        # Checks an email and password against the sign-up rules without creating anything (a
        # form can say what is wrong before asking again); says nothing about existing accounts.
        method CheckSignUp(
          # The address to sign up with.
          email: string,
          # The password to check.
          password: string
        ) -> ()

        # Checks the password and opens a session.
        method SignIn(
          # The account's email address.
          email: string,
          # Its password.
          password: string
        ) -> (session: Session)

        # Signs in with an ID token from Sign in with Apple or Google Sign-In. appd verifies it
        # (the provider's published keys, issuer, audience, expiry, nonce) and opens a session
        # for the account the identity is linked to. A first sign-in links the identity to the
        # account with the same email only when the provider vouches for the email and the
        # account's own email is verified (else AccountExistsForEmail: sign in to that account
        # and call LinkIdentity); with no such account, one is made, without a password. Linking
        # by email ends every other session of the account and drops a password that was set
        # before the address was proven (whoever set it may not own the address); then
        # signInMethods lists what the account can sign in with, for the app to tell the user.
        method SignInWithIdToken(
          # apple or google.
          provider: string,
          # The ID token (a JWT) the provider's SDK returned.
          idToken: string,
          # The raw nonce the app generated; the token carries its SHA-256 in lowercase hex.
          # Give it exactly when the token has one.
          nonce: ?string,
          # The user's name, which Apple gives only at the first sign-in: the new account's displayName.
          fullName: ?string,
          # Apple: the authorizationCode from the same sign-in. appd exchanges it for Apple's
          # refresh token (kept encrypted) to revoke when the account is deleted.
          authorizationCode: ?string
        ) -> (session: Session, created: bool, signInMethods: ?[]string)

        # Makes a guest account and signs in to it (only where the server allows guests:
        # guestAccounts). A guest has no email and no credentials, so the app keeps its refresh
        # token; it is upgraded in place (same id, all its data kept) by UpgradeGuest or
        # LinkIdentity. Guests idle for guestIdleDays are deleted with their data.
        method SignInAnonymously() -> (session: Session)

        # Gives the signed-in guest an email and a password: it stops being a guest (same id,
        # all its data kept). The email is verified as a sign-up's is (a mail is requested).
        method UpgradeGuest(
          # The address to sign in with (unique, any case).
          email: string,
          # 8 to 1024 bytes, not the email address.
          password: string
        ) -> (user: User)

        # An Apple or Google identity linked to the account.
        type Identity (
          # apple or google.
          provider: string,
          # The email the provider gave when it was linked.
          email: ?string,
          # False when the user told Apple to stop forwarding mail to this relay address.
          emailForwarding: bool,
          linkedAt: string
        )

        # The identities linked to the signed-in account.
        method ListIdentities() -> (identities: []Identity)

        # Links the identity in a fresh ID token to the signed-in account (one per provider).
        method LinkIdentity(
          # apple or google.
          provider: string,
          idToken: string,
          nonce: ?string,
          # Apple: the authorizationCode from the same sign-in (see SignInWithIdToken).
          authorizationCode: ?string
        ) -> (identity: Identity)

        # Unlinks the account's identity of that provider; refused when it is the account's only
        # way to sign in (no password and no other identity).
        method UnlinkIdentity(provider: string) -> ()

        # Attaches a session to this connection (as Redis AUTH does).
        method Authenticate(accessToken: string) -> (user: User)

        # Trades a refresh token for a new session; the old refresh token stops working, and
        # presenting it again revokes every session descended from it.
        method Refresh(refreshToken: string) -> (session: Session)

        # Ends this connection's session.
        method SignOut() -> ()

        # Ends every session of the signed-in account.
        method SignOutEverywhere() -> ()

        # The signed-in account.
        method WhoAmI() -> (user: User)

        # Marks onboarding complete; commands that need onboarding work from then on.
        method CompleteOnboarding() -> (user: User)

        # Changes the display name (absent or null clears it).
        method UpdateProfile(displayName: ?string) -> (user: User)

        # Makes an image the user uploaded (POST /files) their profile picture; null removes it.
        # The file then goes with the account's profile: the previous picture is deleted, and
        # Files.Delete refuses this one while it is the picture. A file that is not the user's is
        # ValidationFailed (fileId), as is one that is not an image or is in use elsewhere.
        method SetAvatar(fileId: ?string) -> (user: User)

        # Changes the password; every other session of the account is revoked.
        method ChangePassword(
          # The password in use now.
          currentPassword: string,
          # 8 to 1024 bytes, not the email address.
          newPassword: string
        ) -> ()

        # Starts a password reset. The reply is the same whether or not the account exists; when
        # it does, auth.passwordResetRequested (durable; no token) tells a mailer to send one.
        method RequestPasswordReset(
          # The account's email address.
          email: string
        ) -> ()

        # Mints the one-time token for a pending reset request (auth.passwordResetRequested's
        # requestId), for the mailer to deliver. Only a plugin holding the 'auth.resetTokens'
        # capability may call it. Issuing again replaces the earlier token; the token expires
        # with the request and is void once any reset of the account succeeds.
        method IssueResetToken(
          # The requestId of an auth.passwordResetRequested event.
          requestId: string
        ) -> (
          resetToken: string,
          email: string,
          expiresAt: string,
          # The operator's authResetLinkTemplate with this token in it: the link into the
          # app the mail should lead with (absent when none is configured).
          resetLink: ?string
        )

        # Sets a new password with a reset token (single use, expires); revokes every session.
        method ResetPassword(
          # The token from the reset message.
          resetToken: string,
          # 8 to 1024 bytes, not the email address.
          newPassword: string
        ) -> ()

        # Asks for a verification mail for the account with this email (enabled, not yet
        # verified). The reply is the same whether or not one exists; when it does,
        # auth.emailVerificationRequested (durable; no token) tells a mailer to send it. Sign-up
        # asks once by itself.
        method RequestEmailVerification(email: string) -> ()

        # Mints the one-time token of a pending verification request
        # (auth.emailVerificationRequested's requestId), for the mailer to deliver. Only a plugin
        # holding the 'auth.verificationTokens' capability may call it.
        method IssueVerificationToken(requestId: string) -> (verificationToken: string, email: string, expiresAt: string)

        # Verifies the account's email with the token from the verification mail (single use,
        # expires; void if the account's email changed since). The first verification ends every
        # session of the account but the caller's own.
        method VerifyEmail(verificationToken: string) -> ()

        # Deletes the signed-in account; auth.accountDeleted tells every plugin to erase its data.
        # An account with a password needs it. One without (made by Apple or Google) needs a
        # session from a sign-in in the last few minutes (sign in again, e.g. with a fresh ID token).
        method DeleteAccount(password: ?string) -> ()

        # An account as an administrator sees it.
        type AccountSummary (
          id: string,
          email: string,
          displayName: ?string,
          onboarded: bool,
          disabled: bool,
          guest: bool,
          createdAt: string
        )

        # Lists accounts by email (admin). Pass nextCursor back as cursor for the next page.
        # search: only accounts whose email contains this text (any case).
        method ListUsers(cursor: ?string, limit: ?int, search: ?string) -> (users: []AccountSummary, nextCursor: ?string)

        # One account and the Apple or Google identities linked to it (admin).
        method GetUser(email: string) -> (user: AccountSummary, identities: []Identity)

        # Deletes the account with this email, as DeleteAccount does for its owner:
        # auth.accountDeleted tells every plugin to erase its data (admin, audited).
        method DeleteUser(email: string) -> ()

        # Disables an account: sign-in and every call with its sessions fail with AccountDisabled (admin).
        method DisableUser(email: string) -> ()

        # Enables a disabled account (admin).
        method EnableUser(email: string) -> ()

        # category: unauthenticated
        error InvalidCredentials ()
        # category: invalid
        error ValidationFailed (field: string, reason: string)
        # category: unauthenticated
        error Unauthenticated ()
        # category: unauthenticated
        error SessionExpired ()
        # category: forbidden
        error OnboardingRequired ()
        # category: tooManyRequests
        error TooManyAttempts (retryAfterSeconds: int)
        # category: forbidden
        error AccountDisabled ()
        # category: unavailable
        error Busy ()
        # category: invalid
        error InvalidResetToken ()
        # category: notFound
        error NotFound ()
        # reason: malformed, algorithm, unknownKey, signature, issuer, audience, authorizedParty,
        # expired, issuedInFuture, notYetValid, nonceMismatch, nonceMissing, hostedDomain, subject, noEmail.
        # category: unauthenticated
        error InvalidIdToken (reason: string)
        # category: invalid
        error ProviderNotConfigured (provider: string)
        # category: unavailable
        error IdentityProviderUnavailable (provider: string)
        # category: conflict
        error AccountExistsForEmail ()
        # category: conflict
        error IdentityInUse ()
        # category: conflict
        error ProviderAlreadyLinked (provider: string)
        # category: notFound
        error IdentityNotLinked ()
        # category: conflict
        error LastSignInMethod ()
        # category: forbidden
        error ReauthenticationRequired ()
        # category: forbidden
        error EmailNotVerified ()
        # category: invalid
        error InvalidVerificationToken ()
        # category: forbidden
        error GuestsDisabled ()
        # category: conflict
        error NotAGuest ()

        """

    /// Every method of the IDL as its command type (`ContractsTests` checks the two agree).
    public static let commands: [any Command.Type] = [
        SignUp.self, SignIn.self, Authenticate.self, Refresh.self, SignOut.self, SignOutEverywhere.self, WhoAmI.self, CompleteOnboarding.self, UpdateProfile.self, SetAvatar.self,
        ChangePassword.self, CheckSignUp.self, RequestPasswordReset.self, IssueResetToken.self, ResetPassword.self, DeleteAccount.self, ListUsers.self, DisableUser.self,
        EnableUser.self, GetUser.self, DeleteUser.self, SignInWithIdToken.self, SignInAnonymously.self, UpgradeGuest.self, ListIdentities.self, LinkIdentity.self,
        UnlinkIdentity.self, RequestEmailVerification.self, IssueVerificationToken.self, VerifyEmail.self,
    ]
    public static let streams: [any StreamingCommand.Type] = []
    public typealias Errors = AuthError
    /// The interface's name, e.g. `io.appd.Todos`.
    public static var name: String { Errors.interface }
}
