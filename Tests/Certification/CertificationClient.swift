// SPDX-License-Identifier: Apache-2.0
import Bus

/// The certification client, written as appctl talks to appd: `VarlinkClient`, typed replies.
/// Each step sends what the previous one returned, decoded and encoded again, so the server
/// checks our JSON and our Codable round trip (floats, maps, sets, nested optionals).
enum CertificationClient {
    struct Failed: Error, CustomStringConvertible {
        let description: String
    }

    static func run(path: String) throws {
        typealias C = Certification
        let client = try VarlinkClient(path: path, timeout: .seconds(10))
        func call<R: Decodable>(_ method: String, _ parameters: some Encodable, as: R.Type) throws -> R {
            let reply = try client.call(method, try JSONValue(encoding: parameters))
            if let error = reply.error { throw Failed(description: "\(method): \(error) \(reply.parameters.jsonText)") }
            print("\(method.split(separator: ".").last ?? ""): \(reply.parameters.jsonText)")
            return try reply.parameters.decode(as: R.self)
        }
        struct None: Codable {}
        let id = try call(C.Start.method, None(), as: C.Start.Reply.self).client_id
        let bool = try call(C.Test01.method, C.Test01(client_id: id), as: C.Test01.Reply.self).bool
        let int = try call(C.Test02.method, C.Test02(client_id: id, bool: bool), as: C.Test02.Reply.self).int
        let float = try call(C.Test03.method, C.Test03(client_id: id, int: int), as: C.Test03.Reply.self).float
        let string = try call(C.Test04.method, C.Test04(client_id: id, float: float), as: C.Test04.Reply.self).string
        let four = try call(C.Test05.method, C.Test05(client_id: id, string: string), as: C.Four.self)
        let test06 = C.Test06(client_id: id, bool: four.bool, int: four.int, float: four.float, string: four.string)
        let structure = try call(C.Test06.method, test06, as: C.Test06.Reply.self).struct
        let map = try call(C.Test07.method, C.Test07(client_id: id, struct: structure), as: C.Test07.Reply.self).map
        let set = try call(C.Test08.method, C.Test08(client_id: id, map: map), as: C.Test08.Reply.self).set
        let mytype = try call(C.Test09.method, C.Test09(client_id: id, set: set), as: C.Test09.Reply.self).mytype

        var replies: [String] = []
        try client.stream(C.Test10.method, try JSONValue(encoding: C.Test10(client_id: id, mytype: mytype))) { reply in
            if let error = reply.error { throw Failed(description: "Test10: \(error) \(reply.parameters.jsonText)") }
            replies.append(try reply.parameters.decode(as: C.Test10.Reply.self).string)
            print("Test10: \(reply.parameters.jsonText) continues: \(reply.continues)")
        }
        guard replies == C.replies else { throw Failed(description: "Test10 streamed \(replies), not \(C.replies)") }
        try client.send(VarlinkCall(method: C.Test11.method, parameters: try JSONValue(encoding: C.Test11(client_id: id, last_more_replies: replies)), oneway: true))
        print("Test11: (oneway, no reply)")
        let end = try call(C.End.method, C.End(client_id: id), as: C.End.Reply.self)
        guard end.all_ok else { throw Failed(description: "End did not report all_ok") }
        print("Certification passed")
    }
}
