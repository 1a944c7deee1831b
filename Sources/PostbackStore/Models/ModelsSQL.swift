import PostbackKit

/// Reading the current conversion models, on both engines: `models list|show`, `serve`'s
/// reloads, export, forward, and aggregate (inside each engine's own transaction).
enum ModelsSQL {
    /// Each app's current model with its bundle identifier, by app.
    static let current: SQLQuery = """
        SELECT \(SQLQuery.jsonText("m.model")), m.model_sha256, m.source, \(SQLQuery.instantText("m.added_at")), b.bundle_id
        FROM conversion_models m LEFT JOIN app_bundles b ON b.app_id = m.app_id
        WHERE m.replaced_at IS NULL ORDER BY m.app_id
        """

    static func stored(_ row: SQLRow) throws -> StoredModel {
        StoredModel(
            model: try ConversionModelParser.parse(Array(try row.string(0).utf8)),
            sha256: try row.string(1),
            source: try row.string(2),
            addedAt: try row.string(3),
            bundleID: try row.optionalString(4)
        )
    }
}

extension PostbackStorage {
    package func addModels(
        _ models: [(model: ConversionModel, source: String)],
        bundleIDs: [Int64: String]
    ) async throws -> [ModelAddOutcome] {
        let now = UTCInstant.now()
        return try await withSQL("store the models", .write) { sql in
            // Two `models add` at once would both find no current model for an app.
            try await sql.lock(PostgresSchema.modelsLock)
            for (appID, bundleID) in bundleIDs.sorted(by: { $0.key < $1.key }) {
                if let other = try await sql.row(
                    "SELECT app_id FROM app_bundles WHERE bundle_id = \(bundleID) AND app_id <> \(appID)"
                ) {
                    throw BundleIDConflict(bundleID: bundleID, appID: appID, otherAppID: try other.int64(0))
                }
                try await sql.execute(
                    """
                    INSERT INTO app_bundles (app_id, bundle_id, added_at) VALUES (\(appID), \(bundleID), \(now))
                    ON CONFLICT (app_id) DO UPDATE SET bundle_id = excluded.bundle_id, added_at = excluded.added_at
                    WHERE app_bundles.bundle_id <> excluded.bundle_id
                    """
                )
            }
            var outcomes: [ModelAddOutcome] = []
            for (model, source) in models {
                let sha = SHA256Digest(hashing: Array(model.json.utf8)).description
                let current = try await sql.row(
                    "SELECT model_sha256 FROM conversion_models WHERE app_id = \(model.appID) AND replaced_at IS NULL"
                )?.string(0)
                if current == sha {
                    outcomes.append(.unchanged)
                    continue
                }
                if current != nil {
                    try await sql.execute(
                        "UPDATE conversion_models SET replaced_at = \(now) WHERE app_id = \(model.appID) AND replaced_at IS NULL"
                    )
                }
                try await sql.execute(
                    """
                    INSERT INTO conversion_models (app_id, model, model_sha256, source, added_at)
                    VALUES (\(model.appID), \(model.json)\(sqlite: "", postgres: "::json"), \(sha), \(source), \(now))
                    """
                )
                outcomes.append(current == nil ? .added : .replaced)
            }
            return outcomes
        }
    }

    package func currentModels() async throws -> [StoredModel] {
        try await withSQL("read the models", .statement, retry: .repeated) { sql in
            try await sql.rows(ModelsSQL.current).map(ModelsSQL.stored)
        }
    }
}
