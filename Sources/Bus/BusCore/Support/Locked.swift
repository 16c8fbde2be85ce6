// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A value behind a lock, in the portable core: it builds for iOS 17, macOS 14 and Linux,
/// where `Synchronization.Mutex` (iOS 18, macOS 15) does not exist, so the Swift client and
/// everything it imports can run on the devices the app templates target. Same shape as
/// `Mutex.withLock`; a class holding a `pthread_mutex_t` of its own (never moved, as a mutex
/// must not be).
public final class Locked<Value> {
    private var value: Value
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    public init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value, alone: no other `withLock` on this lock runs meanwhile.
    /// Keep it short, and make no syscall or log call in it.
    public func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}

extension Locked: @unchecked Sendable where Value: Sendable {}  // safe: the value is reached only in withLock, under the mutex, and is Sendable itself
