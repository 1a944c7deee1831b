import PostbackKit

/// What `forward` records and reads of its deliveries, on both engines. Discovering and
/// claiming deliveries stay each engine's: PostgreSQL's claims use `FOR UPDATE SKIP LOCKED`,
/// and its discovery reads transaction ids (`xid8`), neither of which SQLite has.
extension DeliveryQueue {
    package func recordDeliveries(_ outcomes: [DeliveryOutcome], holder: String) async throws {
        guard !outcomes.isEmpty else { return }
        try await withSQL("record deliveries", outcomes.count > Self.outcomesPerStatement ? .write : .statement) {
            sql in
            for start in stride(from: 0, to: outcomes.count, by: Self.outcomesPerStatement) {
                // No NULL in the list (PostgreSQL would not know a column's type if every row
                // had one): no status is 0, no answer ''.
                let rows = outcomes[start..<min(start + Self.outcomesPerStatement, outcomes.count)].map {
                    outcome -> SQLQuery in
                    """
                    (\(outcome.destination), \(outcome.postbackID), \(outcome.state.rawValue), \(outcome.attempts),
                        \(outcome.firstAttemptMs), \(outcome.lastAttemptMs), \(outcome.nextAttemptMs),
                        \(outcome.status ?? 0), \(outcome.answer ?? ""))
                    """
                }
                // Only the lease's holder records: a recorded delivery has no holder, so the
                // lease alone says it is still pending. (With `state = 'pending'` here too,
                // PostgreSQL's planner scans the partial index of every pending delivery
                // instead of the primary key.)
                try await sql.execute(
                    """
                    WITH o (destination, postback_id, state, attempts, first_attempt_ms, last_attempt_ms,
                        next_attempt_ms, last_status, last_answer) AS (VALUES \(list: rows))
                    UPDATE deliveries SET state = o.state, attempts = o.attempts, first_attempt_ms = o.first_attempt_ms,
                        last_attempt_ms = o.last_attempt_ms, next_attempt_ms = o.next_attempt_ms,
                        last_status = NULLIF(o.last_status, 0), last_answer = NULLIF(o.last_answer, ''),
                        leased_by = NULL, lease_until_ms = 0
                    FROM o
                    WHERE deliveries.destination = o.destination AND deliveries.postback_id = o.postback_id
                        AND deliveries.leased_by = \(holder)
                    """
                )
            }
        }
    }

    package func nextDeliveryDue(destination: String) async throws -> Int64? {
        try await withSQL("read the next delivery due", .statement) { sql in
            try await sql.row(
                """
                SELECT min(\(SQLQuery.greatest("next_attempt_ms", "lease_until_ms"))) FROM deliveries
                WHERE destination = \(destination) AND state = 'pending'
                """
            )?.optionalInt64(0)
        }
    }

    package func deliveryStatus(destinations: [String]) async throws -> [DeliveryStatus] {
        guard !destinations.isEmpty else { return [] }
        return try await withSQL("read the delivery status", .statement) { sql in
            var byName: [String: DeliveryStatus] = [:]
            let names = destinations.map { name -> SQLQuery in "\(name)" }
            for row in try await sql.rows(
                """
                SELECT destination, state, attempts > 0, count(*), min(discovered_ms) FROM deliveries
                WHERE destination IN (\(list: names))
                GROUP BY destination, state, attempts > 0
                """
            ) {
                let name = try row.string(0)
                var status = byName[name] ?? DeliveryStatus(destination: name)
                status.add(
                    state: try row.string(1),
                    attempted: try row.bool(2),
                    count: try row.int(3),
                    oldestDiscoveredMs: try row.optionalInt64(4)
                )
                byName[name] = status
            }
            return destinations.map { byName[$0] ?? DeliveryStatus(destination: $0) }
        }
    }
}

extension PostbackStorage {
    /// Outcomes recorded by one statement, at most: 9 values each, well within either engine's
    /// limit on a statement's parameters.
    static var outcomesPerStatement: Int { 1_000 }
}
