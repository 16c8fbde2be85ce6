// SPDX-License-Identifier: Apache-2.0
import PluginSDK

/// The greeter's interface: its IDL and a typed command for each method.
enum GreeterInterface {
    static let idl = """
        # An example external plugin written in Swift with appd's Bus library.
        interface io.appd.examples.Greeter

        # Who is calling, as appd saw it. appd fills this in; clients cannot.
        type Caller (
          uid: int,
          userId: ?string,
          email: ?string,
          roles: []string
        )

        # Greets the signed-in caller and publishes greeter.greeted through appd.
        method Hello(name: ?string, caller: ?Caller) -> (greeting: string, userId: ?string, roles: []string)

        # Sleeps, to show the call timeout.
        method Slow(seconds: float) -> ()

        # How many greetings this process has given (its own state, reset by a restart).
        method Count() -> (count: int)

        # Tries to publish an event on appd's bus with the plugin's credential.
        method Publish(topic: string) -> (published: bool, reason: ?string)

        # Counts down from 'from' to 0, one reply 'everyMs' milliseconds apart (default 100).
        # Call with more.
        method Countdown(from: int, everyMs: ?int) -> (n: int)

        # The names of the environment variables this process got from appd, and the file
        # descriptors it had open when it started (what each points to).
        method Environment() -> (names: []string, descriptors: []string)

        # What this plugin holds about one user, for appd's data export (io.appd.Export):
        # the greetings it gave them since it started. appd calls it; admin only.
        method ExportUserData(userId: string) -> (greetings: int)

        # category: invalid
        error Failed (reason: string)

        """

    struct Caller: Codable, Sendable {
        var uid: Int
        var userId: String?
        var email: String?
        var roles: [String]
    }
    struct Hello: Command {
        static let method = "io.appd.examples.Greeter.Hello"
        struct Reply: Codable, Sendable {
            var greeting: String
            var userId: String?
            var roles: [String]
        }
        var name: String?
        var caller: Caller?
    }
    struct Slow: Command {
        static let method = "io.appd.examples.Greeter.Slow"
        typealias Reply = Empty
        var seconds: Double
    }
    struct Count: Command {
        static let method = "io.appd.examples.Greeter.Count"
        struct Reply: Codable, Sendable { var count: Int }
    }
    struct Countdown: StreamingCommand {
        static let method = "io.appd.examples.Greeter.Countdown"
        struct Reply: Codable, Sendable { var n: Int }
        var from: Int
        var everyMs: Int?
    }
    struct Environment: Command {
        static let method = "io.appd.examples.Greeter.Environment"
        struct Reply: Codable, Sendable {
            var names: [String]
            var descriptors: [String]
        }
    }
    struct ExportUserData: Command {
        static let method = "io.appd.examples.Greeter.ExportUserData"
        struct Reply: Codable, Sendable { var greetings: Int }
        var userId: String
    }
    struct Publish: Command {
        static let method = "io.appd.examples.Greeter.Publish"
        struct Reply: Codable, Sendable {
            var published: Bool
            var reason: String?
        }
        var topic: String
    }
}
