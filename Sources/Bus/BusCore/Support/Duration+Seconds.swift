// SPDX-License-Identifier: Apache-2.0
extension Duration {
    /// The duration in seconds, as a Double (metrics, rates, logs).
    public var inSeconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }

    /// Whole nanoseconds (for `WallTime` arithmetic).
    public var nanoseconds: Int64 { components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000 }
}
