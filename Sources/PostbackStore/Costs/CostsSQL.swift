import PostbackKit

/// A stored cost row and when it was added.
package struct StoredCost: Sendable, Hashable {
    package var row: CostRow
    /// ISO 8601.
    package var addedAt: String
}

/// A stored exchange rate and when it was added.
package struct StoredRate: Sendable, Hashable {
    package var rate: ExchangeRate
    /// ISO 8601.
    package var addedAt: String
}

/// What adding one spend or rates file changed.
package struct CostChange: Sendable, Hashable {
    /// The file as messages name it.
    package var file: String
    /// Rows whose key was not stored.
    package var added = 0
    /// Rows whose key was stored with another amount (or currency, or rate).
    package var changed = 0
    /// Rows stored as they were.
    package var unchanged = 0
    /// The first and last day of the file's rows.
    package var from: UTCDay?
    package var to: UTCDay?

    package init(file: String) { self.file = file }

    /// For people: one line.
    package var text: String {
        let total = added + changed + unchanged
        var parts = ["\(formatCount(added)) new"]
        parts.append("\(formatCount(changed)) replacing a stored row with another value")
        parts.append("\(formatCount(unchanged)) as stored")
        let period = from.map { from in to.map { $0 == from ? " (\(from))" : " (\(from) to \($0))" } ?? "" } ?? ""
        return "\(file): \(formatCount(total)) row\(total == 1 ? "" : "s")\(period): " + parts.joined(separator: ", ")
    }

    package var json: String {
        var object = JSONObjectWriter()
        object.add("file", file)
        object.add("added", added)
        object.add("changed", changed)
        object.add("unchanged", unchanged)
        object.add("from", from?.description)
        object.add("to", to?.description)
        return object.text
    }
}

/// A table of rows keyed by some of their columns, added to a file at a time: a row whose key
/// is stored replaces it (`costs`, `exchange_rates`).
struct KeyedTable: Sendable {
    var name: String
    /// Every column, in the order of a row's values.
    var columns: [String]
    /// The columns of the key (the table's primary key).
    var key: [String]

    /// Stores `rows` (each the parenthesized values of ``columns``), a row of a stored key
    /// replacing every other column: `INSERT … ON CONFLICT (key) DO UPDATE`, the same statement
    /// on both engines, 1,000 rows a statement (within both engines' limits on bound values
    /// for a table of up to 32 columns).
    func replace(_ rows: [SQLQuery], _ sql: any SQLDatabase) async throws {
        let updates = columns.filter { !key.contains($0) }.map { "\($0) = excluded.\($0)" }.joined(separator: ", ")
        for start in stride(from: 0, to: rows.count, by: 1_000) {
            try await sql.execute(
                """
                INSERT INTO \(raw: name) (\(raw: columns.joined(separator: ", ")))
                VALUES \(list: Array(rows[start..<min(start + 1_000, rows.count)]))
                ON CONFLICT (\(raw: key.joined(separator: ", "))) DO UPDATE SET \(raw: updates)
                """
            )
        }
    }
}

extension CostChange {
    /// Counts a row of the file by what was stored under its key: nothing (new), the same
    /// value (as stored), or another (replacing).
    mutating func count<Value: Equatable>(stored: Value?, _ value: Value) {
        switch stored {
        case nil: added += 1
        case let old? where old == value: unchanged += 1
        default: changed += 1
        }
    }
}

/// Costs and exchange rates in the store, written once for both engines.
enum CostsSQL {
    static let costs = KeyedTable(
        name: "costs",
        columns: [
            "date", "ad_network_id", "app_id", "campaign", "country_code", "currency", "spend_micros", "source", "line",
            "added_at",
        ],
        key: ["date", "ad_network_id", "app_id", "campaign", "country_code"]
    )

    static let exchangeRates = KeyedTable(
        name: "exchange_rates",
        columns: ["date", "base", "quote", "rate", "source", "line", "added_at"],
        key: ["base", "quote", "date"]
    )

    /// The columns of a cost row as `costs list` reads them: an absent app, campaign or country
    /// as NULL.
    static let select: SQLQuery = """
        SELECT \(SQLQuery.dayText("date")), ad_network_id, NULLIF(app_id, 0)\(sqlite: "", postgres: "::bigint"),
            NULLIF(campaign, ''), NULLIF(country_code, ''), currency, spend_micros\(sqlite: "", postgres: "::bigint"),
            source, line, \(SQLQuery.instantText("added_at"))
        FROM costs
        """

    static func stored(_ row: SQLRow) throws -> StoredCost {
        StoredCost(
            row: CostRow(
                date: try row.day(0),
                adNetworkID: try row.string(1),
                appID: try row.optionalInt64(2),
                campaign: try row.optionalString(3),
                countryCode: try row.optionalString(4),
                currency: try row.string(5),
                spendMicros: try row.int64(6),
                source: try row.string(7),
                line: try row.int(8)
            ),
            addedAt: try row.string(9)
        )
    }

    /// Bounds on `date`.
    static func period(from: UTCDay?, to: UTCDay?) -> [SQLQuery] {
        var conditions: [SQLQuery] = []
        if let from { conditions.append("date >= \(from)") }
        if let to { conditions.append("date <= \(to)") }
        return conditions
    }

    static func whereClause(_ conditions: [SQLQuery]) -> SQLQuery {
        conditions.isEmpty ? "" : "WHERE \(list: conditions, separator: " AND ")"
    }
}

extension PostbackStorage {
    /// Stores one file's cost rows in one transaction: a row whose key (day and dimensions) is
    /// stored replaces it. Serialized with other `costs add` runs (on PostgreSQL by an advisory
    /// lock), so that what it counts as changed is what it replaced.
    package func addCosts(_ rows: [CostRow], file: String) async throws -> CostChange {
        try await withSQL("add costs", .write) { sql in
            try await sql.lock(PostgresSchema.costsLock)
            var change = CostChange(file: file)
            guard let first = rows.map(\.date).min(), let last = rows.map(\.date).max() else { return change }
            change.from = first
            change.to = last
            var stored: [[String]: (currency: String, micros: Int64)] = [:]
            let networks = Set(rows.map(\.adNetworkID)).sorted()
            try await sql.forEachRow(
                """
                \(CostsSQL.select) WHERE date >= \(first) AND date <= \(last)
                    AND ad_network_id IN (\(list: networks.map { "\($0)" }))
                """
            ) { row in
                let cost = try CostsSQL.stored(row).row
                stored[cost.key] = (cost.currency, cost.spendMicros)
            }
            for row in rows {
                change.count(
                    stored: stored[row.key].map { [$0.currency, String($0.micros)] },
                    [row.currency, String(row.spendMicros)]
                )
            }
            let addedAt = UTCInstant.now()
            try await CostsSQL.costs.replace(
                rows.map { row in
                    """
                    (\(row.date), \(row.adNetworkID), \(row.appID ?? 0), \(row.campaign ?? ""), \(row.countryCode ?? ""),
                        \(row.currency), \(row.spendMicros), \(row.source), \(row.line), \(addedAt))
                    """
                },
                sql
            )
            return change
        }
    }

    /// Stores one file's exchange rates in one transaction: a rate of a stored day and pair
    /// replaces it.
    package func addRates(_ rates: [ExchangeRate], file: String) async throws -> CostChange {
        try await withSQL("add exchange rates", .write) { sql in
            try await sql.lock(PostgresSchema.costsLock)
            var change = CostChange(file: file)
            guard let first = rates.map(\.date).min(), let last = rates.map(\.date).max() else { return change }
            change.from = first
            change.to = last
            var stored: [[String]: Double] = [:]
            try await sql.forEachRow(
                """
                SELECT \(SQLQuery.dayText("date")), base, quote, rate FROM exchange_rates
                WHERE date >= \(first) AND date <= \(last)
                """
            ) { row in
                stored[[try row.string(0), try row.string(1), try row.string(2)]] = try row.double(3)
            }
            for rate in rates {
                change.count(stored: stored[[rate.date.description, rate.base, rate.quote]], rate.rate)
            }
            let addedAt = UTCInstant.now()
            try await CostsSQL.exchangeRates.replace(
                rates.map { rate in
                    "(\(rate.date), \(rate.base), \(rate.quote), \(rate.rate), \(rate.source), \(rate.line), \(addedAt))"
                },
                sql
            )
            return change
        }
    }

    /// The stored cost rows of the period, by day, network, app, campaign and country.
    package func costs(from: UTCDay?, to: UTCDay?) async throws -> [StoredCost] {
        try await withSQL("read costs", .read) { sql in
            try await sql.rows(
                """
                \(CostsSQL.select) \(CostsSQL.whereClause(CostsSQL.period(from: from, to: to)))
                ORDER BY date, \(SQLQuery.bytewise("ad_network_id")), app_id, \(SQLQuery.bytewise("campaign")),
                    country_code
                """
            ).map(CostsSQL.stored)
        }
    }

    /// The stored exchange rates of the period, by pair and day.
    package func exchangeRates(from: UTCDay?, to: UTCDay?) async throws -> [StoredRate] {
        try await withSQL("read exchange rates", .read) { sql in
            try await sql.rows(
                """
                SELECT \(SQLQuery.dayText("date")), base, quote, rate, source, line, \(SQLQuery.instantText("added_at"))
                FROM exchange_rates \(CostsSQL.whereClause(CostsSQL.period(from: from, to: to)))
                ORDER BY base, quote, date
                """
            ).map { row in
                StoredRate(
                    rate: ExchangeRate(
                        date: try row.day(0),
                        base: try row.string(1),
                        quote: try row.string(2),
                        rate: try row.double(3),
                        source: try row.string(4),
                        line: try row.int(5)
                    ),
                    addedAt: try row.string(6)
                )
            }
        }
    }
}
