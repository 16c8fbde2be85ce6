// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import HTTP

/// How a store's API is asked (the App Store Server API, the Play Developer API): a timeout per
/// request, tried again while the store fails (5xx), throttles (429) or cannot be reached, with
/// pauses doubling from `pause`.
struct StoreRequest: Sendable {
    var timeout: Duration = .seconds(10)
    var attempts = 3
    var pause: Duration = .milliseconds(200)
    var caFile: String?
    var maxResponseBytes = 4 << 20

    enum Outcome {
        /// Any status but 429 and 5xx (those are tried again).
        case answered(HTTPHead, [UInt8])
        /// Every try failed; the last reason.
        case gaveUp(String)
    }

    /// Sends the request `make` builds (again for each try: a token may be signed per request).
    func send(_ make: () async throws(PaymentsError) -> HTTPRequest) async throws(PaymentsError) -> Outcome {
        var last = "no answer"
        for attempt in 0..<max(1, attempts) {
            if attempt > 0 { try? await Task.sleep(for: pause * (1 << (attempt - 1))) }
            let request = try await make()
            do {
                let (head, body) = try await HTTPClient.oneShot(limit: timeout, caFile: caFile, maxResponseBytes: maxResponseBytes).fetch(request)
                if head.status == 429 || (500...599).contains(head.status) {
                    last = "HTTP \(head.status)"
                    continue
                }
                return .answered(head, body)
            } catch {
                last = "\(error)"
            }
        }
        return .gaveUp("\(last), after \(max(1, attempts)) tries")
    }
}
