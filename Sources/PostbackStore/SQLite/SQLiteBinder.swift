import GRDB
import GRDBSQLite
import PostbackKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Binds values to a statement GRDB prepared and cached, and steps it, through SQLite's C API.
///
/// The ingest and aggregate hot paths write one row per postback or group; GRDB's
/// `StatementArguments` box every value into an existential and a `DatabaseValue` first, which
/// cost more than the insert itself. GRDB still prepares, caches and finalizes the statements
/// and owns the transactions.
struct SQLiteBinder {
    private let statement: OpaquePointer
    private var index: Int32 = 0

    /// Resets `statement` for new values.
    init(_ statement: Statement) {
        self.statement = statement.sqliteStatement
        sqlite3_reset(self.statement)
    }

    mutating func bind(_ value: String?) {
        index += 1
        guard var value else {
            sqlite3_bind_null(statement, index)
            return
        }
        value.withUTF8 { bytes in
            _ = sqlite3_bind_text(
                statement,
                index,
                bytes.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) },
                Int32(bytes.count),
                sqliteTransient
            )
        }
    }

    mutating func bind(_ value: Int64?) {
        index += 1
        if let value { sqlite3_bind_int64(statement, index, value) } else { sqlite3_bind_null(statement, index) }
    }

    mutating func bind(_ value: Int?) {
        bind(value.map(Int64.init))
    }

    mutating func bind(_ value: Double?) {
        index += 1
        if let value { sqlite3_bind_double(statement, index, value) } else { sqlite3_bind_null(statement, index) }
    }

    mutating func bind(_ value: Bool?) {
        bind(value.map { $0 ? Int64(1) : 0 })
    }

    /// Binds UTF-8 text without SQLite copying it (`SQLITE_STATIC`), NULL for nil: `bytes` must
    /// stay valid and unchanged until the statement is stepped, and every later step must bind
    /// this parameter again (or clear the bindings) first.
    mutating func bindStatic(_ bytes: UnsafeRawBufferPointer?) {
        index += 1
        guard let bytes, let base = bytes.baseAddress else {
            sqlite3_bind_null(statement, index)
            return
        }
        sqlite3_bind_text(statement, index, base.assumingMemoryBound(to: CChar.self), Int32(bytes.count), nil)
    }

    /// Binds ASCII or UTF-8 text held in bytes.
    mutating func bindText(_ bytes: UnsafeRawBufferPointer) {
        index += 1
        sqlite3_bind_text(
            statement,
            index,
            bytes.baseAddress?.assumingMemoryBound(to: CChar.self),
            Int32(bytes.count),
            sqliteTransient
        )
    }

    mutating func bindBlob(_ bytes: UnsafeRawBufferPointer?) {
        index += 1
        guard let bytes else {
            sqlite3_bind_null(statement, index)
            return
        }
        sqlite3_bind_blob(statement, index, bytes.baseAddress, Int32(bytes.count), sqliteTransient)
    }

    /// Binds a blob without SQLite copying it (`SQLITE_STATIC`), NULL for empty bytes: the same
    /// terms as ``bindStatic(_:)``.
    mutating func bindBlobStatic(_ bytes: UnsafeRawBufferPointer) {
        index += 1
        guard let base = bytes.baseAddress else {
            sqlite3_bind_null(statement, index)
            return
        }
        sqlite3_bind_blob(statement, index, base, Int32(bytes.count), nil)
    }

    mutating func bindBlob(_ bytes: ArraySlice<UInt8>?) {
        guard let bytes else { return bindBlob(nil as UnsafeRawBufferPointer?) }
        bytes.withUnsafeBytes { bindBlob($0) }
    }

    /// Binds a written-once statement's value (``SQLQuery``), as SQLite stores it.
    mutating func bind(_ value: SQLValue) {
        switch value {
        case .null: bind(nil as Int64?)
        case .integer(let value): bind(value)
        case .real(let value): bind(value)
        case .text(let value): bind(value)
        case .blob(let value): value.withUnsafeBytes { bindBlob($0) }
        case .boolean(let value): bind(value)
        case .instant(let value): value.withISO8601Bytes { bindText($0) }
        case .day(let value): bind(value.description)
        }
    }

    /// Runs the statement; returns the number of rows it changed.
    func step(_ db: Database) throws -> Int {
        let code = sqlite3_step(statement)
        guard code == SQLITE_DONE || code == SQLITE_ROW else { throw stepError(statement, code) }
        let changes = Int(sqlite3_changes(sqlite3_db_handle(statement)))
        sqlite3_reset(statement)
        return changes
    }
}

/// Steps a query GRDB prepared and cached, reading each row's columns through SQLite's C API
/// (GRDB's `Row` boxes every value; aggregation reads a million rows).
struct SQLiteRowReader {
    private let statement: OpaquePointer

    /// Resets `statement` and binds `arguments` as text, in order.
    init(_ statement: Statement, textArguments arguments: [String]) {
        self.statement = statement.sqliteStatement
        var binder = SQLiteBinder(statement)
        for argument in arguments { binder.bind(argument) }
    }

    /// Resets `statement` and binds its values with `bind`.
    init(_ statement: Statement, bind: (inout SQLiteBinder) -> Void) {
        self.statement = statement.sqliteStatement
        var binder = SQLiteBinder(statement)
        bind(&binder)
    }

    /// Moves to the next row; false after the last.
    func next(_ db: Database) throws -> Bool {
        try SQLiteStep.next(statement)
    }

    /// Ends the read before its last row, so that the statement holds no cursor.
    func reset() {
        sqlite3_reset(statement)
    }

    func blob(_ column: Int32) -> [UInt8]? {
        guard sqlite3_column_type(statement, column) != SQLITE_NULL else { return nil }
        let count = Int(sqlite3_column_bytes(statement, column))
        guard count > 0, let bytes = sqlite3_column_blob(statement, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: bytes, count: count))
    }

    /// The column's bytes, valid inside `body` only (NULL: empty).
    func withBlob<Result>(_ column: Int32, _ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        let count = Int(sqlite3_column_bytes(statement, column))
        return body(UnsafeRawBufferPointer(start: sqlite3_column_blob(statement, column), count: count))
    }

    func int64(_ column: Int32) -> Int64? {
        sqlite3_column_type(statement, column) == SQLITE_NULL ? nil : sqlite3_column_int64(statement, column)
    }

    func text(_ column: Int32) -> String? {
        guard let bytes = sqlite3_column_text(statement, column) else { return nil }
        let count = Int(sqlite3_column_bytes(statement, column))
        return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    }

    /// The column's `YYYY-MM-DD` text as a day, without making a String; nil for NULL or other text.
    func day(_ column: Int32) -> UTCDay? {
        guard let bytes = sqlite3_column_text(statement, column) else { return nil }
        return UTCDay(utf8: UnsafeBufferPointer(start: bytes, count: Int(sqlite3_column_bytes(statement, column))))
    }

    /// Whether the column's text is exactly `expected`, without making a String.
    func text(_ column: Int32, is expected: StaticString) -> Bool {
        guard let bytes = sqlite3_column_text(statement, column) else { return false }
        let count = Int(sqlite3_column_bytes(statement, column))
        guard count == expected.utf8CodeUnitCount else { return false }
        return memcmp(bytes, expected.utf8Start, count) == 0
    }
}

/// Stepping a statement through SQLite's C API.
enum SQLiteStep {
    /// Moves `statement` to its next row; false after the last.
    static func next(_ statement: OpaquePointer) throws(DatabaseError) -> Bool {
        let code = sqlite3_step(statement)
        if code == SQLITE_ROW { return true }
        if code == SQLITE_DONE { return false }
        throw stepError(statement, code)
    }
}

/// The error of a failed `sqlite3_step`, with SQLite's message; resets the statement.
private func stepError(_ statement: OpaquePointer, _ code: Int32) -> DatabaseError {
    let message = String(cString: sqlite3_errmsg(sqlite3_db_handle(statement)))
    sqlite3_reset(statement)
    return DatabaseError(resultCode: ResultCode(rawValue: code), message: message)
}

/// SQLite's `SQLITE_TRANSIENT` (a function-like cast Swift cannot import): SQLite copies the value.
private let sqliteTransient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
