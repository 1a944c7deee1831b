import PostbackKit

/// What `prune-addresses` cleared, per table.
package struct ClearedAddresses: Sendable, Hashable {
    package var postbacks = 0
    package var sightings = 0
    package var quarantine = 0

    package var total: Int { postbacks + sightings + quarantine }
}

extension PostbackStorage {
    /// Clears the client address of every row of `postbacks`, `sightings` and `quarantine`
    /// received before `cutoff`, walking each table by id in ranges of `batch` rows, each range
    /// its own short transaction: `serve` and `ingest` keep writing meanwhile, and a run killed
    /// part way leaves what it cleared cleared (running it again finishes). `progress` gets the
    /// running counts after each range.
    package func clearClientAddresses(
        before cutoff: UTCInstant,
        batch: Int64 = 10_000,
        progress: (ClearedAddresses) -> Void = { _ in }
    ) async throws -> ClearedAddresses {
        var cleared = ClearedAddresses()
        for table in ["postbacks", "sightings", "quarantine"] {
            let bounds = try await withSQL("find rows with client addresses", .statement) { sql in
                try await sql.rows(
                    "SELECT MIN(id), MAX(id) FROM \(raw: table) WHERE client_address IS NOT NULL"
                ).first
            }
            guard let bounds, let low = try bounds.optionalInt64(0), let high = try bounds.optionalInt64(1) else {
                continue
            }
            var start = low
            while start <= high {
                let end = start + batch
                let count = try await withSQL("clear client addresses", .write) { sql in
                    try await sql.rows(
                        """
                        UPDATE \(raw: table) SET client_address = NULL
                        WHERE id >= \(start) AND id < \(end) AND client_address IS NOT NULL AND received_at < \(cutoff)
                        RETURNING 1
                        """
                    ).count
                }
                switch table {
                case "postbacks": cleared.postbacks += count
                case "sightings": cleared.sightings += count
                default: cleared.quarantine += count
                }
                progress(cleared)
                start = end
            }
        }
        return cleared
    }
}
