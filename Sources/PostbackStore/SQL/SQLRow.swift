import PostbackKit

/// One row an ``SQLDatabase`` answered, its columns in select-list order, read alike whichever
/// engine answered (the shape of sql-kit's `SQLRow`): a boolean may be SQLite's 0 or 1, an
/// instant SQLite's ISO 8601 text, a day SQLite's `YYYY-MM-DD`.
package struct SQLRow: Sendable {
    package var values: [SQLValue]

    package init(_ values: [SQLValue]) {
        self.values = values
    }

    private func value(_ index: Int) throws(SQLReadError) -> SQLValue {
        guard values.indices.contains(index) else {
            throw SQLReadError(.missingColumn, "a row of \(values.count) columns has no column \(index)")
        }
        return values[index]
    }

    private func mismatch(_ index: Int, _ type: String) -> SQLReadError {
        SQLReadError(.typeMismatch, "column \(index) holds \(values[index]), not \(type)")
    }

    package func isNull(_ index: Int) -> Bool {
        values.indices.contains(index) && values[index] == .null
    }

    package func int64(_ index: Int) throws(SQLReadError) -> Int64 {
        guard let value = try optionalInt64(index) else { throw mismatch(index, "an integer") }
        return value
    }

    package func optionalInt64(_ index: Int) throws(SQLReadError) -> Int64? {
        switch try value(index) {
        case .null: return nil
        case .integer(let value): return value
        case .boolean(let value): return value ? 1 : 0
        case .real(let value) where value.rounded() == value && abs(value) < 9.2e18: return Int64(value)
        default: throw mismatch(index, "an integer")
        }
    }

    package func int(_ index: Int) throws(SQLReadError) -> Int {
        Int(try int64(index))
    }

    package func optionalInt(_ index: Int) throws(SQLReadError) -> Int? {
        try optionalInt64(index).map { Int($0) }
    }

    package func double(_ index: Int) throws(SQLReadError) -> Double {
        guard let value = try optionalDouble(index) else { throw mismatch(index, "a number") }
        return value
    }

    package func optionalDouble(_ index: Int) throws(SQLReadError) -> Double? {
        switch try value(index) {
        case .null: return nil
        case .real(let value): return value
        case .integer(let value): return Double(value)
        default: throw mismatch(index, "a number")
        }
    }

    package func string(_ index: Int) throws(SQLReadError) -> String {
        guard let value = try optionalString(index) else { throw mismatch(index, "text") }
        return value
    }

    package func optionalString(_ index: Int) throws(SQLReadError) -> String? {
        switch try value(index) {
        case .null: return nil
        case .text(let value): return value
        case .instant(let value): return value.iso8601
        case .day(let value): return value.description
        default: throw mismatch(index, "text")
        }
    }

    package func bool(_ index: Int) throws(SQLReadError) -> Bool {
        guard let value = try optionalBool(index) else { throw mismatch(index, "a boolean") }
        return value
    }

    package func optionalBool(_ index: Int) throws(SQLReadError) -> Bool? {
        switch try value(index) {
        case .null: return nil
        case .boolean(let value): return value
        case .integer(let value): return value != 0
        default: throw mismatch(index, "a boolean")
        }
    }

    package func bytes(_ index: Int) throws(SQLReadError) -> [UInt8] {
        guard let value = try optionalBytes(index) else { throw mismatch(index, "bytes") }
        return value
    }

    package func optionalBytes(_ index: Int) throws(SQLReadError) -> [UInt8]? {
        switch try value(index) {
        case .null: return nil
        case .blob(let value): return value
        default: throw mismatch(index, "bytes")
        }
    }

    package func instant(_ index: Int) throws(SQLReadError) -> UTCInstant {
        guard let value = try optionalInstant(index) else { throw mismatch(index, "an instant") }
        return value
    }

    package func optionalInstant(_ index: Int) throws(SQLReadError) -> UTCInstant? {
        switch try value(index) {
        case .null: return nil
        case .instant(let value): return value
        case .text(let text):
            guard let value = UTCInstant(iso8601: text) else { throw mismatch(index, "an instant") }
            return value
        default: throw mismatch(index, "an instant")
        }
    }

    package func day(_ index: Int) throws(SQLReadError) -> UTCDay {
        guard let value = try optionalDay(index) else { throw mismatch(index, "a day") }
        return value
    }

    package func optionalDay(_ index: Int) throws(SQLReadError) -> UTCDay? {
        switch try value(index) {
        case .null: return nil
        case .day(let value): return value
        case .text(let text):
            guard let value = UTCDay(text) else { throw mismatch(index, "a day") }
            return value
        default: throw mismatch(index, "a day")
        }
    }
}

/// A row that is not what the statement that read it promises: a store that postbackd did not
/// write, or a defect. The coded shape of ``StoreFault``; apart from ``StoreError``, whose
/// codes a command may answer as refusals of what it was asked (`apps add`), which this never is.
package typealias SQLReadError = MessageError<SQLReadErrorDomain>

/// The domain of ``SQLReadError``'s codes.
package enum SQLReadErrorDomain: Sendable {}

extension ErrorCode where Domain == SQLReadError {
    /// The row has fewer columns than read.
    package static let missingColumn = Self("missingColumn")
    /// A column holds another type than the one read.
    package static let typeMismatch = Self("typeMismatch")
    /// A statement that answers one row answered none.
    package static let noRow = Self("noRow")
}

/// Where a job's statements run: one engine's connection inside one transaction
/// (``PostbackStorage/withSQL(_:_:retry:_:)``), the same calls on either engine.
package protocol SQLDatabase {
    var dialect: SQLDialect { get }

    /// Calls `body` with each row `query` answers, in order, as the engine reads it: no array
    /// of rows is built (a report reads tens of thousands). `body` may throw to stop.
    func forEachRow(_ query: SQLQuery, _ body: (SQLRow) throws -> Void) async throws

    /// Runs `query`, for what it changes.
    func execute(_ query: SQLQuery) async throws
}

extension SQLDatabase {
    /// Every row `query` answers.
    package func rows(_ query: SQLQuery) async throws -> [SQLRow] {
        var rows: [SQLRow] = []
        try await forEachRow(query) { rows.append($0) }
        return rows
    }

    /// The first row `query` answers, if any.
    package func row(_ query: SQLQuery) async throws -> SQLRow? {
        try await rows(query).first
    }

    /// Before a read of many rows that jumps around the file: on SQLite the file is mapped,
    /// sparing a system call and a copy a page (as `aggregate`'s own reads are; the store's
    /// cache holds 64 MiB of a file of gigabytes); nothing on PostgreSQL.
    package func mapsFileForBulkRead() async throws {
        guard dialect == .sqlite else { return }
        try await execute(SQLQuery(raw: PostbackDatabase.mapsFile))
    }

    /// Serializes the transaction with every other one that takes `keys`, until it ends:
    /// PostgreSQL's transaction-scoped advisory locks (its writers otherwise run side by side);
    /// on SQLite nothing, its write transaction already excluding every other writer.
    package func lock(_ keys: Int64...) async throws {
        guard dialect == .postgres else { return }
        try await execute("SELECT \(raw: keys.map { "pg_advisory_xact_lock(\($0))" }.joined(separator: ", "))")
    }
}

/// What a transaction of ``PostbackStorage/withSQL(_:_:retry:_:)`` is for.
package enum SQLAccess: Sendable, Hashable {
    /// Reads, from one snapshot: SQLite's `BEGIN DEFERRED`, PostgreSQL's `BEGIN ISOLATION
    /// LEVEL REPEATABLE READ READ ONLY` (its default, `READ COMMITTED`, takes a snapshot per
    /// statement: a report's counts and revenue could straddle an `aggregate`).
    case read
    /// Writes: SQLite's `BEGIN IMMEDIATE` (the write lock taken at once, so that two writers
    /// queue instead of failing), PostgreSQL's `BEGIN`.
    case write
    /// One statement, a transaction of its own on both engines: no `BEGIN`, two round trips
    /// fewer on PostgreSQL.
    case statement
}

/// How long a PostgreSQL transaction broken off by a lost connection is retried (SQLite's
/// are never broken off).
package enum SQLRetry: Sendable, Hashable {
    /// The store's standard minute.
    case standard
    /// An operation `serve` repeats every few seconds between its commits (reading the
    /// models): retried only briefly by a store that receives, so that its commits do not
    /// stall while the server is away.
    case repeated
    /// The start and end of a run: retried only briefly by a store that receives, which
    /// should stop soon after SIGTERM even when the server is gone.
    case run
    /// What a request waits for (recording the app-facing endpoint's calls): in a store that
    /// receives (`serve`'s), retried only briefly and answered by the deadline, as what it
    /// receives; elsewhere (no client waits) as ``standard``.
    case answering
}
