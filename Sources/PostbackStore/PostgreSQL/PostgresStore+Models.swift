import PostbackKit
import PostgresNIO

extension PostgresStore {
    package func addModels(_ models: [(model: ConversionModel, source: String)]) async throws -> [ModelAddOutcome] {
        let now = UTCInstant.now().iso8601
        return try await transaction("store the models") { connection in
            // Two `models add` at once would both find no current model for an app.
            try await connection.send("SELECT pg_advisory_xact_lock(\(PostgresSchema.modelsLock))", logger: logger)
            var outcomes: [ModelAddOutcome] = []
            for (model, source) in models {
                let sha = SHA256Digest(hashing: Array(model.json.utf8)).description
                var current: String?
                for try await value in try await connection.send(
                    "SELECT model_sha256 FROM conversion_models WHERE app_id = \(model.appID) AND replaced_at IS NULL",
                    logger: logger
                ).decode(String.self) {
                    current = value
                }
                if current == sha {
                    outcomes.append(.unchanged)
                    continue
                }
                if current != nil {
                    try await connection.send(
                        """
                        UPDATE conversion_models SET replaced_at = \(now)::timestamptz
                        WHERE app_id = \(model.appID) AND replaced_at IS NULL
                        """,
                        logger: logger
                    )
                }
                try await connection.send(
                    """
                    INSERT INTO conversion_models (app_id, model, model_sha256, source, added_at)
                    VALUES (\(model.appID), \(model.json)::json, \(sha), \(source), \(now)::timestamptz)
                    """,
                    logger: logger
                )
                outcomes.append(current == nil ? .added : .replaced)
            }
            return outcomes
        }
    }

    package func currentModels() async throws -> [StoredModel] {
        try await transaction("read the models") { connection in
            try await Self.currentModels(connection, logger: logger)
        }
    }

    static func currentModels(_ connection: PostgresConnection, logger: Logger) async throws -> [StoredModel] {
        var models: [StoredModel] = []
        let rows = try await connection.send(
            """
            SELECT model::text, model_sha256, source, \(unescaped: isoText("added_at"))
            FROM conversion_models WHERE replaced_at IS NULL ORDER BY app_id
            """,
            logger: logger
        )
        for try await (text, sha, source, addedAt) in rows.decode((String, String, String, String).self) {
            models.append(
                StoredModel(
                    model: try ConversionModelParser.parse(Array(text.utf8)),
                    sha256: sha,
                    source: source,
                    addedAt: addedAt
                )
            )
        }
        return models
    }
}

/// A `timestamptz` column as postbackd's ISO 8601 text (`2026-11-21T08:00:00.000Z`), as SQLite
/// stores it.
func isoText(_ column: String) -> String {
    "to_char(\(column) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
}
