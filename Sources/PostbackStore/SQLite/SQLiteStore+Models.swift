import Foundation
import GRDB
import PostbackKit

/// The `conversion_models` table: one current model per app, every earlier one kept.
extension SQLiteStore {
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
