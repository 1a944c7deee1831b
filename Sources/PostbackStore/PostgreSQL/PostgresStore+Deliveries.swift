import Logging
import PostbackKit
import PostgresNIO

/// `postbackd forward` on PostgreSQL. Discovery reads through the export cursor (transaction
/// ids, so rows committed out of id order are never skipped); claims take rows with `FOR
/// UPDATE SKIP LOCKED`, so several forward processes share the work without waiting on each
/// other or leasing one delivery twice.
extension PostgresStore {
    package func discoverDeliveries(_ route: DeliveryRoute, nowMs: Int64) async throws -> (added: Int, more: Bool) {
        let logger = self.logger
        // READ COMMITTED: each statement sees what committed before it, so the bound is taken
        // after the list of other databases' transactions, and the insert sees every row below
        // the bound (their transactions had all ended when the bound was taken).
        return try await transaction("discover deliveries to \(route.destination)") { connection in
            // One discoverer per destination at a time; the others wait, then read its cursor.
            try await connection.send(
                "SELECT pg_advisory_xact_lock(hashtextextended(\("postbackd " + route.consumer), 0))",
                logger: logger
            )
            let sql = PostgresSQL(connection: connection, logger: logger)
            let position = try await sql.row(ExportCursorsSQL.select(consumer: route.consumer, table: .postbacks))?
                .string(0)
            let after = try Self.exportPosition(position.map(ExportCursor.init))
            let foreign = try await Self.foreignTransactions(connection, logger: logger)
            let bound = try await Self.snapshotBound(connection, after: after, excluding: foreign, logger: logger)
            // Nothing committed since: no write (this runs twice a second under --follow).
            if bound == after && position != nil { return (0, false) }
            var added = 0
            let rows = try await connection.send(
                """
                WITH added AS (
                    INSERT INTO deliveries (destination, postback_id, state, attempts, discovered_ms, next_attempt_ms)
                    SELECT \(route.destination), id, 'pending', 0, \(nowMs), \(nowMs) FROM postbacks
                    WHERE stored_xid >= \(after)::xid8 AND stored_xid < \(bound)::xid8
                        AND (\(route.appIDs)::bigint[] IS NULL OR app_id = ANY(\(route.appIDs)::bigint[]))
                        AND (\(route.adNetworkIDs)::text[] IS NULL OR ad_network_id = ANY(\(route.adNetworkIDs)::text[]))
                        AND (\(route.kinds)::text[] IS NULL OR kind = ANY(\(route.kinds)::text[]))
                        AND key_space = ANY(\(route.keySpaces)::text[])
                        AND \(unescaped: AppsSQL.claimed)
                    ON CONFLICT DO NOTHING
                    RETURNING 1)
                SELECT count(*) FROM added
                """,
                logger: logger
            )
            for try await count in rows.decode(Int64.self) { added = Int(count) }
            try await sql.execute(
                ExportCursorsSQL.save(ExportCursor("postgres:" + bound), consumer: route.consumer, table: .postbacks)
            )
            return (added, false)
        }
    }

    package func claimDeliveries(
        destination: String,
        limit: Int,
        nowMs: Int64,
        leaseUntilMs: Int64,
        holder: String
    )
        async throws -> [ClaimedDelivery]
    {
        let logger = self.logger
        let columns = ExportTable.postbacks.columns
        let select = Self.exportSelectList(columns, prefix: "p.")
        return try await transaction("claim deliveries to \(destination)", oneStatement: true) { connection in
            var claimed: [ClaimedDelivery] = []
            // One statement: the lease, and the postbacks' columns (nil for one no longer stored).
            // The rows are picked once, in a materialized CTE: as `IN (subquery)` the planner
            // may run the locking subquery again and again, locking thousands of rows. The update
            // finds them by the locked versions' `ctid`s, one TID scan each, a plan that does not
            // depend on the statistics: joined by key (or by `ctid = ANY(…)` with the key beside
            // it), a destination discovered in bulk since the last ANALYZE, estimated at one row,
            // was scanned whole for every claim, 30 to 250 ms each. A row updated by another
            // transaction since the statement's snapshot is not updated (its new version is not
            // visible here) and so not claimed: it is not lost, only left for the next claim.
            // A claim lost in a crash of the server only lets its deliveries be claimed again, so
            // it commits without waiting for the flush (`set_config` local to the statement's
            // own transaction).
            let rows = try await connection.send(
                PostgresQuery(
                    unsafeSQL: """
                        WITH picked AS MATERIALIZED (
                            SELECT ctid FROM deliveries
                            WHERE destination = $3 AND state = 'pending' AND next_attempt_ms <= $4
                                AND lease_until_ms <= $4
                            ORDER BY next_attempt_ms LIMIT $5
                            FOR UPDATE SKIP LOCKED),
                        c AS (
                            UPDATE deliveries d SET leased_by = $1, lease_until_ms = $2
                            FROM picked WHERE d.ctid = picked.ctid
                            RETURNING d.postback_id, d.attempts, d.first_attempt_ms)
                        SELECT c.postback_id, c.attempts::bigint, c.first_attempt_ms, p.id IS NOT NULL, \(select)
                        FROM c CROSS JOIN (SELECT set_config('synchronous_commit', 'off', true)) AS asynchronous
                            LEFT JOIN postbacks p ON p.id = c.postback_id
                        ORDER BY c.postback_id
                        """,
                    binds: {
                        var binds = PostgresBindings()
                        binds.append(holder)
                        binds.append(leaseUntilMs)
                        binds.append(destination)
                        binds.append(nowMs)
                        binds.append(Int64(limit))
                        return binds
                    }()
                ),
                logger: logger
            )
            for try await row in rows {
                let cells = row.makeRandomAccess()
                let stored = try cells[3].decode(Bool.self)
                claimed.append(
                    ClaimedDelivery(
                        postbackID: try cells[0].decode(Int64.self),
                        attempts: Int(try cells[1].decode(Int64.self)),
                        firstAttemptMs: try cells[2].decode(Int64?.self),
                        row: stored ? try Self.exportRow(row, columns, from: 4) : nil
                    )
                )
            }
            return claimed
        }
    }
}
