import Foundation
import PostbackKit
import PostgresNIO

/// Ingest and `serve`'s receipts on PostgreSQL, its own: a transaction's postbacks, sightings,
/// conflicts and quarantine as one multi-row array insert per table (`unnest`), retried whole.
extension PostgresStore {
    package func withIngestSession<Result>(
        _ body: (any IngestSession) async throws -> Result
    ) async throws -> Result {
        try await lend(PostgresIngestSession(store: self), to: body)
    }

    /// The transaction's statements: the new postbacks (first copy of each key, sorted by key
    /// so that concurrent writers take the unique index's locks in one order and cannot
    /// deadlock), the stored rows of every copy, the sightings and conflicts, the quarantine.
    ///
    /// - Parameter attempt: kept across the attempts of one transaction: the server's ids of
    ///   the earlier attempts, one of whose COMMIT may have committed unanswered (the
    ///   connection broke): a retry that meets that attempt's rows counts them stored, not as
    ///   copies.
    static func write(
        _ writes: PendingWrites,
        _ connection: PostgresConnection,
        logger: Logger,
        outcomes: inout [ReceiptOutcome],
        attempt: inout WriteAttempt
    ) async throws -> IngestSummary {
        let earlierAttempts = attempt.transactionIDs
        var counts = IngestSummary()
        counts.read = writes.read
        /// A valid copy of a postback `prune` removed: a duplicate, on its day's intake.
        func countCopyOfPruned(_ copy: PendingWrites.Candidate) async throws {
            counts.countCopyOfPruned()
            if copy.request != nil { outcomes[copy.entry] = CopyComparison.ofPruned.outcome }
            try await connection.send(
                PostgresSQL.query(RetentionSQL.countCopyOfPruned(receivedAt: copy.receivedAt)),
                logger: logger
            )
        }

        // 1. The first copy of each key in input order claims it.
        var firstOfKey: [[UInt8]: Int] = [:]
        var claims: [Int] = []
        for (index, candidate) in writes.candidates.enumerated() where firstOfKey[candidate.dedupKey] == nil {
            firstOfKey[candidate.dedupKey] = index
            claims.append(index)
        }
        claims.sort { writes.candidates[$0].dedupKey.lexicographicallyPrecedes(writes.candidates[$1].dedupKey) }
        var inserted = Set<[UInt8]>()
        if !claims.isEmpty {
            let rows = try await connection.send(insertPostbacks(claims.map { writes.candidates[$0] }), logger: logger)
            for try await (key, transaction) in rows.decode((ByteBuffer, String).self) {
                inserted.insert(Array(key.readableBytesView))
                attempt.transactionIDs.insert(transaction)
            }
        }

        // 1b. A key `prune` kept (its postback removed) is taken: a row just inserted under it is
        // removed again, and every copy with it is a duplicate. Checked by a statement after the
        // insert, so with a snapshot that sees a prune that committed while the insert waited on
        // its row: one statement more a transaction (a read of `pruned_keys` by its key; the delete
        // only when it found one).
        let pruned = try await prunedKeys(among: inserted, connection, logger: logger)
        if !pruned.isEmpty {
            var taken = PostgresArrayColumn(.bytea, capacity: pruned.count)
            for key in pruned { taken.append(bytes: key) }
            var binds = PostgresBindings()
            binds.append(taken)
            try await connection.send(
                PostgresQuery(unsafeSQL: "DELETE FROM postbacks WHERE dedup_key = ANY($1)", binds: binds),
                logger: logger
            )
            inserted.subtract(pruned)
        }

        // 2. Every other copy is a duplicate of the stored postback with its key.
        var copies: [Int] = []
        for (index, candidate) in writes.candidates.enumerated() {
            if pruned.contains(candidate.dedupKey) {
                try await countCopyOfPruned(candidate)
                continue
            }
            if firstOfKey[candidate.dedupKey] == index && inserted.contains(candidate.dedupKey) {
                counts.countAccepted(candidate.result)
                if candidate.request != nil { outcomes[candidate.entry] = .stored }
            } else {
                copies.append(index)
            }
        }
        var stored: [[UInt8]: StoredPostback] = [:]
        if !copies.isEmpty {
            var keys = PostgresArrayColumn(.bytea, capacity: copies.count)
            for key in Set(copies.map { writes.candidates[$0].dedupKey }) { keys.append(bytes: key) }
            var binds = PostgresBindings()
            binds.append(keys)
            let rows = try await connection.send(
                PostgresQuery(unsafeSQL: selectStored, binds: binds),
                logger: logger
            )
            for try await row in rows {
                let postback = try StoredPostback(row)
                stored[postback.dedupKey] = postback
            }
        }
        // A copy whose stored postback `prune` removed since the insert conflicted with it: its
        // key is in `pruned_keys` now (read by a statement of its own, so with a later snapshot).
        let prunedMeanwhile = try await prunedKeys(
            among: Set(copies.map { writes.candidates[$0].dedupKey }.filter { stored[$0] == nil }),
            connection,
            logger: logger
        )
        var refused = writes.refused
        var sightings = SightingColumns()
        for index in copies {
            let copy = writes.candidates[index]
            if prunedMeanwhile.contains(copy.dedupKey) {
                try await countCopyOfPruned(copy)
                continue
            }
            guard let original = stored[copy.dedupKey] else {
                // Unreachable: our insert of this key conflicted with a committed row, or waited
                // for the transaction holding it, which committed; and no prune removed it.
                throw PostgresStoreError(
                    store: "",
                    action: "store postbacks",
                    detail: "the stored postback a copy conflicted with is not visible"
                )
            }
            let decision = original.decide(
                copy: copy.columns,
                kind: copy.kind,
                keySpace: copy.keySpace,
                values: (copy.fine, copy.coarse, copy.country),
                digest: copy.digest,
                source: copy.source,
                sourceIndex: copy.location.index
            )
            if case .digestCollision(let storedID) = decision {
                refused.append(
                    PendingWrites.Refused(
                        location: copy.location,
                        size: copy.raw.count,
                        result: digestCollision(copy.result, storedID: storedID),
                        raw: copy.raw,
                        digest: copy.digest,
                        source: copy.source,
                        channel: copy.channel,
                        receivedAt: copy.receivedAt,
                        runID: copy.runID,
                        // A valid postback is kept whatever the quarantine budget says.
                        request: copy.request.map { request in
                            var overBudget = request
                            overBudget.mayQuarantine = true
                            return overBudget
                        },
                        entry: copy.entry
                    )
                )
                continue
            }
            // Inserted by an earlier attempt of this transaction, whose COMMIT committed but
            // whose answer was lost with the connection (a failover, a restart): stored, not a
            // copy (an attempt inserts only the first entry of each key). The ids of attempts
            // that rolled back match no row.
            if let insertedBy = original.insertedBy, earlierAttempts.contains(insertedBy),
                firstOfKey[copy.dedupKey] == index
            {
                counts.countAccepted(copy.result)
                if copy.request != nil { outcomes[copy.entry] = .stored }
                continue
            }
            switch decision {
            case .digestCollision: continue  // quarantined above
            case .stored(let comparison):
                counts.countCopy(comparison)
                if copy.request != nil { outcomes[copy.entry] = comparison.outcome }
            case .sighting(let comparison, let sameBytes):
                counts.countCopy(comparison)
                if copy.request != nil { outcomes[copy.entry] = comparison.outcome }
                sightings.append(copy, postbackID: original.id, sameBytes: sameBytes, comparison: comparison)
            }
        }
        if sightings.count > 0 {
            try await connection.send(sightings.insert, logger: logger)
        }

        // 3. Quarantine, each entry once per (source, position, bytes); an HTTP body once, its
        // repeats counted in `received_count`.
        let files = refused.filter { $0.request == nil }
        if !files.isEmpty {
            for entry in files { counts.countQuarantined(entry.result) }
            try await connection.send(insertQuarantine(files), logger: logger)
        }
        let received = refused.filter { $0.request != nil }
        if !received.isEmpty {
            try await quarantineReceived(received, connection, logger: logger, counts: &counts, outcomes: &outcomes)
        }
        return counts
    }

    /// Which of `keys` `pruned_keys` holds (none read when `keys` is empty).
    static func prunedKeys(
        among keys: Set<[UInt8]>,
        _ connection: PostgresConnection,
        logger: Logger
    ) async throws -> Set<[UInt8]> {
        guard !keys.isEmpty else { return [] }
        var column = PostgresArrayColumn(.bytea, capacity: keys.count)
        for key in keys { column.append(bytes: key) }
        var binds = PostgresBindings()
        binds.append(column)
        let rows = try await connection.send(
            PostgresQuery(unsafeSQL: "SELECT dedup_key FROM pruned_keys WHERE dedup_key = ANY($1)", binds: binds),
            logger: logger
        )
        var held = Set<[UInt8]>()
        for try await key in rows.decode(ByteBuffer.self) { held.insert(Array(key.readableBytesView)) }
        return held
    }

    static func insertPostbacks(_ rows: [PendingWrites.Candidate]) -> PostgresQuery {
        var columns = PostbackInsertColumns(capacity: rows.count)
        for row in rows { columns.append(row) }
        return columns.query
    }

    static let selectStored = """
        SELECT id, source, source_index, raw_sha256, fine_value, coarse_value, country_code,
            ad_network_id, transaction_id, postback_sequence_index, kind, key_space, dedup_key,
            \(SignedColumns.sqlColumns), xmin::text
        FROM postbacks WHERE dedup_key = ANY($1)
        """

}
