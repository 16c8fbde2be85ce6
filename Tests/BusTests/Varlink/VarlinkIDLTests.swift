// SPDX-License-Identifier: Apache-2.0
import Bus
import Testing

@Suite struct VarlinkIDLTests {
    static let sample = """
        # A sample interface.
        # Second line.
        interface org.example.sample

        # A kind of thing.
        type Kind (small, large)

        # A thing.
        type Thing (
          # The name.
          name: string,
          kind: Kind,
          tags: []string,
          attributes: [string]int,
          note: ?string,
          nested: (x: float, y: ?bool),
          state: (on, off),
          extra: object
        )

        # Makes a thing.
        method Make(thing: Thing, count: ?int) -> (made: []Thing)
        method Nothing() -> ()

        # It went wrong.
        error Broken (reason: string)

        """

    @Test func parsesTheFullGrammarWithDocs() throws {
        let interface = try VarlinkInterface(parsing: Self.sample)
        #expect(interface.name == "org.example.sample")
        #expect(interface.doc == "A sample interface.\nSecond line.")
        #expect(interface.type("Kind")?.type == .enumeration(["small", "large"]))
        guard case .structure(let fields)? = interface.type("Thing")?.type else {
            Issue.record("Thing is not a struct")
            return
        }
        #expect(fields.map(\.name) == ["name", "kind", "tags", "attributes", "note", "nested", "state", "extra"])
        #expect(fields[0].doc == "The name.")
        #expect(fields[2].type == .array(.string))
        #expect(fields[3].type == .map(.int))
        #expect(fields[4].type == .optional(.string))
        #expect(fields[5].type == .structure([VarlinkField(name: "x", type: .float), VarlinkField(name: "y", type: .optional(.bool))]))
        #expect(fields[6].type == .enumeration(["on", "off"]))
        #expect(interface.method("Make")?.doc == "Makes a thing.")
        #expect(interface.method("Make")?.output == [VarlinkField(name: "made", type: .array(.named("Thing")))])
        #expect(interface.method("Nothing")?.input == [])
        #expect(interface.error("Broken")?.fields.map(\.name) == ["reason"])
    }

    @Test(arguments: [
        ("interface a.b\r\nmethod X() -> ()\r\n", "CR LF"),
        ("interface single\nmethod X() -> ()\n", "one label"),
        ("interface 1a.b\nmethod X() -> ()\n", "first label not letters"),
        ("interface a.b\ntype E (one)\n", "one-value enum"),
        ("interface a.b\nmethod X(a: [][]string) -> ()\n", "nested arrays"),
        ("interface a.b\nmethod X(a: []?string) -> ()\n", "array of optionals"),
        ("interface a.b\nmethod X(a: ??string) -> ()\n", "double optional"),
        ("interface a.b\nmethod X(a: Missing) -> ()\n", "undefined type"),
        ("interface a.b\nmethod X() -> ()\nmethod X() -> ()\n", "duplicate member"),
        ("interface a.b\nmethod X(a: int, a: int) -> ()\n", "duplicate field"),
        ("interface a.b\nmethod lower() -> ()\n", "lower-case method"),
        ("interface a.b\nmethod X(a: int -> ()\n", "unbalanced"),
        ("method X() -> ()\n", "no interface"),
    ])
    func refusesWhatSomeParserWouldReject(text: String, why: String) {
        #expect(throws: VarlinkIDLError.self, "\(why)") { try VarlinkInterface(parsing: text) }
    }

    @Test func everyIDLTheBusShipsPassesTheLint() throws {
        _ = try VarlinkInterface(parsing: VarlinkServiceInterface.idl)
        _ = try VarlinkInterface(parsing: BusInterface.idl)
    }

    @Test func validationNamesTheFieldAtFault() throws {
        let interface = try VarlinkInterface(parsing: Self.sample)
        let make = try #require(interface.method("Make"))
        let good: JSONValue = [
            "thing": [
                "name": "a", "kind": "small", "tags": ["x"], "attributes": ["k": 1], "nested": ["x": 1],
                "state": "on", "extra": ["anything": [1, 2]],
            ]
        ]
        try interface.validateInput(of: make, good, qualifiedName: "org.example.sample.Make")

        func problem(_ params: JSONValue) -> String? {
            do {
                try interface.validateInput(of: make, params, qualifiedName: "m")
                return nil
            } catch {
                return error.parameter
            }
        }
        var missing = good
        if case .object(var o) = missing, case .object(var t)? = o["thing"] {
            t["name"] = nil
            o["thing"] = .object(t)
            missing = .object(o)
        }
        #expect(problem(missing) == "thing.name")
        #expect(problem(["thing": good["thing"]!, "bogus": 1]) == "bogus")
        #expect(problem(["thing": good["thing"]!, "count": "x"]) == "count")
        #expect(problem(["thing": good["thing"]!, "count": nil]) == nil)
        #expect(problem(["thing": good["thing"]!, "count": 1.5]) == "count")
        #expect(problem([:]) == "thing")
        func replacing(_ key: String, _ value: JSONValue) -> JSONValue {
            guard case .object(var thing)? = good["thing"] else { return nil }
            thing[key] = value
            return ["thing": .object(thing)]
        }
        #expect(problem(replacing("kind", "medium")) == "thing.kind")
        #expect(problem(replacing("tags", ["x", 1])) == "thing.tags.1")
        #expect(problem(replacing("attributes", ["k": "v"])) == "thing.attributes.k")
        #expect(problem(replacing("nested", ["x": 1, "z": 2])) == "thing.nested.z")
        #expect(problem(replacing("state", "maybe")) == "thing.state")
    }
}
