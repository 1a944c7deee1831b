/// A pending token as an exchange takes it.
package struct AppleAdsClaim: Sendable, Hashable {
    package var id: Int64
    package var appID: Int64
    package var token: String
    package var obtainedAt: UTCInstant
    /// Requests made so far.
    package var attempts: Int
    /// Answers 404 ("not ready yet") so far.
    package var notFound: Int

    package init(id: Int64, appID: Int64, token: String, obtainedAt: UTCInstant, attempts: Int, notFound: Int) {
        self.id = id
        self.appID = appID
        self.token = token
        self.obtainedAt = obtainedAt
        self.attempts = attempts
        self.notFound = notFound
    }

    package var expiresAt: UTCInstant { UTCInstant(milliseconds: obtainedAt.milliseconds + AppleAdsToken.validityMs) }
}

/// What Apple's endpoint answered to one request.
package enum AppleAdsAnswer: Sendable, Hashable {
    /// 200 with a readable record.
    case record(AppleAdsRecord)
    /// 400: the token is not valid.
    case invalid
    /// 404: the record is not ready yet.
    case notReady
    /// 5xx, 429, a timeout, a connection error, an unreadable 200, any other status: try again
    /// later. The text says which (it becomes the token's `last_status`).
    case unavailable(String)
}

/// What one exchange leaves of a token: its new state, counts and next due time, and the
/// record when Apple gave one.
package struct AppleAdsOutcome: Sendable, Hashable {
    package var id: Int64
    package var state: AppleAdsTokenState
    package var attempts: Int
    package var notFound: Int
    /// When the token may be sent again (pending only).
    package var dueMs: Int64
    package var lastStatus: String
    package var lastAttemptMs: Int64
    package var record: AppleAdsRecord?
    /// The day a report counts it on (resolved with a record only).
    package var reportDay: UTCDay?

    /// A 404 answered while quick retries remain: the next request comes 5 seconds later, and
    /// `fetch --once` waits for it.
    package var awaitsQuickRetry: Bool {
        state == .pending && lastStatus == "404" && notFound <= AppleAdsExchangeRules.quickRetries
    }
}

/// The exchange's retry rules, from Apple's documentation:
/// - 200: resolved (`attributed`, or `not_attributed` for `attribution: false`);
/// - 400: `invalid`, never sent again;
/// - 404: not ready; retried at least 5 seconds later, three times, then at a growing interval
///   (1 minute, doubling, at most an hour) while the token is valid;
/// - anything else (5xx, timeouts): retried after ``retryAfterMs``;
/// - a token is never sent after the 24 hours from when the app obtained it: it is then
///   `expired`.
package struct AppleAdsExchangeRules: Sendable, Hashable {
    /// The interval after a 5xx, a timeout or another failure (`--retry-after`).
    package var retryAfterMs: Int64

    package init(retryAfterMs: Int64 = 60_000) {
        self.retryAfterMs = retryAfterMs
    }

    /// Apple's minimum wait after a 404.
    static let notReadyRetryMs: Int64 = 5_000
    /// The 404 retries at ``notReadyRetryMs``, before the interval grows.
    package static let quickRetries = 3
    /// The first of the growing intervals after the quick retries, and the largest.
    static let slowRetryMs: Int64 = 60_000
    static let maximumRetryMs: Int64 = 3_600_000

    /// A token found past its 24 hours just before its request: closed unsent.
    package func expired(_ claim: AppleAdsClaim, nowMs: Int64) -> AppleAdsOutcome {
        AppleAdsOutcome(
            id: claim.id,
            state: .expired,
            attempts: claim.attempts,
            notFound: claim.notFound,
            dueMs: nowMs,
            lastStatus: "expired",
            lastAttemptMs: nowMs,
            record: nil,
            reportDay: nil
        )
    }

    /// The outcome of `answer` to a request for `claim` made at `nowMs`.
    package func outcome(_ claim: AppleAdsClaim, _ answer: AppleAdsAnswer, nowMs: Int64) -> AppleAdsOutcome {
        var outcome = AppleAdsOutcome(
            id: claim.id,
            state: .pending,
            attempts: claim.attempts + 1,
            notFound: claim.notFound,
            dueMs: nowMs,
            lastStatus: "",
            lastAttemptMs: nowMs,
            record: nil,
            reportDay: nil
        )
        let wait: Int64
        switch answer {
        case .record(let record):
            outcome.state = record.attribution ? .attributed : .notAttributed
            outcome.lastStatus = "200"
            outcome.record = record
            outcome.reportDay = record.reportDay(obtainedAt: claim.obtainedAt)
            return outcome
        case .invalid:
            outcome.state = .invalid
            outcome.lastStatus = "400"
            return outcome
        case .notReady:
            outcome.notFound += 1
            outcome.lastStatus = "404"
            if outcome.notFound <= Self.quickRetries {
                wait = Self.notReadyRetryMs
            } else {
                let doublings = min(outcome.notFound - Self.quickRetries - 1, 16)
                wait = min(Self.slowRetryMs << Int64(doublings), Self.maximumRetryMs)
            }
        case .unavailable(let status):
            outcome.lastStatus = status
            wait = max(retryAfterMs, 1)
        }
        // Never later than the expiry: at its due time an expired token is closed unsent.
        outcome.dueMs = min(nowMs + wait, claim.expiresAt.milliseconds)
        return outcome
    }
}
