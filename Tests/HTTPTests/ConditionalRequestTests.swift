// SPDX-License-Identifier: Apache-2.0
import Bus
@testable import AppAPI
@testable import HTTP
import Testing

/// `If-Match` into `expectedVersion`, `ETag` from a reply (RFC 9110 §13, for versioned items).
@Suite struct ConditionalRequestTests {
    static let interface = try! VarlinkInterface(
        parsing: """
            interface io.example.Items
            method Update(id: string, expectedVersion: ?int) -> (item: (id: string, version: int))
            method Get(id: string) -> (item: (id: string, version: int))
            """)
    static var update: VarlinkMethod? { interface.method("Update") }

    func apply(_ header: String?, _ body: JSONValue = ["id": "a"], method: VarlinkMethod? = update) -> (Bool?, Int?, JSONValue) {
        var parameters = body
        switch ConditionalRequest.apply(header, to: &parameters, method: method) {
        case .applied(let conditional): return (conditional, nil, parameters)
        case .refused(let response): return (nil, response.status, parameters)
        }
    }

    @Test func aStrongTagBecomesTheExpectedVersion() {
        let (conditional, _, parameters) = apply(#""3""#)
        #expect(conditional == true && parameters["expectedVersion"] == .int(3))
        // No header, or "*": unconditional, unless the body names a version itself.
        #expect(apply(nil).0 == false && apply("*").0 == false)
        #expect(apply(nil, ["id": "a", "expectedVersion": 2]).0 == true)
        #expect(apply(#""2""#, ["id": "a", "expectedVersion": 2]).0 == true)
    }

    @Test func whatIsNotOneStrongVersionIsRefused() {
        for header in [#"W/"3""#, #""3", "4""#, "3", #""""#, #""-1""#, #""x""#] {
            #expect(apply(header).1 == 400, "\(header)")
        }
        #expect(apply(#""3""#, ["id": "a", "expectedVersion": 4]).1 == 400)
        #expect(apply(#""3""#, method: Self.interface.method("Get")).1 == 400)
    }

    @Test func aReplyWithOneVersionedItemHasAnETag() {
        #expect(ConditionalRequest.entityTag(of: ["item": ["id": "a", "version": 7]]) == #""7""#)
        #expect(ConditionalRequest.entityTag(of: ["items": [["version": 1]]]) == nil)
        #expect(ConditionalRequest.entityTag(of: ["a": ["version": 1], "b": ["version": 2]]) == nil)
        #expect(ConditionalRequest.entityTag(of: [:]) == nil)
    }
}
