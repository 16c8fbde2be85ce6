// SPDX-License-Identifier: Apache-2.0
import Testing
@testable import AppAPI

/// Security review 2, finding 9: sixteen addresses at their full sixteen streams held all 256
/// of the server's. Past three quarters of them, an address holding two or more gets no more:
/// what is left serves addresses with one stream or none.
@Suite struct ClientStreamsTests {
    @Test func aShareOfTheServersStreamsIsKeptForAddressesHoldingFew() {
        let streams = ClientStreams(limit: 16, serverLimit: 256)
        var held = 0
        for address in 1...16 {
            for _ in 0..<16 where streams.take("203.0.113.\(address)") == nil { held += 1 }
        }
        // Twelve addresses fill three quarters (192); the other four get two each.
        #expect(held == 200, "the busy addresses hold about three quarters of the server's streams: \(held)")
        #expect(streams.take("203.0.113.1") == .perClient(16))
        #expect(streams.take("203.0.113.16") == .reserved(2), "past the mark a full address gets no more")
        // Someone else still gets in, once or twice, however busy the server is.
        #expect(streams.take("198.51.100.7") == nil)
        #expect(streams.take("198.51.100.7") == nil)
        #expect(streams.take("198.51.100.7") == .reserved(2))
        // A stream given back below the mark opens the way again.
        for _ in 0..<16 { streams.release("203.0.113.1") }
        #expect(streams.take("203.0.113.2") == .perClient(16))
        #expect(streams.take("203.0.113.1") == nil)
    }

    @Test func withoutAServerLimitOnlyThePerClientLimitApplies() {
        let streams = ClientStreams(limit: 2)
        #expect(streams.take("::1") == nil && streams.take("::1") == nil)
        #expect(streams.take("::1") == .perClient(2))
        streams.release("::1")
        #expect(streams.take("::1") == nil)
    }
}
