// SPDX-License-Identifier: Apache-2.0
import Runtime
import Synchronization

/// A method a dispatcher serves, resolved once from its name: its interface, its declaration
/// there, the bus's handler (if one is registered) and the metric series its calls are counted
/// in. `VarlinkDispatcher.route(_:)` keeps one per served method and builds it again after an
/// interface or a handler was added or removed, so a call pays one lookup by name instead of
/// one per table (interfaces, methods, handlers, metrics).
public final class VarlinkRoute: Sendable {
    /// The full name (`io.appd.Todos.Add`).
    public let name: String
    public let interface: VarlinkInterface
    public let method: VarlinkMethod
    /// What the bus knows of the method; nil when no handler is registered for it (a call is
    /// then answered `NoHandler`, as before routes existed).
    public let info: MethodInfo?
    let handler: (any HandlerEntry)?
    /// The dispatcher's and the bus's generations it was resolved at.
    let generation: Generation

    struct Generation: Equatable {
        var interfaces: UInt64
        var handlers: UInt64
    }

    private struct Counted {
        let outcome: String
        let transport: String
        let series: (Metrics.CounterSeries, Metrics.HistogramSeries)
    }
    /// Looked through in order: outcomes and transports are few (ok, a few declared errors;
    /// varlink, http), and their names are short strings compared without hashing.
    private let counted = Mutex<[Counted]>([])

    init(name: String, interface: VarlinkInterface, method: VarlinkMethod, handler: (any HandlerEntry)?, generation: Generation) {
        self.name = name
        self.interface = interface
        self.method = method
        self.handler = handler
        self.info = handler.map(MethodInfo.init(of:))
        self.generation = generation
    }

    /// Counts one finished call of this method.
    func record(outcome: String, transport: String, since started: ContinuousClock.Instant) {
        // Counted where the list keeps the series (taking them out is a retain and a release each).
        let known = counted.withLock { list -> Bool in
            for index in list.indices where list[index].outcome == outcome && list[index].transport == transport {
                CallMetrics.record(list[index].series, since: started)
                return true
            }
            return false
        }
        if known { return }
        let made = CallMetrics.series(method: name, outcome: outcome, transport: transport)
        counted.withLock { list in
            // Bounded like the registry's series: outcomes are declared names, transports appd's.
            if list.count < 64 { list.append(Counted(outcome: outcome, transport: transport, series: made)) }
        }
        CallMetrics.record(made, since: started)
    }
}
