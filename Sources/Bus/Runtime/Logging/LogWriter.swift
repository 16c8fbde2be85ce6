// SPDX-License-Identifier: Apache-2.0
import BusCore
import CSystem
#if canImport(Glibc)
import Glibc
#endif

/// Writes log lines off the caller's path: `log` only queues the record (no formatting, no
/// write(2) where the request is served), and one writer thread formats what has gathered and
/// writes it with one write(2) — as nginx's buffered access log does. The daemon bootstraps
/// logging with one (`appd`), so an access line per HTTP request costs a queue append.
///
/// - Bounded: beyond `limit` queued records new ones are dropped and counted; the writer says
///   how many ("N log lines dropped") when it catches up.
/// - Nothing lost on a clean stop: `flush` waits until everything queued is written; appd calls
///   it last. A crash can lose what was queued and not yet written (at most the last few
///   milliseconds: the writer lets lines gather for `gathering` between batches).
/// - One per process: its writer thread (started by the first line) lives as long as the process.
/// - Order kept: one queue, one writer.
public final class LogWriter: LogHandler, @unchecked Sendable {  // safe: every mutable field is guarded by `lock`
    public let fd: Int32
    public let journald: Bool
    public let limit: Int

    private let lock = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let wake = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private let written = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    // Guarded by `lock`:
    private var queue: [LogRecord] = []
    private var dropped = 0
    private var queuedTotal = 0
    private var writtenTotal = 0
    private var writerWaiting = false
    private var started = false

    public init(fd: Int32, journald: Bool, limit: Int = 100_000) {
        self.fd = fd
        self.journald = journald
        self.limit = max(1, limit)
        pthread_mutex_init(lock, nil)
        pthread_cond_init(wake, nil)
        pthread_cond_init(written, nil)
    }

    /// A writer on stderr that uses journald prefixes when stderr is connected to the journal.
    public static func standardError() -> LogWriter {
        LogWriter(fd: 2, journald: getenv("JOURNAL_STREAM") != nil)
    }

    public func log(_ record: LogRecord) {
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        guard queue.count < limit else {
            dropped += 1
            return
        }
        queue.append(record)
        queuedTotal += 1
        if !started {
            started = true
            // The writer lives as long as the process: it only waits, formats and writes.
            pthread_detach(OSThread.start(name: "appd-log") { [self] in run() })
        } else if writerWaiting {
            // Only an idle writer needs waking: a busy one takes this line with its next batch.
            writerWaiting = false
            pthread_cond_signal(wake)
        }
    }

    /// Waits (at most `timeout`) until every line queued so far is written; false at the
    /// timeout. Blocks the calling thread: appd calls it once, as it exits.
    @discardableResult
    public func flush(timeout: Duration = .seconds(5)) -> Bool {
        var deadline = BlockingPool.realtime(after: timeout)
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        let target = queuedTotal
        while writtenTotal < target {
            if pthread_cond_timedwait(written, lock, &deadline) == ETIMEDOUT { return writtenTotal >= target }
        }
        return true
    }

    /// How long the writer lets lines gather after a batch before it looks again: under load it
    /// never blocks (so no caller pays a wake-up syscall), and a line waits at most this long.
    static let gathering: Duration = .milliseconds(5)

    private func run() {
        var idleRounds = 0
        while true {
            pthread_mutex_lock(lock)
            if queue.isEmpty && dropped == 0 && idleRounds == 0 {
                // Just wrote a batch: let the next one gather instead of sleeping on the
                // condition (which every caller would then have to signal).
                pthread_mutex_unlock(lock)
                idleRounds = 1
                var pause = timespec(tv_sec: 0, tv_nsec: Int(Self.gathering.nanoseconds))
                nanosleep(&pause, nil)
                continue
            }
            while queue.isEmpty && dropped == 0 {
                writerWaiting = true
                pthread_cond_wait(wake, lock)
            }
            idleRounds = 0
            writerWaiting = false
            let batch = queue
            let lost = dropped
            queue.removeAll(keepingCapacity: true)
            dropped = 0
            pthread_mutex_unlock(lock)

            var bytes: [UInt8] = []
            bytes.reserveCapacity(batch.count * 160)
            for record in batch { StreamLogHandler.write(record, journald: journald, into: &bytes) }
            if lost > 0 {
                let note = LogRecord(label: "appd", level: .warning, message: "\(lost) log lines dropped: logging could not keep up", metadata: [:])
                StreamLogHandler.write(note, journald: journald, into: &bytes)
            }
            // A closed or full stderr loses the lines; nothing else can be done with them.
            FileDescriptorWriter.writeAll(fd, bytes)

            pthread_mutex_lock(lock)
            writtenTotal += batch.count
            pthread_cond_broadcast(written)
            pthread_mutex_unlock(lock)
        }
    }
}
