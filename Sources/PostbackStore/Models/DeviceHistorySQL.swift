import PostbackKit
import Synchronization

/// The `conversion_value_devices` table, on both engines: per device, the events the
/// app-facing endpoint saw (``DeviceHistory``).
extension PostbackStorage {
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
        let prune = devicePrune.isDue(at: latest.milliseconds, every: DeviceHistory.pruneIntervalMilliseconds)
        // Durable when this returns, as `receive` (a store that receives flushes its commits).
        return try await withSQL("record conversion value calls", .write, retry: .answering) { sql in
            // Every device's stored row. PostgreSQL locks each one, making an empty one for a
            // new device (`DO UPDATE` locks it even as another server deletes or prunes it, and
            // returns it), so that another server recording the same device waits for this
            // transaction; SQLite's write transaction already excludes every other writer, so
            // it reads them, sparing each row a second write.
            var known: [DeviceKey: DeviceHistory?] = [:]
            for chunk in Self.chunks(keys, rowsOf: 4) {
                let read: SQLQuery
                switch sql.dialect {
                case .sqlite:
                    let rows = chunk.map { key -> SQLQuery in "(\(key.appID), \(key.device))" }
                    read = """
                        WITH k (app_id, device) AS (VALUES \(list: rows))
                        SELECT d.app_id, d.device, d.first_call_ms, d.last_call_ms, d.last_request, d.history
                        FROM k JOIN conversion_value_devices d ON d.app_id = k.app_id AND d.device = k.device
                        """
                case .postgres:
                    let rows = chunk.map { key -> SQLQuery in
                        "(\(key.appID), \(key.device), 0, 0, \([UInt8]()), '')"
                    }
                    read = """
                        INSERT INTO conversion_value_devices
                            (app_id, device, first_call_ms, last_call_ms, last_request, history)
                        VALUES \(list: rows)
                        ON CONFLICT (app_id, device) DO UPDATE SET app_id = excluded.app_id
                        RETURNING app_id, device, first_call_ms, last_call_ms, last_request, history
                        """
                }
                try await sql.forEachRow(read) { row in
                    // An empty row (just made) reads as no history.
                    known[DeviceKey(appID: try row.int64(0), device: try row.bytes(1))] = DeviceHistory(
                        storedJSON: try row.string(5),
                        firstCallAt: UTCInstant(milliseconds: try row.int64(2)),
                        lastCallAt: UTCInstant(milliseconds: try row.int64(3)),
                        lastRequest: try row.bytes(4)
                    )
                }
            }
            var histories: [DeviceHistory?] = []
            histories.reserveCapacity(calls.count)
            for call in calls {
                let key = DeviceKey(appID: call.appID, device: call.device)
                let history = DeviceHistory.recording(call, after: known[key] ?? nil)
                known[key] = history
                histories.append(history)
            }
            var kept: [(DeviceKey, DeviceHistory)] = []
            for key in keys {
                if case .some(.some(let history)) = known[key] {
                    kept.append((key, history))
                } else {
                    try await sql.execute(
                        "DELETE FROM conversion_value_devices WHERE app_id = \(key.appID) AND device = \(key.device)"
                    )
                }
            }
            for chunk in Self.chunks(kept, rowsOf: 6) {
                let rows = chunk.map { key, history -> SQLQuery in
                    """
                    (\(key.appID), \(key.device), \(history.firstCallAt.milliseconds),
                        \(history.lastCallAt.milliseconds), \(history.lastRequest), \(history.storedJSON))
                    """
                }
                try await sql.execute(
                    """
                    INSERT INTO conversion_value_devices
                        (app_id, device, first_call_ms, last_call_ms, last_request, history)
                    VALUES \(list: rows)
                    ON CONFLICT (app_id, device) DO UPDATE SET first_call_ms = excluded.first_call_ms,
                        last_call_ms = excluded.last_call_ms, last_request = excluded.last_request,
                        history = excluded.history
                    """
                )
            }
            if prune {
                // Bounded, so that a backlog never makes one commit long; the rest goes next
                // time. PostgreSQL skips rows another server holds: it never waits on them, so
                // two servers pruning at once cannot deadlock (SQLite has one writer).
                try await sql.execute(
                    """
                    DELETE FROM conversion_value_devices WHERE (app_id, device) IN (
                        SELECT app_id, device FROM conversion_value_devices
                        WHERE first_call_ms <= \(latest.milliseconds - DeviceHistory.retentionMilliseconds)
                        LIMIT \(raw: String(DeviceHistory.pruneBatch))
                        \(sqlite: "", postgres: "FOR UPDATE SKIP LOCKED"))
                    """
                )
            }
            return histories
        }
    }

    /// `rows` in pieces that one statement binds: `rowsOf` values a row, well within either
    /// engine's limit on a statement's parameters.
    static func chunks<Element>(_ rows: [Element], rowsOf values: Int) -> [ArraySlice<Element>] {
        let size = max(1, 30_000 / values)
        return stride(from: 0, to: rows.count, by: size).map { rows[$0..<min($0 + size, rows.count)] }
    }
}

/// A device of an app, as the device table keys it.
struct DeviceKey: Hashable {
    var appID: Int64
    var device: [UInt8]
}

/// When a store last deleted what its retention allows: such a clean-up is due at most once
/// an interval, per store.
package final class PruneSchedule: Sendable {
    private let last = Mutex<Int64>(0)

    package init() {}

    /// Whether a clean-up is due at `now` (milliseconds); if so, it counts as done then.
    func isDue(at now: Int64, every interval: Int64) -> Bool {
        last.withLock { last in
            guard now - last >= interval else { return false }
            last = now
            return true
        }
    }
}
