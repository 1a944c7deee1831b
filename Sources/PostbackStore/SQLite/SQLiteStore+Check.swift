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
            (try String.fetchAll(db, sql: "PRAGMA \(name)(100)"), try String.fetchAll(db, sql: Self.dedupLevelFaults))
        }
        let messages = (pages == ["ok"] ? [] : pages) + levels
        if messages.isEmpty { return EngineCheck(name: name, outcome: .sound, messages: []) }
        return EngineCheck(name: name, outcome: .problems, messages: messages)
    }

    /// What a unique index's check would find: a postback whose key neither level holds for it,
    /// a level's key whose postback does not hold it, a key in both levels.
    static let dedupLevelFaults = """
        SELECT 'postbacks row ' || p.id || ': its dedup_key is in neither dedup_recent nor dedup_settled'
        FROM postbacks p
        WHERE p.dedup_key IS NOT NULL
            AND NOT EXISTS (SELECT 1 FROM dedup_recent r WHERE r.dedup_key = p.dedup_key AND r.postback_id = p.id)
            AND NOT EXISTS (SELECT 1 FROM dedup_settled s WHERE s.dedup_key = p.dedup_key AND s.postback_id = p.id)
        UNION ALL
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

}
