import PostbackKit

/// How a statement is spelled: the two engines postbackd stores into.
///
/// A statement that differs between SQLite and PostgreSQL only in spelling (placeholders,
/// booleans, instants and days, text casts) is written once as an ``SQLQuery`` and rendered for
/// each engine (the shape of sql-kit's `SQLDialect` and `SQLQueryString`); what is genuinely
/// one engine's stays in that engine's store and says why.
package enum SQLDialect: Sendable, Hashable {
    case sqlite
    case postgres
}

/// A value bound to a statement, typed as the schema stores it on both engines.
package enum SQLValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])
    /// SQLite stores 0 or 1; PostgreSQL a `boolean`.
    case boolean(Bool)
    /// SQLite stores ISO 8601 text (`2026-11-21T08:30:00.000Z`); PostgreSQL a `timestamptz`.
    case instant(UTCInstant)
    /// SQLite stores `YYYY-MM-DD` text; PostgreSQL a `date`.
    case day(UTCDay)
}

/// A Swift value that binds as an ``SQLValue``.
package protocol SQLBindable: Sendable {
    var sqlValue: SQLValue { get }
}

extension Int64: SQLBindable { package var sqlValue: SQLValue { .integer(self) } }
extension Int: SQLBindable { package var sqlValue: SQLValue { .integer(Int64(self)) } }
extension Int32: SQLBindable { package var sqlValue: SQLValue { .integer(Int64(self)) } }
extension Double: SQLBindable { package var sqlValue: SQLValue { .real(self) } }
extension String: SQLBindable { package var sqlValue: SQLValue { .text(self) } }
extension Bool: SQLBindable { package var sqlValue: SQLValue { .boolean(self) } }
extension UTCInstant: SQLBindable { package var sqlValue: SQLValue { .instant(self) } }
extension UTCDay: SQLBindable { package var sqlValue: SQLValue { .day(self) } }
extension SQLValue: SQLBindable { package var sqlValue: SQLValue { self } }
extension Array: SQLBindable where Element == UInt8 { package var sqlValue: SQLValue { .blob(self) } }

extension Optional: SQLBindable where Wrapped: SQLBindable {
    package var sqlValue: SQLValue { self?.sqlValue ?? .null }
}

/// A statement written once: literal SQL, bound values and, where the engines differ, each
/// one's spelling. Built by string interpolation:
///
///     let query: SQLQuery = "SELECT position FROM export_cursors WHERE consumer = \(consumer)"
///
/// An interpolated value is bound (`?` on SQLite, `$1` on PostgreSQL, with the cast its type
/// needs there); `\(raw:)` inserts SQL text that code built (table and column names, never
/// input); `\(sqlite:postgres:)` inserts each engine's spelling.
package struct SQLQuery: Sendable, ExpressibleByStringInterpolation {
    enum Piece: Sendable {
        case text(String)
        case value(SQLValue)
        case spelled(sqlite: String, postgres: String)
        case query(SQLQuery)
    }

    var pieces: [Piece]

    package init(stringLiteral value: String) {
        pieces = [.text(value)]
    }

    package init(stringInterpolation: StringInterpolation) {
        pieces = stringInterpolation.pieces
    }

    /// SQL text that code built.
    package init(raw text: String) {
        pieces = [.text(text)]
    }

    package struct StringInterpolation: StringInterpolationProtocol {
        var pieces: [Piece] = []

        package init(literalCapacity: Int, interpolationCount: Int) {
            pieces.reserveCapacity(interpolationCount * 2 + 1)
        }

        package mutating func appendLiteral(_ literal: String) {
            if !literal.isEmpty { pieces.append(.text(literal)) }
        }

        /// A bound value.
        package mutating func appendInterpolation(_ value: some SQLBindable) {
            pieces.append(.value(value.sqlValue))
        }

        /// A bound value that may be NULL.
        package mutating func appendInterpolation<Value: SQLBindable>(_ value: Value?) {
            pieces.append(.value(value?.sqlValue ?? .null))
        }

        /// SQL text that code built: a table or column name, a list of them, a number.
        package mutating func appendInterpolation(raw text: String) {
            pieces.append(.text(text))
        }

        /// Each engine's spelling of the same thing.
        package mutating func appendInterpolation(sqlite: String, postgres: String) {
            pieces.append(.spelled(sqlite: sqlite, postgres: postgres))
        }

        /// Another statement's pieces, in place.
        package mutating func appendInterpolation(_ query: SQLQuery) {
            pieces.append(.query(query))
        }

        /// Statements joined by `separator`.
        package mutating func appendInterpolation(list queries: [SQLQuery], separator: String = ", ") {
            for (index, query) in queries.enumerated() {
                if index > 0 { pieces.append(.text(separator)) }
                pieces.append(.query(query))
            }
        }
    }

    /// The statement's text for `dialect`, and its values in placeholder order.
    package func rendered(for dialect: SQLDialect) -> (sql: String, values: [SQLValue]) {
        var sql = ""
        var values: [SQLValue] = []
        render(dialect, into: &sql, &values)
        return (sql, values)
    }

    private func render(_ dialect: SQLDialect, into sql: inout String, _ values: inout [SQLValue]) {
        for piece in pieces {
            switch piece {
            case .text(let text):
                sql += text
            case .spelled(let sqlite, let postgres):
                sql += dialect == .sqlite ? sqlite : postgres
            case .query(let query):
                query.render(dialect, into: &sql, &values)
            case .value(let value):
                values.append(value)
                switch dialect {
                case .sqlite:
                    sql += "?"
                case .postgres:
                    sql += "$\(values.count)"
                    // Instants and days are bound as text; the server reads them as its types.
                    switch value {
                    case .instant: sql += "::timestamptz"
                    case .day: sql += "::date"
                    default: break
                    }
                }
            }
        }
    }
}

/// The statements that differ between the engines only in spelling, named once.
extension SQLQuery {
    /// A `timestamptz` (PostgreSQL) or ISO 8601 text (SQLite) column as ISO 8601 text with
    /// milliseconds, as SQLite stores it.
    package static func instantText(_ column: String) -> SQLQuery {
        "\(sqlite: column, postgres: "to_char(\(column) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')")"
    }

    /// A `date` (PostgreSQL) or `YYYY-MM-DD` text (SQLite) column as `YYYY-MM-DD` text.
    package static func dayText(_ column: String) -> SQLQuery {
        "\(sqlite: column, postgres: "to_char(\(column), 'YYYY-MM-DD')")"
    }

    /// The same of an expression of each engine's spelling (``receivedDay``).
    package static func dayText(_ expression: SQLQuery) -> SQLQuery {
        "\(sqlite: "", postgres: "to_char(")\(expression)\(sqlite: "", postgres: ", 'YYYY-MM-DD')")"
    }

    /// `1` for the rows where `condition` holds, else `0`, summed: the rows it holds for.
    package static func counted(_ condition: SQLQuery) -> SQLQuery {
        "SUM(CASE WHEN \(condition) THEN 1 ELSE 0 END)"
    }

    /// A `jsonb` (PostgreSQL) or JSON text (SQLite) column as text.
    package static func jsonText(_ column: String) -> SQLQuery {
        "\(sqlite: column, postgres: "\(column)::text")"
    }

    /// A text column as an `ORDER BY` term sorting by its bytes, as SQLite's default collation
    /// does (PostgreSQL's depends on the database's locale).
    package static func bytewise(_ column: String) -> SQLQuery {
        "\(sqlite: column, postgres: "\(column) COLLATE \"C\"")"
    }

    /// The larger of two values that are never NULL.
    package static func greatest(_ first: String, _ second: String) -> SQLQuery {
        "\(sqlite: "max(\(first), \(second))", postgres: "greatest(\(first), \(second))")"
    }

    /// A postback's UTC day received, as `postbacks` is indexed by it on each engine.
    package static let receivedDay = receivedDay(of: "received_at")

    /// The UTC day of the `received_at` column `column` names (`p.received_at` in a join), as
    /// each engine indexes it.
    package static func receivedDay(of column: String) -> SQLQuery {
        "\(sqlite: "substr(\(column), 1, 10)", postgres: "((\(column) AT TIME ZONE 'UTC')::date)")"
    }
}
