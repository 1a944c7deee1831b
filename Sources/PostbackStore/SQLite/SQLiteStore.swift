import Foundation
import GRDB
import PostbackKit
import Synchronization

/// The SQLite engine: one database file, opened in WAL mode so that several processes share it.
///
/// Ingest writes verified batches into one open transaction, many batches per commit. Dedup is
/// enforced by the database: a 128-bit digest of the dedup key (``DedupKeyDigest``) kept unique
/// over the two levels of ``DedupLevels``: the writer claims each new key in the recent level,
/// whose primary key refuses a key it holds, after looking in the settled level where its filter
/// (``DedupFilter``) says the key may be; ingest's claims wait to be written in key order, behind
/// a filter of the recent level (``RecentKeys``). Only a valid
/// postback ever reaches `postbacks`, so a forged copy can never claim a key before the genuine
/// one arrives.
///
/// Its own, beyond the statements written once for both engines: ingest's and `serve`'s writes
/// bind through SQLite's C API into cached statements (the ingest path's speed), as do
/// aggregate's reads and rows; claims rely on its one writer; an export cursor is a row id.
///
/// `Sendable`: its one connection (GRDB's `DatabaseQueue`) serializes every access, a
/// transaction of several holds it until it ends (``ConnectionTurn``), and what an ingest run
/// has not committed lives in its ``SQLiteIngestSession``, not here.
package final class SQLiteStore: StoreEngine {
    package let queue: DatabaseQueue
    package let location: StoreLocation
    package let devicePrune = PruneSchedule()
    /// Whose transaction the connection holds (``withSQL(_:_:retry:_:)``).
    let turn = ConnectionTurn()

    /// `serve`'s checkpoints, off the commit path.
    private let checkpointer: WALCheckpointer?
    /// When `serve`'s receipts last looked whether dedup keys need settling.
    let settleChecked = Mutex<ContinuousClock.Instant?>(nil)
    /// `serve`'s writer: each group of receipts is a write transaction it begins.
    let writer = Mutex(SQLiteWriter(sortingClaims: false))

    /// Opens (creating and migrating) the database at `path`.
    package init(path: String, access: StoreAccess = .standard) throws(DatabaseOpenError) {
        self.queue =
            access == .readOnly
            ? try PostbackDatabase.openReadOnly(path)
            : try PostbackDatabase.open(path, allowingOpenTransactions: access == .ingest)
        self.location = .sqlite(path: path)
        guard access == .receive || access == .ingest else {
            self.checkpointer = nil
            return
        }
        do {
            try queue.writeWithoutTransaction { db in
                try PostbackDatabase.setAutomaticCheckpoint(
                    db,
                    bytes: access == .ingest ? WALCheckpointer.ingestBackstopBytes : WALCheckpointer.backstopBytes
                )
                if access == .ingest { try Self.sizeCacheForIngest(db) }
            }
            self.checkpointer = try WALCheckpointer(path: path, restarting: access == .receive)
        } catch {
            throw DatabaseOpenError(.cannotOpen, "cannot open a second connection to \(path): \(error)")
        }
    }

    /// Ingest's page cache: 64 MiB, or room for the whole dedup index of a larger store (about
    /// 48 bytes a postback), at most 1 GiB. Every insert lands at a random leaf of that index;
    /// when the leaves a transaction touches do not fit in the cache, SQLite writes them out
    /// before the commit and again at it. Measured on 2 cores, 300,000 postbacks into a store
    /// of 19.4 M: 13.79 s with 64 MiB, 10.93 s with 1 GiB (BENCHMARKS.md). A store that size
    /// takes that memory while ingest runs; a small one does not. Measured with one index; since
    /// the keys are in two levels (``DedupLevels``), inserts land in the small recent level and
    /// the settled level is read where its filter says a key may be, so a smaller cache may do
    /// (not measured).
    static func sizeCacheForIngest(_ db: Database) throws {
        // A hint only: a store that cannot answer (damaged) fails at its first write, saying so.
        let postbacks = (try? lastPostbackID(db)) ?? 0
        let kibibytes = min(1 << 20, max(64 << 10, postbacks * 48 / 1024))
        try db.execute(sql: "PRAGMA cache_size = -\(kibibytes)")
    }

    /// The prepared batches that may wait for the writer, for a store of `storeSize` postbacks:
    /// one for each 65,536 postbacks, from the pipeline's 8 to 128 (32,768 postbacks, about 0.8 s
    /// of two cores' verifying) from a store of 8 M.
    ///
    /// Why: the writer pauses at each commit, writing the transaction's pages into the log, and
    /// as a transaction settles dedup keys (``SQLiteWriter/settleIfDue(_:threshold:)``): in a store of
    /// 20 M, 0.75 s, through which eight batches (50 ms) left the verifiers idle. In a new store
    /// the pauses are short and a deeper hand-off gained nothing but memory; a store of 8 M has
    /// a page cache of 384 MiB (``sizeCacheForIngest(_:)``) beside it. Measured on 2 cores with
    /// the settle as a transaction begins, in blocks of 300,000 into a store of 35–40 M: 7.55 s
    /// a run against 7.88 s with eight and the settle at the commit, the verifiers idle 0.8
    /// core-seconds less; a new store unchanged (docs/benchmarks/2026-11-29-writer-pauses.md).
    package static func ingestHandoffBatches(storeSize: Int64) -> Int {
        Int(min(128, max(Int64(VerificationPipeline.defaultHandoffBatches), storeSize / 65_536)))
    }

    /// Wraps a queue opened by ``PostbackDatabase/open(_:allowingOpenTransactions:)``.
    package init(queue: DatabaseQueue, path: String) {
        self.queue = queue
        self.location = .sqlite(path: path)
        self.checkpointer = nil
    }

    /// Stops the checkpointer; the connection closes with the queue.
    package func close() {
        checkpointer?.stop()
    }

    /// Ingest's session: its writes go into one transaction on the store's connection, open
    /// across batches (the store was opened for ``StoreAccess/ingest``).
    /// The recent level's filters (``RecentKeys``) are read for its first transaction on a
    /// connection of their own (``RecentKeysPreload``), while that transaction goes on.
    package func withIngestSession<Result>(
        _ body: (any IngestSession) async throws -> Result
    ) async throws -> Result {
        try await withIngestSession(preload: RecentKeysPreload(path: queue.path), body)
    }

    /// Ingest's session, its first transaction taking the recent level's filters from
    /// `preload`; nil: that transaction reads them as it begins. `settleThreshold`: the recent
    /// level's size, for a store's size, past which a transaction settles (tests lower it).
    package func withIngestSession<Result>(
        preload: RecentKeysPreload?,
        settleThreshold: @escaping @Sendable (Int64) -> Int64 = DedupLevels.threshold(storeSize:),
        _ body: (any IngestSession) async throws -> Result
    ) async throws -> Result {
        try await lend(
            SQLiteIngestSession(queue: queue, preload: preload, settleThreshold: settleThreshold),
            to: body
        )
    }

    package func checkWritable() throws {
        // Takes the write lock and lets it go: fails when another process holds it past the
        // busy timeout, or the file or its folder is read-only.
        try queue.inDatabase { db in
            try db.execute(sql: "BEGIN IMMEDIATE")
            try db.execute(sql: "ROLLBACK")
        }
    }
}
