import GRDB
import PostbackKit

extension SQLiteStore {
    package func report(_ query: ReportQuery) throws -> Report {
        let sql = ReportSQL.sqlite(query)
        return try queue.read { db in
            var assembler = ReportAssembler(query)
            let arguments = sql.sqliteArguments
            let groups = sql.groupColumns.count
            for row in try Row.fetchAll(db, sql: sql.metrics, arguments: arguments) {
                let key = (0..<groups).map { DimensionValue(row[$0] as DatabaseValue) }
                let sums = (groups..<row.count).map { row[$0] as Int64? }
                assembler.addMetrics(key, sums)
            }
            for row in query.countsOnly ? [] : try Row.fetchAll(db, sql: sql.revenue, arguments: arguments) {
                let key = (0..<groups).map { DimensionValue(row[$0] as DatabaseValue) }
                assembler.addRevenue(
                    key,
                    currency: row[groups],
                    RevenueTotal(min: row[groups + 1], max: row[groups + 2], estimate: row[groups + 3])
                )
            }
            return assembler.report(policy: try String.fetchOne(db, sql: ReportSQL.policy))
        }
    }

}

extension DimensionValue {
    init(_ value: DatabaseValue) {
        switch value.storage {
        case .int64(let number): self = .integer(number)
        case .string(let text): self = .text(text)
        case .double(let number): self = .integer(Int64(number))
        default: self = .null
        }
    }
}

extension SQLiteStore {
    package func dashboardSeries(_ query: ReportQuery, fineValues: Bool) throws -> DashboardSeries {
        let (fineQuery, intakeQuery) = DashboardSeries.queries(query)
        return try queue.read { db in
            var series = DashboardSeries()
            let fine = ReportSQL.sqlite(fineQuery)
            for row in fineValues ? try Row.fetchAll(db, sql: fine.fineValues, arguments: fine.sqliteArguments) : [] {
                series.fineValues.append(
                    FineValueCount(fineValue: (row[0] as Int64?).map { Int($0) }, postbacks: row[1])
                )
            }
            let intake = ReportSQL.sqlite(intakeQuery)
            for row in try Row.fetchAll(db, sql: intake.intake, arguments: intake.sqliteArguments) {
                guard let day = UTCDay(row[0] as String? ?? "") else { continue }
                series.intake.append(DailyIntake(day: day, quarantined: row[1], duplicates: row[2], conflicts: row[3]))
            }
            return series
        }
    }
}

extension ReportSQL {
    /// The statements in SQLite's spelling.
    static func sqlite(_ query: ReportQuery) -> ReportSQL {
        ReportSQL(
            query: query,
            dimension: { $0.selectExpression },
            integerSum: { "SUM(\($0))" },
            parameter: { _, _ in "?" },
            orderTerm: { expression, _ in expression }
        )
    }

    /// The parameters as SQLite binds them: an app id as an integer (SQLite would not equate
    /// the text "1" with 1).
    var sqliteArguments: StatementArguments {
        StatementArguments(
            typedArguments.map { value, type -> (any DatabaseValueConvertible)? in
                switch type {
                case .integer: Int64(value)
                case .date, .text: value
                }
            }
        )
    }
}
