import Foundation
import GRDB
import PostbackKit

/// Ingest's writes on SQLite: one write transaction on the store's connection, open across
/// batches and committed by ``commit()``. One task owns it.
final class SQLiteIngestSession: IngestSession {
    private let queue: DatabaseQueue
    /// What the open write transaction has written, counted when it commits.
    private var uncommitted = IngestSummary()
    /// What the open write transaction began with.
    private var writer = SQLiteWriter(sortingClaims: true)
    /// The statements it steps, looked up once.
    private var statements = StoreStatements()
    /// The recent level's filters being read for the first transaction, until it takes them.
    private var preload: RecentKeysPreload?

    /// `preload`: the recent level's filters, being read from the store on another connection
    /// (nil: the first transaction reads them as it begins).
    init(queue: DatabaseQueue, preload: RecentKeysPreload? = nil) {
        self.queue = queue
        self.preload = preload
    }

    /// Writes one verified batch, in input order, into the open write transaction, beginning
    /// one if none is open, and returns the entries it quarantined.
    ///
    /// Nothing is durable, and nothing is counted in the run's summary, until ``commit()``.
    /// A transaction holds many batches: each commit rewrites every index page the transaction
    /// touched, and the dedup key's pages are touched at random, so fewer, larger commits write
    /// far less (a commit per 256-postback batch spent more time in the kernel than in SQLite).
    /// Only the batch being written is held in memory; SQLite spills what its cache cannot hold.
    func write(_ batch: PreparedBatch, context: BatchContext) throws -> [QuarantinedEntry] {
        var quarantined: [QuarantinedEntry] = []
        // A failed write leaves postbacks whose keys wait unwritten (``RecentKeys``): the
        // transaction can only be rolled back.
        try rollingBackOnError {
            try queue.writeWithoutTransaction { db in
                if !db.isInsideTransaction {
                    try db.beginTransaction(.immediate)
                    uncommitted = IngestSummary()
                    try writer.begin(db, recentFiltersComing: preload != nil)
                }
                if let read = preload?.ifEnded() {
                    preload = nil
                    try writer.adopt(read, db)
                }
                for item in batch.entries {
                    uncommitted.read += 1
                    func refuse(_ result: VerificationResult) throws {
                        try SQLiteStore.quarantine(db, item, result, runID: context.runID, statements: &statements)
                        uncommitted.countQuarantined(result)
                        quarantined.append(QuarantinedEntry(location: item.entry.location, result: result))
                    }
                    guard let valid = item.valid else {
                        try refuse(item.result)
                        continue
                    }
                    let outcome = try SQLiteStore.store(
                        db,
                        item,
                        valid,
                        runID: context.runID,
                        writer: &writer,
                        counts: &uncommitted,
                        statements: &statements
                    )
                    if case .digestCollision(let storedID) = outcome {
                        try refuse(digestCollision(item.result, storedID: storedID))
                    }
                }
            }
        }
        return quarantined
    }

    /// Commits the open write transaction, having written the claims that wait
    /// (``RecentKeys``) and settled dedup keys when the recent level has grown past its share of
    /// the store (``DedupLevels/settleIfDue(_:maxRanges:settled:)``), in the same transaction.
    func commit() throws -> IngestSummary {
        try rollingBackOnError {
            try queue.writeWithoutTransaction { db in
                guard db.isInsideTransaction else { return }
                if let preload {
                    // The filters go with the commit: every later transaction begins from them.
                    self.preload = nil
                    try writer.adopt(preload.wait(), db)
                }
                try writer.recent.flush(db, statement: try statements.statement(.claimRecentKey, db))
                try DedupLevels.settleIfDue(db) { writer.recent.settled(range: $0) }
                try writer.recent.committing(db, lastID: writer.nextID - 1)
                try db.commit()
            }
        }
        defer { uncommitted = IngestSummary() }
        return uncommitted
    }

    private func rollingBackOnError(_ body: () throws -> Void) throws {
        do {
            try body()
        } catch {
            rollback()
            throw error
        }
    }

    /// Rolls back the open write transaction, if any: after a failed write, so that the
    /// database holds only whole commits (a re-run writes the rest). Nothing was committed
    /// since the last commit, so nothing is counted.
    @discardableResult
    func rollback() -> IngestSummary {
        try? queue.writeWithoutTransaction { db in
            if db.isInsideTransaction { try db.rollback() }
        }
        writer.recent.forget()
        // The next transaction reads the filters as it begins.
        preload?.cancel()
        preload = nil
        uncommitted = IngestSummary()
        return IngestSummary()
    }
}
