import PostbackKit

/// What `apple-ads status`, `report` and `fetch` read, on both engines. Adding tokens, claiming
/// them (PostgreSQL's `FOR UPDATE SKIP LOCKED`) and recording outcomes stay each engine's.
extension SQLStore {
    package func nextAppleAdsTokenDue() async throws -> Int64? {
        try await withSQL("read the next Apple Ads token due", .statement) { sql in
            try await sql.row(
                "SELECT min(\(SQLQuery.greatest("due_ms", "lease_until_ms"))) FROM apple_ads_tokens WHERE state = 'pending'"
            )?.optionalInt64(0)
        }
    }

    package func appleAdsStatus() async throws -> AppleAdsStatus {
        try await withSQL("read the Apple Ads status", .read) { sql in
            var status = AppleAdsStatus()
            for row in try await sql.rows("SELECT state, count(*) FROM apple_ads_tokens GROUP BY state") {
                if let state = AppleAdsTokenState(rawValue: try row.string(0)) { status.counts[state] = try row.int(1) }
            }
            let pending = try await sql.row(
                """
                SELECT min(obtained_ms), min(\(SQLQuery.greatest("due_ms", "lease_until_ms"))) FROM apple_ads_tokens
                WHERE state = 'pending'
                """
            )
            status.oldestPendingObtainedMs = try pending?.optionalInt64(0)
            status.nextDueMs = try pending?.optionalInt64(1)
            func counts(_ query: SQLQuery) async throws -> [String: Int] {
                var result: [String: Int] = [:]
                for row in try await sql.rows(query) { result[try row.string(0)] = try row.int(1) }
                return result
            }
            status.pendingByLastStatus = try await counts(
                "SELECT coalesce(last_status, 'none'), count(*) FROM apple_ads_tokens WHERE state = 'pending' GROUP BY 1"
            )
            status.unknownConversionTypes = try await counts(
                """
                SELECT coalesce(conversion_type, 'none'), count(*) FROM apple_ads_attributions
                WHERE attribution = 1 AND (conversion_type IS NULL OR conversion_type NOT IN ('Download', 'Redownload', 'preorder'))
                GROUP BY 1
                """
            )
            status.unknownClaimTypes = try await counts(
                """
                SELECT claim_type, count(*) FROM apple_ads_attributions
                WHERE claim_type IS NOT NULL AND claim_type NOT IN ('Click', 'Impression')
                GROUP BY 1
                """
            )
            return status
        }
    }

    package func appleAdsReport(_ query: AppleAdsReportQuery) async throws -> AppleAdsReport {
        try await withSQL("read the Apple Ads report", .statement) { sql in
            let rows = try await sql.rows(query.statement).map { row in
                (
                    try query.dimensions.enumerated().map { index, dimension in
                        dimension.isText
                            ? try row.optionalString(index).map(DimensionValue.text) ?? .null
                            : try row.optionalInt64(index).map(DimensionValue.integer) ?? .null
                    },
                    try (query.dimensions.count..<row.values.count).map { try row.optionalInt64($0) }
                )
            }
            return AppleAdsReport.assemble(query, rows)
        }
    }
}
