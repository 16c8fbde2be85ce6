// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import PluginKit

/// `.entitlement(name)` passes only with an active persisted entitlement. `.meter(name)` lets a
/// user without the meter's entitlement through until the period's free quota is used, then
/// → `PaymentRequired(entitlement, remaining: 0, resetsAt)`.
///
/// A use is taken atomically before the command runs (so two concurrent calls with one use
/// left cannot both pass) and given back if the command fails; for a stream, when the stream
/// ends in an error before its handler marked it used (`ReplyWriter.markUsed`). Persisted state is read on every call: a grant or a lapse takes effect
/// on the very next call. A meter that is not configured denies (fail closed).
struct PaywallGate: Gate {
    let repository: PaymentsRepository
    let catalog: PaymentsCatalog
    let clock: @Sendable () -> WallTime
    let logger: Logger
    var name: String { "paywall" }
    var position: GatePosition { .paywall }

    func covers(_ requirement: Requirement) -> Bool {
        switch requirement {
        case .entitlement, .meter: true
        default: false
        }
    }

    /// By the method's requirements alone (so `mayApply` is exact).
    func applies(to envelope: Envelope) -> Bool { mayApply(toMethodRequiring: envelope.requirements) }
    func mayApply(toMethodRequiring requirements: [Requirement]) -> Bool { requirements.contains(where: covers) }

    func errors(answering requirements: [Requirement]) -> [String] {
        requirements.contains(where: covers) ? [PaymentsError.paymentRequired(entitlement: "", remaining: 0, resetsAt: nil).wireName] : []
    }

    func handle<Reply: Sendable>(_ envelope: Envelope, next: (Envelope) async throws -> Reply) async throws -> Reply {
        var meters: [PaymentsCatalog.Meter] = []
        for requirement in envelope.requirements {
            switch requirement {
            case .entitlement(let entitlement):
                let user = try user(envelope, entitlement)
                guard try await repository.isEntitled(user: user, entitlement: entitlement, now: clock().nanosecondsSinceEpoch) else {
                    throw PaymentsError.paymentRequired(entitlement: entitlement, remaining: 0, resetsAt: nil)
                }
            case .meter(let name):
                guard let meter = catalog.meter(name) else {
                    logger.error("a command needs a meter that is not configured; denying it", metadata: ["meter": name, "method": envelope.name])
                    throw PaymentsError.paymentRequired(entitlement: name, remaining: 0, resetsAt: nil)
                }
                meters.append(meter)
            default:
                continue
            }
        }
        guard !meters.isEmpty else { return try await next(envelope) }

        // Take one use of each meter the user is not entitled past.
        var taken: [(meter: String, user: String, periodStart: Int64)] = []
        do {
            for meter in meters {
                let user = try user(envelope, meter.entitlement)
                let now = clock().nanosecondsSinceEpoch
                if try await repository.isEntitled(user: user, entitlement: meter.entitlement, now: now) { continue }
                let window = PaymentsService.window(meter, now: now)
                let (ok, _) = try await repository.consume(user: user, meter: meter.name, periodStart: window.start, limit: meter.limit)
                guard ok else {
                    throw PaymentsError.paymentRequired(
                        entitlement:
                            meter.entitlement, remaining: 0, resetsAt: WallTime(nanosecondsSinceEpoch: window.end).rfc3339)
                }
                taken.append((meter.name, user, window.start))
            }
        } catch {
            await refund(taken)
            throw error
        }
        guard !taken.isEmpty else { return try await next(envelope) }
        let reply: Reply
        do {
            reply = try await next(envelope)
        } catch {
            await refund(taken)
            throw error
        }
        if let stream = reply as? any FinishObservable {
            let repository = self.repository, logger = self.logger, taken = taken
            // The client sees the stream's error only after the use is given back. A stream
            // that failed after handing over what it costs (a chat reply's words, then the
            // conversation deleted under it) keeps the use (security review finding 5).
            await stream.whenFinished { end in
                guard end.error != nil, !end.used else { return }
                await Self.refund(taken, repository, logger)
            }
        }
        return reply
    }

    private func user(_ envelope: Envelope, _ entitlement: String) throws(PaymentsError) -> String {
        // The session gate runs first; without a signed-in user there is nobody to charge.
        try envelope.signedInUser(or: PaymentsError.paymentRequired(entitlement: entitlement, remaining: 0, resetsAt: nil))
    }

    private func refund(_ taken: [(meter: String, user: String, periodStart: Int64)]) async {
        await Self.refund(taken, repository, logger)
    }

    private static func refund(_ taken: [(meter: String, user: String, periodStart: Int64)], _ repository: PaymentsRepository, _ logger: Logger) async {
        for use in taken {
            do {
                try await repository.refund(user: use.user, meter: use.meter, periodStart: use.periodStart)
            } catch {
                logger.warning("a quota use of a failed command could not be given back", metadata: ["meter": use.meter, "error": "\(error)"])
            }
        }
    }
}
