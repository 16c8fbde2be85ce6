// SPDX-License-Identifier: Apache-2.0
import Bus

/// `org.varlink.certification`, verbatim from the reference implementation (Python `varlink`,
/// varlink/tests/org.varlink.certification.varlink), and its methods as typed commands.
enum Certification {
    static let idl = """
        # Interface to test varlink implementations against.
        # First you write a varlink client calling:
        # Start, Test01, Test02, …, Test09, End
        # The return value of the previous call should be the argument of the next call.
        # Then you test this client against well known servers like python or rust from
        # https://github.com/varlink/
        #
        # Next you write a varlink server providing the same service as the well known ones.
        # Now run your client against it and run well known clients like python or rust
        # from https://github.com/varlink/ against your server. If all works out, then
        # your new language bindings should be varlink certified.
        interface org.varlink.certification

        type Interface (
          foo: ?[]?[string](foo, bar, baz),
          anon: (foo: bool, bar: bool)
        )

        type MyType (
          object: object,
          enum: (one, two, three),
          struct: (first: int, second: string),
          array: []string,
          dictionary: [string]string,
          stringset: [string](),
          nullable: ?string,
          nullable_array_struct: ?[](first: int, second: string),
          interface: Interface
        )

        method Start() -> (client_id: string)

        method Test01(client_id: string) -> (bool: bool)

        method Test02(client_id: string, bool: bool) -> (int: int)

        method Test03(client_id: string, int: int) -> (float: float)

        method Test04(client_id: string, float: float) -> (string: string)

        method Test05(client_id: string, string: string) -> (
          bool: bool,
          int: int,
          float: float,
          string: string
        )

        method Test06(
          client_id: string,
          bool: bool,
          int: int,
          float: float,
          string: string
        ) -> (
          struct: (
            bool: bool,
            int: int,
            float: float,
            string: string
          )
        )

        method Test07(
          client_id: string,
          struct: (
            bool: bool,
            int: int,
            float: float,
            string: string
          )
        ) -> (map: [string]string)

        method Test08(client_id: string, map: [string]string) -> (set: [string]())

        method Test09(client_id: string, set: [string]()) -> (mytype: MyType)

        # returns more than one reply with "continues"
        method Test10(client_id: string, mytype: MyType) -> (string: string)

        # must be called as "oneway"
        method Test11(client_id: string, last_more_replies: []string) -> ()

        method End(client_id: string) -> (all_ok: bool)

        error ClientIdError ()
        error CertificationError (wants: object, got: object)

        """

    // MARK: Types

    enum Choice: String, Codable, Sendable { case one, two, three }
    enum FooBarBaz: String, Codable, Sendable { case foo, bar, baz }

    struct Pair: Codable, Sendable, Equatable {
        var first: Int
        var second: String
    }

    struct Anon: Codable, Sendable, Equatable {
        var foo: Bool
        var bar: Bool
    }

    struct Interface: Codable, Sendable, Equatable {
        var foo: [[String: FooBarBaz]?]?
        var anon: Anon
    }

    /// `[string]()`: a set is a map whose values are empty structs.
    struct Member: Codable, Sendable, Equatable {}

    struct MyType: Codable, Sendable, Equatable {
        var object: JSONValue
        var `enum`: Choice
        var `struct`: Pair
        var array: [String]
        var dictionary: [String: String]
        var stringset: [String: Member]
        var nullable: String?
        var nullable_array_struct: [Pair]?
        var interface: Interface
    }

    struct Four: Codable, Sendable, Equatable {
        var bool: Bool
        var int: Int
        var float: Double
        var string: String
    }

    // MARK: Methods

    struct Start: Command {
        static let method = "org.varlink.certification.Start"
        struct Reply: Codable, Sendable { var client_id: String }
    }
    struct Test01: Command {
        static let method = "org.varlink.certification.Test01"
        struct Reply: Codable, Sendable { var bool: Bool }
        var client_id: String
    }
    struct Test02: Command {
        static let method = "org.varlink.certification.Test02"
        struct Reply: Codable, Sendable { var int: Int }
        var client_id: String
        var bool: Bool
    }
    struct Test03: Command {
        static let method = "org.varlink.certification.Test03"
        struct Reply: Codable, Sendable { var float: Double }
        var client_id: String
        var int: Int
    }
    struct Test04: Command {
        static let method = "org.varlink.certification.Test04"
        struct Reply: Codable, Sendable { var string: String }
        var client_id: String
        var float: Double
    }
    struct Test05: Command {
        static let method = "org.varlink.certification.Test05"
        typealias Reply = Four
        var client_id: String
        var string: String
    }
    struct Test06: Command {
        static let method = "org.varlink.certification.Test06"
        struct Reply: Codable, Sendable { var `struct`: Four }
        var client_id: String
        var bool: Bool
        var int: Int
        var float: Double
        var string: String
    }
    struct Test07: Command {
        static let method = "org.varlink.certification.Test07"
        struct Reply: Codable, Sendable { var map: [String: String] }
        var client_id: String
        var `struct`: Four
    }
    struct Test08: Command {
        static let method = "org.varlink.certification.Test08"
        struct Reply: Codable, Sendable { var set: [String: Member] }
        var client_id: String
        var map: [String: String]
    }
    struct Test09: Command {
        static let method = "org.varlink.certification.Test09"
        struct Reply: Codable, Sendable { var mytype: MyType }
        var client_id: String
        var set: [String: Member]
    }
    struct Test10: StreamingCommand {
        static let method = "org.varlink.certification.Test10"
        struct Reply: Codable, Sendable { var string: String }
        var client_id: String
        var mytype: MyType
    }
    struct Test11: Command {
        static let method = "org.varlink.certification.Test11"
        typealias Reply = Empty
        var client_id: String
        var last_more_replies: [String]
    }
    struct End: Command {
        static let method = "org.varlink.certification.End"
        struct Reply: Codable, Sendable { var all_ok: Bool }
        var client_id: String
    }

    // MARK: Errors

    struct ClientIdError: WireError {
        var wireName: String { "org.varlink.certification.ClientIdError" }
        var description: String { "unknown client_id: call Start first" }
    }

    struct CertificationError: WireError {
        let wants: JSONValue
        let got: JSONValue
        var wireName: String { "org.varlink.certification.CertificationError" }
        var wireParameters: [String: JSONValue] { ["wants": wants, "got": got] }
        var description: String { "wants \(wants.jsonText), got \(got.jsonText)" }
    }

    // MARK: The values every step expects

    static let pi = 3.141592653589793
    static let four = Four(bool: false, int: 2, float: pi, string: "a lot of string")
    static let map = ["foo": "Foo", "bar": "Bar"]
    static let set = ["one": Member(), "two": Member(), "three": Member()]
    static let mytype = MyType(
        object: ["method": "org.varlink.certification.Test09", "parameters": ["map": ["foo": "Foo", "bar": "Bar"]]],
        enum: .two, struct: Pair(first: 1, second: "2"), array: ["one", "two", "three"], dictionary: map, stringset: set,
        nullable: nil, nullable_array_struct: nil,
        interface: Interface(foo: [nil, ["foo": .foo, "bar": .bar], nil, ["one": .foo, "two": .bar]], anon: Anon(foo: true, bar: false)))
    static let replies = (1...10).map { "Reply number \($0)" }
}
