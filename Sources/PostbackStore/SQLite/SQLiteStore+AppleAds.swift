import GRDB
import PostbackKit

/// Apple Ads tokens on SQLite. Its one writer makes every claim atomic: two exchanging
/// processes never lease one token at once.
extension SQLiteStore {
    package func addAppleAdsTokens(_ tokens: [AppleAdsToken], receivedAtMs: [Int64]) throws -> [AppleAdsAddOutcome] {
        guard !tokens.isEmpty else { return [] }
        precondition(tokens.count == receivedAtMs.count, "one receipt time per token")
        return try queue.write { db in
            let insert = try db.cachedStatement(
                sql: """
                    INSERT INTO apple_ads_tokens (token_sha256, token, app_id, obtained_ms, received_ms, state, due_ms,
                        resolved_ms)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (token_sha256) DO NOTHING
                    """
            )
            return try zip(tokens, receivedAtMs).map { token, receivedAtMs in
                let expired = token.expiresAt.milliseconds <= receivedAtMs
                try insert.execute(arguments: [
                    token.sha256, expired ? nil : token.token, token.appID, token.obtainedAt.milliseconds, receivedAtMs,
                    expired ? AppleAdsTokenState.expired.rawValue : AppleAdsTokenState.pending.rawValue, receivedAtMs,
                    expired ? receivedAtMs : nil,
                ])
                return db.changesCount == 0 ? .known : expired ? .expired : .added
            }
        }
    }

    package func claimAppleAdsTokens(
        limit: Int,
        nowMs: Int64,
        dueByMs: Int64,
        leaseUntilMs: Int64,
        holder: String
    ) throws
        -> (claimed: [AppleAdsClaim], expired: Int)
    {
        try queue.write { db in
            try db.execute(
                sql: """
                    UPDATE apple_ads_tokens SET state = 'expired', token = NULL, resolved_ms = ?, leased_by = NULL,
                        lease_until_ms = 0
                    WHERE state = 'pending' AND obtained_ms + ? <= ? AND lease_until_ms <= ?
                    """,
                arguments: [nowMs, AppleAdsToken.validityMs, nowMs, nowMs]
            )
            let expired = db.changesCount
            let rows = try Row.fetchAll(
                db,
                sql: """
                    UPDATE apple_ads_tokens SET leased_by = ?, lease_until_ms = ?
                    WHERE id IN (
                        SELECT id FROM apple_ads_tokens
                        WHERE state = 'pending' AND lease_until_ms <= ? AND (due_ms <= ? OR (due_ms <= ?
                            AND last_status = '404' AND not_found BETWEEN 1 AND \(AppleAdsExchangeRules.quickRetries)))
                        ORDER BY due_ms, id LIMIT ?)
                    RETURNING id, app_id, token, obtained_ms, attempts, not_found
                    """,
                arguments: [holder, leaseUntilMs, nowMs, dueByMs, nowMs, limit]
            )
            let claimed = rows.compactMap { row -> AppleAdsClaim? in
                guard let token = row[2] as String? else { return nil }
                return AppleAdsClaim(
                    id: row[0],
                    appID: row[1],
                    token: token,
                    obtainedAt: UTCInstant(milliseconds: row[3]),
                    attempts: row[4],
                    notFound: row[5]
                )
            }
            return (claimed.sorted { $0.id < $1.id }, expired)
        }
    }

    package func recordAppleAdsOutcomes(_ outcomes: [AppleAdsOutcome], holder: String) throws -> Set<Int64> {
        guard !outcomes.isEmpty else { return [] }
        return try queue.write { db in
            var recorded = Set<Int64>()
            let update = try db.cachedStatement(
                sql: """
                    UPDATE apple_ads_tokens SET state = ?, attempts = ?, not_found = ?, due_ms = ?, last_status = ?,
                        last_attempt_ms = ?, leased_by = NULL, lease_until_ms = 0,
                        token = CASE WHEN ? = 'pending' THEN token END,
                        resolved_ms = CASE WHEN ? = 'pending' THEN NULL ELSE ? END
                    WHERE id = ? AND leased_by = ? AND state = 'pending'
                    RETURNING app_id
                    """
            )
            let insert = try db.cachedStatement(
                sql: """
                    INSERT INTO apple_ads_attributions (token_id, app_id, date, attribution, org_id, campaign_id,
                        ad_group_id, keyword_id, ad_id, country_or_region, conversion_type, claim_type, click_date,
                        impression_date, supply_placement, raw, received_ms)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (token_id) DO NOTHING
                    """
            )
            for outcome in outcomes {
                let state = outcome.state.rawValue
                let appID = try Int64.fetchOne(
                    update,
                    arguments: [
                        state, outcome.attempts, outcome.notFound, outcome.dueMs, outcome.lastStatus,
                        outcome.lastAttemptMs, state, state, outcome.lastAttemptMs, outcome.id, holder,
                    ]
                )
                guard let appID else { continue }
                recorded.insert(outcome.id)
                guard let record = outcome.record, let day = outcome.reportDay else { continue }
                try insert.execute(arguments: [
                    outcome.id, appID, day.description, record.attribution ? 1 : 0, record.orgID, record.campaignID,
                    record.adGroupID, record.keywordID, record.adID, record.countryOrRegion, record.conversionType,
                    record.claimType, record.clickDate, record.impressionDate, record.supplyPlacement, record.raw,
                    outcome.lastAttemptMs,
                ])
            }
            return recorded
        }
    }
}
