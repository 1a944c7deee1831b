import PostbackKit

/// Apple Ads tokens and records on both engines: adding tokens, claiming them, recording
/// outcomes, and what `apple-ads status`, `report` and `fetch` read, each statement written
/// once (the claim's `FOR UPDATE SKIP LOCKED` is PostgreSQL's spelling of what SQLite's one
/// writer gives).
extension PostbackStorage {
    package func addAppleAdsTokens(
        _ tokens: [AppleAdsToken],
        receivedAtMs: [Int64]
    ) async throws -> [AppleAdsAddOutcome] {
        guard !tokens.isEmpty else { return [] }
        precondition(tokens.count == receivedAtMs.count, "one receipt time per token")
        let received = Array(zip(tokens, receivedAtMs))
        let inserted = try await withSQL("store Apple Ads tokens", .write) { sql in
            var inserted = Set<String>()
            // 9 values a row, well within either engine's limit on a statement's parameters.
            for start in stride(from: 0, to: received.count, by: 1_000) {
                let rows = received[start..<min(start + 1_000, received.count)].map { token, receivedAtMs -> SQLQuery in
                    let expired = token.expiresAt.milliseconds <= receivedAtMs
                    let state = expired ? AppleAdsTokenState.expired : AppleAdsTokenState.pending
                    return """
                        (\(token.sha256), \(expired ? nil : token.token), \(token.appID),
                            \(token.obtainedAt.milliseconds), \(receivedAtMs), \(state.rawValue), \(receivedAtMs), \(expired ? receivedAtMs : nil),
                            \(token.installID))
                        """
                }
                try await sql.forEachRow(
                    """
                    INSERT INTO apple_ads_tokens (token_sha256, token, app_id, obtained_ms, received_ms, state, due_ms,
                        resolved_ms, install_id)
                    VALUES \(list: rows)
                    ON CONFLICT (token_sha256) DO NOTHING
                    RETURNING token_sha256
                    """
                ) { row in inserted.insert(try row.string(0)) }
            }
            return inserted
        }
        // A token twice in one batch: its first copy was stored, the second is known.
        var seen = Set<String>()
        return received.map { token, receivedAtMs in
            guard inserted.contains(token.sha256), seen.insert(token.sha256).inserted else { return .known }
            return token.expiresAt.milliseconds <= receivedAtMs ? .expired : .added
        }
    }

    /// How many tokens wait to be exchanged, and when the oldest of them was obtained (ms since
    /// 1970): the pending rows only (`apple_ads_tokens_state`), for `serve`'s metrics.
    package func appleAdsPending() async throws -> (count: Int, oldestObtainedMs: Int64?) {
        try await withSQL("read the pending Apple Ads tokens", .read) { sql in
            let row = try await sql.row(
                "SELECT count(*), min(obtained_ms) FROM apple_ads_tokens WHERE state = 'pending'"
            )
            return (try row?.int(0) ?? 0, try row?.optionalInt64(1))
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
                WHERE \(raw: AppleAdsMetric.otherConversions.condition)
                GROUP BY 1
                """
            )
            status.unknownClaimTypes = try await counts(
                """
                SELECT claim_type, count(*) FROM apple_ads_attributions
                WHERE claim_type IS NOT NULL AND claim_type NOT IN (\(raw: AppleAdsMetric.sqlList(AppleAdsRecord.knownClaimTypes)))
                GROUP BY 1
                """
            )
            status.unknownSupplyPlacements = try await counts(
                """
                SELECT supply_placement, count(*) FROM apple_ads_attributions
                WHERE supply_placement IS NOT NULL
                    AND supply_placement NOT IN (\(raw: AppleAdsMetric.sqlList(AppleAdsRecord.knownSupplyPlacements)))
                GROUP BY 1
                """
            )
            status.testRecords =
                try await sql.row(
                    "SELECT count(*) FROM apple_ads_attributions WHERE \(raw: AppleAdsMetric.test.condition)"
                )?.int(0) ?? 0
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

/// The exchange's own: claiming tokens, recording outcomes, and when the next token is due.
extension AppleAdsTokenQueue {
    /// Closes every pending token past its 24 hours as `expired` (deleting the token) unless a
    /// request for it is in flight, then leases up to `limit` tokens, earliest due first, to
    /// `holder` until `leaseUntilMs`: those due by `dueByMs`, and those waiting for one of the
    /// quick retries of a 404 that are due by `nowMs` (`fetch --once` passes its start as
    /// `dueByMs`, so that a pass ends). Concurrent claims never return one token twice: on
    /// PostgreSQL the rows are taken `FOR UPDATE SKIP LOCKED`, so that several exchanging
    /// processes (`serve --apple-ads` on several machines) share the tokens without waiting
    /// for each other; SQLite's one writer makes each claim whole. The rows are picked once, in
    /// a materialized CTE (as `IN (subquery)`, PostgreSQL's planner may run a locking subquery
    /// again and again). Returns the leased tokens, by id, and how many expired.
    package func claimAppleAdsTokens(
        limit: Int,
        nowMs: Int64,
        dueByMs: Int64,
        leaseUntilMs: Int64,
        holder: String
    ) async throws -> (claimed: [AppleAdsClaim], expired: Int) {
        try await withSQL("claim Apple Ads tokens", .write) { sql in
            var expired = 0
            try await sql.forEachRow(
                """
                WITH closing AS MATERIALIZED (
                    SELECT id FROM apple_ads_tokens
                    WHERE state = 'pending' AND obtained_ms + \(AppleAdsToken.validityMs) <= \(nowMs)
                        AND lease_until_ms <= \(nowMs)
                    \(sqlite: "", postgres: "FOR UPDATE SKIP LOCKED"))
                UPDATE apple_ads_tokens SET state = 'expired', token = NULL, resolved_ms = \(nowMs),
                    leased_by = NULL, lease_until_ms = 0
                FROM closing WHERE apple_ads_tokens.id = closing.id
                RETURNING apple_ads_tokens.id
                """
            ) { _ in expired += 1 }
            var claimed: [AppleAdsClaim] = []
            try await sql.forEachRow(
                """
                WITH picked AS MATERIALIZED (
                    SELECT id FROM apple_ads_tokens
                    WHERE state = 'pending' AND lease_until_ms <= \(nowMs)
                        AND (due_ms <= \(dueByMs) OR (due_ms <= \(nowMs) AND last_status = '404'
                            AND not_found BETWEEN 1 AND \(raw: String(AppleAdsExchangeRules.quickRetries))))
                    ORDER BY due_ms, id LIMIT \(Int64(limit))
                    \(sqlite: "", postgres: "FOR UPDATE SKIP LOCKED"))
                UPDATE apple_ads_tokens SET leased_by = \(holder), lease_until_ms = \(leaseUntilMs)
                FROM picked WHERE apple_ads_tokens.id = picked.id
                RETURNING apple_ads_tokens.id, app_id, token, obtained_ms, attempts, not_found
                """
            ) { row in
                guard let token = try row.optionalString(2) else { return }
                claimed.append(
                    AppleAdsClaim(
                        id: try row.int64(0),
                        appID: try row.int64(1),
                        token: token,
                        obtainedAt: UTCInstant(milliseconds: try row.int64(3)),
                        attempts: Int(try row.int64(4)),
                        notFound: Int(try row.int64(5))
                    )
                )
            }
            return (claimed.sorted { $0.id < $1.id }, expired)
        }
    }

    package func recordAppleAdsOutcomes(_ outcomes: [AppleAdsOutcome], holder: String) async throws -> Set<Int64> {
        guard !outcomes.isEmpty else { return [] }
        return try await withSQL("record Apple Ads exchanges", .write) { sql in
            var recorded = Set<Int64>()
            for outcome in outcomes {
                let state = outcome.state.rawValue
                let appID = try await sql.row(
                    """
                    UPDATE apple_ads_tokens SET state = \(state), attempts = \(outcome.attempts),
                        not_found = \(outcome.notFound), due_ms = \(outcome.dueMs), last_status = \(outcome.lastStatus),
                        last_attempt_ms = \(outcome.lastAttemptMs), leased_by = NULL, lease_until_ms = 0,
                        token = CASE WHEN \(state) = 'pending' THEN token END,
                        resolved_ms = CASE WHEN \(state) = 'pending' THEN NULL ELSE \(outcome.lastAttemptMs) END
                    WHERE id = \(outcome.id) AND leased_by = \(holder) AND state = 'pending'
                    RETURNING app_id
                    """
                )?.int64(0)
                guard let appID else { continue }
                recorded.insert(outcome.id)
                guard let record = outcome.record, let day = outcome.reportDay else { continue }
                try await sql.execute(
                    """
                    INSERT INTO apple_ads_attributions (token_id, app_id, date, attribution, org_id, campaign_id,
                        ad_group_id, keyword_id, ad_id, country_or_region, conversion_type, claim_type, click_date,
                        impression_date, supply_placement, raw, received_ms)
                    VALUES (\(outcome.id), \(appID), \(day.description), \(record.attribution ? 1 : 0), \(record.orgID),
                        \(record.campaignID), \(record.adGroupID), \(record.keywordID), \(record.adID),
                        \(record.countryOrRegion), \(record.conversionType), \(record.claimType), \(record.clickDate),
                        \(record.impressionDate), \(record.supplyPlacement), \(record.raw), \(outcome.lastAttemptMs))
                    ON CONFLICT (token_id) DO NOTHING
                    """
                )
            }
            return recorded
        }
    }

    package func nextAppleAdsTokenDue() async throws -> Int64? {
        try await withSQL("read the next Apple Ads token due", .statement) { sql in
            try await sql.row(
                """
                SELECT min(\(SQLQuery.greatest("due_ms", "lease_until_ms"))) FROM apple_ads_tokens
                WHERE state = 'pending'
                """
            )?.optionalInt64(0)
        }
    }
}
