import PostbackKit
import PostgresNIO

/// Apple Ads tokens on PostgreSQL. Claims take rows with `FOR UPDATE SKIP LOCKED`, so several
/// exchanging processes (`serve --apple-ads` on several machines) share the tokens without
/// sending one twice at once.
extension PostgresStore {
    package func addAppleAdsTokens(
        _ tokens: [AppleAdsToken],
        receivedAtMs: [Int64]
    ) async throws
        -> [AppleAdsAddOutcome]
    {
        guard !tokens.isEmpty else { return [] }
        precondition(tokens.count == receivedAtMs.count, "one receipt time per token")
        let logger = self.logger
        let digests = tokens.map(\.sha256)
        let inserted = try await transaction("store Apple Ads tokens", oneStatement: true) { connection in
            var inserted = Set<String>()
            for try await digest in try await connection.send(
                """
                INSERT INTO apple_ads_tokens (token_sha256, token, app_id, obtained_ms, received_ms, state, due_ms,
                    resolved_ms)
                SELECT sha, CASE WHEN expired THEN NULL ELSE token END, app_id, obtained_ms, received_ms,
                    CASE WHEN expired THEN 'expired' ELSE 'pending' END, received_ms,
                    CASE WHEN expired THEN received_ms END
                FROM (
                    SELECT *, obtained_ms + \(AppleAdsToken.validityMs) <= received_ms AS expired
                    FROM unnest(\(digests)::text[], \(tokens.map(\.token))::text[], \(tokens.map(\.appID))::bigint[],
                        \(tokens.map(\.obtainedAt.milliseconds))::bigint[], \(receivedAtMs)::bigint[]) WITH ORDINALITY
                        AS i(sha, token, app_id, obtained_ms, received_ms, n)
                    ORDER BY n) AS input
                ON CONFLICT (token_sha256) DO NOTHING
                RETURNING token_sha256
                """,
                logger: logger
            ).decode(String.self) {
                inserted.insert(digest)
            }
            return inserted
        }
        // A token twice in one batch: its first copy was stored, the second is known.
        var seen = Set<String>()
        return zip(tokens, zip(digests, receivedAtMs)).map { token, pair in
            let (digest, receivedAtMs) = pair
            guard inserted.contains(digest), seen.insert(digest).inserted else { return .known }
            return token.expiresAt.milliseconds <= receivedAtMs ? .expired : .added
        }
    }

    package func claimAppleAdsTokens(
        limit: Int,
        nowMs: Int64,
        dueByMs: Int64,
        leaseUntilMs: Int64,
        holder: String
    )
        async throws -> (claimed: [AppleAdsClaim], expired: Int)
    {
        let logger = self.logger
        return try await transaction("claim Apple Ads tokens") { connection in
            let expired = Int(
                try await connection.value(
                    """
                    WITH closed AS (
                        UPDATE apple_ads_tokens SET state = 'expired', token = NULL, resolved_ms = \(nowMs),
                            leased_by = NULL, lease_until_ms = 0
                        WHERE id IN (
                            SELECT id FROM apple_ads_tokens
                            WHERE state = 'pending' AND obtained_ms + \(AppleAdsToken.validityMs) <= \(nowMs)
                                AND lease_until_ms <= \(nowMs)
                            FOR UPDATE SKIP LOCKED)
                        RETURNING 1)
                    SELECT count(*) FROM closed
                    """,
                    as: Int64.self,
                    logger: logger
                ) ?? 0
            )
            var claimed: [AppleAdsClaim] = []
            for try await (id, appID, token, obtained, attempts, notFound) in try await connection.send(
                """
                WITH picked AS MATERIALIZED (
                    SELECT id FROM apple_ads_tokens
                    WHERE state = 'pending' AND lease_until_ms <= \(nowMs) AND (due_ms <= \(dueByMs) OR (due_ms <= \(nowMs)
                        AND last_status = '404' AND not_found BETWEEN 1 AND \(unescaped: String(AppleAdsExchangeRules.quickRetries))))
                    ORDER BY due_ms, id LIMIT \(Int64(limit))
                    FOR UPDATE SKIP LOCKED)
                UPDATE apple_ads_tokens t SET leased_by = \(holder), lease_until_ms = \(leaseUntilMs)
                FROM picked WHERE t.id = picked.id
                RETURNING t.id, t.app_id, t.token, t.obtained_ms, t.attempts::bigint, t.not_found::bigint
                """,
                logger: logger
            ).decode((Int64, Int64, String?, Int64, Int64, Int64).self) {
                guard let token else { continue }
                claimed.append(
                    AppleAdsClaim(
                        id: id,
                        appID: appID,
                        token: token,
                        obtainedAt: UTCInstant(milliseconds: obtained),
                        attempts: Int(attempts),
                        notFound: Int(notFound)
                    )
                )
            }
            return (claimed.sorted { $0.id < $1.id }, expired)
        }
    }

    package func recordAppleAdsOutcomes(_ outcomes: [AppleAdsOutcome], holder: String) async throws -> Set<Int64> {
        guard !outcomes.isEmpty else { return [] }
        let logger = self.logger
        return try await transaction("record Apple Ads exchanges") { connection in
            var recorded = Set<Int64>()
            for outcome in outcomes {
                let state = outcome.state.rawValue
                var appID: Int64?
                for try await value in try await connection.send(
                    """
                    UPDATE apple_ads_tokens SET state = \(state), attempts = \(Int64(outcome.attempts)),
                        not_found = \(Int64(outcome.notFound)), due_ms = \(outcome.dueMs),
                        last_status = \(outcome.lastStatus), last_attempt_ms = \(outcome.lastAttemptMs),
                        leased_by = NULL, lease_until_ms = 0,
                        token = CASE WHEN \(state) = 'pending' THEN token END,
                        resolved_ms = CASE WHEN \(state) = 'pending' THEN NULL ELSE \(outcome.lastAttemptMs)::bigint END
                    WHERE id = \(outcome.id) AND leased_by = \(holder) AND state = 'pending'
                    RETURNING app_id
                    """,
                    logger: logger
                ).decode(Int64.self) {
                    appID = value
                }
                guard let appID else { continue }
                recorded.insert(outcome.id)
                guard let record = outcome.record, let day = outcome.reportDay else { continue }
                try await connection.send(
                    """
                    INSERT INTO apple_ads_attributions (token_id, app_id, date, attribution, org_id, campaign_id,
                        ad_group_id, keyword_id, ad_id, country_or_region, conversion_type, claim_type, click_date,
                        impression_date, supply_placement, raw, received_ms)
                    VALUES (\(outcome.id), \(appID), \(day.description), \(Int16(record.attribution ? 1 : 0)),
                        \(record.orgID), \(record.campaignID), \(record.adGroupID), \(record.keywordID), \(record.adID),
                        \(record.countryOrRegion), \(record.conversionType), \(record.claimType), \(record.clickDate),
                        \(record.impressionDate), \(record.supplyPlacement), \(record.raw), \(outcome.lastAttemptMs))
                    ON CONFLICT (token_id) DO NOTHING
                    """,
                    logger: logger
                )
            }
            return recorded
        }
    }
}
