import Logging
import PostbackKit

/// The storage interface every job uses: few, coarse, batch-level operations, with an SQLite
/// engine (``SQLiteStore``) and a PostgreSQL engine (``PostgresStore``) behind it. The jobs do
/// not know which one they talk to; each engine does each operation its fastest way.
///
/// Every engine keeps the same guarantees:
/// - each postback is stored once under its dedup key, claimed only by a verified postback;
///   further copies become sightings (and conflicts when their unsigned values differ);
///   everything else is quarantined with its reason and bytes;
/// - every write is idempotent, so a run killed at any point and started again ends as one
///   clean run would;
/// - nothing is durable, or counted, before ``commit()`` returns;
/// - `aggregate` replaces its days' rows atomically: a concurrent report sees the old rows or
///   the new ones, never half of a run.
///
/// A store is used by one task at a time (the ingest writer, or one command).
package protocol PostbackStorage: AnyObject {
    /// Where the store is, as messages name it (a path, or a URL without its password).
    var location: StoreLocation { get }

    // MARK: Ingest

    /// Records the start of an ingest run and returns its id.
    func beginRun(inputs: [String], receivedAtOption: UTCInstant?, startedAt: UTCInstant) async throws -> Int64

    /// Records the end of a run with its counts.
    func finishRun(_ id: Int64, summary: IngestSummary, status: String, finishedAt: UTCInstant) async throws

    /// Writes one verified batch, in input order, into the open write transaction (beginning
    /// one if none is open), and returns the entries it quarantined.
    func write(_ verified: VerifiedBatch, context: BatchContext) async throws -> [QuarantinedEntry]

    /// Makes everything written since the last commit durable, and returns what it counted.
    func commit() async throws -> IngestSummary

    /// Drops everything written since the last commit.
    func rollback() async

    // MARK: Receiving over HTTP

    /// Stores postbacks received over HTTP (one entry per request, `requests` in the same
    /// order) in one transaction, durable when this returns (the commit is flushed to disk), and
    /// returns each one's outcome in order. A refused body whose request may not quarantine is
    /// not written (``ReceiptOutcome/dropped``). Throws, having stored nothing, when the store
    /// cannot commit.
    func receive(_ verified: VerifiedBatch, requests: [ReceivedRequest], runID: Int64) async throws -> [ReceiptOutcome]

    /// Throws unless the store accepts a write now.
    func checkWritable() async throws

    // MARK: Models

    /// Stores `models` in one transaction; each replaces its app's current model if different.
    /// `bundleIDs` records app bundle identifiers (by app id) in the same transaction.
    ///
    /// - Throws: ``BundleIDConflict`` (nothing stored) when a bundle identifier is another
    ///   app's.
    func addModels(
        _ models: [(model: ConversionModel, source: String)],
        bundleIDs: [Int64: String]
    ) async throws
        -> [ModelAddOutcome]

    /// The current model of every app, by app id.
    func currentModels() async throws -> [StoredModel]

    // MARK: Aggregates and reports

    /// Records calls of the app-facing conversion value endpoint, in order, in one transaction
    /// durable when this returns, and returns each device's history after its call (nil past
    /// 35 days after its first call: nothing is kept then). Each history is
    /// ``DeviceHistory/recording(_:after:)`` of the stored one, so a call retried adds
    /// nothing. Histories 35 days past their first call are deleted.
    func recordDeviceCalls(_ calls: [DeviceCall]) async throws -> [DeviceHistory?]

    /// Streams the selected rows to `row`, in the order they were stored, from one consistent
    /// snapshot, and returns the cursor after them: passed as the next selection's `after`,
    /// it selects exactly the rows this one could not see (committed meanwhile, or later),
    /// never one twice and never one skipped, however transactions interleaved. `row` may
    /// throw to stop. Not retried: a broken connection fails the export.
    func export(_ selection: ExportSelection, _ row: (ExportRow) throws -> Void) async throws -> ExportCursor

    /// Where `consumer`'s last export of `table` ended, if it has one.
    func exportCursor(consumer: String, table: ExportTable) async throws -> ExportCursor?

    /// Records where `consumer`'s export of `table` ended.
    func saveExportCursor(_ cursor: ExportCursor, consumer: String, table: ExportTable) async throws

    // MARK: Forwarding (see ``DeliveryState``)

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

    /// Records outcomes in one transaction, each only if `holder` still holds its lease (a
    /// lease that expired and was claimed again belongs to the new holder), and releases them.
    func recordDeliveries(_ outcomes: [DeliveryOutcome], holder: String) async throws

    /// When the next pending delivery to `destination` can be claimed (its due time, or its
    /// lease's end); nil when none is pending.
    func nextDeliveryDue(destination: String) async throws -> Int64?

    /// Each destination's deliveries by state.
    func deliveryStatus(destinations: [String]) async throws -> [DeliveryStatus]

    // MARK: Apple Ads (AdServices tokens; see ``AppleAdsExchangeRules``)

    /// Stores tokens in one transaction, durable when this returns; a token stored before
    /// (pending, or resolved: its SHA-256 is kept) is left as it is. A token obtained more
    /// than 24 hours before it was received (`receivedAtMs`, one per token) is stored as
    /// expired, without the token.
    func addAppleAdsTokens(_ tokens: [AppleAdsToken], receivedAtMs: [Int64]) async throws -> [AppleAdsAddOutcome]

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

    /// Records exchange outcomes in one transaction, durable when this returns, each only if
    /// `holder` still holds its lease; a resolved token is deleted (its SHA-256 is kept) and
    /// its record stored. Returns the ids of the tokens it recorded (the others' leases had
    /// passed to another holder, who sends them again).
    func recordAppleAdsOutcomes(_ outcomes: [AppleAdsOutcome], holder: String) async throws -> Set<Int64>

    /// When the next pending token can be claimed (its due time, or its lease's end); nil
    /// when none is pending.
    func nextAppleAdsTokenDue() async throws -> Int64?

    /// Tokens by state, and what waits.
    func appleAdsStatus() async throws -> AppleAdsStatus

    /// Counts the stored attribution records, as one consistent snapshot.
    func appleAdsReport(_ query: AppleAdsReportQuery) async throws -> AppleAdsReport

    // MARK: Campaign mappings (`campaigns add`, section 9 of the spec)

    /// Replaces, in one transaction, every mapping row of the networks `rows` name with
    /// `rows` (checked: no two of one network and prefix overlap), their `added_at` taken
    /// once the transaction holds the write lock. Returns what changed.
    func replaceCampaignMappings(_ rows: [CampaignMapping]) async throws -> CampaignMappingChange

    /// Every mapping row, by network, prefix and start of validity.
    func campaignMappings() async throws -> [StoredCampaignMapping]

    /// Recomputes the selected days' aggregate rows from the stored postbacks and the current
    /// models, replacing them atomically.
    func aggregate(_ selection: DaySelection, policy: RevenueEstimatePolicy) async throws -> AggregateSummary

    /// Sums the aggregate rows, as one consistent snapshot.
    func report(_ query: ReportQuery) async throws -> Report

    /// A warning when postbacks were ingested after the last aggregate run.
    func stalenessWarning() async throws -> String?

    /// The dashboard's series beyond the reports, as one snapshot: the fine-value histogram
    /// (`aggregate_fine_values`, for the query's period as received days, its apps and
    /// networks; only when `fineValues`) and the intake per day received
    /// (`aggregate_daily_intake`, every app and network).
    func dashboardSeries(_ query: ReportQuery, fineValues: Bool) async throws -> DashboardSeries

    /// The last day received (or install date) with aggregate rows, if any.
    func lastAggregatedDay(_ basis: DateBasis) async throws -> UTCDay?

    // MARK: Checking (`postbackd check`, see ``StoreCheck``)

    /// The engine's own check of pages and indexes: SQLite's `integrity_check` (or
    /// `quick_check`), PostgreSQL's `amcheck` where installed and permitted (else skipped).
    func checkEngine(quick: Bool) async throws -> EngineCheck

    /// How many rows each checked table holds, for progress.
    func checkRowCounts() async throws -> [CheckedTable: Int]

    /// Up to `limit` rows of `table` with ids above `after`, in id order.
    func checkRows(_ table: CheckedTable, after: Int64, limit: Int) async throws -> [CheckedRow]

    /// Sightings, conflicts and deliveries that point at no stored postback (or sighting), at
    /// most `limit`.
    func checkReferences(limit: Int) async throws -> [CheckFinding]

    /// Every day with `aggregate_daily` rows: its sums in each table and the postbacks stored
    /// for it.
    func checkAggregatedDays() async throws -> [AggregatedDayCounts]

    /// Ingest runs still marked `running`.
    func unfinishedRuns() async throws -> [UnfinishedRun]

    /// Releases connections; the store is not used after.
    func close() async
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
    /// happens.
    ///
    /// - Throws: ``StoreFault`` before `body` runs when the store cannot be used
    ///   (unreachable, authentication refused, not a postbackd store, a newer schema).
    package static func with<Result>(
        _ location: StoreLocation,
        access: StoreAccess = .standard,
        logger: Logger = Logger(label: "postbackd.store", factory: { _ in SwiftLogNoOpLogHandler() }),
        _ body: (any PostbackStorage) async throws -> Result
    ) async throws -> Result {
        let store: any PostbackStorage
        switch location {
        case .sqlite(let path):
            store = try SQLiteStore(path: path, access: access)
        case .postgres(let url):
            store = try await PostgresStore.open(url, access: access, logger: logger)
        }
        do {
            let result = try await body(store)
            await store.close()
            return result
        } catch {
            await store.close()
            throw error
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

/// A conversion model as stored: the current one for its app.
package struct StoredModel: Sendable {
    package var model: ConversionModel
    /// SHA-256 of the model's JSON text.
    package var sha256: String
    /// The file it was added from.
    package var source: String
    package var addedAt: String
    /// The app's bundle identifier, when recorded (`models add --bundle-id`).
    package var bundleID: String?
}

extension StoredModel {
    /// Whether `app` names this model's app: its App Store id, or its bundle identifier.
    package func matches(_ app: String) -> Bool {
        Int64(app) == model.appID || (bundleID != nil && app == bundleID)
    }
}

/// A bundle identifier recorded for another app already.
package struct BundleIDConflict: Error, CustomStringConvertible {
    package var bundleID: String
    package var appID: Int64
    var otherAppID: Int64
    package var description: String {
        "bundle identifier \(bundleID) belongs to app \(otherAppID) already; it cannot name app \(appID) too"
    }
}

/// What adding a model did.
package enum ModelAddOutcome: String, Sendable, Hashable {
    /// The app had no model.
    case added
    /// The app's model changed; the old one is kept with `replaced_at`.
    case replaced
    /// The same model was already current.
    case unchanged
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
