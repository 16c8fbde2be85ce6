extension Duration {
    /// The duration in seconds, as a Double (metrics, rates, logs).
    public var inSeconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
