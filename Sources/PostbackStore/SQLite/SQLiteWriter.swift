import GRDB

/// What ingest's and `serve`'s writes on SQLite read when a write transaction begins, and carry
/// through it: which keys `pruned_keys` may hold, the settled level's filter, the row id of the
/// next postback, and ingest's claims that wait with the recent level's filter (``RecentKeys``).
/// Ingest's session holds one for its run, `serve` one for the process (``SQLiteStore``'s
/// `writer`), each of its groups a transaction; both begin every write transaction with
/// ``begin(_:)``. The statements they step (``StoreStatements``) belong to the
/// connection, and go beside it.
struct SQLiteWriter: Sendable {
    /// Which inserts check `pruned_keys`. One writer: no prune commits inside the transaction.
    private(set) var prunedKeys = PrunedKeyGuard()
    /// The settled level's filter (``DedupFilter``), read again as each transaction begins (where
    /// another writer changed it) and after this writer's own settle.
    private(set) var filter = DedupFilter()
    /// The row id of the next postback stored: the id SQLite would choose (one past the
    /// largest), counted on by the one writer.
    var nextID: Int64 = 1
    /// Whether claims wait to be made in key order (``recent``): ingest's long transactions;
    /// `serve`'s groups are small, and claim each key at once.
    let sortsClaims: Bool
    /// The claims that wait, when ``sortsClaims``.
    var recent = RecentKeys()
    /// Whether this transaction claims each key at once, as `serve`'s do, although it
    /// ``sortsClaims``: ingest's first, until the recent level's filters, read on another
    /// connection, are taken (``adopt(_:_:)``).
    private(set) var claimsAtOnce = false

    init(sortingClaims: Bool) {
        sortsClaims = sortingClaims
    }

    /// Reads what a write transaction begins with, inside `db`'s open write transaction (the
    /// filter builds the ranges it lacks, as after an upgrade). `recentFiltersComing`: the recent
    /// level's filters are being read elsewhere (``RecentKeysPreload``), and claims are made at
    /// once until ``adopt(_:_:)`` takes them.
    mutating func begin(_ db: Database, recentFiltersComing: Bool = false) throws {
        prunedKeys = try SQLiteStore.prunedKeyGuard(db)
        try filter.refresh(db)
        nextID = try SQLiteStore.lastPostbackID(db) + 1
        claimsAtOnce = sortsClaims && recentFiltersComing
        if sortsClaims && !claimsAtOnce { try recent.begin(db) }
    }

    /// Takes the recent level's filters read elsewhere, inside `db`'s open write transaction, or
    /// reads them here when that read failed; claims wait to be made in key order from then on.
    mutating func adopt(_ preloaded: Result<RecentKeys.Preloaded, any Error>, _ db: Database) throws {
        try recent.adopt(try? preloaded.get(), db)
        claimsAtOnce = false
    }

    /// Ingest's settle (``DedupLevels/settleIfDue(_:maxRanges:threshold:settled:)``, past
    /// `threshold` of the store's size), inside `db`'s open write transaction, with the recent level's filters in hand and no claim waiting: as the
    /// transaction begins, or as it takes the filters read elsewhere. The ranges it moves leave
    /// their recent filters empty and their settled filters grown, which the settled filter is
    /// read again for, before any key is looked up in it.
    ///
    /// Why not at the commit, after the transaction's claims, as before: the verifiers go on
    /// through a pause of the writer only as long as the hand-off holds
    /// (``SQLiteStore/ingestHandoffBatches(storeSize:)``), and a settle made at the commit
    /// lengthened that pause by its own (at 20 M a settle moves about 80,000 keys into a range
    /// of 1.2 M settled ones); and a run's last commit, a pause with nothing left to verify, no
    /// longer waits for a settle.
    mutating func settleIfDue(_ db: Database, threshold: (Int64) -> Int64) throws {
        let moved = try DedupLevels.settleIfDue(db, threshold: threshold) { recent.settled(range: $0) }
        if moved > 0 { try filter.refresh(db) }
    }
}

/// The statements ``SQLiteStore/store(_:_:_:runID:request:writer:counts:statements:)`` and
/// ``SQLiteStore/quarantine(_:_:_:runID:statements:)`` step, taken from GRDB's cache once per
/// ingest session or `serve` group rather than once per postback: GRDB's cache is keyed by the
/// SQL text, which it hashes whole on every look-up (the insert's 1.3 KB: about 0.5 µs of the
/// writer's time a postback).
struct StoreStatements {
    enum Kind: Int, CaseIterable {
        case insert, insertReceived, claimRecentKey, selectStored, selectStoredRecent, selectStoredByID, selectPrunedKey
        case insertSighting, insertReceivedSighting, insertConflict, insertQuarantine

        var sql: String {
            switch self {
            case .insert: SQLiteStore.insertPostbacks[0]
            case .insertReceived: SQLiteStore.insertPostbacks[1]
            case .claimRecentKey: SQLiteStore.claimRecentKey
            case .selectStored: SQLiteStore.selectStored
            case .selectStoredRecent: SQLiteStore.selectStoredRecent
            case .selectStoredByID: SQLiteStore.selectStoredByID
            case .selectPrunedKey: SQLiteStore.selectPrunedKey
            case .insertSighting: SQLiteStore.insertSightings[0]
            case .insertReceivedSighting: SQLiteStore.insertSightings[1]
            case .insertConflict: SQLiteStore.insertConflict
            case .insertQuarantine: SQLiteStore.insertQuarantine
            }
        }
    }

    private var taken = [Statement?](repeating: nil, count: Kind.allCases.count)

    /// The statement of `kind` on `db`'s connection (every call of one value passes the same).
    mutating func statement(_ kind: Kind, _ db: Database) throws -> Statement {
        if let statement = taken[kind.rawValue] { return statement }
        let statement = try db.cachedStatement(sql: kind.sql)
        taken[kind.rawValue] = statement
        return statement
    }
}
