import Foundation
import GRDB
import PostbackKit

/// `serve`'s receipts on SQLite: a group of HTTP requests in one durable transaction.
extension SQLiteStore {
    package func receive(
        _ verified: VerifiedBatch,
        requests: [ReceivedRequest],
        runID: Int64
    ) throws -> [ReceiptOutcome] {
        // One transaction for the whole group, committed with `synchronous = FULL` (the store
        // was opened for `.receive`): durable when `write` returns.
        try queue.write { db in
            var writer = try self.writer.withLock { held in
                try held.begin(db)
                return held
            }
            var outcomes: [ReceiptOutcome] = []
            outcomes.reserveCapacity(requests.count)
            var counts = IngestSummary()
            var statements = StoreStatements()
            try verified.forEachReceivedEntry(requests) { item in
                let request = requests[item.index]
                /// - Parameter overBudget: quarantine even when the request may not (the budget
                ///   is spent): for a valid postback, which is always kept.
                func refuse(_ result: VerificationResult, overBudget: Bool = false) throws -> ReceiptOutcome {
                    guard request.mayQuarantine || overBudget else { return .dropped }
                    let size = quarantinedSize(item.entry, rawCount: item.raw.count)
                    let verdict = result.verdict == .valid ? Verdict.malformed : result.verdict
                    let count = try Int.fetchOne(
                        db,
                        sql: Self.upsertReceivedQuarantine,
                        arguments: [
                            verdict.rawValue, result.field, result.reason ?? "not a postback", result.kind?.rawValue,
                            result.identity.version, result.identity.adNetworkID, result.identity.transactionID,
                            Data(item.raw), size, Data(item.digest), item.source, item.entry.location.index,
                            item.entry.location.line, item.receivedAt.iso8601, runID, request.clientAddress,
                            request.requestID, item.channel.name,
                        ]
                    )
                    return .quarantined(newRow: count == 1)
                }
                guard let valid = item.valid else {
                    outcomes.append(try refuse(item.result))
                    return
                }
                let outcome = try Self.store(
                    db,
                    item,
                    valid,
                    runID: runID,
                    request: request,
                    writer: &writer,
                    counts: &counts,
                    statements: &statements
                )
                switch outcome {
                case .stored: outcomes.append(.stored)
                case .duplicate(let comparison): outcomes.append(comparison.outcome)
                case .digestCollision(let storedID):
                    outcomes.append(try refuse(digestCollision(item.result, storedID: storedID), overBudget: true))
                }
            }
            try settleIfDue(db)
            return outcomes
        }
    }

    /// Settles at most one range of dedup keys (``DedupLevels``) when the recent level has grown
    /// past its share, looked at once a second: a receipt's commit then waits for one range at
    /// most (a sixteenth of the settled level's leaves).
    private func settleIfDue(_ db: Database) throws {
        let now = ContinuousClock.now
        let due = settleChecked.withLock { checked in
            guard checked.map({ now - $0 >= .seconds(1) }) ?? true else { return false }
            checked = now
            return true
        }
        if due { try DedupLevels.settleIfDue(db, maxRanges: 1) }
    }
}
