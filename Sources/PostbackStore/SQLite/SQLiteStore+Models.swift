import GRDB
import PostbackKit

/// The `conversion_models` table: one current model per app, every earlier one kept.
extension SQLiteStore {
    package func addModels(_ models: [(model: ConversionModel, source: String)]) throws -> [ModelAddOutcome] {
        let now = UTCInstant.now().iso8601
        return try queue.write { db in
            var outcomes: [ModelAddOutcome] = []
            for (model, source) in models {
                let sha = SHA256Digest(hashing: Array(model.json.utf8)).description
                let current = try String.fetchOne(
                    db,
                    sql: "SELECT model_sha256 FROM conversion_models WHERE app_id = ? AND replaced_at IS NULL",
                    arguments: [model.appID]
                )
                if current == sha {
                    outcomes.append(.unchanged)
                    continue
                }
                if current != nil {
                    try db.execute(
                        sql: "UPDATE conversion_models SET replaced_at = ? WHERE app_id = ? AND replaced_at IS NULL",
                        arguments: [now, model.appID]
                    )
                }
                try db.execute(
                    sql:
                        "INSERT INTO conversion_models (app_id, model, model_sha256, source, added_at) VALUES (?, ?, ?, ?, ?)",
                    arguments: [model.appID, model.json, sha, source, now]
                )
                outcomes.append(current == nil ? .added : .replaced)
            }
            return outcomes
        }
    }

    package func currentModels() throws -> [StoredModel] {
        try queue.read { db in try Self.currentModels(db) }
    }

    static func currentModels(_ db: Database) throws -> [StoredModel] {
        let rows = try Row.fetchAll(
            db,
            sql:
                "SELECT model, model_sha256, source, added_at FROM conversion_models WHERE replaced_at IS NULL ORDER BY app_id"
        )
        return try rows.map { row in
            let text: String = row["model"]
            return StoredModel(
                model: try ConversionModelParser.parse(Array(text.utf8)),
                sha256: row["model_sha256"],
                source: row["source"],
                addedAt: row["added_at"]
            )
        }
    }
}
