// SPDX-License-Identifier: Apache-2.0
import Bus
import Testing

/// What running the reference varlink certification (Tests/Certification, CI) found, each
/// pinned here so it cannot come back without the certification run.
@Suite struct VarlinkCertificationTests {
    /// The types of `org.varlink.certification` that use the grammar beyond the portable subset.
    static let idl = """
        interface org.varlink.certification

        type Interface (
          foo: ?[]?[string](foo, bar, baz),
          anon: (foo: bool, bar: bool)
        )

        type MyType (
          stringset: [string](),
          nullable_array_struct: ?[](first: int, second: string),
          interface: Interface
        )

        method Test10(client_id: string, mytype: MyType) -> (string: string)

        """

    /// Finding 1: the library refused to serve the reference interface at all ("nested containers
    /// are not portable"). The portable subset is appd's policy for its own and its plugins'
    /// interfaces; a service that must speak an interface defined elsewhere asks for the whole grammar.
    @Test func theReferenceInterfaceParsesWithTheCompleteGrammarOnly() throws {
        #expect(throws: VarlinkIDLError.self) { try VarlinkInterface(parsing: Self.idl) }
        let interface = try VarlinkInterface(parsing: Self.idl, grammar: .complete)
        guard case .structure(let fields)? = interface.type("Interface")?.type else {
            Issue.record("Interface is not a struct")
            return
        }
        #expect(fields.first?.type == .optional(.array(.optional(.map(.enumeration(["foo", "bar", "baz"]))))))
        #expect(interface.type("MyType").map { "\($0.type)" } == "(stringset: [string](), nullable_array_struct: ?[](first: int, second: string), interface: Interface)")
    }

    /// Calls are still checked through every level of the nested types.
    @Test func callsAreValidatedThroughNestedContainers() throws {
        let interface = try VarlinkInterface(parsing: Self.idl, grammar: .complete)
        let method = try #require(interface.method("Test10"))
        func check(_ mytype: JSONValue) -> String? {
            do {
                try interface.validateInput(of: method, ["client_id": "c", "mytype": mytype], qualifiedName: "org.varlink.certification.Test10")
                return nil
            } catch {
                return "\(error.parameter): \(error.reason)"
            }
        }
        let good: JSONValue = [
            "stringset": ["one": [:], "two": [:]],
            "interface": ["foo": [.null, ["foo": "foo", "x": "bar"], .null], "anon": ["foo": true, "bar": false]],
        ]
        #expect(check(good) == nil)
        #expect(check(["stringset": [:], "nullable_array_struct": .null, "interface": ["anon": ["foo": true, "bar": false]]]) == nil)
        #expect(check(["stringset": ["one": 1], "interface": ["anon": ["foo": true, "bar": false]]]) == "mytype.stringset.one: expected (), got int")
        #expect(
            check(["stringset": [:], "interface": ["foo": [["a": "qux"]], "anon": ["foo": true, "bar": false]]])
                == "mytype.interface.foo.0.a: expected one of foo, bar, baz")
        #expect(
            check(["stringset": [:], "nullable_array_struct": [["first": 1]], "interface": ["anon": ["foo": true, "bar": false]]])
                == "mytype.nullable_array_struct.0.second: missing")
    }
}
