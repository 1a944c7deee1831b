import PostbackKit

/// What a report says about how current the aggregates are, and the last day they hold, on
/// both engines.
extension PostbackStorage {
    package func stalenessWarning() async throws -> String? {
        try await withSQL("read the run log", .statement) { sql in
            let row = try await sql.row(
                """
                SELECT (SELECT \(SQLQuery.instantText("MAX(finished_at)")) FROM ingest_runs WHERE accepted > 0),
                    (SELECT \(SQLQuery.instantText("MAX(run_at)")) FROM aggregate_runs),
                    (SELECT \(SQLQuery.instantText("MAX(added_at)")) FROM campaign_mappings),
                    (SELECT \(SQLQuery.instantText("MAX(run_at)")) FROM aggregate_runs WHERE whole = \(true)),
                    CASE WHEN EXISTS (SELECT 1 FROM aggregate_runs WHERE dimensions \(sqlite: "IS NOT", postgres: "IS DISTINCT FROM") \(AggregateDimension.columnList))
                        THEN EXISTS (SELECT 1 FROM aggregate_daily WHERE install_date IS NULL OR conversion_type IS NULL) ELSE \(false) END,
                    (SELECT \(SQLQuery.instantText("MAX(added_at)")) FROM conversion_models
                        WHERE effective_from IS NULL OR effective_from < added_at)
                """
            )
            // Rows of a run from before the dimension columns (none once every day is
            // recomputed) are looked for only when such a run is on record. A model in force
            // from before it was added changes days that may be aggregated already; one in force
            // from when it was added, only days to come.
            return PostbackStore.stalenessWarning(
                lastIngest: try row?.optionalString(0),
                lastAggregate: try row?.optionalString(1),
                lastMappingChange: try row?.optionalString(2),
                lastWholeAggregate: try row?.optionalString(3),
                staleRows: try row?.optionalBool(4) ?? false,
                lastModelChange: try row?.optionalString(5)
            )
        }
    }

    package func lastAggregatedDay(_ basis: DateBasis) async throws -> UTCDay? {
        try await withSQL("read the last day", .statement) { sql in
            try await sql.row(
                "SELECT \(SQLQuery.dayText("MAX(\(basis.column))")) FROM \(raw: DashboardTable(basis, byApp: false).name)"
            )?.optionalString(0).flatMap(UTCDay.init)
        }
    }
}
