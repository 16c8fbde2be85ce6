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
    /// Whether a reply's JSON bytes may have an entity tag: a member named `version` is written
    /// as `"version":`, which no string's bytes can hold (a quote inside one is escaped).
    static func mayHaveEntityTag(_ encoded: [UInt8]) -> Bool {
        let marker = Array(#""version":"#.utf8)
        return encoded.count >= marker.count && encoded.indices.dropLast(marker.count - 1).contains { start in
            encoded[start] == marker[0] && encoded[start..<start + marker.count].elementsEqual(marker)
        }
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
