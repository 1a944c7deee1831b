import GRDB

/// A conversion model as stored: the current one for its app.
public struct StoredModel: Sendable {
    public var model: ConversionModel
    /// SHA-256 of the model's JSON text.
    public var sha256: String
    /// The file it was added from.
    public var source: String
    public var addedAt: String
}

/// What adding a model did.
public enum ModelAddOutcome: String, Sendable, Hashable {
    /// The app had no model.
    case added
    /// The app's model changed; the old one is kept with `replaced_at`.
    case replaced
    /// The same model was already current.
    case unchanged
}

/// The `conversion_models` table: one current model per app, every earlier one kept.
public struct ModelStore {
    public let queue: DatabaseQueue

    public init(queue: DatabaseQueue) {
        self.queue = queue
    }

    /// Stores `models` in one transaction; each replaces its app's current model if different.
    public func add(
        _ models: [(model: ConversionModel, source: String)]
    ) throws -> [(appID: Int64, outcome: ModelAddOutcome)] {
        let now = UTCInstant.now().iso8601
        return try queue.write { db in
            var outcomes: [(Int64, ModelAddOutcome)] = []
            for (model, source) in models {
                let sha = SHA256Digest(hashing: Array(model.json.utf8)).description
                let current = try String.fetchOne(
                    db,
                    sql: "SELECT model_sha256 FROM conversion_models WHERE app_id = ? AND replaced_at IS NULL",
                    arguments: [model.appID]
                )
                if current == sha {
                    outcomes.append((model.appID, .unchanged))
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
                outcomes.append((model.appID, current == nil ? .added : .replaced))
            }
            return outcomes
        }
    }

    /// The current models, by app id.
    public func current() throws -> [StoredModel] {
        try queue.read { db in try Self.current(db) }
    }

    /// The current model of `appID`, if any.
    public func current(appID: Int64) throws -> StoredModel? {
        try current().first { $0.model.appID == appID }
    }

    static func current(_ db: Database) throws -> [StoredModel] {
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
