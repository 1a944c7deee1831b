import Foundation
import GRDB
import PostbackKit

/// `check`'s engine check on SQLite, its own: `PRAGMA integrity_check`, and the two levels of
/// dedup keys (``DedupLevels``), which stand in for a unique index and which `integrity_check`
/// does not know to be one.
extension SQLiteStore {
    package func checkEngine() throws -> EngineCheck {
        let name = "integrity_check"
        let (pages, levels) = try queue.read { db in
            (try String.fetchAll(db, sql: "PRAGMA \(name)(100)"), try Self.dedupLevelFaults(db))
        }
        let messages = (pages == ["ok"] ? [] : pages) + levels
        if messages.isEmpty { return EngineCheck(name: name, outcome: .sound, messages: []) }
        return EngineCheck(name: name, outcome: .problems, messages: messages)
    }

    /// What a unique index's check would find. Each level's key must be its postback's, under
    /// its id, and in one level only; then every postback has its key in a level exactly when
    /// the levels hold as many keys as there are postbacks (each key names a postback of its
    /// own). That reads each level's keys and their postbacks by id, not every postback's row
    /// (the table with its raw bytes: twice the time, 3 M postbacks here).
    static func dedupLevelFaults(_ db: Database) throws -> [String] {
        let faults = try String.fetchAll(db, sql: dedupLevelRows) + dedupFilterFaults(db)
        guard faults.isEmpty else { return faults }
        let (postbacks, keys) =
            try Row.fetchOne(db, sql: dedupLevelCounts).map { ($0[0] as Int64, $0[1] as Int64) } ?? (0, 0)
        guard postbacks != keys else { return [] }
        return [
            "\(postbacks - keys) postbacks rows have their dedup_key in neither dedup_recent nor dedup_settled (\(postbacks) rows, \(keys) keys in the two levels)"
        ]
    }

    /// Settled keys their range's filter (``DedupFilter``) does not hold: the writer would store
    /// a second postback of such a key without looking in the settled level.
    static func dedupFilterFaults(_ db: Database) throws -> [String] {
        var filter = DedupFilter()
        try filter.refresh(db, building: false)
        var faults: [String] = []
        let keys = SQLiteRowReader(try db.cachedStatement(sql: "SELECT dedup_key FROM dedup_settled")) { _ in }
        defer { keys.reset() }
        while try keys.next(db), faults.count < 100 {
            guard !keys.withBlob(0, filter.mayHold) else { continue }
            faults.append(
                "dedup_settled_filter: settled key \(hexString(keys.blob(0) ?? [])) is not in its range's filter"
            )
        }
        return faults
    }

    static let dedupLevelRows = """
        SELECT 'dedup_recent: key ' || hex(r.dedup_key) || ' is of postbacks row ' || r.postback_id || ', which does not hold it'
        FROM dedup_recent r
        WHERE NOT EXISTS (SELECT 1 FROM postbacks p WHERE p.id = r.postback_id AND p.dedup_key = r.dedup_key)
        UNION ALL
        SELECT 'dedup_settled: key ' || hex(s.dedup_key) || ' is of postbacks row ' || s.postback_id || ', which does not hold it'
        FROM dedup_settled s
        WHERE NOT EXISTS (SELECT 1 FROM postbacks p WHERE p.id = s.postback_id AND p.dedup_key = s.dedup_key)
        UNION ALL
        SELECT 'dedup key ' || hex(r.dedup_key) || ' is in both dedup_recent and dedup_settled'
        FROM dedup_recent r JOIN dedup_settled s ON s.dedup_key = r.dedup_key
        LIMIT 100
        """

    static let dedupLevelCounts = """
        SELECT (SELECT count(*) FROM postbacks), (SELECT count(*) FROM dedup_recent) + (SELECT count(*) FROM dedup_settled)
        """

}
