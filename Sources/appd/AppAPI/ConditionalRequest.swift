// SPDX-License-Identifier: Apache-2.0
import Bus
import HTTP

/// HTTP conditional requests (RFC 9110 §13) over versioned items: a reply that carries one
/// item with a `version` gets `ETag: "<version>"`, and `If-Match: "<version>"` on a call becomes
/// its `expectedVersion` parameter (the item changed meanwhile: 412 with the item as it stands).
enum ConditionalRequest {
    enum Outcome {
        /// `true` when the call is now conditional.
        case applied(Bool)
        case refused(HTTPResponse)
    }

    /// Moves `If-Match` into the parameters. `*` (any version) and no header change nothing; a
    /// list or a weak tag is refused (a version is one strong tag), as is a method that takes no
    /// expected version, or a body that already names another one.
    /// A call whose body names an `expectedVersion` is conditional too (412 on a Conflict).
    static func apply(_ header: String?, to parameters: inout JSONValue, method: VarlinkMethod?) -> Outcome {
        let inBody = parameters["expectedVersion"].map { $0 != .null } ?? false
        guard let header = header?.trimmingWhitespace(), !header.isEmpty, header != "*" else { return .applied(inBody) }
        guard let method, method.input.contains(where: { $0.name == "expectedVersion" }) else {
            return .refused(APIErrorStatus.refusal(400, "org.varlink.service.InvalidParameter", ["parameter": "If-Match", "reason": "this method takes no If-Match"]))
        }
        let bytes = Array(header.utf8)
        guard bytes.count >= 3, bytes.first == UInt8(ascii: "\""), bytes.last == UInt8(ascii: "\""),
            let version = Int64(String(decoding: bytes.dropFirst().dropLast(), as: UTF8.self)), version >= 0
        else {
            return .refused(
                APIErrorStatus.refusal(400, "org.varlink.service.InvalidParameter", ["parameter": "If-Match", "reason": "give one ETag from a reply, like \"3\""]))
        }
        var fields = parameters.objectValue ?? [:]
        if let given = fields["expectedVersion"], given != .null, given != .int(version) {
            return .refused(
                APIErrorStatus.refusal(
                    400, "org.varlink.service.InvalidParameter", ["parameter": "If-Match", "reason": "names another version than expectedVersion in the body"]))
        }
        fields["expectedVersion"] = .int(version)
        parameters = .object(fields)
        return .applied(true)
    }

    /// `"<version>"` when the reply holds exactly one object with an integer `version` (the item
    /// a call returned).
    /// Whether a method's replies may have an entity tag, from its IDL: a member of its reply
    /// is (or may be) a structure with a `version` field. Only those replies are read back
    /// from their encoded bytes. Unknown (no IDL): may.
    static func mayTag(_ method: VarlinkMethod?, in interface: VarlinkInterface?) -> Bool {
        guard let method, let interface else { return true }
        func versioned(_ type: VarlinkType, depth: Int) -> Bool {
            switch type {
            case .optional(let inner): return versioned(inner, depth: depth)
            case .named(let name): return depth < 8 && interface.type(name).map { versioned($0.type, depth: depth + 1) } ?? true
            case .structure(let fields): return fields.contains { $0.name == "version" }
            case .object: return true
            default: return false
            }
        }
        return method.output.contains { versioned($0.type, depth: 0) }
    }

    static func entityTag(of reply: JSONValue) -> String? {
        guard let members = reply.objectValue else { return nil }
        let versions = members.values.compactMap { member -> Int64? in
            guard case .int(let version)? = member.objectValue?["version"] else { return nil }
            return version
        }
        guard versions.count == 1, let version = versions.first else { return nil }
        return "\"\(version)\""
    }
}
