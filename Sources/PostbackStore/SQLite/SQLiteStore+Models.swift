import Foundation
import GRDB
import PostbackKit

/// The `conversion_models` table: one current model per app, every earlier one kept.
extension SQLiteStore {
    package func addModels(
        _ models: [(model: ConversionModel, source: String)],
        bundleIDs: [Int64: String]
    ) throws -> [ModelAddOutcome] {
        let now = UTCInstant.now().iso8601
        return try queue.write { db in
            for (appID, bundleID) in bundleIDs.sorted(by: { $0.key < $1.key }) {
                if let other = try Int64.fetchOne(
                    db,
                    sql: "SELECT app_id FROM app_bundles WHERE bundle_id = ? AND app_id <> ?",
                    arguments: [bundleID, appID]
                ) {
                    throw BundleIDConflict(bundleID: bundleID, appID: appID, otherAppID: other)
                }
                try db.execute(
                    sql: """
                        INSERT INTO app_bundles (app_id, bundle_id, added_at) VALUES (?, ?, ?)
                        ON CONFLICT (app_id) DO UPDATE SET bundle_id = excluded.bundle_id, added_at = excluded.added_at
                        WHERE bundle_id <> excluded.bundle_id
                        """,
                    arguments: [appID, bundleID, now]
                )
            }
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

    static func currentModels(_ db: Database) throws -> [StoredModel] {
        try SQLiteSQL.rows(db, ModelsSQL.current).map(ModelsSQL.stored)
    }
}

/// The `conversion_value_devices` table: per device, the events the app-facing endpoint saw.
extension SQLiteStore {
    package func recordDeviceCalls(_ calls: [DeviceCall]) throws -> [DeviceHistory?] {
        guard let latest = calls.map(\.at).max() else { return [] }
        let prune = latest.milliseconds - lastDevicePrune >= DeviceHistory.pruneIntervalMilliseconds
        if prune { lastDevicePrune = latest.milliseconds }
        // Durable when `write` returns, as `receive`: the store was opened for `.receive`.
        return try queue.write { db in
            var known: [DeviceKey: DeviceHistory?] = [:]
            var histories: [DeviceHistory?] = []
            histories.reserveCapacity(calls.count)
            for call in calls {
                let key = DeviceKey(appID: call.appID, device: call.device)
                let previous: DeviceHistory?
                if let seen = known[key] {
                    previous = seen
                } else if let row = try Row.fetchOne(
                    db,
                    sql: """
                        SELECT first_call_ms, last_call_ms, last_request, history FROM conversion_value_devices
                        WHERE app_id = ? AND device = ?
                        """,
                    arguments: [call.appID, Data(call.device)]
                ) {
                    let request: Data = row["last_request"]
                    previous = DeviceHistory(
                        storedJSON: row["history"],
                        firstCallAt: UTCInstant(milliseconds: row["first_call_ms"]),
                        lastCallAt: UTCInstant(milliseconds: row["last_call_ms"]),
                        lastRequest: Array(request)
                    )
                } else {
                    previous = nil
                }
                let history = DeviceHistory.recording(call, after: previous)
                known[key] = history
                histories.append(history)
            }
            for (key, history) in known {
                if let history {
                    try db.execute(
                        sql: """
                            INSERT INTO conversion_value_devices
                                (app_id, device, first_call_ms, last_call_ms, last_request, history)
                            VALUES (?, ?, ?, ?, ?, ?)
                            ON CONFLICT (app_id, device) DO UPDATE SET first_call_ms = excluded.first_call_ms,
                                last_call_ms = excluded.last_call_ms, last_request = excluded.last_request,
                                history = excluded.history
                            """,
                        arguments: [
                            key.appID, Data(key.device), history.firstCallAt.milliseconds,
                            history.lastCallAt.milliseconds, Data(history.lastRequest), history.storedJSON,
                        ]
                    )
                } else {
                    try db.execute(
                        sql: "DELETE FROM conversion_value_devices WHERE app_id = ? AND device = ?",
                        arguments: [key.appID, Data(key.device)]
                    )
                }
            }
            if prune {
                // Bounded, so that a backlog never makes one commit long; the rest goes next time.
                try db.execute(
                    sql: """
                        DELETE FROM conversion_value_devices WHERE (app_id, device) IN (
                            SELECT app_id, device FROM conversion_value_devices WHERE first_call_ms <= ?
                            LIMIT \(DeviceHistory.pruneBatch))
                        """,
                    arguments: [latest.milliseconds - DeviceHistory.retentionMilliseconds]
                )
            }
            return histories
        }
    }
}

/// A device of an app, as the device table keys it.
struct DeviceKey: Hashable {
    var appID: Int64
    var device: [UInt8]
}
