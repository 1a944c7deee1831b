import PostbackKit

/// Reading a report and the dashboard's series, on both engines.
extension PostbackStorage {
    /// Reads the report in one read-only transaction: its statements see one snapshot, so a
    /// concurrent `aggregate` is seen whole or not at all.
    package func report(_ query: ReportQuery) async throws -> Report {
        let sql = ReportSQL(query: query)
        let groups = sql.groupColumns.count
        return try await withSQL("read the report", .read) { db in
            var assembler = ReportAssembler(query)
            let policy = try await db.row(ReportSQL.policy)?.optionalString(0)
            var key: [DimensionValue] = []
            var sums: [Int64?] = []
            try await db.forEachRow(sql.metrics) { row in
                key.removeAll(keepingCapacity: true)
                sums.removeAll(keepingCapacity: true)
                for index in 0..<groups { key.append(DimensionValue(row.values[index])) }
                for index in groups..<row.values.count { sums.append(try row.optionalInt64(index)) }
                assembler.addMetrics(key, sums)
            }
            if !query.countsOnly {
                let estimate = policy.flatMap(RevenueEstimatePolicy.init(rawValue:)) ?? .midpoint
                try await db.forEachRow(sql.revenue(policy: estimate)) { row in
                    let key = (0..<groups).map { DimensionValue(row.values[$0]) }
                    func total(_ first: Int) throws -> RevenueTotal {
                        RevenueTotal(
                            min: try row.double(first),
                            max: try row.double(first + 1),
                            estimate: try row.double(first + 2)
                        )
                    }
                    if query.events {
                        assembler.addRevenue(key, currency: try row.string(groups), try total(groups + 1))
                    } else {
                        assembler.addRevenue(
                            key,
                            reengagement: try row.int(groups) != 0,
                            currency: try row.string(groups + 1),
                            observed: try total(groups + 2),
                            modeled: try total(groups + 5)
                        )
                    }
                }
            }
            return assembler.report(policy: policy)
        }
    }

    /// Reads the fine values and the intake in one read-only transaction.
    package func dashboardSeries(_ query: ReportQuery, fineValues: Bool) async throws -> DashboardSeries {
        let (fineQuery, intakeQuery) = DashboardSeries.queries(query)
        return try await withSQL("read the dashboard series", .read) { db in
            var series = DashboardSeries()
            if fineValues {
                try await db.forEachRow(ReportSQL(query: fineQuery).fineValues) { row in
                    series.fineValues.append(
                        FineValueCount(fineValue: try row.optionalInt(0), postbacks: try row.int(1))
                    )
                }
            }
            try await db.forEachRow(ReportSQL(query: intakeQuery).intake) { row in
                guard let day = UTCDay(try row.string(0)) else { return }
                series.intake.append(
                    DailyIntake(
                        day: day,
                        quarantined: try row.int(1),
                        duplicates: try row.int(2),
                        conflicts: try row.int(3)
                    )
                )
            }
            return series
        }
    }
}
