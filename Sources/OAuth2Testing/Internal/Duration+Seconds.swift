import Foundation

extension Duration {
    /// The duration in seconds, as a `TimeInterval`.
    var timeInterval: TimeInterval {
        let (seconds, attoseconds) = components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }

    /// Whole seconds, rounded up, at least 0 (for `expires_in` and `interval`).
    var wholeSeconds: Int64 {
        let (seconds, attoseconds) = components
        return max(0, attoseconds > 0 ? seconds + 1 : seconds)
    }
}
