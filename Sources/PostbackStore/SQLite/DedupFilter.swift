import Foundation
import GRDB

/// A filter in front of the settled level of dedup keys (``DedupLevels``): for each of its
/// sixteen ranges, a blocked Bloom filter of the range's settled keys, kept in
/// `dedup_settled_filter`, added to or rebuilt by every settle of the range. A key it does not hold is in
/// no settled range, so the writer looks it up in the recent level alone.
///
/// Why: in a store of 20 M a look-up in the settled level descends a B-tree of about 1 GB,
/// which no CPU cache holds: 2.4 µs a key with every page in SQLite's cache, 4 µs while the
/// pages come from the file (300,000 random keys, `sqlite3`), and almost every key ingest looks
/// up is new. The filter answers from one 64-byte block; about 1 key in 100 that is not there
/// still pays the look-up.
///
/// Sound as long as every key of `dedup_settled` is in its range's filter: only a settle adds
/// settled keys, and it adds them to the range's filter, or rebuilds it, in the same
/// transaction. A range without a filter row (a store upgraded to v27 before its first write)
/// is always looked up; deleted keys stay in the filter until the next rebuild, which costs a
/// look-up, never a duplicate. Do not delete filter rows while a writer runs: a writer builds
/// the missing ones only when its transaction begins.
package struct DedupFilter {
    /// Bits a key: about one false "maybe" in 100.
    static let bitsPerKey = 10
    /// Bytes a block: one cache line.
    static let blockBytes = 64

    /// Each range's filter and the `built` stamp it was read at; nil: no filter row. A stamp is
    /// a random 64-bit value drawn by each write of the row, not a count: a count could come
    /// round to a value a reader holds for other bits (a row deleted and built again, a write
    /// rolled back), and that reader would keep bits without the keys settled since.
    private var ranges: [(built: Int64, bits: [UInt8])?] = Array(repeating: nil, count: 16)

    /// No filter: every key is looked up, until ``refresh(_:)`` reads the store's.
    package init() {}

    /// Whether `bits`, a filter ``Builder`` made, may hold `key`.
    package static func mayHold(_ key: UnsafeRawBufferPointer, inFilter bits: [UInt8]) -> Bool {
        key.count == 16 ? mayHold(key, in: bits) : true
    }

    /// Whether the settled level may hold `key` (16 bytes; any other length: yes).
    package func mayHold(_ key: UnsafeRawBufferPointer) -> Bool {
        guard key.count == 16, let filter = ranges[Int(key[0] >> 4)] else { return true }
        return Self.mayHold(key, in: filter.bits)
    }

    private static func mayHold(_ key: UnsafeRawBufferPointer, in bits: [UInt8]) -> Bool {
        let blocks = bits.count / blockBytes
        guard blocks > 0 else { return false }
        return bits.withUnsafeBufferPointer { bytes in
            Probes(key, blocks: blocks).allSatisfy { bytes[$0.byte] & $0.mask != 0 }
        }
    }

    /// The six bits a 16-byte key sets in a filter of `blocks` blocks, each as a byte's offset
    /// and a mask: in the block bytes 1–4 choose, the six 9-bit positions of bytes 5–12. The key
    /// is a digest: its bytes are already uniform. What ``Builder`` sets, ``mayHold(_:)`` tests.
    private struct Probes: Sequence, IteratorProtocol {
        private let block: Int
        private var positions: UInt64
        private var left = 6

        init(_ key: UnsafeRawBufferPointer, blocks: Int) {
            var word: UInt32 = 0
            for index in 1...4 { word = word << 8 | UInt32(key[index]) }
            var positions: UInt64 = 0
            for index in 5...12 { positions = positions << 8 | UInt64(key[index]) }
            self.block = Int(word % UInt32(blocks)) * blockBytes
            self.positions = positions
        }

        mutating func next() -> (byte: Int, mask: UInt8)? {
            guard left > 0 else { return nil }
            left -= 1
            let bit = Int(positions & 511)
            positions >>= 9
            return (block + bit >> 3, 1 << UInt8(bit & 7))
        }
    }

    /// A filter being built for `keys` keys.
    package struct Builder: Sendable {
        package private(set) var bits: [UInt8]
        private let blocks: Int

        package init(keys: Int) {
            blocks = max(1, (keys * DedupFilter.bitsPerKey + blockBytes * 8 - 1) / (blockBytes * 8))
            bits = [UInt8](repeating: 0, count: blocks * blockBytes)
        }

        /// Goes on with a filter built before (whole blocks).
        init(bits: [UInt8]) {
            self.bits = bits
            blocks = bits.count / blockBytes
        }

        /// The keys it was sized for.
        var capacity: Int { blocks * blockBytes * 8 / DedupFilter.bitsPerKey }

        package mutating func insert(_ key: UnsafeRawBufferPointer) {
            guard key.count == 16 else { return }
            bits.withUnsafeMutableBufferPointer { bits in
                for probe in Probes(key, blocks: blocks) { bits[probe.byte] |= probe.mask }
            }
        }
    }

    /// Reads the filters whose rows changed since this value last read them: at the start of
    /// each write transaction, since another process's settle may have changed them, and after
    /// the writer's own settle (16 small rows; a changed filter's bits are read again). In a
    /// write transaction, unless not `building` (`check`, which reads only), builds first the
    /// filters the store lacks (a new store's are empty; a store upgraded to v27 reads its
    /// settled keys once), so that a new store's first transaction does not look up every key.
    package mutating func refresh(_ db: Database, building: Bool = true) throws {
        var rows = try Row.fetchAll(db, sql: "SELECT key_range, built FROM dedup_settled_filter")
        if rows.count < 16 && building && db.isInsideTransaction {
            try Self.buildMissing(db)
            rows = try Row.fetchAll(db, sql: "SELECT key_range, built FROM dedup_settled_filter")
        }
        var seen = [Bool](repeating: false, count: 16)
        for row in rows {
            let range: Int = row[0]
            let built: Int64 = row[1]
            guard ranges.indices.contains(range) else { continue }
            seen[range] = true
            if ranges[range]?.built == built { continue }
            let bits = try Data.fetchOne(
                db,
                sql: "SELECT bits FROM dedup_settled_filter WHERE key_range = ?",
                arguments: [range]
            )
            ranges[range] = (built, bits.map { [UInt8]($0) } ?? [])
        }
        for range in ranges.indices where !seen[range] { ranges[range] = nil }
    }

    static let countSettled = "SELECT count(*) FROM dedup_settled WHERE dedup_key >= ? AND dedup_key < ?"
    static let keysSettled = "SELECT dedup_key FROM dedup_settled WHERE dedup_key >= ? AND dedup_key < ?"
    static let countRecent = "SELECT count(*) FROM dedup_recent WHERE dedup_key >= ? AND dedup_key < ?"
    static let keysRecent = "SELECT dedup_key FROM dedup_recent WHERE dedup_key >= ? AND dedup_key < ?"

    /// Adds the recent keys of `range` to its filter, before a settle moves them, in the
    /// caller's write transaction: reading the range's few recent keys rather than its many
    /// settled ones. False when the range has no filter, or when the added keys would overfill it
    /// (more than 5/4 of the keys it was sized for): then ``rebuild(_:range:)`` after the move.
    static func addRecent(_ db: Database, range: Int) throws -> Bool {
        guard
            let row = try Row.fetchOne(
                db,
                sql: "SELECT keys, bits FROM dedup_settled_filter WHERE key_range = ?",
                arguments: [range]
            )
        else { return false }
        let (held, bits): (Int, Data) = (row[0], row[1])
        var builder = Builder(bits: [UInt8](bits))
        let arguments = DedupLevels.arguments(range)
        let adding = try Int.fetchOne(db.cachedStatement(sql: countRecent), arguments: arguments) ?? 0
        guard adding > 0 else { return true }
        guard held + adding <= builder.capacity * 5 / 4 else { return false }
        try insertKeys(db, keysRecent, range: range, into: &builder)
        try store(db, range: range, keys: held + adding, bits: builder.bits)
        return true
    }

    /// Builds the filter of `range` from its settled keys, in the caller's write transaction,
    /// sized for a quarter more keys than it holds (the settles until the next rebuild).
    package static func rebuild(_ db: Database, range: Int) throws {
        let count =
            try Int.fetchOne(db.cachedStatement(sql: countSettled), arguments: DedupLevels.arguments(range)) ?? 0
        var builder = Builder(keys: count + count / 4)
        try insertKeys(db, keysSettled, range: range, into: &builder)
        try store(db, range: range, keys: count, bits: builder.bits)
    }

    /// Adds the keys `sql` reads of `range` to `builder`; returns how many.
    @discardableResult
    static func insertKeys(_ db: Database, _ sql: String, range: Int, into builder: inout Builder) throws -> Int {
        let bounds = DedupLevels.ranges[range]
        let keys = SQLiteRowReader(try db.cachedStatement(sql: sql)) { binder in
            bounds.lower.withUnsafeBytes { binder.bindBlob($0) }
            bounds.upper.withUnsafeBytes { binder.bindBlob($0) }
        }
        var count = 0
        while try keys.next(db) {
            keys.withBlob(0) { builder.insert($0) }
            count += 1
        }
        return count
    }

    private static func store(_ db: Database, range: Int, keys: Int, bits: [UInt8]) throws {
        try db.execute(
            sql: """
                INSERT INTO dedup_settled_filter (key_range, keys, built, bits) VALUES (?1, ?2, ?3, ?4)
                ON CONFLICT (key_range) DO UPDATE SET keys = ?2, built = ?3, bits = ?4
                """,
            arguments: [range, keys, Int64.random(in: .min ... .max), Data(bits)]
        )
    }

    /// Builds the filter of every range that has none, in the caller's write transaction (a store
    /// upgraded to v27: its first write reads the settled level once).
    static func buildMissing(_ db: Database) throws {
        let present = Set(try Int.fetchAll(db, sql: "SELECT key_range FROM dedup_settled_filter"))
        for range in 0..<16 where !present.contains(range) { try rebuild(db, range: range) }
    }
}
