// SPDX-License-Identifier: Apache-2.0
import BusCore

// The replies of the signed-in calls apps make most (`WhoAmI`, `SignIn`, `Refresh`, `SignUp`)
// write their own JSON: the bytes of their `Encodable` conformance (keys sorted, absent optionals
// left out), held to them by `JSONObjectWritableTests` and `JSONBytesEncoderTests`. A member
// added to one of these types must be added here too, or those tests fail.

extension User: JSONObjectWritable {
    public func writeMembers(to object: inout JSONObjectWriter) {
        object.member("avatarFileId", avatarFileId)
        object.member("createdAt", createdAt)
        object.member("displayName", displayName)
        object.member("email", email)
        object.member("emailVerified", emailVerified)
        object.member("guest", guest)
        object.member("id", id)
        object.member("onboarded", onboarded)
    }
}

extension Session: JSONObjectWritable {
    public func writeMembers(to object: inout JSONObjectWriter) {
        object.member("accessToken", accessToken)
        object.member("expiresAt", expiresAt)
        object.member("refreshToken", refreshToken)
        object.member("user", user)
    }
}

extension AuthInterface.UserReply: JSONObjectWritable {
    public func writeMembers(to object: inout JSONObjectWriter) {
        object.member("user", user)
    }
}

extension AuthInterface.SessionReply: JSONObjectWritable {
    public func writeMembers(to object: inout JSONObjectWriter) {
        object.member("session", session)
    }
}

extension AuthInterface.SignUpReply: JSONObjectWritable {
    public func writeMembers(to object: inout JSONObjectWriter) {
        object.member("session", session)
        object.member("user", user)
    }
}
