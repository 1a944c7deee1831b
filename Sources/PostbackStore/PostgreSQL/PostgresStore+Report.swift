import PostbackKit
import PostgresNIO

extension PostgresStore {
    /// Reads the report in one read-only `REPEATABLE READ` transaction: its statements see one
    /// snapshot, so a concurrent `aggregate` is seen whole or not at all.
    package func report(_ query: ReportQuery) async throws -> Report {
        let sql = ReportSQL(
            query: query,
            dimension: Self.reportExpression,
            integerSum: { "SUM(\($0))::bigint" },
            parameter: { "$\($0)::date" },
            // SQLite's order: NULL first, text by its bytes.
            orderTerm: { expression, isText in expression + (isText ? " COLLATE \"C\"" : "") + " NULLS FIRST" }
        )
        let textColumns =
            query.dimensions.map { $0.sqlType == "TEXT" || $0 == .date } + (query.events ? [true] : [])
        return try await transaction("read the report", isolation: " ISOLATION LEVEL REPEATABLE READ READ ONLY") {
            connection in
            var assembler = ReportAssembler(query)
            func bindings() -> PostgresBindings {
                var binds = PostgresBindings()
                for argument in sql.arguments { binds.append(argument) }
                return binds
            }
            func key(_ cells: PostgresRandomAccessRow) throws -> [DimensionValue] {
                try textColumns.enumerated().map { index, isText in
                    if isText {
                        return try cells[index].decode(String?.self).map(DimensionValue.text) ?? .null
                    }
                    return try cells[index].decode(Int64?.self).map(DimensionValue.integer) ?? .null
                }
            }
            let groups = textColumns.count
            for try await row in try await connection.send(
                PostgresQuery(unsafeSQL: sql.metrics, binds: bindings()),
                logger: logger
            ) {
                let cells = row.makeRandomAccess()
                let sums = try (groups..<cells.count).map { try cells[$0].decode(Int64?.self) }
                assembler.addMetrics(try key(cells), sums)
            }
            for try await row in try await connection.send(
                PostgresQuery(unsafeSQL: sql.revenue, binds: bindings()),
                logger: logger
            ) {
                let cells = row.makeRandomAccess()
                assembler.addRevenue(
                    try key(cells),
                    currency: try cells[groups].decode(String.self),
                    RevenueTotal(
                        min: try cells[groups + 1].decode(Double.self),
                        max: try cells[groups + 2].decode(Double.self),
                        estimate: try cells[groups + 3].decode(Double.self)
                    )
                )
            }
            var policy: String?
            for try await value in try await connection.send(
                PostgresQuery(unsafeSQL: ReportSQL.policy),
                logger: logger
            ).decode(String.self) {
                policy = value
            }
            return assembler.report(policy: policy)
        }
    }

    /// A dimension as the report reads it: text, or a `bigint` (booleans as 0 and 1), as
    /// SQLite stores it.
    static func reportExpression(_ dimension: AggregateDimension) -> String {
        switch dimension {
        case .date: "to_char(date, 'YYYY-MM-DD')"
        case .redownload, .didWin: "\(dimension.column)::integer::bigint"
        case .appID, .sourceAppID, .fidelityType, .postbackSequenceIndex: "\(dimension.column)::bigint"
        case .adNetworkID, .sourceIdentifier, .sourceDomain, .version, .countryCode, .marketplaceID: dimension.column
        case .placement: dimension.selectExpression
        }
    }

    package func stalenessWarning() async throws -> String? {
        try await transaction("read the run log", isolation: " READ ONLY") { connection in
            var lastIngest: String?
            var lastAggregate: String?
            for try await (ingest, aggregate) in try await connection.send(
                """
                SELECT (SELECT \(unescaped: isoText("MAX(finished_at)")) FROM ingest_runs WHERE accepted > 0),
                    (SELECT \(unescaped: isoText("MAX(run_at)")) FROM aggregate_runs)
                """,
                logger: logger
            ).decode((String?, String?).self) {
                lastIngest = ingest
                lastAggregate = aggregate
            }
            return PostbackStore.stalenessWarning(lastIngest: lastIngest, lastAggregate: lastAggregate)
        }
    }
}
