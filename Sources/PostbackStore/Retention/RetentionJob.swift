import PostbackKit

/// `postbackd retention set|show` and `postbackd prune`: each opens the store, does its one
/// thing, and closes it.
package enum RetentionJob {
    /// Parses each `KIND=DAYS` (all of them before the store is opened), then sets them.
    ///
    /// - Throws: ``StoreError`` for a setting that cannot be used (nothing is set then), or
    ///   what opening or writing the store threw.
    package static func set(_ location: StoreLocation, _ settings: [String]) async throws -> [(RetentionKind, Int?)] {
        var parsed: [(RetentionKind, Int?)] = []
        for setting in settings { parsed.append(try RetentionKind.setting(setting)) }
        let chosen = parsed
        try await PostbackStores.with(location) { store in try await store.setRetention(chosen) }
        return chosen
    }

    /// Every kind's retention, in ``RetentionKind`` order.
    package static func rules(_ location: StoreLocation) async throws -> [RetentionRule] {
        try await PostbackStores.with(location, access: .readOnly) { store in try await store.retentionRules() }
    }

    /// Applies the retention (``PostbackStorage/prune(dryRun:full:batch:now:afterBatch:progress:)``),
    /// `progress` called after each kind.
    package static func prune(
        _ location: StoreLocation,
        dryRun: Bool,
        full: Bool,
        batch: Int,
        progress: (PrunedKind) -> Void
    ) async throws -> PruneReport {
        try await PostbackStores.with(location) { store in
            try await store.prune(dryRun: dryRun, full: full, batch: batch, progress: progress)
        }
    }
}
