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
}
