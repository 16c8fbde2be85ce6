// SPDX-License-Identifier: Apache-2.0
import Contracts
import Testing
import TestSupport
@testable import Payments

@Suite(.cleansUp) struct StripeSignatureTests {
    let body = Array(#"{"id":"evt_1","type":"ping"}"#.utf8)
    /// Computed independently with Python's hmac module.
    let known = "74a11abdd08483d064a2a1571e7881b084c522f9f3ccd0b800ec8c74aba47fc2"
    let secret = "whsec_test_secret"
    let t: Int64 = 1_700_000_000

    func verify(_ header: String?, body: [UInt8]? = nil, secrets: [String]? = nil, now: Int64? = nil) throws(PaymentsError) {
        try StripeSignature.verify(header: header, body: body ?? self.body, secrets: secrets ?? [secret], now: now ?? t + 10)
    }

    @Test func aKnownVectorVerifies() throws {
        try verify("t=\(t),v1=\(known)")
        #expect(StripeSignature.sign(body: body, secret: secret, timestamp: t) == "t=\(t),v1=\(known)")
        // Other schemes and spaces are ignored.
        try verify("t=\(t), v0=deadbeef, v1=\(known)")
    }

    @Test func theWrongSecretFails() {
        #expect(throws: PaymentsError.self) { try verify("t=\(t),v1=\(known)", secrets: ["whsec_other"]) }
    }

    @Test func oneChangedByteOfTheBodyFails() {
        var changed = body
        changed[5] ^= 1
        #expect(throws: PaymentsError.self) { try verify("t=\(t),v1=\(known)", body: changed) }
    }

    @Test func timestampsOutsideTheToleranceFail() throws {
        let header = StripeSignature.sign(body: body, secret: secret, timestamp: t)
        try verify(header, now: t + 300)
        #expect(throws: PaymentsError.self) { try verify(header, now: t + 301) }
        try verify(header, now: t - 30)
        #expect(throws: PaymentsError.self) { try verify(header, now: t - 31) }
        // The timestamp is signed: moving it breaks the signature.
        #expect(throws: PaymentsError.self) { try verify("t=\(t + 1),v1=\(known)", now: t) }
    }

    @Test func anyV1MayMatchDuringRotation() throws {
        let old = StripeSignature.sign(body: body, secret: "whsec_old", timestamp: t)
        let new = StripeSignature.sign(body: body, secret: "whsec_new", timestamp: t)
        let both = old + "," + new.split(separator: ",")[1]
        try verify(both, secrets: ["whsec_new"])
        try verify(both, secrets: ["whsec_old"])
        try verify(new, secrets: ["whsec_old", "whsec_new"])
        #expect(throws: PaymentsError.self) { try verify(both, secrets: ["whsec_neither"]) }
    }

    @Test func malformedHeadersAreRefusedWithAReason() {
        for header in ["", "v1=\(known)", "t=abc,v1=\(known)", "t=\(t)", "t=\(t),v1=zz", "t=\(t),t=\(t),v1=\(known)", String(repeating: "a", count: 5000)] {
            do {
                try verify(header)
                Issue.record("accepted \(header.prefix(40))")
            } catch {
                guard case .invalidSignature(let reason) = error else { Issue.record("\(error)"); continue }
                #expect(!reason.isEmpty)
            }
        }
        #expect(throws: PaymentsError.self) { try verify(nil) }
    }
}

@Suite(.cleansUp) struct WebhookRequestTests {
    func parse(_ head: String, max: Int = 1000) -> Result<WebhookRequest, WebhookRequest.Refusal> {
        WebhookRequest.parse(head: Array(head.utf8)[...], maxBodyBytes: max)
    }
    func status(_ head: String, max: Int = 1000) -> Int {
        switch parse(head, max: max) {
        case .success: 200
        case .failure(let refusal): refusal.status
        }
    }

    @Test func aGoodHeadParses() throws {
        let request = try parse("POST /webhooks/stripe HTTP/1.1\r\nHost: x\r\nStripe-Signature: t=1,v1=ab\r\nContent-Length: 12\r\nExpect: 100-continue").get()
        #expect(request.provider == "stripe" && request.contentLength == 12 && request.expectsContinue)
        #expect(request.headers["stripe-signature"] == "t=1,v1=ab")
    }

    @Test func everyRefusalHasItsStatus() {
        #expect(status("GET /webhooks/stripe HTTP/1.1\r\nContent-Length: 1") == 405)
        #expect(status("POST /other HTTP/1.1\r\nContent-Length: 1") == 404)
        #expect(status("POST /webhooks/../x HTTP/1.1\r\nContent-Length: 1") == 404)
        #expect(status("POST /webhooks/stripe HTTP/1.1") == 411)
        #expect(status("POST /webhooks/stripe HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 1") == 411)
        #expect(status("POST /webhooks/stripe HTTP/1.1\r\nContent-Length: 1001") == 413)
        #expect(status("POST /webhooks/stripe HTTP/1.1\r\nContent-Length: -1") == 400)
        #expect(status("POST /webhooks/stripe HTTP/1.1\r\nContent-Length: +5") == 400)
        #expect(status("POST /webhooks/stripe HTTP/2\r\nContent-Length: 1") == 400)
        #expect(status("POST  /webhooks/stripe HTTP/1.1\r\nContent-Length: 1") == 400)
        #expect(status("POST /webhooks/stripe HTTP/1.1\r\nno colon here\r\nContent-Length: 1") == 400)
        // Request smuggling: two lengths (or two transfer codings) are refused.
        #expect(status("POST /webhooks/stripe HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2") == 400)
        #expect(status("POST /webhooks/stripe HTTP/1.1\r\nContent-Length : 1") == 400)
    }
}
