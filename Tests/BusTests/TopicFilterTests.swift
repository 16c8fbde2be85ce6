// SPDX-License-Identifier: Apache-2.0
import Bus
import Testing

@Suite struct TopicFilterTests {
    @Test(arguments: [
        ("todos.completed", "todos.completed", true),
        ("todos.completed", "todos.created", false),
        ("todos.*", "todos.completed", true),
        ("todos.*", "todos", false),
        ("todos.*", "todos.a.b", false),
        ("*.completed", "todos.completed", true),
        ("todos.>", "todos.completed", true),
        ("todos.>", "todos.a.b", true),
        ("todos.>", "todos", false),
        (">", "anything.at.all", true),
        (">", "one", true),
        ("todos", "todos.completed", false),
    ])
    func matching(pattern: String, topic: String, expected: Bool) throws {
        #expect(try TopicFilter(pattern).matches(topic) == expected)
    }

    @Test(arguments: ["", "todos.", ".todos", "todos..x", "todos.>.x", "to dos", "todos.é", "a.>b"])
    func malformedPatternsAreRejected(pattern: String) {
        #expect(throws: InvalidTopic.self) { try TopicFilter(pattern) }
    }

    @Test func concreteTopicsRejectWildcards() throws {
        #expect(throws: InvalidTopic.self) { try TopicFilter.validate(topic: "todos.*") }
        try TopicFilter.validate(topic: "todos.completed")
        #expect(TopicFilter.all.pattern == ">")
    }

    @Test(arguments: ["", ".", "todos.", ".todos", "todos..x", "to dos", "todos.é", "todos.>", String(repeating: "a", count: 65) + ".x"])
    func malformedTopicsAreRejected(topic: String) {
        #expect(throws: InvalidTopic.self) { try TopicFilter.validate(topic: topic) }
    }

    @Test(arguments: ["todos", "todos.completed", "a-b_C9.x", String(repeating: "a", count: 64) + "." + String(repeating: "b", count: 64)])
    func wellFormedTopicsAreAccepted(topic: String) throws {
        try TopicFilter.validate(topic: topic)
    }
}

/// Topic ownership is keyed by identity (name and kind): security review finding 1.
@Suite struct EventTopicsOwnershipTests {
    static func info(_ topic: String, _ publisher: String, external: Bool) -> TopicInfo {
        TopicInfo(topic: topic, version: 1, schema: try! EventSchema(parsing: "(userId: string)"), audience: .admin, durable: true, publisher: publisher, external: external)
    }

    @Test func anExternalPluginNamedLikeABuiltInOwnsNothingOfIt() throws {
        let topics = EventTopics()
        try topics.register([Self.info("auth.accountDeleted", "auth", external: false)])
        // Same name, other kind: a conflict, not "the same publisher again".
        #expect(throws: TopicConflict.self) { try topics.register(Self.info("auth.accountDeleted", "auth", external: true)) }
        // A new topic under a built-in's first label is the built-in's.
        #expect(throws: TopicConflict.self) { try topics.register(Self.info("auth.other", "mailer", external: true)) }
        #expect(topics.owner(of: "auth.other")?.publisher == "auth" && topics.owner(of: "auth.other")?.external == false)
        // Unregistering an external "auth" removes nothing of the built-in's.
        topics.unregister(external: "auth")
        #expect(topics.info("auth.accountDeleted")?.publisher == "auth")
        #expect(topics.owner(of: "mailer.sent") == nil)
    }

    @Test func registrationIsAllOrNothing() throws {
        let topics = EventTopics()
        try topics.register([Self.info("todos.created", "todos", external: false)])
        #expect(throws: TopicConflict.self) {
            try topics.register([Self.info("greeter.hello", "greeter", external: true), Self.info("todos.created", "greeter", external: true)])
        }
        #expect(topics.info("greeter.hello") == nil)
        try topics.register([Self.info("greeter.hello", "greeter", external: true)])
        topics.unregister(external: "greeter")
        #expect(topics.info("greeter.hello") == nil && topics.info("todos.created") != nil)
    }
}
