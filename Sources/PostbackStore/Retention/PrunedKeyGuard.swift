import PostbackKit

/// Which new postbacks ingest and `serve` check against `pruned_keys`: those whose key `prune`
/// may have kept. Test-mode and development postbacks (a percent of the traffic) once the
/// table holds any key; production ones only once `unclaimed` has a retention (the only
/// production rows `prune` removes). The check costs SQLite a probe of the table per row (10%
/// of its store-only rate when every row paid it), so the bulk of the traffic does not pay it.
struct PrunedKeyGuard: Sendable, Hashable {
    var nonProduction = false
    var production = false

    func covers(_ keySpace: KeySpace) -> Bool {
        keySpace == .production ? production : nonProduction
    }

    /// One row: whether `pruned_keys` holds a key, whether `unclaimed` has a retention.
    static let read: SQLQuery = """
        SELECT EXISTS (SELECT 1 FROM pruned_keys), EXISTS (SELECT 1 FROM retention WHERE kind = 'unclaimed')
        """

    init(nonProduction: Bool = false, production: Bool = false) {
        self.nonProduction = nonProduction
        self.production = production
    }

    init(_ row: SQLRow) throws {
        let held = try row.bool(0)
        let unclaimed = try row.bool(1)
        self.init(nonProduction: held, production: held && unclaimed)
    }
}
