// SPDX-License-Identifier: Apache-2.0

/// What the in-memory fakes keep of appd's change feed: each item's last change (a deletion
/// keeps its tombstone) on one sequence, pages of it after a cursor, and live listeners told
/// each new position — `Changes` and `Subscribe` as an offline repository sees them.
struct FakeChangeFeed {
    private var last: [String: (seq: Int64, deleted: Bool)] = [:]
    private(set) var seq: Int64 = 0
    private var listeners: [Int: AsyncThrowingStream<Int64, any Error>.Continuation] = [:]
    private var nextListener = 0

    /// An item changed (or was deleted): its new position, told to every listener.
    mutating func record(_ id: String, deleted: Bool) {
        seq += 1
        last[id] = (seq, deleted)
        for listener in listeners.values { listener.yield(seq) }
    }

    /// The changes after `cursor` (nil: a first pull, without tombstones), oldest first, at most
    /// `limit` (1 to 500, default 100); the next cursor; whether more follow.
    func page(after cursor: Int64?, limit: Int?) -> (changes: [(seq: Int64, id: String, deleted: Bool)], nextCursor: Int64, more: Bool) {
        let after = last.filter { $0.value.seq > (cursor ?? 0) && (cursor != nil || !$0.value.deleted) }.sorted { $0.value.seq < $1.value.seq }
        let page = after.prefix(min(max(limit ?? 100, 1), 500)).map { (seq: $0.value.seq, id: $0.key, deleted: $0.value.deleted) }
        return (page, page.last?.seq ?? cursor ?? seq, page.count < after.count)
    }

    /// Tells `continuation` every position after `cursor`, then each new one; returns its id
    /// for `forget`.
    mutating func listen(_ continuation: AsyncThrowingStream<Int64, any Error>.Continuation, after cursor: Int64) -> Int {
        for position in last.values.map(\.seq).sorted() where position > cursor { continuation.yield(position) }
        let id = nextListener
        nextListener += 1
        listeners[id] = continuation
        return id
    }

    mutating func forget(_ id: Int) { listeners[id] = nil }
}

/// The first outcome of each idempotency key, returned for every retry with it (as appd's
/// idempotency table does).
struct FakeOutcomes<Value> {
    private var outcomes: [String: Result<Value, any Error>] = [:]

    mutating func once(_ key: String?, _ body: () throws -> Value) throws -> Value {
        if let key, let outcome = outcomes[key] { return try outcome.get() }
        let outcome = Result(catching: body)
        if let key { outcomes[key] = outcome }
        return try outcome.get()
    }
}
