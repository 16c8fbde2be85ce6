// SPDX-License-Identifier: Apache-2.0
import Bus

/// What the start-up has built, undone in reverse: each step that starts something pushes
/// how to stop it, and there is exactly one way out (`run`), whether appd stops after serving
/// or a step fails half-way.
actor Teardown {
    private var steps: [(name: String, undo: @Sendable () async -> Void)] = []
    private let logger: Logger

    init(logger: Logger) { self.logger = logger }

    /// Registers how to undo the step just done.
    func push(_ name: String, _ undo: @escaping @Sendable () async -> Void) {
        steps.append((name, undo))
    }

    /// Undoes every step, last first (once).
    func run() async {
        while let step = steps.popLast() {
            logger.debug("stopping", metadata: ["step": step.name])
            await step.undo()
        }
    }
}

/// A start-up step failed: what to log and the exit code.
struct StartFailure: Error {
    let message: String
    let exitCode: Int32
    init(_ message: String, exitCode: Int32 = 1) {
        self.message = message
        self.exitCode = exitCode
    }
}
