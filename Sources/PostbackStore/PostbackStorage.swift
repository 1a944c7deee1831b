import Logging
import PostbackKit

/// A store: the one interface every job reaches storage through, with an SQLite engine
/// (``SQLiteStore``) and a PostgreSQL engine (``PostgresStore``) behind it. The jobs do not know
/// which one they talk to.
///
/// Its concurrency is in its types, as GRDB's `DatabaseWriter` and PostgresNIO's
/// `PostgresClient`: a store is `Sendable` and lends one transaction at a time to a closure
/// (``withSQL(_:_:retry:_:)``), on which every operation that is the same statement on both
/// engines is written once (``SQLQuery``), in extensions beside its feature. What is genuinely
/// an engine's own is a requirement: ingest's writes, which hold a transaction open across
/// batches and so belong to one task (``withIngestSession(_:)``), `serve`'s receipts, and
/// `aggregate`'s reads. Small capability protocols refine it for the jobs that need more
/// (``DeliveryQueue``, ``AppleAdsTokenQueue``, ``ExportSource``, ``CheckableStore``).
///
/// Every engine keeps the same guarantees:
/// - each postback is stored once under its dedup key, claimed only by a verified postback;
///   further copies become sightings (and conflicts when their unsigned values differ);
///   everything else is quarantined with its reason and bytes;
/// - every write is idempotent, so a run killed at any point and started again ends as one
///   clean run would;
/// - nothing an ingest session writes is counted before its `commit()` or `rollback()` returns
///   the counts, and nothing is durable before `commit()` but what an engine commits on its own
///   to bound its memory (PostgreSQL, every 16,384 entries): `rollback()` drops the rest and
///   returns the counts of that part, so a session's counts always equal what the store holds;
/// - `aggregate` replaces its days' rows atomically: a concurrent report sees the old rows or
///   the new ones, never half of a run.
package protocol PostbackStorage: Sendable {
    /// Where the store is, as messages name it (a path, or a URL without its password).
    var location: StoreLocation { get }

    /// Runs `body` in one transaction of `access`, committed when it returns and rolled back
    /// when it throws; `what` names it in logs and errors. PostgreSQL retries a transaction
    /// broken off by a lost connection, as long as `retry` says.
    func withSQL<Result: Sendable>(
        _ what: String,
        _ access: SQLAccess,
        retry: SQLRetry,
        _ body: (any SQLDatabase) async throws -> Result
    ) async throws -> Result

    /// Runs `body` with an ingest session: one task's writes into a transaction held open
    /// across batches. What `body` did not commit is rolled back when it returns or throws.
    func withIngestSession<Result>(_ body: (any IngestSession) async throws -> Result) async throws -> Result

    /// Stores postbacks received over HTTP (one entry per request, `requests` in the same
    /// order) in one transaction, durable when this returns (the commit is flushed to disk), and
    /// returns each one's outcome in order. A refused body whose request may not quarantine is
    /// not written (``ReceiptOutcome/dropped``). Throws, having stored nothing, when the store
    /// cannot commit.
    func receive(_ verified: VerifiedBatch, requests: [ReceivedRequest], runID: Int64) async throws -> [ReceiptOutcome]

    /// Throws unless the store accepts a write now.
    func checkWritable() async throws

    /// Recomputes the selected days' aggregate rows from the stored postbacks and the current
    /// models, replacing them atomically.
    func aggregate(_ selection: DaySelection, policy: RevenueEstimatePolicy) async throws -> AggregateSummary

    /// When this store last deleted the device histories past their retention
    /// (``recordDeviceCalls(_:)``).
    var devicePrune: PruneSchedule { get }
}

/// A transaction in progress for ingest: batches written into it, many per commit. Not
/// `Sendable`: one task owns it (``PostbackStorage/withIngestSession(_:)``).
package protocol IngestSession: AnyObject {
    /// Writes one prepared batch, in input order, into the open write transaction (beginning
    /// one if none is open), and returns the entries it quarantined.
    func write(_ batch: PreparedBatch, context: BatchContext) async throws -> [QuarantinedEntry]

    /// Makes everything written since the last commit durable, and returns what it counted.
    func commit() async throws -> IngestSummary

    /// Drops everything written since the last commit that is not yet durable, and returns
    /// what stays: the counts of what the engine committed on its own since the last commit
    /// (PostgreSQL, to bound its memory; nothing on SQLite).
    @discardableResult
    func rollback() async -> IngestSummary

    /// Prepared batches that may wait for the writer (``VerificationPipeline``'s hand-off):
    /// enough for the verifiers to go on through the writer's longest pauses.
    var handoffBatches: Int { get }
}

extension IngestSession {
    package var handoffBatches: Int { VerificationPipeline.defaultHandoffBatches }
}

/// Runs `body` with `session`, then rolls back what it did not commit, whether it returned or
/// threw: each engine's ``PostbackStorage/withIngestSession(_:)``.
func lend<Result>(
    _ session: some IngestSession,
    to body: (any IngestSession) async throws -> Result
) async throws -> Result {
    do {
        let result = try await body(session)
        await session.rollback()
        return result
    } catch {
        await session.rollback()
        throw error
    }
}

/// A store that forwards: deliveries discovered per destination and leased to one sender at a
/// time (see ``DeliveryState``). Recording outcomes and reading the queue are written once.
package protocol DeliveryQueue: PostbackStorage {
    /// Adds a pending delivery for every postback `route` admits that was stored since its
    /// last discovery (its `forward:NAME` export cursor), and moves the cursor, in one
    /// transaction. Returns how many it added and whether more are waiting (a pass reads a
    /// bounded number of rows).
    func discoverDeliveries(_ route: DeliveryRoute, nowMs: Int64) async throws -> (added: Int, more: Bool)

    /// Leases up to `limit` pending deliveries to `destination` that are due and not leased,
    /// earliest due first, to `holder` until `leaseUntilMs`. Concurrent claims never return one
    /// delivery twice.
    func claimDeliveries(
        destination: String,
        limit: Int,
        nowMs: Int64,
        leaseUntilMs: Int64,
        holder: String
    ) async throws
        -> [ClaimedDelivery]
}

/// A store that exchanges Apple Ads tokens (see ``AppleAdsExchangeRules``). Adding tokens,
/// claiming them, recording outcomes and reading the queue are written once (AppleAdsSQL.swift).
package protocol AppleAdsTokenQueue: PostbackStorage {}

/// A store that exports its rows in the order they were stored (`export`, and `forward`'s
/// discovery). Its cursors are written once.
package protocol ExportSource: PostbackStorage {
    /// Streams the selected rows to `row`, in the order they were stored, from one consistent
    /// snapshot, and returns the cursor after them: passed as the next selection's `after`,
    /// it selects exactly the rows this one could not see (committed meanwhile, or later),
    /// never one twice and never one skipped, however transactions interleaved. `row` may
    /// throw to stop. Not retried: a broken connection fails the export.
    func export(_ selection: ExportSelection, _ row: (ExportRow) throws -> Void) async throws -> ExportCursor
}

/// A store that `postbackd check` can check (see ``CheckJob``). Its row reads are written
/// once.
package protocol CheckableStore: PostbackStorage {
    /// The engine's own check of pages and indexes: SQLite's `integrity_check`, PostgreSQL's
    /// `amcheck` where installed and permitted (else skipped).
    func checkEngine() async throws -> EngineCheck
}

/// A store with every capability: what ``PostbackStores/with(_:access:logger:_:)`` lends, and
/// each engine is.
package typealias StoreEngine = DeliveryQueue & AppleAdsTokenQueue & ExportSource & CheckableStore

extension PostbackStorage {
    /// ``withSQL(_:_:retry:_:)`` with the standard retry.
    package func withSQL<Result: Sendable>(
        _ what: String,
        _ access: SQLAccess,
        _ body: (any SQLDatabase) async throws -> Result
    ) async throws -> Result {
        try await withSQL(what, access, retry: .standard, body)
    }
}

extension IngestSession {
    /// Prepares `verified` here and writes it (``write(_:context:)``).
    package func write(_ verified: VerifiedBatch, context: BatchContext) async throws -> [QuarantinedEntry] {
        try await write(PreparedBatch(verified, context: context), context: context)
    }
}
