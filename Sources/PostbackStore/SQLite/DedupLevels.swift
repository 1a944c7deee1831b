import Foundation
import GRDB

/// The two levels of SQLite's dedup keys (migration v27): `dedup_recent` takes every new key,
/// `dedup_settled` holds the rest, and settling moves recent keys into the settled level one
/// sixteenth of the key space at a time, in key order.
///
/// Why: a dedup key is a digest, so new keys are spread evenly over the key space. In one index
/// the size of the store, each commit's few hundred thousand new keys landed on most of its
/// leaves, and the commit and the checkpoint wrote all of those leaves (at 20 M postbacks, about
/// 600 MB a commit). The recent level is kept near a sixteenth of the store, so a commit writes
/// a sixteenth of what it did; a settle step rewrites a sixteenth of the settled level once for
/// all the recent keys of its range.
///
/// One postback per dedup key is kept by the writer (``SQLiteStore``'s `store`), which claims
/// each new key in the recent level, whose primary key refuses a key it holds, after looking in
/// the settled level wherever its filter says the key may be (ingest's claims wait, and are
/// written in key order before its commit: ``RecentKeys``); a settle that met a key in both
/// levels would fail on the settled level's primary key rather than lose one. The triggers of
/// v27 keep both levels with every delete of a postback and every change of its key; an
/// `INSERT INTO postbacks` written by hand passes neither level (`postbackd check` finds it).
package enum DedupLevels {
    /// The recent level's size that starts a settle: a sixteenth of the store, at least 2^20
    /// keys (about 40 MB of recent level: below that, settling saves less than it costs).
    package static func threshold(storeSize: Int64) -> Int64 {
        max(1 << 20, storeSize / 16)
    }

    /// The sixteen ranges of the key space, by the high four bits of the key's first byte; the
    /// last one's upper bound is above any 16-byte key.
    static let ranges: [(lower: Data, upper: Data)] = (0..<16).map { (range: Int) -> (lower: Data, upper: Data) in
        let lower = Data([UInt8(range << 4)])
        let upper = range == 15 ? Data(repeating: 0xFF, count: 32) : Data([UInt8((range + 1) << 4)])
        return (lower, upper)
    }

    /// The slice of each range that ``estimate(_:)`` counts: the keys whose first two bytes are
    /// the range's first sixteen values (1/4096 of the key space, so 1/256 of the recent level
    /// is read in all).
    static let samples: [(lower: Data, upper: Data)] = (0..<16).map { (range: Int) -> (lower: Data, upper: Data) in
        let first = UInt8(range << 4)
        return (Data([first, 0x00]), Data([first, 0x10]))
    }

    /// The recent level's keys in each range, estimated from its sample (the keys are digests,
    /// spread evenly; 2^20 recent keys put about 256 in each sample).
    package static func estimate(_ db: Database) throws -> [Int64] {
        let statement = try db.cachedStatement(sql: DedupFilter.countRecent)
        return try samples.map { sample in
            try Int64.fetchOne(statement, arguments: [sample.lower, sample.upper]).map { $0 * 4096 / 16 } ?? 0
        }
    }

    /// Settles ranges, fullest first, each once, while the recent level is estimated above
    /// `threshold` of the store's size (``threshold(storeSize:)``; tests lower it); at most
    /// `maxRanges`, each passed to `settled`. Returns the keys moved. Runs inside the caller's
    /// write transaction.
    @discardableResult
    package static func settleIfDue(
        _ db: Database,
        maxRanges: Int = 16,
        threshold: (Int64) -> Int64 = threshold(storeSize:),
        settled: (Int) -> Void = { _ in }
    ) throws -> Int {
        var estimates = try estimate(db)
        let threshold = threshold(try SQLiteStore.lastPostbackID(db))
        var moved = 0
        var unsettled = Array(ranges.indices)
        for _ in 0..<maxRanges {
            guard estimates.reduce(0, +) > threshold,
                let fullest = unsettled.max(by: { estimates[$0] < estimates[$1] })
            else { break }
            moved += try settle(db, range: fullest)
            settled(fullest)
            estimates[fullest] = 0
            unsettled.removeAll { $0 == fullest }
        }
        return moved
    }

    /// Moves every recent key into the settled level.
    @discardableResult
    package static func settleAll(_ db: Database) throws -> Int {
        try ranges.indices.reduce(0) { try $0 + settle(db, range: $1) }
    }

    static let moveRange = """
        INSERT INTO dedup_settled (dedup_key, postback_id)
        SELECT dedup_key, postback_id FROM dedup_recent WHERE dedup_key >= ? AND dedup_key < ? ORDER BY dedup_key
        """
    static let deleteRange = "DELETE FROM dedup_recent WHERE dedup_key >= ? AND dedup_key < ?"

    /// Moves the recent keys of one of the sixteen ranges into the settled level, in key order,
    /// so that each settled leaf of the range is written once, and adds them to the range's
    /// filter (``DedupFilter``), or rebuilds it. Returns the keys moved.
    package static func settle(_ db: Database, range: Int) throws -> Int {
        let bounds = arguments(range)
        let added = try DedupFilter.addRecent(db, range: range)
        try db.cachedStatement(sql: moveRange).execute(arguments: bounds)
        let moved = db.changesCount
        try db.cachedStatement(sql: deleteRange).execute(arguments: bounds)
        guard db.changesCount == moved else {
            throw DatabaseError(
                resultCode: .SQLITE_CORRUPT,
                message: "settling dedup keys moved \(moved) keys but removed \(db.changesCount) from dedup_recent"
            )
        }
        if moved > 0 && !added { try DedupFilter.rebuild(db, range: range) }
        return moved
    }

    /// The bounds of `range`, as a statement's two arguments.
    static func arguments(_ range: Int) -> StatementArguments {
        [ranges[range].lower, ranges[range].upper]
    }
}
