/// Where a stored postback's received time came from.
package enum ReceivedTimeSource: String, Sendable, Hashable {
    /// `--received-at`.
    case option
    /// A forwarder's `timestamp` field.
    case timestamp
    /// The time postbackd stored it.
    case ingestion
    /// When `serve` received its HTTP request.
    case http
}

/// How `ingest` decides when each postback was received.
///
/// `--received-at` when given; otherwise a forwarder's `timestamp` field when it holds an epoch
/// between 2018-01-01 and 2100-01-01, in seconds or in milliseconds (number or numeric
/// string); otherwise the time of ingestion. Always UTC.
package struct ReceivedTimeRule: Sendable, Hashable {
    /// The `--received-at` instant, if given.
    package var fixed: UTCInstant?

    package init(fixed: UTCInstant? = nil) {
        self.fixed = fixed
    }

    /// 2018-01-01T00:00:00Z and 2100-01-01T00:00:00Z in seconds.
    static let earliest: Double = 1_514_764_800
    static let latest: Double = 4_102_444_800

    /// When `postback` was received, given that it is being stored at `now`.
    package func receivedTime(forwarderTimestamp: Double?, now: UTCInstant) -> (UTCInstant, ReceivedTimeSource) {
        if let fixed { return (fixed, .option) }
        if let instant = Self.instant(fromForwarderTimestamp: forwarderTimestamp) { return (instant, .timestamp) }
        return (now, .ingestion)
    }

    /// A forwarder timestamp read as seconds or milliseconds, if it falls in the plausible range.
    static func instant(fromForwarderTimestamp value: Double?) -> UTCInstant? {
        guard let value, value.isFinite else { return nil }
        if value >= earliest && value < latest { return UTCInstant(milliseconds: Int64((value * 1000).rounded(.down))) }
        if value >= earliest * 1000 && value < latest * 1000 {
            return UTCInstant(milliseconds: Int64(value.rounded(.down)))
        }
        return nil
    }
}
