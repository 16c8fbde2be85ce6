// SPDX-License-Identifier: Apache-2.0
import BusCore
import Testing

/// `Caller` keeps its rarer fields in a shared box (copy on write): a copy must never see a
/// change made to another copy, and every field must read back what was set.
@Suite struct CallerTests {
    @Test func aChangedCopyLeavesTheOriginalAsItWas() {
        let original = Caller(peer: PeerCredentials(uid: 1000, gid: 1000, pid: 7), sessionToken: SessionToken("t1"), remoteAddress: "10.0.0.1")
        var copy = original
        copy.principal = Principal(userID: "u_1", email: "a@example.com", onboarded: true)
        copy.sessionToken = SessionToken("t2")
        copy.remoteAddress = nil
        copy.console = "c_1"

        #expect(original.principal == nil)
        #expect(original.sessionToken == SessionToken("t1"))
        #expect(original.remoteAddress == "10.0.0.1")
        #expect(original.console == nil)
        #expect(copy.principal?.userID == "u_1")
        #expect(copy.sessionToken == SessionToken("t2"))
        #expect(copy.remoteAddress == nil)
        #expect(copy.console == "c_1")
        #expect(copy.peer == original.peer)
    }

    @Test func everyFieldReadsBackWhatWasSet() {
        var caller = Caller()
        #expect(caller.description == "daemon")
        caller.plugin = "chat"
        caller.principal = Principal(userID: "u_2")
        caller.remoteAddress = "::1"
        caller.console = "c_2"
        caller.sessionToken = SessionToken("secret")
        #expect(caller.description == "user=u_2 plugin=chat address=::1 console=c_2")
        #expect(!caller.description.contains("secret"))
        // Clearing a field that was never set leaves the rest alone.
        var bare = Caller.plugin("payments")
        bare.console = nil
        #expect(bare.plugin == "payments" && bare.console == nil)
        #expect(Caller.daemon.plugin == nil)
    }

    /// Every envelope holds a caller, and envelopes are copied into every gate's and handler's
    /// async frame, which an open stream keeps: the boxed layout keeps that copy small.
    @Test func aCallerStaysSmall() {
        #expect(MemoryLayout<Caller>.size <= 32)
    }
}
