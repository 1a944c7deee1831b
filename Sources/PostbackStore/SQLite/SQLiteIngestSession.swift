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
    /// Whether the open transaction has settled what was due (``SQLiteWriter/settleIfDue(_:threshold:)``).
    private var settled = false
    /// The recent level's size, for a store's size, past which a transaction settles.
    private let settleThreshold: @Sendable (Int64) -> Int64

    /// `preload`: the recent level's filters, being read from the store on another connection
    /// (nil: the first transaction reads them as it begins). `settleThreshold`: the recent
    /// level's size, for a store's size, past which a transaction settles.
    init(
        queue: DatabaseQueue,
        preload: RecentKeysPreload? = nil,
        settleThreshold: @escaping @Sendable (Int64) -> Int64 = DedupLevels.threshold(storeSize:)
    ) {
        self.queue = queue
        self.preload = preload
        self.settleThreshold = settleThreshold
        // A hint only, as the page cache's size is: a store that cannot answer fails at its
        // first write, saying so.
        handoffBatches = SQLiteStore.ingestHandoffBatches(storeSize: (try? queue.read(SQLiteStore.lastPostbackID)) ?? 0)
    }

    /// The prepared batches that may wait for this session (``SQLiteStore/ingestHandoffBatches(storeSize:)``).
    let handoffBatches: Int

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
                    settled = false
                }
                if let read = preload?.ifEnded() {
                    preload = nil
                    try writer.adopt(read, db)
                }
                // Once a transaction, first thing with the recent level's filters in hand.
                if !settled && preload == nil {
                    settled = true
                    try writer.settleIfDue(db, threshold: settleThreshold)
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
    /// (``RecentKeys``). Dedup keys were settled, where the recent level had grown past its share
    /// of the store, as the transaction began (``SQLiteWriter/settleIfDue(_:threshold:)``), or are here when
    /// it never had the recent level's filters in hand before.
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
                // Only a first transaction that ended before the filters came settles here.
                if !settled {
                    settled = true
                    try writer.settleIfDue(db, threshold: settleThreshold)
                }
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
