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

extension SQLStore {
    package func currentModels() async throws -> [StoredModel] {
        try await withSQL("read the models", .statement, retry: .repeated) { sql in
            try await sql.rows(ModelsSQL.current).map(ModelsSQL.stored)
        }
    }
}
