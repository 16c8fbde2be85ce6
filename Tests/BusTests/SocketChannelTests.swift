// SPDX-License-Identifier: Apache-2.0
import CSystem
import Glibc
import Runtime
import Synchronization
import Testing
import TestSupport

/// The connection core both servers stand on: a producer above the high-water mark waits until
/// its client has read down to the low-water mark (woken by the send that gets there, not by
/// polling), a close tells it, and a read sees the client's end.
@Suite struct SocketChannelTests {
    /// A connected pair: `ours` (non-blocking, for the channel) and `theirs` (blocking, the client).
    static func pair() throws -> (ours: Int32, theirs: Int32) {
        var fds: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else { throw HarnessError("socketpair: \(errno)") }
        _ = appd_set_nonblocking(fds[0])
        // Small kernel buffers, so the channel's own buffer is what fills up.
        var size: Int32 = 4096
        setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        setsockopt(fds[1], SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        return (fds[0], fds[1])
    }

    /// What the client reads from `fd` until it has `count` bytes or the connection ends.
    static func receive(_ fd: Int32, atLeast count: Int = .max) -> [UInt8] {
        var data: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while data.count < count {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            data += chunk[0..<n]
        }
        return data
    }

    @Test func aProducerAboveTheHighWaterMarkWaitsUntilTheClientReadsThenIsWoken() async throws {
        let loop = try EventLoop(name: "test-channel")
        loop.start()
        let (ours, theirs) = try Self.pair()
        defer { close(theirs) }
        let channel = SocketChannel(fd: ours, loop: loop, highWater: 64 * 1024, lowWater: 32 * 1024)
        channel.register { _, _ in channel.flush() }
        let chunk = [UInt8](repeating: 0x61, count: 16 * 1024)
        let resumed = Atomic<Bool>(false)
        let producer = Task {
            // 256 KiB with nobody reading: the writes pile up past the high-water mark.
            for _ in 0..<16 { channel.write(chunk) }
            let open = await channel.waitForReader()
            resumed.store(true, ordering: .releasing)
            return open
        }
        #expect(await eventually { (channel.pending ?? 0) > 64 * 1024 })
        // Nobody reads: the producer stays suspended.
        try await Task.sleep(for: .milliseconds(200))
        let resumedEarly = resumed.load(ordering: .acquiring)
        #expect(!resumedEarly, "the producer must wait for its client")
        // The client reads; the sends that follow bring the buffer under the low-water mark.
        let read = try await RunningReader.run { Self.receive(theirs, atLeast: 16 * 16 * 1024 - 32 * 1024).count }
        #expect(read >= 16 * 16 * 1024 - 32 * 1024)
        #expect(await producer.value == true)
        #expect((channel.pending ?? .max) <= 32 * 1024)
        await withCheckedContinuation { c in
            loop.execute {
                _ = channel.close(); c.resume()
            }
        }
        await loop.stop { true }
    }

    @Test func aCloseTellsAWaitingProducerAndAReadSeesTheClientsEnd() async throws {
        let loop = try EventLoop(name: "test-channel-close")
        loop.start()
        let (ours, theirs) = try Self.pair()
        let channel = SocketChannel(fd: ours, loop: loop, highWater: 8 * 1024, lowWater: 4 * 1024)
        let ended = Atomic<Bool>(false)
        channel.register { readiness, scratch in
            if readiness.writable { channel.flush() }
            if readiness.readable || readiness.hangup {
                let end = channel.read(into: &scratch) { _ in true }
                if end == .ended { ended.store(true, ordering: .releasing) }
            }
        }
        let producer = Task {
            channel.write([UInt8](repeating: 0x62, count: 64 * 1024))
            return await channel.waitForReader()
        }
        #expect(await eventually { (channel.pending ?? 0) > 8 * 1024 })
        close(theirs)
        let sawEnd = await eventually { ended.load(ordering: .acquiring) }
        #expect(sawEnd, "the client's end is seen")
        await withCheckedContinuation { c in
            loop.execute {
                _ = channel.close(); c.resume()
            }
        }
        #expect(await producer.value == false, "a producer waiting when the channel closes is told it is gone")
        #expect(channel.write([1]) == nil, "nothing is written to a closed channel")
        await loop.stop { true }
    }
}

extension SocketChannelTests {
    /// A reply written just before a close (its flush still queued, as a shutdown's own reply
    /// is when the server closes its connections) reaches the client before the end.
    @Test func whatWasWrittenBeforeACloseIsSentBeforeTheEnd() async throws {
        let loop = try EventLoop(name: "test-channel-last")
        loop.start()
        let (ours, theirs) = try Self.pair()
        defer { close(theirs) }
        let channel = SocketChannel(fd: ours, loop: loop, highWater: 8 * 1024, lowWater: 4 * 1024)
        channel.register { readiness, scratch in
            if readiness.writable { channel.flush() }
            if readiness.readable || readiness.hangup, channel.read(into: &scratch, { _ in true }) != .open { _ = channel.close() }
        }
        // On the loop, in one job: the write's flush is queued behind the close.
        await withCheckedContinuation { c in
            loop.execute {
                channel.write(Array("the last reply\u{0}".utf8))
                channel.requestClose()
                c.resume()
            }
        }
        let received = try await RunningReader.run { String(decoding: Self.receive(theirs), as: UTF8.self) }
        #expect(received == "the last reply\u{0}", "the reply, then the end")
        #expect(channel.write([1]) == nil, "nothing is written once closing")
        await loop.stop { true }
    }
}

extension SocketChannelTests {
    /// A fan-out: writes to many channels from threads other than the loop's, each channel's
    /// flush queued once however many writes pile up before it runs; every client gets every
    /// byte, in the order written.
    @Test func writesToManyChannelsFromOtherThreadsAllArriveInOrder() async throws {
        let loop = try EventLoop(name: "test-channel-fanout")
        loop.start()
        var channels: [SocketChannel] = []
        var clients: [Int32] = []
        for _ in 0..<16 {
            let (ours, theirs) = try Self.pair()
            let channel = SocketChannel(fd: ours, loop: loop, highWater: 1 << 20, lowWater: 1 << 19)
            channel.register { readiness, _ in if readiness.writable { channel.flush() } }
            channels.append(channel)
            clients.append(theirs)
            // A byte that never comes fails the test instead of hanging it.
            var timeout = timeval(tv_sec: 20, tv_usec: 0)
            setsockopt(theirs, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }
        defer { for fd in clients { close(fd) } }
        let messages = 200
        let all = channels
        await withTaskGroup(of: Void.self) { group in
            for writer in 0..<2 {
                group.addTask {
                    for n in 0..<messages where n % 2 == writer {
                        for channel in all { channel.write(Array("\(n),".utf8)) }
                    }
                }
            }
        }
        for fd in clients {
            let text = try await RunningReader.run {
                var received = [UInt8]()
                var chunk = [UInt8](repeating: 0, count: 65536)
                while received.count(where: { $0 == UInt8(ascii: ",") }) < messages {
                    let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                    if n <= 0 { break }
                    received += chunk[0..<n]
                }
                return String(decoding: received, as: UTF8.self)
            }
            let numbers = text.split(separator: ",").compactMap { Int($0) }
            #expect(numbers.count == messages, "every write reaches the client")
            // Two writers interleave; each one's writes keep their order.
            #expect(numbers.filter { $0 % 2 == 0 } == Array(stride(from: 0, to: messages, by: 2)))
            #expect(numbers.filter { $0 % 2 == 1 } == Array(stride(from: 1, to: messages, by: 2)))
        }
        await withCheckedContinuation { c in
            loop.execute {
                for channel in all { _ = channel.close() }; c.resume()
            }
        }
        await loop.stop { true }
    }
}

/// Blocking reads off the cooperative pool.
enum RunningReader {
    static let pool = BlockingPool(name: "test-reader", threads: 2, queueLimit: 8)
    static func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async throws -> T { try await pool.run(body) }
}

extension SocketChannelTests {
    /// A close asked for from another thread while the loop is sending (as a server's shutdown
    /// closes its connections while their last replies go out): every byte reaches the client
    /// once. The close's last send takes what the flush left; it once sent again what the flush
    /// had just sent, and a client read its previous reply as the answer to its next call.
    @Test func aCloseDuringASendSendsEachByteOnce() async throws {
        let loop = try EventLoop(name: "test-channel-close-race")
        loop.start()
        let rounds = 3000
        var repeated = 0
        for round in 0..<rounds {
            let (ours, theirs) = try Self.pair()
            defer { close(theirs) }
            var timeout = timeval(tv_sec: 20, tv_usec: 0)
            setsockopt(theirs, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            let channel = SocketChannel(fd: ours, loop: loop, highWater: 1 << 20, lowWater: 1 << 19)
            channel.register { readiness, scratch in
                if readiness.writable { channel.flush() }
                if readiness.readable || readiness.hangup, channel.read(into: &scratch, { _ in true }) != .open { _ = channel.close() }
            }
            // The reply's flush is queued on the loop; the close comes from this thread while it
            // runs (how far apart varies with the round, to cross the send at different points).
            // 2 KiB: a send long enough for the close to land inside it now and then.
            let reply = "reply \(round);" + String(repeating: ".", count: 2048)
            channel.write(Array(reply.utf8))
            let until = ContinuousClock.now.advanced(by: .nanoseconds((round % 100) * 1000))
            while ContinuousClock.now < until {}
            channel.requestClose()
            let received = try await RunningReader.run { String(decoding: Self.receive(theirs), as: UTF8.self) }
            // The reply once, whole: the flush or the close's last send took it.
            if received != reply { repeated += 1 }
        }
        #expect(repeated == 0, "\(repeated) of \(rounds) clients did not read their reply exactly once")
        await loop.stop { true }
    }

    /// The loop sends the channel given bytes last first: a caller's reply, queued after the
    /// deliveries its call made (a publish to its subscribers), reaches the caller before them,
    /// so its next call is on its way while the loop writes to the rest. Two channels over one
    /// socket (the second on a duplicate of its descriptor) show the order the loop sent them in.
    @Test func theLoopSendsTheChannelQueuedLastFirst() async throws {
        let loop = try EventLoop(name: "test-flush-order")
        loop.start()
        let (ours, theirs) = try Self.pair()
        defer { close(theirs) }
        let earlier = SocketChannel(fd: ours, loop: loop, highWater: 64 * 1024, lowWater: 32 * 1024)
        let later = SocketChannel(fd: dup(ours), loop: loop, highWater: 64 * 1024, lowWater: 32 * 1024)
        // Both written in one job on the loop: both flushes wait for its next round.
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            loop.execute {
                earlier.write(Array("delivery;".utf8))
                later.write(Array("reply;".utf8))
                c.resume()
            }
        }
        let received = try await RunningReader.run { String(decoding: Self.receive(theirs, atLeast: 15), as: UTF8.self) }
        #expect(received == "reply;delivery;")
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            loop.execute {
                _ = earlier.close()
                _ = later.close()
                c.resume()
            }
        }
        await loop.stop { true }
    }
}

extension SocketChannelTests {
    /// A connection whose last reply is queued behind a client that is slow to read: asked to
    /// close once drained, the channel stays open until the client has read everything, then
    /// ends the connection (every byte, then the end); with nothing unwritten it closes at once.
    @Test func aCloseOnceDrainedWaitsForTheLastByteThenEnds() async throws {
        let loop = try EventLoop(name: "test-channel-drained")
        loop.start()
        let (ours, theirs) = try Self.pair()
        defer { close(theirs) }
        // The client's reads give up after a while: a channel that never ends the connection
        // fails the test instead of hanging it.
        var patience = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(theirs, SOL_SOCKET, SO_RCVTIMEO, &patience, socklen_t(MemoryLayout<timeval>.size))
        let channel = SocketChannel(fd: ours, loop: loop, highWater: 1 << 20, lowWater: 1 << 19)
        channel.register { readiness, scratch in
            if readiness.writable { channel.flush() }
            if readiness.readable || readiness.hangup, channel.read(into: &scratch, { _ in true }) != .open { _ = channel.close() }
        }
        // Far more than the kernel's buffers take: the rest waits in the channel for EPOLLOUT.
        let reply = (0..<(256 * 1024)).map { UInt8(truncatingIfNeeded: $0 % 251) }
        channel.write(reply)
        #expect(await eventually { (channel.pending ?? 0) > 0 && (channel.pending ?? 0) < reply.count })
        channel.requestCloseWhenDrained()
        // The client has not read: nothing is lost to the close.
        try await Task.sleep(for: .milliseconds(100))
        #expect(channel.lifecycle == .open, "the channel waits for its unwritten bytes to go out")
        let received = try await RunningReader.run { Self.receive(theirs) }
        #expect(received == reply, "every byte, in order")
        #expect(channel.lifecycle != .open, "then the end: the client's read saw it")

        let (ours2, theirs2) = try Self.pair()
        defer { close(theirs2) }
        setsockopt(theirs2, SOL_SOCKET, SO_RCVTIMEO, &patience, socklen_t(MemoryLayout<timeval>.size))
        let idle = SocketChannel(fd: ours2, loop: loop, highWater: 1 << 20, lowWater: 1 << 19)
        idle.register { readiness, scratch in
            if readiness.readable || readiness.hangup, idle.read(into: &scratch, { _ in true }) != .open { _ = idle.close() }
        }
        idle.requestCloseWhenDrained()
        #expect(idle.lifecycle != .open, "nothing unwritten: it closes now")
        #expect(try await RunningReader.run { Self.receive(theirs2) }.isEmpty)
        await loop.stop { true }
    }
}
