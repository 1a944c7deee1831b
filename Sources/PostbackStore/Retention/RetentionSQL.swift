import PostbackKit

/// The statements of retention, the same on both engines.
enum RetentionSQL {
    /// The condition on `postbacks` rows of a kind that removes rows.
    static func rowCondition(_ kind: RetentionKind) -> SQLQuery {
        switch kind {
        case .test: "key_space = 'test'"
        case .development: "key_space = 'development'"
        case .unclaimed: "key_space = 'production' AND NOT \(raw: AppsSQL.claimed)"
        default: "FALSE"
        }
    }

    /// A `postbacks` row with raw bytes to clear: its own, or a copy's that differ.
    static let holdsRaw: SQLQuery = """
        (length(raw) > 0 OR EXISTS (SELECT 1 FROM sightings s WHERE s.postback_id = postbacks.id AND length(s.raw) > 0))
        """

    /// The quarantine's UTC day received (indexed on both engines, as `postbacks`'s).
    static let receivedDay = SQLQuery.receivedDay

    /// A valid copy of a postback `prune` removed (its key kept): a duplicate on its day's intake,
    /// as a sighting would have been.
    static func countCopyOfPruned(receivedAt: UTCInstant) -> SQLQuery {
        addIntake(day: receivedAt.day, quarantined: 0, duplicates: 1, conflicts: 0)
    }

    /// Adds counts to the intake of pruned rows, which `aggregate` adds to what the store holds.
    static func addIntake(day: UTCDay, quarantined: Int, duplicates: Int, conflicts: Int) -> SQLQuery {
        """
        INSERT INTO pruned_intake (date, quarantined, duplicates, conflicts)
        VALUES (\(day), \(quarantined), \(duplicates), \(conflicts))
        ON CONFLICT (date) DO UPDATE SET quarantined = pruned_intake.quarantined + excluded.quarantined,
            duplicates = pruned_intake.duplicates + excluded.duplicates,
            conflicts = pruned_intake.conflicts + excluded.conflicts
        """
    }
}
