import PostbackKit

/// A kind of data `postbackd prune` removes once it is older than its retention (days).
/// Nothing is removed until `retention set` names a kind; a production postback's row is never
/// removed, only its raw bytes (`raw`).
package enum RetentionKind: String, Sendable, Hashable, CaseIterable {
    /// Quarantined entries (their counts stay in the intake).
    case quarantine
    /// Test-mode postbacks (their dedup keys stay).
    case test
    /// AdAttributionKit development-key postbacks (their dedup keys stay).
    case development
    /// Production postbacks of apps not registered, under `apps policy registered` (their dedup
    /// keys stay).
    case unclaimed
    /// The raw bytes of stored postbacks, and of their copies' differing bytes; the row, its
    /// digest, dedup key and every decoded column stay.
    case raw
    /// `forward`'s deliveries that ended delivered or rejected.
    case deliveries
    /// Apple Ads tokens resolved (exchanged, not attributed, expired or failed): removed when no
    /// attribution record holds them, else only the token's text is cleared.
    case appleAdsTokens = "apple-ads-tokens"
    /// Finished ingest and prune runs.
    case runs

    /// What the kind removes, for `retention show` and `prune`.
    package var what: String {
        switch self {
        case .quarantine: "quarantined entries (their counts stay in the intake)"
        case .test: "test-mode postbacks (their dedup keys stay)"
        case .development: "development-key postbacks (their dedup keys stay)"
        case .unclaimed: "postbacks of apps not registered (their dedup keys stay)"
        case .raw: "raw bytes of stored postbacks (rows, digests and decoded columns stay)"
        case .deliveries: "forward deliveries delivered or rejected"
        case .appleAdsTokens: "Apple Ads tokens resolved"
        case .runs: "finished ingest and prune runs"
        }
    }

    /// The kinds walked by UTC day received (their progress is kept), in the order `prune` takes
    /// them: rows first, then the raw bytes of what stays.
    package var isByDay: Bool {
        switch self {
        case .quarantine, .test, .development, .unclaimed, .raw: true
        case .deliveries, .appleAdsTokens, .runs: false
        }
    }
}
