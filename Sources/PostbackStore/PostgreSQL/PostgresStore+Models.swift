import PostbackKit
import PostgresNIO

extension PostgresStore {
    static func currentModels(_ connection: PostgresConnection, logger: Logger) async throws -> [StoredModel] {
        try await PostgresSQL(connection: connection, logger: logger).rows(ModelsSQL.current).map(ModelsSQL.stored)
    }
}

/// The `conversion_value_devices` table: per device, the events the app-facing endpoint saw.
extension PostgresStore {
    package func recordDeviceCalls(_ calls: [DeviceCall]) async throws -> [DeviceHistory?] {
        guard let latest = calls.map(\.at).max() else { return [] }
        var keys: [DeviceKey] = []
        var seen: Set<DeviceKey> = []
        for call in calls {
            let key = DeviceKey(appID: call.appID, device: call.device)
            if seen.insert(key).inserted { keys.append(key) }
        }
        // Locked in one order, so that two servers' groups wait for each other, not deadlock.
        keys.sort { $0.appID != $1.appID ? $0.appID < $1.appID : $0.device.lexicographicallyPrecedes($1.device) }
        let logger = self.logger
        let prune = latest.milliseconds - lastDevicePrune >= DeviceHistory.pruneIntervalMilliseconds
        if prune { lastDevicePrune = latest.milliseconds }
        // A device waits for the answer: retried briefly, as `receive`.
        return try await transaction("record conversion value calls", retryingFor: Self.receiveRetrySeconds) {
            connection in
            // Every device's row, locked: an empty one made for a new device, the stored one
            // otherwise (`DO UPDATE` locks it even as another server deletes or prunes it, and
            // returns it). Another server recording the same device waits for this transaction.
            var apps = PostgresArrayColumn(.int8, capacity: keys.count)
            var devices = PostgresArrayColumn(.bytea, capacity: keys.count)
            for key in keys {
                apps.append(key.appID)
                devices.append(bytes: key.device)
            }
            let rows = try await connection.send(
                unnestInsert(
                    "INSERT INTO conversion_value_devices (app_id, device, first_call_ms, last_call_ms, last_request, history)",
                    [apps, devices],
                    columnsSuffix: ", 0::bigint, 0::bigint, ''::bytea, ''::text",
                    suffix: """
                        ON CONFLICT (app_id, device) DO UPDATE SET app_id = EXCLUDED.app_id
                        RETURNING app_id, device, first_call_ms, last_call_ms, last_request, history
                        """
                ),
                logger: logger
            )
            var known: [DeviceKey: DeviceHistory?] = [:]
            for try await (app, device, first, last, request, text) in rows.decode(
                (Int64, ByteBuffer, Int64, Int64, ByteBuffer, String).self
            ) {
                // An empty row (just made) reads as no history.
                known[DeviceKey(appID: app, device: Array(device.readableBytesView))] = DeviceHistory(
                    storedJSON: text,
                    firstCallAt: UTCInstant(milliseconds: first),
                    lastCallAt: UTCInstant(milliseconds: last),
                    lastRequest: Array(request.readableBytesView)
                )
            }
            var histories: [DeviceHistory?] = []
            histories.reserveCapacity(calls.count)
            for call in calls {
                let key = DeviceKey(appID: call.appID, device: call.device)
                let history = DeviceHistory.recording(call, after: known[key] ?? nil)
                known[key] = history
                histories.append(history)
            }
            var updateApps = PostgresArrayColumn(.int8, capacity: keys.count)
            var updateDevices = PostgresArrayColumn(.bytea, capacity: keys.count)
            var firsts = PostgresArrayColumn(.int8, capacity: keys.count)
            var lasts = PostgresArrayColumn(.int8, capacity: keys.count)
            var requests = PostgresArrayColumn(.bytea, capacity: keys.count)
            var texts = PostgresArrayColumn(.text, capacity: keys.count)
            var goneApps = PostgresArrayColumn(.int8)
            var goneDevices = PostgresArrayColumn(.bytea)
            for key in keys {
                if case .some(.some(let history)) = known[key] {
                    updateApps.append(key.appID)
                    updateDevices.append(bytes: key.device)
                    firsts.append(history.firstCallAt.milliseconds)
                    lasts.append(history.lastCallAt.milliseconds)
                    requests.append(bytes: history.lastRequest)
                    texts.append(history.storedJSON)
                } else {
                    goneApps.append(key.appID)
                    goneDevices.append(bytes: key.device)
                }
            }
            if updateApps.count > 0 {
                var binds = PostgresBindings(capacity: 6)
                for column in [updateApps, updateDevices, firsts, lasts, requests, texts] { binds.append(column) }
                try await connection.send(
                    PostgresQuery(
                        unsafeSQL: """
                            UPDATE conversion_value_devices d SET first_call_ms = u.first_call_ms,
                                last_call_ms = u.last_call_ms, last_request = u.last_request, history = u.history
                            FROM unnest($1::bigint[], $2::bytea[], $3::bigint[], $4::bigint[], $5::bytea[], $6::text[])
                                AS u (app_id, device, first_call_ms, last_call_ms, last_request, history)
                            WHERE d.app_id = u.app_id AND d.device = u.device
                            """,
                        binds: binds
                    ),
                    logger: logger
                )
            }
            if goneApps.count > 0 {
                var binds = PostgresBindings(capacity: 2)
                binds.append(goneApps)
                binds.append(goneDevices)
                try await connection.send(
                    PostgresQuery(
                        unsafeSQL: """
                            DELETE FROM conversion_value_devices d USING unnest($1::bigint[], $2::bytea[]) AS g (app_id, device)
                            WHERE d.app_id = g.app_id AND d.device = g.device
                            """,
                        binds: binds
                    ),
                    logger: logger
                )
            }
            if prune {
                // Bounded, and skipping rows another server holds: it never waits on them, so
                // two servers pruning at once cannot deadlock.
                try await connection.send(
                    """
                    DELETE FROM conversion_value_devices WHERE (app_id, device) IN (
                        SELECT app_id, device FROM conversion_value_devices
                        WHERE first_call_ms <= \(latest.milliseconds - DeviceHistory.retentionMilliseconds)
                        LIMIT \(Int64(DeviceHistory.pruneBatch)) FOR UPDATE SKIP LOCKED)
                    """,
                    logger: logger
                )
            }
            return histories
        }
    }
}

/// A `timestamptz` column as postbackd's ISO 8601 text (`2026-11-21T08:00:00.000Z`), as SQLite
/// stores it.
func isoText(_ column: String) -> String {
    "to_char(\(column) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
}
