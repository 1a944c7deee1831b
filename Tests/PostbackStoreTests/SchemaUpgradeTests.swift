import Foundation
import GRDB
import Logging
import PostbackKit
import PostbackStore
import PostbackTestSupport
import Testing

/// Released migrations never change, and a store written by a release upgrades to exactly the
/// schema a new store gets, every row kept.
///
/// The fixtures in `Tests/Fixtures/upgrade/` were written by a release's own postbackd
/// (`scripts/make-upgrade-fixture.sh`): an SQLite file and a PostgreSQL dump with rows in every
/// table a user's commands fill.
@Suite("Schema upgrades")
struct SchemaUpgradeTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory("upgrade")
    }

    /// The releases whose stores are kept as fixtures.
    static let releases = ["release-2026-11-25"]

    @Test(
        "a token Apple answered attribution false for, stored as organic, is not_attributed after the upgrade",
        arguments: TestEngine.available
    )
    func notAttributed(_ engine: TestEngine) async throws {
        let store = try await TestStore.make(engine, in: directory)
        try await PostbackStores.with(store.location) { _ in }
        // The state as the release before wrote it, and its migration log without v17 / 13
        // (PostgreSQL applies those after the highest recorded: 14, the install ids, 15, the
        // costs, 16, the access keys and apps, 17, the retention, 18, the sightings' index
        // by day, 19, the pruned postbacks, 20, the channels, 21, the sightings' interaction
        // type and reconcile_daily, and 22, the claims, undone too).
        try await store.execute(
            """
            INSERT INTO apple_ads_tokens (token_sha256, app_id, obtained_ms, received_ms, state, due_ms)
            VALUES ('a', 1, 0, 0, 'organic', 0), ('b', 1, 0, 0, 'attributed', 0), ('c', 1, 0, 0, 'pending', 0)
            """
        )
        switch engine {
        case .sqlite:
            try await store.execute("DELETE FROM grdb_migrations WHERE identifier LIKE 'v17:%'")
        case .postgres:
            try await store.execute(
                "ALTER TABLE apple_ads_tokens DROP COLUMN install_id",
                "DROP TABLE costs, exchange_rates, access_keys, apps, settings, retention, pruned_keys, pruned_intake, prune_runs, pruned_postbacks",
                "DROP INDEX quarantine_received_day, sightings_received_day",
                "ALTER TABLE postbacks DROP COLUMN channel",
                "ALTER TABLE sightings DROP COLUMN channel",
                "ALTER TABLE quarantine DROP COLUMN channel",
                "ALTER TABLE sightings DROP COLUMN ad_interaction_type",
                "DROP TABLE reconcile_daily, reconcile_daily_totals, claims",
                "DELETE FROM postbackd_migrations WHERE version >= 13"
            )
        }
        try await PostbackStores.with(store.location) { _ in }
        let states = try await store.strings("SELECT token_sha256 || '|' || state FROM apple_ads_tokens")
        #expect(states.compactMap { $0 }.sorted() == ["a|not_attributed", "b|attributed", "c|pending"])
    }

    /// Each released SQLite migration's SHA-256 (of its SQL). A new migration adds a row; a
    /// changed row means a shipped migration was edited: write a new migration instead.
    static let sqliteMigrations: [(String, String)] = [
        (
            "v1: postbacks, sightings, conflicts, quarantine, ingest runs",
            "9892d76d3e4e43fcb06ee23ee7c99d1a8e2cab69d0adb53f6576b875d36d9f05"
        ),
        (
            "v2: conversion models and daily aggregates",
            "db9b4f34bf297c00ef81d3dcdb771d752537cdec2063b926e3bd30c01c66a901"
        ),
        (
            "v3: postbacks indexed by UTC day received",
            "d9b39dfc3f53a2b981dee5aada044e6f847652cd78595df8ae5a9b9f53262a81"
        ),
        (
            "v4: marketplace, re-engagements and development postbacks in aggregates",
            "21dfaee36cfe1597ed00673a7f7b67c010a8060ec75f827cb4b4f75084683869"
        ),
        ("v5: dedup key digest", "00491a18614269ca12f2d345e9e27cbe0db1c5f46d82afc831bfa9b9c5a6e6cf"),
        (
            "v6: HTTP client address, request id, quarantine repeats",
            "d274b10de0cf90be3491c85b45788326a57826871fe4c0bbff074d5715cdc408"
        ),
        (
            "v7: app bundle identifiers, conversion value devices",
            "b631d4370e71aec4acb79fe5d86661c9065b95a16c15dac11833fac7559a4dab"
        ),
        ("v8: export cursors", "dea8682226942ee5bcad055a38689fd0e21c2981ad44920af6c55bf98c1f6df4"),
        ("v9: deliveries", "9451a3ed8d298a80195afd417a6f1f39811c96d3856ea43555c72f44a196180b"),
        (
            "v10: Apple Ads tokens and attribution records",
            "b2e963ae1ce9222606999c9451ca4f1fe206a8d97bdf957bdbe9ea4dca524226"
        ),
        (
            "v11: install dates, crowd-anonymity tiers, campaign mappings",
            "9a1444b3147a91e4dd1dcbc3ea05c30a7aa7dc0b74bb5a538144d2a3c0fa3c48"
        ),
        ("v12: the dashboard's tables", "702eccf546fb5c306a6160819c2a147af34b14d26111f158599422032e0e5788"),
        ("v13: model timelines, model_ambiguous", "103f344b12ba2706e2fd947f462f0019987dfe9ddecca5d6c505dcf05ce9fe74"),
        ("v14: conflicts of signed content", "79823c0679de9676dce5ebe466e77ff5df7765b9cad382de3968414e6aac2561"),
        (
            "v15: conversion types, modeled null values",
            "4b1dd1023264103cd8d69445ec257006be9da0f02bf6dadbbef2d771ca29ac96"
        ),
        (
            "v16: the null model's reference groups",
            "347bbddc140409d2d8084c77b0a1046152e741a94db2e101153bd4f1a8512313"
        ),
        ("v17: Apple Ads not_attributed", "f1ce5bef38387e528b4f351b18f5cd65a3946e5aa1925a445c8ed44c77a5aca2"),
        ("v18: Apple Ads install ids", "f46900236326bc9f098a55b8d1daf9209749fd4f48deb8b3724dde5cd31dfb26"),
        ("v19: costs and exchange rates", "3c36efc2128c2fa57db85253f8a59aa80e4fecd71d4e4fd6860ae86dc2578616"),
        ("v20: access keys, apps", "96baca216031c8c4103649029eff538a89180b680276d39748de6daec82ef3e5"),
        ("v21: retention, pruned keys", "074caa6d7eef543a1ef57440259bb802998aa2076e40ef16ac56307ad52c777c"),
        ("v22: sightings by day received", "6c0fad9983d47eccfb6da761041e88e6a6ed7d5d780840a74e7d7785e9e77ed8"),
        (
            "v23: pruned postbacks' aggregated columns",
            "40f8ac1de24198078473916e0ef78df730a6aca90904f356da33327b477ca490"
        ),
        ("v24: channels", "bc7485cb4ac99982103a01a7ba81f3f5c8d6b41acd274d02cb5392cb16a77b3a"),
        (
            "v25: reconciliation",
            "b9c48553bff17c2bf9ed6fb8d86ea7513da3b333015fdbea611dac9174fe202d"
        ),
        ("v26: claims", "2ab549e3a541aa6ac1588f00f4f31ef03b27728fdbc21ebaafa43fdd373bbee7"),
        (
            "v27: dedup keys in two levels",
            "0329887abeb671e2ad4b4aa424871ee4959ad604d860b90b84df1c1bf3f4ad57"
        ),
        (
            "v28: CHECK constraints without a list",
            "69cefcf4e93e9a21451c4377d0e070646ddd066109df98e06e0287dfd423ad1b"
        ),
    ]

    /// Each released PostgreSQL migration's SHA-256 (of its statements joined by ";\n").
    static let postgresMigrations: [(Int, String)] = [
        (1, "89eb6d495901da681277488b615096d81db0b2c0656e11d4f15daeb5c1b94442"),
        (2, "8b9fbc2d1ad8db99e2ab8d9f0c2ed64dac9795945432007ff5101573d84ec180"),
        (3, "8f625da1ae9d4c094e3d1812e651e21a4ca4e0aa1cbffac38d8dc568e1f8766e"),
        (4, "dbc756d0d63843922f353d69ca1364f870f816f4d43ccdf824700e18e16de5cf"),
        (5, "3a4364b0431a166e7fdf17c7e69b303e9acee22eae1eb234e6844f8b7625e081"),
        (6, "c6b06750f22d778eb7f8b682032a4057f16b6eb7cfac7d8db1df685f1cf2204b"),
        (7, "4903fc7c685f36c931cc58332ee938da7d6801c8f358850e4931f68c42e976b9"),
        (8, "e7f9713870f6c0a834cd82a008834f22c2e36b9d117a712a8822772864589e31"),
        (9, "6b20cee9cbaacec65dc2780675d67622b2310e21f1a97a535fcc6d645be29766"),
        (10, "8e82aea84cc6f946a46a28b4fe98099d07eeebff714c90e0877769d75f5884f3"),
        (11, "9ba775e7f30f18a7d477eb9f815192c65679bbc54662ae08958faf361cfe4b63"),
        (12, "2c9fd0b9cf91415844eab60462e218d912a975d9a7af46f0f93b35b019be4f0c"),
        (13, "a0647a454b5182a5e671b343280bd2259bbbf1b765c1a96b8f83f4cf2e10e857"),
        (14, "43798e29525a2e57314155cd19ada2448fd5c304223729f56d31a628faba826c"),
        (15, "198f2d6a073fa232924f48069787de5ee69afa5208263423ac57034d3aed2508"),
        (16, "1bbbf99ef51a153ed169c252404066538ff756effb3c661a2f9b16d2975dce9d"),
        (17, "aa0bbc38432441b9d0be94d32169b628962e5410ac843497a12fdfc0e1413d65"),
        (18, "642efeb82da2b5b27c6bd683e55eab4b033f59ddb6ace7ad6b8c6247b009a4c0"),
        (19, "ce957a086bafddaae3bc37763ef8f802c7b6fb4392efa1525e8c9f6b656907d2"),
        (20, "5dd2ee0d0dd4ee57dc9ecd6b5127b461831700550dc9a2ef46adbe4de329cb4a"),
        (21, "5d7766160d2e009ce2a28e4eb4c5a03017834b9f052477f92b2345236d87969b"),
        (22, "9577d9f3c09792fba65a781a211376ec3355861de6ab8dc2b3fc3c379f69b708"),
    ]

    private static func sha256(_ text: String) -> String {
        hexString(SHA256Digest.hash(Array(text.utf8)))
    }

    @Test("every released migration is the SQL it shipped with, on both engines")
    func migrationsArePinned() {
        Self.expectPinned(
            "SQLite",
            PostbackSchema.migrations.map { ($0.identifier, Self.sha256($0.sql)) },
            released: Self.sqliteMigrations,
            table: "sqliteMigrations"
        )
        Self.expectPinned(
            "PostgreSQL",
            PostgresSchema.migrations.map { ("\($0.version)", Self.sha256($0.statements.joined(separator: ";\n"))) },
            released: Self.postgresMigrations.map { ("\($0.0)", $0.1) },
            table: "postgresMigrations"
        )
        // Versions count up from 1 with no gap: `postbackd_migrations` records them by number.
        #expect(PostgresSchema.migrations.map(\.version) == Array(1...PostgresSchema.migrations.count))
    }

    /// Each of `released` (name, SHA-256) is still, in its place, among `current`; and nothing
    /// more is, until its digest is added to the test's `table`.
    private static func expectPinned(
        _ engine: String,
        _ current: [(String, String)],
        released: [(String, String)],
        table: String
    ) {
        #expect(current.count >= released.count, "a released \(engine) migration was removed")
        for (index, (name, digest)) in released.enumerated() where index < current.count {
            #expect(current[index].0 == name, "\(engine) migration \(index + 1) was renamed or renumbered")
            #expect(current[index].1 == digest, "\(engine) migration \(name) was edited: add a new migration instead")
        }
        let added = current.dropFirst(released.count).map { "(\($0.0), \($0.1))" }
        #expect(added.isEmpty, "a new \(engine) migration: add its SHA-256 to SchemaUpgradeTests.\(table): \(added)")
    }

    // MARK: SQLite

    /// Every row of every table, each table's rows as sorted lines of its `columns`.
    private static func sqliteRows(_ path: String, columns: [String: [String]]) throws -> [String: [String]] {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read { db in
            var tables: [String: [String]] = [:]
            for (table, names) in columns {
                let select = names.map { "\"\($0)\"" }.joined(separator: ", ")
                tables[table] = try Row.fetchAll(db, sql: "SELECT \(select) FROM \"\(table)\"").map { row in
                    row.databaseValues.map { value in
                        switch value.storage {
                        case .blob(let data): "x'" + hexString(data) + "'"
                        default: value.description
                        }
                    }.joined(separator: "|")
                }.sorted()
            }
            return tables
        }
    }

    /// Each table's columns, in order.
    private static func sqliteColumns(_ path: String) throws -> [String: [String]] {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read { db in
            var columns: [String: [String]] = [:]
            let tables = try String.fetchAll(
                db,
                sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
            )
            for table in tables { columns[table] = try db.columns(in: table).map(\.name) }
            return columns
        }
    }

    /// The schema as SQLite keeps it: each table's, index's, view's and trigger's SQL, and
    /// the migrations applied.
    private static func sqliteSchema(_ path: String) throws -> [String] {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT type, name, tbl_name, sql FROM sqlite_master
                    WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name
                    """
            ).map { "\($0["type"] as String? ?? "") \($0["name"] as String? ?? ""): \($0["sql"] as String? ?? "")" }
                + (try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY identifier"))
        }
    }

    @Test(
        "an SQLite store of each release migrates to exactly a new store's schema, every row kept",
        .timeLimit(.minutes(20)),
        arguments: releases
    )
    func sqliteUpgrade(_ release: String) throws {
        let path = directory.path + "/\(release).sqlite"
        try FileManager.default.copyItem(
            atPath: Repository.path("Tests/Fixtures/upgrade/\(release).sqlite"),
            toPath: path
        )
        let columns = try Self.sqliteColumns(path)
        #expect(columns.count >= 30, "the fixture holds postbackd's tables: \(columns.keys.sorted())")
        let before = try Self.sqliteRows(path, columns: columns)
        let filled = before.filter { !$0.value.isEmpty }.keys
        for table in [
            "postbacks", "sightings", "conflicts", "quarantine", "conversion_models", "app_bundles",
            "aggregate_daily", "aggregate_dashboard_received", "campaign_mappings", "apple_ads_tokens",
            "export_cursors", "deliveries", "conversion_value_devices",
        ] {
            #expect(filled.contains(table), "the fixture has rows in \(table)")
        }

        try PostbackDatabase.open(path).close()

        // Every row kept; GRDB's migration log gains the migrations released since.
        let after = try Self.sqliteRows(path, columns: columns)
        #expect(after.filter { $0.key != "grdb_migrations" } == before.filter { $0.key != "grdb_migrations" })
        #expect(
            (after["grdb_migrations"] ?? []).count == PostbackSchema.migrations.count,
            "every migration recorded once"
        )
        #expect(Set(before["grdb_migrations"] ?? []).isSubset(of: Set(after["grdb_migrations"] ?? [])))
        let fresh = directory.path + "/new.sqlite"
        try PostbackDatabase.open(fresh).close()
        let upgraded = try Self.sqliteSchema(path)
        let new = try Self.sqliteSchema(fresh)
        #expect(upgraded == new, "\(Set(upgraded).symmetricDifference(new).sorted())")
    }

    // MARK: PostgreSQL

    private static let logger = Logger(label: "postbackd.tests", factory: { _ in SwiftLogNoOpLogHandler() })

    /// `pg_dump --schema-only` of the store, its comment lines left out.
    private func postgresSchema(_ store: TestStore) async throws -> String {
        let dump = try await Shell.run(
            "pg_dump --schema-only --no-owner --no-privileges \(Shell.quoted(store.argument))",
            in: directory.path
        )
        #expect(dump.status == 0, "\(dump.output)")
        return dump.output.split(separator: "\n", omittingEmptySubsequences: true)
            // Comments, and the random key of pg_dump's `\restrict` guard, differ from dump to dump.
            .filter { !$0.hasPrefix("--") && !$0.hasPrefix("\\restrict") && !$0.hasPrefix("\\unrestrict") }
            .joined(separator: "\n")
    }

    private static func postgresRows(_ store: TestStore, columns: [String: [String]]) async throws -> [String: [String]]
    {
        var tables: [String: [String]] = [:]
        for (table, names) in columns {
            tables[table] = try await store.rows(
                "SELECT " + names.map { "\"\($0)\"" }.joined(separator: ", ") + " FROM \"\(table)\""
            ).sorted()
        }
        return tables
    }

    private static func postgresColumns(_ store: TestStore) async throws -> [String: [String]] {
        var columns: [String: [String]] = [:]
        for line in try await store.rows(
            """
            SELECT table_name, column_name FROM information_schema.columns
            WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position
            """
        ) {
            // `(table,column)`, as PostgreSQL prints a row.
            let fields = line.dropFirst().dropLast().split(separator: ",", maxSplits: 1).map(String.init)
            guard fields.count == 2 else { continue }
            columns[fields[0], default: []].append(fields[1])
        }
        return columns
    }

    @Test(
        "a PostgreSQL dump of each release restored and opened migrates to exactly a new store's schema, every row kept",
        .enabled(if: TestEngine.postgresURL != nil, "\(TestEngine.skipNotice)"),
        .timeLimit(.minutes(20)),
        arguments: releases
    )
    func postgresUpgrade(_ release: String) async throws {
        let restored = try await TestStore.make(.postgres, in: directory, name: release)
        let load = try await Shell.run(
            "psql -X -q -v ON_ERROR_STOP=1 -d \(Shell.quoted(restored.argument)) -f "
                + Shell.quoted(Repository.path("Tests/Fixtures/upgrade/\(release).pgdump.sql")),
            in: directory.path
        )
        try #require(load.status == 0, "psql: \(load.output)")
        let columns = try await Self.postgresColumns(restored)
        #expect(columns.count >= 30, "the dump holds postbackd's tables: \(columns.keys.sorted())")
        let before = try await Self.postgresRows(restored, columns: columns)
        for table in [
            "postbacks", "sightings", "conflicts", "quarantine", "conversion_models", "app_bundles",
            "aggregate_daily", "aggregate_dashboard_received", "campaign_mappings", "apple_ads_tokens",
            "export_cursors", "deliveries", "conversion_value_devices",
        ] {
            #expect(before[table]?.isEmpty == false, "the dump has rows in \(table)")
        }

        guard case .postgres(let url) = restored.location else { return }
        try await PostgresStore.with(url, logger: Self.logger) { _ in }

        let after = try await Self.postgresRows(restored, columns: columns)
        #expect(after.filter { $0.key != "postbackd_migrations" } == before.filter { $0.key != "postbackd_migrations" })
        #expect(
            (after["postbackd_migrations"] ?? []).count == PostgresSchema.migrations.count,
            "every migration recorded once"
        )

        let fresh = try await TestStore.make(.postgres, in: directory, name: "new")
        guard case .postgres(let freshURL) = fresh.location else { return }
        try await PostgresStore.with(freshURL, logger: Self.logger) { _ in }
        let upgraded = try await postgresSchema(restored)
        let new = try await postgresSchema(fresh)
        let same = upgraded == new
        #expect(same, "the upgraded store's schema is a new store's")
        if upgraded != new {
            let difference = Set(upgraded.split(separator: "\n")).symmetricDifference(new.split(separator: "\n"))
            Issue.record("schema lines that differ: \(difference.sorted())")
        }
    }
}
