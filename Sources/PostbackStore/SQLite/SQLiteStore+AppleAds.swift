import GRDB
import PostbackKit

/// Claiming Apple Ads tokens on SQLite: its one writer makes every claim atomic, so two
/// exchanging processes never lease one token at once (PostgreSQL skips locked rows instead).
extension SQLiteStore {
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
}
