import Bus
import Synchronization

/// Hands a call's replies, one at a time, from the task running the call to the task
/// writing them to the client: `put` waits until the reply is taken, so a client that reads
/// slowly slows the call (and a subscription's own overflow rule applies), never appd's memory.
final class ReplyHandoff: Sendable {
    /// What `take` got.
    enum Taken {
        case reply(VarlinkReply)
        /// The call ended: no more replies.
        case ended
        /// `wake` was called before a reply came.
        case pending
    }
    private struct State {
        var offered: (VarlinkReply, CheckedContinuation<Void, any Error>)?
        var taker: CheckedContinuation<Taken, Never>?
        var finished = false
        /// `wake` came while no `take` waited: the next one returns `pending`.
        var woken = false
        /// Where a reply may be written without the taker (`attach(direct:)`).
        var direct: (@Sendable (JSONValue, [UInt8]) -> Bool)?
    }
    private let state = Mutex(State())

    struct Closed: Error {}

    /// Offers a reply; returns once it is taken, throws when the taker is gone.
    func put(_ reply: VarlinkReply) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let outcome = state.withLock { s -> (CheckedContinuation<Taken, Never>?, Bool) in
                if s.finished { return (nil, false) }
                if let taker = s.taker {
                    s.taker = nil
                    return (taker, true)
                }
                s.offered = (reply, continuation)
                return (nil, true)
            }
            switch outcome {
            case (let taker?, _):
                taker.resume(returning: .reply(reply))
                continuation.resume()
            case (nil, false):
                continuation.resume(throwing: Closed())
            case (nil, true):
                break
            }
        }
    }

    /// The next reply, `ended` once the call has ended (`finish`), or `pending` when woken.
    func take() async -> Taken {
        await withCheckedContinuation { (continuation: CheckedContinuation<Taken, Never>) in
            let ready = state.withLock { s -> (VarlinkReply, CheckedContinuation<Void, any Error>)?? in
                if let offered = s.offered {
                    s.offered = nil
                    return .some(offered)
                }
                if s.finished { return .some(nil) }
                if s.woken {
                    s.woken = false
                    return .some(nil)
                }
                s.taker = continuation
                return nil
            }
            switch ready {
            case .some(.some(let (reply, putter))):
                putter.resume()
                continuation.resume(returning: .reply(reply))
            case .some(.none):
                continuation.resume(returning: state.withLock { $0.finished } ? .ended : .pending)
            case .none:
                break
            }
        }
    }

    /// Lets `writeDirectly` write replies itself from now on (the taker has started the stream).
    func attach(direct: @escaping @Sendable (JSONValue, [UInt8]) -> Bool) {
        state.withLock { $0.direct = direct }
    }

    /// Writes an intermediate reply (its parameters and their JSON bytes) through the direct
    /// output, from the producer's thread, when nothing can be overtaken: the taker waits with
    /// no reply offered. Under the lock, so the taker cannot take one meanwhile. False: `put` it.
    func writeDirectly(_ parameters: JSONValue, _ bytes: [UInt8]) -> Bool {
        state.withLock { s in
            guard let direct = s.direct, s.taker != nil, s.offered == nil, !s.finished else { return false }
            return direct(parameters, bytes)
        }
    }

    /// No more replies (the call ended, or the taker left): wakes both sides.
    func finish() {
        let (taker, offered) = state.withLock { s -> (CheckedContinuation<Taken, Never>?, CheckedContinuation<Void, any Error>?) in
            s.finished = true
            s.direct = nil
            defer {
                s.taker = nil
                s.offered = nil
            }
            return (s.taker, s.offered?.1)
        }
        taker?.resume(returning: .ended)
        offered?.resume(throwing: Closed())
    }

    /// Makes a waiting `take` return `pending`, or the next one when none waits (an alarm that
    /// fires while the taker is busy writing is not lost).
    func wake() {
        let taker = state.withLock { s -> CheckedContinuation<Taken, Never>? in
            defer { s.taker = nil }
            if s.taker == nil { s.woken = true }
            return s.taker
        }
        taker?.resume(returning: .pending)
    }
}
