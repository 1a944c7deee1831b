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
        let entries = verified.batch.entries
        let results = verified.results
        precondition(requests.count == entries.count, "one request per entry")
        // One transaction for the whole group, committed with `synchronous = FULL` (the store
        // was opened for `.receive`): durable when `write` returns.
        return try queue.write { db in
            let prunedKeys = try Self.prunedKeyGuard(db)
            var outcomes: [ReceiptOutcome] = []
            outcomes.reserveCapacity(entries.count)
            var counts = IngestSummary()
            for index in entries.indices {
                let entry = entries[index]
                let request = requests[index]
                let raw = verified.batch.bytes[entry.range]
                let digest = verified.rawDigests[index]
                /// - Parameter overBudget: quarantine even when the request may not (the budget
                ///   is spent): for a valid postback, which is always kept.
                func refuse(_ result: VerificationResult, overBudget: Bool = false) throws -> ReceiptOutcome {
                    guard request.mayQuarantine || overBudget else { return .dropped }
                    let size = quarantinedSize(entry, rawCount: raw.count)
                    let verdict = result.verdict == .valid ? Verdict.malformed : result.verdict
                    let count = try Int.fetchOne(
                        db,
                        sql: Self.upsertReceivedQuarantine,
                        arguments: [
                            verdict.rawValue, result.field, result.reason ?? "not a postback", result.kind?.rawValue,
                            result.identity.version, result.identity.adNetworkID, result.identity.transactionID,
                            Data(raw), size, Data(digest), ReceivedRequest.source, entry.location.index,
                            entry.location.line, request.receivedAt.iso8601, runID, request.clientAddress,
                            request.requestID,
                        ]
                    )
                    return .quarantined(newRow: count == 1)
                }
                let result = results[index]
                guard result.verdict == .valid, let postback = result.postback else {
                    outcomes.append(try refuse(result))
                    continue
                }
                let outcome = try Self.store(
                    db,
                    postback,
                    result,
                    raw: raw,
                    digest: digest,
                    source: ReceivedRequest.source,
                    location: entry.location,
                    receivedAt: request.receivedAt,
                    receivedSource: .http,
                    runID: runID,
                    request: request,
                    prunedKeys: prunedKeys,
                    counts: &counts
                )
                switch outcome {
                case .stored: outcomes.append(.stored)
                case .duplicate(let comparison): outcomes.append(comparison.outcome)
                case .digestCollision(let storedID):
                    outcomes.append(try refuse(digestCollision(result, storedID: storedID), overBudget: true))
                }
            }
            return outcomes
        }
    }
}
