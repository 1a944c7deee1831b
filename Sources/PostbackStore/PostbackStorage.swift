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
    /// Writes one verified batch, in input order, into the open write transaction (beginning
    /// one if none is open), and returns the entries it quarantined.
    func write(_ verified: VerifiedBatch, context: BatchContext) async throws -> [QuarantinedEntry]

    /// Makes everything written since the last commit durable, and returns what it counted.
    func commit() async throws -> IngestSummary

    /// Drops everything written since the last commit that is not yet durable, and returns
    /// what stays: the counts of what the engine committed on its own since the last commit
    /// (PostgreSQL, to bound its memory; nothing on SQLite).
    @discardableResult
    func rollback() async -> IngestSummary
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
/// recording outcomes and reading the queue are written once.
package protocol AppleAdsTokenQueue: PostbackStorage {
    /// Closes every pending token past its 24 hours as `expired` (deleting the token) unless a
    /// request for it is in flight, then leases up to `limit` tokens, earliest due first, to
    /// `holder` until `leaseUntilMs`: those due by `dueByMs`, and those waiting for one of the
    /// quick retries of a 404 that are due by `nowMs` (`fetch --once` passes its start as
    /// `dueByMs`, so that a pass ends). Concurrent claims never return one token twice.
    /// Returns the leased tokens and how many expired.
    func claimAppleAdsTokens(
        limit: Int,
        nowMs: Int64,
        dueByMs: Int64,
        leaseUntilMs: Int64,
        holder: String
    )
        async throws -> (claimed: [AppleAdsClaim], expired: Int)
}

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

/// What a store is opened for.
package enum StoreAccess: Sendable {
    /// Ingest: a long-lived writer.
    case ingest
    /// `serve`: every commit flushed to disk before it returns.
    case receive
    /// Any other command.
    case standard
    /// `report`, `models list|show`, `check`: reads only. Nothing is created, migrated or
    /// written (an SQLite file is opened read-only, beside it too); a schema of another
    /// version is refused with a ``StoreFault``.
    case readOnly
}

/// Opens stores by location.
package enum PostbackStores {
    /// Opens the store at `location`, creating and migrating its schema when needed (unless
    /// `access` is ``StoreAccess/readOnly``), runs `body` with it, and closes it whatever
    /// happens. PostgreSQL's connection pool runs in a task of this scope (as PostgresNIO's
    /// `PostgresClient.run()` asks), ended when `body` returns.
    ///
    /// - Throws: ``StoreFault`` before `body` runs when the store cannot be used
    ///   (unreachable, authentication refused, not a postbackd store, a newer schema).
    package static func with<Result>(
        _ location: StoreLocation,
        access: StoreAccess = .standard,
        logger: Logger = Logger(label: "postbackd.store", factory: { _ in SwiftLogNoOpLogHandler() }),
        _ body: (any StoreEngine) async throws -> Result
    ) async throws -> Result {
        switch location {
        case .sqlite(let path):
            let store = try SQLiteStore(path: path, access: access)
            defer { store.close() }
            return try await body(store)
        case .postgres(let url):
            return try await PostgresStore.with(url, access: access, logger: logger, body)
        }
    }
}

/// The key space a stored postback claims its dedup key in.
///
/// Test-mode SKAdNetwork postbacks and AdAttributionKit development-key postbacks claim keys in
/// spaces of their own. Both can be made from a genuine postback by someone who relays it (a
/// `source-app-id` of 0 can be added to any postback signed without a source app, and any phone
/// in Developer Mode can sign a development postback with any identifier), so letting them
/// claim the production key would let a forgery suppress the genuine postback. They never
/// count as installs, so keeping them apart never counts anything twice.
enum KeySpace: String, Sendable, Hashable {
    case production, test, development

    init(_ result: VerificationResult) {
        self = result.development ? .development : result.testMode ? .test : .production
    }
}

/// What the writer needs to know about a batch beyond the verification results.
package struct BatchContext {
    package var runID: Int64
    package var rule: ReceivedTimeRule
    /// The name stored for a source: the canonical path (so that re-reading a file by
    /// another path adds nothing), `-` for standard input.
    package var storedSource: (String) -> String

    package init(runID: Int64, rule: ReceivedTimeRule, storedSource: @escaping (String) -> String) {
        self.runID = runID
        self.rule = rule
        self.storedSource = storedSource
    }
}

/// One entry a batch quarantined, for reporting.
package struct QuarantinedEntry: Sendable {
    package var location: EntryLocation
    package var result: VerificationResult
}

/// A conversion model as stored: one of its app's timeline (``ConversionModels``).
package struct StoredModel: Sendable {
    package var model: ConversionModel
    /// SHA-256 of the model's JSON text.
    package var sha256: String
    /// The file it was added from.
    package var source: String
    package var addedAt: String
    /// The app's bundle identifier, when recorded (`models add --bundle-id`).
    package var bundleID: String?
    /// When it is in force from; nil: from the beginning. The first model of a timeline is in
    /// force from the beginning whatever this says.
    package var effectiveFrom: UTCInstant?
    /// The postbacks it decodes.
    package var conversionType: ModelConversionType = .install

    /// As its timeline holds it.
    package var timelineModel: TimelineModel {
        TimelineModel(model, effectiveFrom: effectiveFrom, conversionType: conversionType)
    }
}

extension StoredModel {
    /// Whether `app` names this model's app: its App Store id, or its bundle identifier.
    package func matches(_ app: String) -> Bool {
        Int64(app) == model.appID || (bundleID != nil && app == bundleID)
    }
}

/// A bundle identifier recorded for another app already: `models add --bundle-id` stores
/// nothing then.
package struct BundleIDConflict: CodedError {
    package struct Code: Hashable, Sendable {
        fileprivate enum Value: Hashable { case taken }
        fileprivate let value: Value
        /// The bundle identifier names another app.
        package static let taken = Code(value: .taken)
    }

    package let code = Code.taken
    package var bundleID: String
    package var appID: Int64
    var otherAppID: Int64

    package var reason: String {
        "bundle identifier \(bundleID) belongs to app \(otherAppID) already; it cannot name app \(appID) too"
    }
}

/// What adding a model did.
package enum ModelAddOutcome: Sendable, Hashable {
    /// The app had no model of the conversion type: this one is in force from the beginning.
    case added
    /// A later model: in force from `effectiveFrom` until the next one's.
    case scheduled
    /// Another model was in force from the same time; it is kept with `replaced_at`, out of
    /// the timeline.
    case replaced
    /// The same model was already in force from that time (or, without a time, is the newest).
    case unchanged

    package var text: String {
        switch self {
        case .added: "added"
        case .scheduled: "added to the timeline"
        case .replaced: "replaced"
        case .unchanged: "unchanged"
        }
    }
}

/// When a model added to a timeline is in force from.
package enum ModelEffectiveTime: Sendable, Hashable {
    /// From the beginning: it takes the place of the timeline's first model.
    case beginning
    case at(UTCInstant)

    /// `beginning`, a day (its start, UTC) or an ISO 8601 instant.
    package init?(_ text: String) {
        if text == "beginning" {
            self = .beginning
        } else if let instant = UTCInstant(iso8601: text) {
            self = .at(instant)
        } else {
            return nil
        }
    }
}

/// What adding a model did, and which days received it changes.
package struct ModelAddResult: Sendable, Hashable {
    package var outcome: ModelAddOutcome
    package var effectiveFrom: UTCInstant?
    package var conversionType: ModelConversionType
    /// The first and last day received whose decoding (or `model_ambiguous` count) the model
    /// changes: every day when `everyDay`; from the beginning to `to` when `from` is nil; from
    /// `from` on when `to` is nil.
    package var everyDay = false
    package var from: UTCDay?
    package var to: UTCDay?
}

/// What a report sums: the period and the grouping.
package struct ReportQuery: Sendable, Hashable {
    package var from: UTCDay?
    package var to: UTCDay?
    package var dimensions: [AggregateDimension]
    /// One row per group and event instead of the count metrics.
    package var events: Bool
    /// Which day `from` and `to` bound: the day received (`date`) or the install date.
    package var dateBasis: DateBasis
    /// Only these apps (all when empty).
    package var appIDs: [Int64]
    /// Only these ad networks (all when empty).
    package var adNetworkIDs: [String]
    /// Read the detailed aggregate rows even when the totals hold the dimensions (for tests
    /// that compare the two).
    package var detailedRowsOnly = false
    /// Only the count metrics: no revenue, no tier shares (the dashboard's report by day,
    /// network and tier, which it sums; it reads revenue by day alone).
    var countsOnly = false
    /// The currency every amount is converted into (`report --currency`; the dashboard's
    /// spend panel): not the store's to read, but ``ReportRequest/read(_:)``'s to apply.
    package var currency: String?

    package init(
        from: UTCDay?,
        to: UTCDay?,
        by dimensions: [AggregateDimension],
        events: Bool,
        dateBasis: DateBasis = .received,
        appIDs: [Int64] = [],
        adNetworkIDs: [String] = []
    ) {
        self.from = from
        self.to = to
        self.dimensions = dimensions
        self.events = events
        self.dateBasis = dateBasis
        self.appIDs = appIDs
        self.adNetworkIDs = adNetworkIDs
    }
}

/// Which day a period's `--from` and `--to` bound.
package enum DateBasis: String, Sendable, Hashable, CaseIterable {
    /// The UTC day the postback was received (the `date` dimension).
    case received
    /// The UTC day of its estimated install (the `install_date` dimension).
    case install
}

/// A valid postback the store refused to count: its dedup-key digest equals that of a stored
/// postback with another key. Kept in quarantine so that nothing is lost.
func digestCollision(_ result: VerificationResult, storedID: Int64) -> VerificationResult {
    var refused = result
    refused.verdict = .unsupported
    refused.field = "dedup_key"
    refused.reason =
        "a valid postback whose dedup-key digest equals that of stored postback \(storedID) with another key; kept here so that nothing is lost (please report it)"
    return refused
}

extension IngestSummary {
    /// Counts one quarantined entry by its verdict.
    mutating func countQuarantined(_ result: VerificationResult) {
        quarantined += 1
        switch result.verdict {
        case .invalid: invalid += 1
        case .malformed: malformed += 1
        case .unsupported: unsupported += 1
        case .valid: malformed += 1  // a valid verdict always carries a postback
        }
    }

    /// Counts one newly stored postback.
    mutating func countAccepted(_ result: VerificationResult) {
        accepted += 1
        if result.testMode { testMode += 1 }
        if result.development { development += 1 }
    }
}

/// How big a quarantined entry was: the whole line or postback even when only a part was kept.
func quarantinedSize(_ entry: RawEntry, rawCount: Int) -> Int {
    switch entry.problem {
    case .postbackTooLarge(let total)?, .lineTooLong(let total)?: total
    default: rawCount
    }
}
