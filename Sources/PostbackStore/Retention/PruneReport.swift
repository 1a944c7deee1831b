import PostbackKit

/// A `prune` run's result.
package struct PruneReport: Sendable, Hashable {
    package var runID: Int64?
    package var dryRun: Bool
    /// The kinds with a retention, in ``RetentionKind`` order.
    package var kinds: [PrunedKind] = []
}
