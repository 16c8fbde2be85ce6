// SPDX-License-Identifier: Apache-2.0
/// The one way tests wait for something another task makes true: checks `condition` every
/// few milliseconds for at most `timeout`, and returns whether it came true (use it as
/// `#expect(await eventually { … })`). Never a bare sleep standing in for "until it happened".
@discardableResult
public func eventually(
    timeout: Duration = .seconds(10), every interval: Duration = .milliseconds(5), _ condition: () async throws -> Bool
) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: interval)
    }
    return try await condition()
}
