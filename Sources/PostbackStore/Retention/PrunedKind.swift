import PostbackKit

/// What a `prune` removed (or, dry, would remove) of one kind.
package struct PrunedKind: Sendable, Hashable {
    package var kind: RetentionKind
    /// Rows removed (`raw`: postbacks whose bytes were cleared; `apple-ads-tokens`: tokens
    /// removed or cleared).
    package var rows = 0
    /// Sightings (copies) removed with their postbacks, or whose bytes were cleared.
    package var sightings = 0
    /// What was removed: rows received before this day (kinds by day), or finished before this
    /// instant.
    package var before: String
    /// Why the kind was not examined (`unclaimed` under `apps policy all`), if it was not.
    package var skipped: String?
}
