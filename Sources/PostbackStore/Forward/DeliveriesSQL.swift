import PostbackKit

/// What `forward` reads of its deliveries, on both engines. Discovering, claiming and recording
/// deliveries stay each engine's: PostgreSQL's claims use `FOR UPDATE SKIP LOCKED`, and its
/// discovery reads transaction ids (`xid8`), neither of which SQLite has.
extension SQLStore {
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
