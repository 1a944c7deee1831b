import Foundation
import PostbackKit
import PostgresNIO

/// `serve`'s receipts on PostgreSQL: a group of HTTP requests as one transaction of ingest's
/// writes (``PostgresStore/write(_:_:logger:outcomes:attempt:)``), retried briefly.
extension PostgresStore {
    package func receive(
        _ verified: VerifiedBatch,
        requests: [ReceivedRequest],
        runID: Int64
    ) async throws -> [ReceiptOutcome] {
        var writes = PendingWrites()
        writes.read = requests.count
        verified.forEachReceivedEntry(requests) { item in
            let request = requests[item.index]
            if let valid = item.valid {
                writes.candidates.append(PendingWrites.Candidate(item, valid, runID: runID, request: request))
            } else {
                writes.refused.append(PendingWrites.Refused(item, runID: runID, request: request))
            }
        }
        // A device waits for the answer: a broken-off transaction is retried briefly, then the
        // group is answered 503 and the devices retry later.
        var attempt = WriteAttempt()
        // Answered within the bound from the group's first arrival, even after waiting for the
        // commit before (one commit runs at a time).
        let deadline = Self.answerDeadline(arrivedAt: requests.map(\.receivedAt).min() ?? .now())
        return try await transaction(
            "store received postbacks",
            retryingFor: Self.receiveRetrySeconds,
            answerBy: deadline
        ) {
            connection in
            var outcomes = [ReceiptOutcome](repeating: .dropped, count: requests.count)
            _ = try await Self.write(writes, connection, logger: logger, outcomes: &outcomes, attempt: &attempt)
            return outcomes
        }
    }

    /// How long `receive` retries a transaction the server broke off.
    static let receiveRetrySeconds: Int64 = 5

    package func checkWritable() async throws {
        try await transaction("check that the database accepts writes", retryingFor: 0, answerBy: Self.answerDeadline())
        {
            connection -> Void in
            // A standby, or a database set read-only, refuses the lock a write would take.
            try await connection.send("LOCK TABLE postbacks IN ROW EXCLUSIVE MODE NOWAIT", logger: logger)
        }
    }

    /// Quarantines refused HTTP bodies (those whose request may), one row per distinct body,
    /// and records each one's outcome.
    static func quarantineReceived(
        _ refused: [PendingWrites.Refused],
        _ connection: PostgresConnection,
        logger: Logger,
        counts: inout IngestSummary,
        outcomes: inout [ReceiptOutcome]
    ) async throws {
        // One row per body in the statement (PostgreSQL refuses to update a row twice in one),
        // with how many times the group holds it.
        var groups: [[UInt8]: (first: Int, copies: Int)] = [:]
        var order: [[UInt8]] = []
        for (index, entry) in refused.enumerated() {
            guard entry.request?.mayQuarantine == true else {
                outcomes[entry.entry] = .dropped
                continue
            }
            counts.countQuarantined(entry.result)
            if let group = groups[entry.digest] {
                groups[entry.digest] = (group.first, group.copies + 1)
                outcomes[entry.entry] = .quarantined(newRow: false)
            } else {
                groups[entry.digest] = (index, 1)
                order.append(entry.digest)
            }
        }
        let firsts = order.compactMap { groups[$0] }
        guard !firsts.isEmpty else { return }
        let rows = try await connection.send(
            insertQuarantine(firsts.map { refused[$0.first] }, copies: firsts.map(\.copies)),
            logger: logger
        )
        var newRows = Set<[UInt8]>()
        for try await (digest, isNew) in rows.decode((ByteBuffer, Bool).self) where isNew {
            newRows.insert(Array(digest.readableBytesView))
        }
        for group in firsts {
            let entry = refused[group.first]
            outcomes[entry.entry] = .quarantined(newRow: newRows.contains(entry.digest))
        }
    }

}
