import PostbackKit
import PostgresNIO

extension PostgresStore {
    /// Reads the report in one read-only `REPEATABLE READ` transaction: its statements see one
    /// snapshot, so a concurrent `aggregate` is seen whole or not at all.
    package func report(_ query: ReportQuery) async throws -> Report {
        let sql = ReportSQL.postgres(query)
        let textColumns =
            query.dimensions.map { $0.sqlType == "TEXT" } + (query.events ? [true] : [])
        return try await transaction("read the report", isolation: " ISOLATION LEVEL REPEATABLE READ READ ONLY") {
            connection in
            var assembler = ReportAssembler(query)
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
                PostgresQuery(unsafeSQL: sql.metrics, binds: sql.bindings),
                logger: logger
            ) {
                let cells = row.makeRandomAccess()
                let sums = try (groups..<cells.count).map { try cells[$0].decode(Int64?.self) }
                assembler.addMetrics(try key(cells), sums)
            }
            if !query.countsOnly {
                for try await row in try await connection.send(
                    PostgresQuery(unsafeSQL: sql.revenue, binds: sql.bindings),
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
        case .date, .installDate: "to_char(\(dimension.column), 'YYYY-MM-DD')"
        case .redownload, .didWin: "\(dimension.column)::integer::bigint"
        case .appID, .sourceAppID, .fidelityType, .postbackSequenceIndex, .crowdAnonymityTier, .sourceIdentifierDigits:
            "\(dimension.column)::bigint"
        case .adNetworkID, .sourceIdentifier, .sourceDomain, .version, .countryCode, .marketplaceID, .campaign,
            .adGroup,
            .creative:
            dimension.column
        case .placement: dimension.selectExpression
        }
    }

}

extension PostgresStore {
    /// Reads the fine values and the intake in one read-only `REPEATABLE READ` transaction.
    package func dashboardSeries(_ query: ReportQuery, fineValues: Bool) async throws -> DashboardSeries {
        let (fineQuery, intakeQuery) = DashboardSeries.queries(query)
        let fine = ReportSQL.postgres(fineQuery)
        let intake = ReportSQL.postgres(intakeQuery)
        return try await transaction(
            "read the dashboard series",
            isolation: " ISOLATION LEVEL REPEATABLE READ READ ONLY"
        ) {
            connection in
            var series = DashboardSeries()
            if fineValues {
                for try await (value, postbacks) in try await connection.send(
                    PostgresQuery(unsafeSQL: fine.fineValues, binds: fine.bindings),
                    logger: logger
                ).decode((Int64?, Int64).self) {
                    series.fineValues.append(
                        FineValueCount(fineValue: value.map { Int($0) }, postbacks: Int(postbacks))
                    )
                }
            }
            for try await (text, quarantined, duplicates, conflicts) in try await connection.send(
                PostgresQuery(unsafeSQL: intake.intake, binds: intake.bindings),
                logger: logger
            ).decode((String, Int64, Int64, Int64).self) {
                guard let day = UTCDay(text) else { continue }
                series.intake.append(
                    DailyIntake(
                        day: day,
                        quarantined: Int(quarantined),
                        duplicates: Int(duplicates),
                        conflicts: Int(conflicts)
                    )
                )
            }
            return series
        }
    }
}

extension ReportSQL {
    /// The statements in PostgreSQL's spelling.
    static func postgres(_ query: ReportQuery) -> ReportSQL {
        ReportSQL(
            query: query,
            dimension: PostgresStore.reportExpression,
            integerSum: { "SUM(\($0))::bigint" },
            parameter: { number, type in
                switch type {
                case .date: "$\(number)::date"
                case .integer: "$\(number)::bigint"
                case .text: "$\(number)::text"
                }
            },
            // SQLite's order: NULL first, text by its bytes.
            orderTerm: { expression, isText in expression + (isText ? " COLLATE \"C\"" : "") + " NULLS FIRST" }
        )
    }

    /// The parameters, each as text (the statement casts it to its type).
    var bindings: PostgresBindings {
        var binds = PostgresBindings()
        for argument in arguments { binds.append(argument) }
        return binds
    }
}
