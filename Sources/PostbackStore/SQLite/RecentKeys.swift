import Foundation
import GRDB

/// Ingest's claims in the recent level of dedup keys (``DedupLevels``), made in key order: the
/// keys of the postbacks it stores wait here, and go into `dedup_recent` sorted, a slice of
/// ``flushAt`` at a time and at each commit, in the same transaction. A blocked Bloom filter of
/// the recent level, one per range, stands in front of it, as ``DedupFilter`` does of the
/// settled level.
///
/// Why: `dedup_recent` is a B-tree of a million keys and more that no CPU cache holds, and a
/// claim made at once inserts at a random leaf of it: 2.4–3.5 µs of the writer's 8.8–9.9 µs a
/// postback on a new store (docs/benchmarks/2026-11-29-writer-claim.md). Sorted, consecutive
/// claims fall in the same leaves. A claim made later is no look-up, so a key the filter says
/// the level may hold is looked up at once; about 99 keys in 100 are not.
///
/// Sound as long as every key of `dedup_recent` is in its range's filter, or waiting here:
/// - the filters are read from the level for the session's first write transaction, and again
///   when a transaction of this session rolled back. The first read runs on a connection of its
///   own (``RecentKeysPreload``) while that transaction claims each key at once, as `serve`
///   does, and the keys of the postbacks after the last one it read are added when it is taken
///   (``adopt(_:_:)``);
/// - when another connection has committed since this session's last commit (`PRAGMA
///   data_version`: `serve`'s receipts, or its checkpoints that restart the log), the keys of the
///   postbacks stored after this session's last one are added, while that postback's row still
///   holds its key: ids are one past the largest, so no postback since can have taken an id up
///   to it unless that row was deleted (`prune` keeps the key, so the row cannot come back). Else
///   the filters are read again;
/// - a slice adds its keys to the filters as it writes them;
/// - a settle empties the recent level's range it moves, and its filter with it; a key deleted
///   otherwise stays in its filter, which costs a look-up, never a duplicate.
///
/// A claim that finds its key taken when it is written means a key the filter missed: the
/// transaction fails, and rolls back, before it stores a postback twice. Any failure leaves it
/// to be read again (``forget()``): the session rolls back its transaction after one.
package struct RecentKeys {
    /// Keys waiting, at most: about 1.3 MB, and written in some 40 ms.
    static let flushAt = 32_768

    /// A 16-byte dedup key as two big-endian words: their order is the key's byte order.
    package struct Key: Hashable, Comparable {
        let high: UInt64
        let low: UInt64

        /// Nil unless `bytes` is 16 bytes long.
        package init?(_ bytes: UnsafeRawBufferPointer) {
            guard bytes.count == 16 else { return nil }
            high = UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self))
            low = UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        }

        package var range: Int { Int(high >> 60) }

        package static func < (left: Key, right: Key) -> Bool {
            (left.high, left.low) < (right.high, right.low)
        }

        func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
            var words = (high.bigEndian, low.bigEndian)
            return try Swift.withUnsafeBytes(of: &words, body)
        }
    }

    package init() {}

    /// Each range's filter of the recent level, and the keys added to it.
    private var filters: [(builder: DedupFilter.Builder, keys: Int)] = []
    /// `PRAGMA data_version` when the filters were last known to hold the level.
    private var dataVersion: Int64?
    /// The last postback when this session last committed, and its key: the filters hold the
    /// keys of every postback up to it.
    private var lastCommitted: (id: Int64, key: Data)?
    /// Keys claimed in the open transaction and not yet written, with their postbacks' row ids.
    private var waiting: [Key: Int64] = [:]
    /// The waiting keys being written, sorted (kept between flushes, as its capacity is).
    private var sorting: [(key: Key, id: Int64)] = []

    /// Reads the filters again where another connection may have changed the level; inside a
    /// write transaction that begins. Nothing waits between transactions.
    package mutating func begin(_ db: Database) throws {
        waiting.removeAll(keepingCapacity: true)
        let version = try Int64.fetchOne(db, sql: "PRAGMA data_version")
        if filters.isEmpty || version != dataVersion {
            dataVersion = nil
            do {
                if let last = lastCommitted, try Self.holds(db, last) {
                    try catchUp(db, after: last.id)
                } else {
                    try rebuild(db)
                }
            } catch {
                forget()
                throw error
            }
        }
        dataVersion = version
    }

    /// The filters as a read transaction on another connection found the level, and the last
    /// postback it found with a key (``preload(_:)``).
    package struct Preloaded: Sendable {
        fileprivate let filters: [(builder: DedupFilter.Builder, keys: Int)]
        fileprivate let last: (id: Int64, key: Data)?
    }

    /// Reads every range's filter, and the last postback with a key, in `db`'s read transaction:
    /// ingest reads them on a connection of its own while its writer begins and claims at once
    /// (``RecentKeysPreload``), then takes them with ``adopt(_:_:)``. `goingOn` runs before each
    /// range's read, and stops the read by throwing.
    package static func preload(_ db: Database, goingOn: () throws -> Void = {}) throws -> Preloaded {
        var keys = RecentKeys()
        try keys.rebuild(db, goingOn: goingOn)
        let last = try Row.fetchOne(
            db,
            sql: "SELECT id, dedup_key FROM postbacks WHERE dedup_key IS NOT NULL ORDER BY id DESC LIMIT 1"
        ).map { row -> (id: Int64, key: Data) in (row[0], row[1]) }
        return Preloaded(filters: keys.filters, last: last)
    }

    /// Takes `preloaded` as the filters, inside the writer's open transaction, in which no claim
    /// waits (it claimed each key at once), and adds the keys of the postbacks after its last
    /// one, as ``begin(_:)`` catches up after another connection's commit: those other
    /// connections stored since the read, and this transaction's. Where that postback's row no
    /// longer holds its key, or with no `preloaded` (its read failed), the filters are read here.
    package mutating func adopt(_ preloaded: Preloaded?, _ db: Database) throws {
        guard waiting.isEmpty else {
            throw DatabaseError(
                resultCode: .SQLITE_INTERNAL,
                message:
                    "ingest's claims of dedup keys waited before the recent level's filters were read (a fault in postbackd)"
            )
        }
        filters = preloaded?.filters ?? []
        lastCommitted = preloaded?.last
        dataVersion = nil
        try begin(db)
    }

    /// Notes the last postback as this session's transaction commits: inside it, after its
    /// waiting keys are written.
    package mutating func committing(_ db: Database, lastID: Int64) throws {
        lastCommitted = try Self.key(db, ofRow: lastID).map { (lastID, $0) }
    }

    /// Whether the row of `last` still holds its key.
    private static func holds(_ db: Database, _ last: (id: Int64, key: Data)) throws -> Bool {
        try key(db, ofRow: last.id) == last.key
    }

    /// The dedup key of the postback of row `id`, if there is one.
    private static func key(_ db: Database, ofRow id: Int64) throws -> Data? {
        try Data.fetchOne(db, sql: "SELECT dedup_key FROM postbacks WHERE id = ?", arguments: [id])
    }

    /// Adds the keys of the postbacks after row `id` to the filters.
    private mutating func catchUp(_ db: Database, after id: Int64) throws {
        let keys = SQLiteRowReader(
            try db.cachedStatement(sql: "SELECT dedup_key FROM postbacks WHERE id > ? AND dedup_key IS NOT NULL")
        ) { binder in binder.bind(id) }
        var overfull = Set<Int>()
        while try keys.next(db) {
            guard let key = keys.withBlob(0, Key.init) else { continue }
            add(key, overfull: &overfull)
        }
        try refill(db, overfull)
    }

    /// Adds `key` to its range's filter, noting the range when it holds more than 5/4 of the keys
    /// it was sized for.
    private mutating func add(_ key: Key, overfull: inout Set<Int>) {
        key.withUnsafeBytes { filters[key.range].builder.insert($0) }
        filters[key.range].keys += 1
        if filters[key.range].keys > filters[key.range].builder.capacity * 5 / 4 { overfull.insert(key.range) }
    }

    /// Reads the filters of the `overfull` ranges again, sized for half as many keys again.
    private mutating func refill(_ db: Database, _ overfull: Set<Int>) throws {
        for range in overfull {
            filters[range] = try Self.filter(db, range: range, sizedFor: filters[range].keys * 3 / 2)
        }
    }

    /// The filters no longer hold the level (a rolled-back transaction may have emptied a
    /// range's filter while its keys stayed): the next transaction reads them again.
    mutating func forget() {
        dataVersion = nil
        lastCommitted = nil
        filters.removeAll()
        waiting.removeAll()
    }

    /// Where `key` may be: the row id of the postback that claimed it in this transaction, if
    /// one did; else whether the recent level may hold it (in its range's filter).
    package func find(_ key: Key) -> (waitingID: Int64?, mayHold: Bool) {
        if let id = waiting[key] { return (id, true) }
        guard filters.indices.contains(key.range) else { return (nil, true) }
        return (nil, key.withUnsafeBytes { DedupFilter.mayHold($0, inFilter: filters[key.range].builder.bits) })
    }

    /// Claims `key` for the postback of row id `id`; true when ``flushAt`` keys wait.
    package mutating func claim(_ key: Key, id: Int64) -> Bool {
        waiting[key] = id
        return waiting.count >= Self.flushAt
    }

    /// Writes the waiting keys into the recent level, in key order, and adds them to the filters.
    package mutating func flush(_ db: Database, statement: Statement) throws {
        guard !waiting.isEmpty else { return }
        do {
            try write(db, statement: statement)
        } catch {
            forget()
            throw error
        }
    }

    private mutating func write(_ db: Database, statement: Statement) throws {
        guard filters.count == DedupLevels.ranges.count else {
            throw DatabaseError(
                resultCode: .SQLITE_INTERNAL,
                message:
                    "ingest's claims of dedup keys were lost with a failed rollback; nothing since the last commit is stored"
            )
        }
        sorting.removeAll(keepingCapacity: true)
        for (key, id) in waiting { sorting.append((key, id)) }
        sorting.sort { $0.key < $1.key }
        var overfull = Set<Int>()
        for (key, id) in sorting {
            var insert = SQLiteBinder(statement)
            let changed = try key.withUnsafeBytes { bytes in
                insert.bindBlobStatic(bytes)
                insert.bind(id)
                return try insert.step(db)
            }
            guard changed == 1 else {
                throw DatabaseError(
                    resultCode: .SQLITE_INTERNAL,
                    message:
                        "dedup_recent holds a dedup key that ingest's filter of it missed (a fault in postbackd); nothing since the last commit is stored, and a run of the same command stores it"
                )
            }
            add(key, overfull: &overfull)
        }
        waiting.removeAll(keepingCapacity: true)
        try refill(db, overfull)
    }

    /// A settle moved every recent key of `range` into the settled level.
    package mutating func settled(range: Int) {
        guard filters.indices.contains(range) else { return }
        filters[range] = (DedupFilter.Builder(keys: filters[range].builder.capacity), 0)
    }

    /// Reads every range's filter from the level, in one pass over its keys: a session's first
    /// transaction took 0.16–0.27 s longer for it in a store of 32 M (1.77 M recent keys; 0.25–
    /// 0.29 s while each range was counted first).
    /// `goingOn` runs before each range's read, and stops the rebuild by throwing.
    private mutating func rebuild(_ db: Database, goingOn: () throws -> Void = {}) throws {
        filters = []
        let estimates = try DedupLevels.estimate(db)
        let least = Int(DedupLevels.threshold(storeSize: try SQLiteStore.lastPostbackID(db))) / 16
        filters = try DedupLevels.ranges.indices.map { range in
            try goingOn()
            return try Self.filter(db, range: range, sizedFor: max(Int(estimates[range]) * 3 / 2, least))
        }
    }

    /// The recent keys of `range` in a filter sized for `keys`: half as many again as the range
    /// holds (an estimate), and a sixteenth of the level's threshold at least (what it holds
    /// before a settle empties it). A range that holds more is read again at its next flush.
    private static func filter(
        _ db: Database,
        range: Int,
        sizedFor keys: Int
    ) throws -> (builder: DedupFilter.Builder, keys: Int) {
        var builder = DedupFilter.Builder(keys: keys)
        let count = try DedupFilter.insertKeys(db, DedupFilter.keysRecent, range: range, into: &builder)
        return (builder, count)
    }
}
