import PostbackKit
import PostgresNIO

/// Claiming Apple Ads tokens on PostgreSQL. Claims take rows with `FOR UPDATE SKIP LOCKED`, so several
/// exchanging processes (`serve --apple-ads` on several machines) share the tokens without
/// sending one twice at once.
extension PostgresStore {
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
}
