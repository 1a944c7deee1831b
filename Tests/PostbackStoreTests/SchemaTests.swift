import Foundation
import GRDB
import PostbackKit
import PostbackStore
import PostbackTestSupport
import Testing

@Suite("Schema")
struct SchemaTests {
    @Test("postbacks are indexed by UTC day, and aggregate's query finds a day through that index")
    func receivedDayIndex() throws {
        let directory = try TemporaryDirectory()
        let queue = try PostbackDatabase.open(directory.path + "/schema.sqlite")
        try queue.read { db in
            let indexes = try String.fetchAll(
                db,
                sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'postbacks' ORDER BY name"
            )
            #expect(indexes.contains("postbacks_received_day"))
            #expect(!indexes.contains("postbacks_received_at"))
            let plan = try Row.fetchAll(
                db,
                sql: "EXPLAIN QUERY PLAN " + SQLiteStore.selectPostbacks,
                arguments: ["2026-11-21"]
            )
            .map { $0["detail"] as String? ?? "" }
            #expect(plan.contains { $0.contains("USING INDEX postbacks_received_day") }, "\(plan)")
        }
    }

    @Test("a version 2 database migrates to the day index and the dedup digest in two levels, and keeps its postbacks")
    func migratesFromVersion2() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/v2.sqlite"
        let old = try DatabaseQueue(path: path)
        var migrator = PostbackSchema.migrator
        try migrator.migrate(old, upTo: "v2: conversion models and daily aggregates")
        try old.write { db in
            try db.execute(
                sql: """
                    INSERT INTO ingest_runs (started_at, status, inputs, postbackd_version) VALUES ('2026-11-21T00:00:00.000Z', 'completed', '[]', 'test');
                    INSERT INTO postbacks (kind, key_space, ad_network_id, transaction_id, postback_sequence_index, app_id,
                        test_mode, development, key_name, received_at, received_at_source, raw, raw_sha256, source,
                        source_index, source_line, run_id)
                    VALUES ('skan', 'production', 'example.skadnetwork', 't1', 0, 1, 0, 0, 'k', '2026-11-21T08:00:00.000Z',
                        'option', x'00', x'00', 'f', 0, 1, 1);
                    """
            )
        }
        try old.close()
        migrator = PostbackSchema.migrator
        let queue = try PostbackDatabase.open(path)
        let (applied, found, digest, indexes, levels) = try queue.read { db in
            (
                try migrator.appliedMigrations(db).count,
                try Int.fetchOne(
                    db,
                    sql: "SELECT COUNT(*) FROM postbacks WHERE substr(received_at, 1, 10) = '2026-11-21'"
                ),
                try Data.fetchOne(db, sql: "SELECT dedup_key FROM postbacks"),
                try String.fetchAll(
                    db,
                    sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'postbacks'"
                ),
                try Row.fetchAll(
                    db,
                    sql: """
                        SELECT 'settled', dedup_key, postback_id FROM dedup_settled
                        UNION ALL SELECT 'recent', dedup_key, postback_id FROM dedup_recent
                        """
                ).map { row -> String in
                    "\(row[0] as String) \((row[1] as Data).map { String(format: "%02x", $0) }.joined()) \(row[2] as Int64)"
                }
            )
        }
        #expect(applied == PostbackSchema.migrator.migrations.count)
        #expect(found == 1)
        // The postback stored before the digest existed got one, so its copies are still duplicates.
        let expected = DedupKeyDigest.digest(
            kind: "skan",
            keySpace: "production",
            adNetworkID: "example.skadnetwork",
            transactionID: "t1",
            sequenceIndex: 0
        )
        #expect(digest == Data(expected))
        // v27 moved the key from v5's unique index into the settled level of dedup keys.
        let hex = expected.map { String(format: "%02x", $0) }.joined()
        #expect(levels == ["settled \(hex) 1"])
        #expect(!indexes.contains("postbacks_dedup_digest"))
        #expect(!indexes.contains("postbacks_dedup_key"))
    }

    @Test(
        "the inserts of a postback and of a quarantined entry check their constraints without an ephemeral table, and still refuse a value outside them"
    )
    func checksWithoutAList() throws {
        let directory = try TemporaryDirectory()
        let queue = try PostbackDatabase.open(directory.path + "/checks.sqlite")
        try queue.write { db in
            for sql in SQLiteStore.insertPostbacks + [SQLiteStore.insertQuarantine] {
                let parameters = [DatabaseValue](repeating: .null, count: sql.filter { $0 == "?" }.count)
                let opcodes = try Row.fetchAll(db, sql: "EXPLAIN " + sql, arguments: StatementArguments(parameters))
                    .map { $0["opcode"] as String? ?? "" }
                #expect(opcodes.contains("Insert"), "\(sql)")
                // SQLite checks `IN` with a list of three or more through a table it builds per row.
                #expect(!opcodes.contains("OpenEphemeral"), "\(sql)")
            }
            try db.execute(
                sql:
                    "INSERT INTO ingest_runs (started_at, status, inputs, postbackd_version) VALUES ('2026-11-21T00:00:00.000Z', 'completed', '[]', 'test')"
            )
            func insertPostback(keySpace: String) throws {
                try db.execute(
                    sql: """
                        INSERT INTO postbacks (kind, key_space, ad_network_id, transaction_id, postback_sequence_index, app_id,
                            test_mode, development, key_name, received_at, received_at_source, raw, raw_sha256, source,
                            source_index, source_line, run_id)
                        VALUES ('skan', ?, 'example.skadnetwork', ?, 0, 1, 0, 0, 'k', '2026-11-21T08:00:00.000Z',
                            'option', x'00', x'00', 'f', 0, 1, 1)
                        """,
                    arguments: [keySpace, keySpace]
                )
            }
            func insertQuarantine(verdict: String) throws {
                try db.execute(
                    sql: """
                        INSERT INTO quarantine (verdict, reason, raw, raw_size, raw_sha256, source, source_index, source_line,
                            received_at, run_id)
                        VALUES (?, 'r', x'00', 1, ?, 'f', 0, 1, '2026-11-21T08:00:00.000Z', 1)
                        """,
                    arguments: [verdict, Data(verdict.utf8)]
                )
            }
            for keySpace in ["production", "test", "development"] { try insertPostback(keySpace: keySpace) }
            for verdict in ["invalid", "malformed", "unsupported"] { try insertQuarantine(verdict: verdict) }
            let refusals = [
                #expect(throws: DatabaseError.self) { try insertPostback(keySpace: "staging") },
                #expect(throws: DatabaseError.self) { try insertQuarantine(verdict: "valid") },
            ]
            for refusal in refusals { #expect(refusal?.extendedResultCode == .SQLITE_CONSTRAINT_CHECK) }
            // The migration that edited the tables' SQL on this connection turned the edit off again.
            #expect(try Int.fetchOne(db, sql: "PRAGMA writable_schema") == 0)
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM postbacks") == 3)
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM quarantine") == 3)
        }
    }
}
