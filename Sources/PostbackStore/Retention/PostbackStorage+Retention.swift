import PostbackKit

extension PostbackStorage {
    /// Every kind's retention, in ``RetentionKind`` order (a kind never set: kept forever).
    package func retentionRules() async throws -> [RetentionRule] {
        try await withSQL("read the retention", .statement) { sql in
            var stored: [RetentionKind: RetentionRule] = [:]
            let rows = try await sql.rows(
                "SELECT kind, days, \(SQLQuery.instantText("set_at")), \(SQLQuery.dayText("examined_before")) FROM retention"
            )
            for row in rows {
                guard let kind = RetentionKind(rawValue: try row.string(0)) else { continue }
                stored[kind] = RetentionRule(
                    kind: kind,
                    days: try row.optionalInt(1),
                    setAt: try row.optionalString(2),
                    examinedBefore: try row.optionalString(3).flatMap(UTCDay.init)
                )
            }
            return RetentionKind.allCases.map { stored[$0] ?? RetentionRule(kind: $0) }
        }
    }

    /// Sets each kind's retention (nil: kept forever), keeping its progress.
    package func setRetention(_ settings: [(RetentionKind, Int?)]) async throws {
        let now = UTCInstant.now()
        try await withSQL("set the retention", .write) { sql in
            for (kind, days) in settings {
                try await sql.execute(
                    """
                    INSERT INTO retention (kind, days, set_at) VALUES (\(kind.rawValue), \(days), \(now))
                    ON CONFLICT (kind) DO UPDATE SET days = excluded.days, set_at = excluded.set_at
                    """
                )
            }
        }
    }
}
