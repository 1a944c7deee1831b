import PostbackKit
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The pure parts of the Apple Ads exchange: reading submissions and records, and the retry rules.
@Suite("Apple Ads rules")
struct AppleAdsRulesTests {
    let now = UTCInstant(iso8601: "2026-11-23T12:00:00Z") ?? UTCInstant(milliseconds: 0)

    func claim(attempts: Int = 0, notFound: Int = 0, obtainedHoursAgo: Int64 = 1) -> AppleAdsClaim {
        AppleAdsClaim(
            id: 1,
            appID: 9,
            token: "t",
            obtainedAt: UTCInstant(milliseconds: now.milliseconds - obtainedHoursAgo * 3_600_000),
            attempts: attempts,
            notFound: notFound
        )
    }

    @Test("404: three retries 5 s apart, then 1 min doubling to an hour, never past the 24 hours")
    func notReady() {
        let rules = AppleAdsExchangeRules(retryAfterMs: 60_000)
        var waits: [Int64] = []
        var current = claim()
        for _ in 0..<10 {
            let outcome = rules.outcome(current, .notReady, nowMs: now.milliseconds)
            #expect(outcome.state == .pending && outcome.lastStatus == "404")
            waits.append(outcome.dueMs - now.milliseconds)
            current.attempts = outcome.attempts
            current.notFound = outcome.notFound
        }
        #expect(waits == [5_000, 5_000, 5_000, 60_000, 120_000, 240_000, 480_000, 960_000, 1_920_000, 3_600_000])
        #expect(rules.outcome(claim(notFound: 1), .notReady, nowMs: now.milliseconds).awaitsQuickRetry)
        #expect(!rules.outcome(claim(notFound: 3), .notReady, nowMs: now.milliseconds).awaitsQuickRetry)
        // Half a minute of validity left: due at the expiry, when the claim closes it unsent.
        let late = AppleAdsClaim(
            id: 1,
            appID: 9,
            token: "t",
            obtainedAt: UTCInstant(milliseconds: now.milliseconds - 24 * 3_600_000 + 30_000),
            attempts: 5,
            notFound: 5
        )
        #expect(rules.outcome(late, .notReady, nowMs: now.milliseconds).dueMs == late.expiresAt.milliseconds)
        let closed = rules.expired(late, nowMs: now.milliseconds)
        #expect(closed.state == .expired && closed.attempts == 5 && closed.record == nil)
    }

    @Test("200, 400 and 5xx: resolved, invalid, retried after --retry-after")
    func answers() throws {
        let rules = AppleAdsExchangeRules(retryAfterMs: 7_000)
        let record = try AppleAdsRecord.parse(Array(#"{"attribution":false,"x":[1]}"#.utf8))
        #expect(rules.outcome(claim(), .record(record), nowMs: now.milliseconds).state == .notAttributed)
        #expect(rules.outcome(claim(), .invalid, nowMs: now.milliseconds).state == .invalid)
        let retry = rules.outcome(claim(attempts: 2, notFound: 2), .unavailable("503"), nowMs: now.milliseconds)
        #expect(
            retry.state == .pending && retry.dueMs == now.milliseconds + 7_000 && retry.notFound == 2
                && retry.attempts == 3
        )
    }

    @Test("a record's odd values are kept, its report day is the click's, else the impression's, else the token's")
    func records() throws {
        let record = try AppleAdsRecord.parse(
            Array(
                #"{"attribution":true,"campaignId":"12","adGroupId":true,"conversionType":"Reinstall","impressionDate":"2026-11-01T23:30:00-02:00"}"#
                    .utf8
            )
        )
        #expect(record.campaignID == 12 && record.adGroupID == nil && record.conversionType == "Reinstall")
        #expect(record.reportDay(obtainedAt: now).description == "2026-11-02")
        #expect(
            try AppleAdsRecord.parse(Array(#"{"attribution":true}"#.utf8)).reportDay(obtainedAt: now).description
                == "2026-11-23"
        )
        #expect(throws: AppleAdsTokenError.self) { try AppleAdsRecord.parse(Array(#"{"orgId":1}"#.utf8)) }
        #expect(throws: AppleAdsTokenError.self) { try AppleAdsRecord.parse(Array("<html>".utf8)) }
    }

    @Test("a submission names the field at fault")
    func submissions() throws {
        func field(_ text: String) -> String?? {
            do {
                _ = try AppleAdsToken.parse(json: Array(text.utf8), now: now)
                return .none
            } catch {
                return .some(error.field)
            }
        }
        let token = try AppleAdsToken.parse(json: Array(#"{"app_id":"42","token":"abc+/="}"#.utf8), now: now)
        #expect(token.appID == 42 && token.obtainedAt == now)
        #expect(field(#"{"app_id":42,"token":"abc","obtained_at":"2026-11-23T12:59:00Z"}"#) == .none, "an hour of skew")
        let fast = try AppleAdsToken.parse(
            json: Array(#"{"app_id":42,"token":"abc","obtained_at":"2026-11-23T12:30:00Z"}"#.utf8),
            now: now
        )
        #expect(fast.obtainedAt == now && fast.obtainedAtGiven, "a fast clock never lengthens the validity")
        #expect(!token.obtainedAtGiven)
        #expect(field(#"{"app_id":42,"token":"abc","obtained_at":"2026-11-23T13:01:00Z"}"#) == .some("obtained_at"))
        #expect(field(#"{"app_id":0,"token":"abc"}"#) == .some("app_id"))
        #expect(field(#"{"app_id":42,"token":""}"#) == .some("token"))
        #expect(field(#"{"app_id":42,"token":"é"}"#) == .some("token"))
        #expect(field(#"{"app_id":42,"token":"\#(String(repeating: "a", count: 4097))"}"#) == .some("token"))
        #expect(field("{") == .some(nil))
    }
}

@Suite("Text lines")
struct TextLinesTests {
    @Test("lines are numbered, blank ones skipped, CRLF trimmed; a line over the limit is skipped whole and named")
    func bounded() throws {
        let path = "/tmp/postbackd-textlines-\(UInt64.random(in: 0...UInt64.max)).txt"
        let long = String(repeating: "x", count: 200_000)
        let text = "a\r\n\n  \n\(long)\nb\nlast-without-newline"
        let file = try #require(fopen(path, "wb"))
        fputs(text, file)
        fclose(file)
        defer { unlink(path) }
        let lines = try TextLines(path, maximumBytes: 1_000)
        var read: [(Int, TextLines.Line)] = []
        while let line = try lines.next() { read.append((lines.number, line)) }
        #expect(read.map(\.0) == [1, 4, 5, 6])
        #expect(
            read.map(\.1) == [
                .text(Array("a".utf8)), .tooLong(200_000), .text(Array("b".utf8)),
                .text(Array("last-without-newline".utf8)),
            ]
        )
    }
}
