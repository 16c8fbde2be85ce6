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

// The parameters of the calls apps make most read themselves from the call's JSON object
// (`JSONObjectReadable`), held to their `Decodable` conformance by `JSONObjectReadableTests`. A
// member added to one of these commands must be read here too, or those tests fail.

extension AuthInterface.WhoAmI: JSONObjectReadable {
    public init(reading object: JSONObjectReader) throws { self.init() }
}

extension AuthInterface.CheckSignUp: JSONObjectReadable {
    public init(reading object: JSONObjectReader) throws {
        self.init(email: try object.required("email"), password: try object.required("password"))
    }
}

extension AuthInterface.SignUp: JSONObjectReadable {
    public init(reading object: JSONObjectReader) throws {
        self.init(email: try object.required("email"), password: try object.required("password"), displayName: try object.optional("displayName"))
    }
}

extension AuthInterface.SignIn: JSONObjectReadable {
    public init(reading object: JSONObjectReader) throws {
        self.init(email: try object.required("email"), password: try object.required("password"))
    }
}

extension AuthInterface.Refresh: JSONObjectReadable {
    public init(reading object: JSONObjectReader) throws { self.init(refreshToken: try object.required("refreshToken")) }
}
