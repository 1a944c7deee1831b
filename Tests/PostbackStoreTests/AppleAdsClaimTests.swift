import PostbackKit
import PostbackStore
import PostbackTestSupport
import Testing

/// The Apple Ads claim, one statement for both engines: what `apple-ads fetch` and
/// `serve --apple-ads` lease before they ask Apple.
@Suite("Claiming Apple Ads tokens, on every engine")
struct AppleAdsClaimTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory("apple-ads-claim")
    }

    @Test(
        "tokens past their 24 hours close; due ones are leased earliest first, to one of four claimants at once, never twice",
        arguments: TestEngine.available
    )
    func claims(_ engine: TestEngine) async throws {
        let store = try await TestStore.make(engine, in: directory)
        let now: Int64 = 1_795_000_000_000
        let hour: Int64 = 3_600_000
        // Three tokens obtained 25 hours ago (valid when they arrived, past their day now), and
        // 40 obtained an hour ago, due in the order they arrived.
        var tokens: [AppleAdsToken] = []
        var received: [Int64] = []
        for index in 0..<3 {
            tokens.append(
                AppleAdsToken(appID: 1, token: "old-\(index)", obtainedAt: UTCInstant(milliseconds: now - 25 * hour))
            )
            received.append(now - 25 * hour + 1_000)
        }
        for index in 0..<40 {
            tokens.append(
                AppleAdsToken(appID: 2, token: "due-\(index)", obtainedAt: UTCInstant(milliseconds: now - hour))
            )
            received.append(now - hour + Int64(index))
        }
        let due = Set((0..<40).map { "due-\($0)" })
        try await PostbackStores.with(store.location) { shared in
            let added = try await shared.addAppleAdsTokens(tokens, receivedAtMs: received)
            #expect(added.allSatisfy { $0 == .added })

            let first = try await shared.claimAppleAdsTokens(
                limit: 5,
                nowMs: now,
                dueByMs: now,
                leaseUntilMs: now + 60_000,
                holder: "first"
            )
            #expect(first.expired == 3)
            #expect(first.claimed.map(\.token) == (0..<5).map { "due-\($0)" })
            #expect(first.claimed.allSatisfy { $0.appID == 2 && $0.attempts == 0 && $0.notFound == 0 })

            // Four claimants at once (on PostgreSQL, four connections): a token goes to one.
            let together = try await withThrowingTaskGroup(of: [AppleAdsClaim].self) { group in
                for holder in 0..<4 {
                    group.addTask {
                        try await shared.claimAppleAdsTokens(
                            limit: 10,
                            nowMs: now,
                            dueByMs: now,
                            leaseUntilMs: now + 60_000,
                            holder: "claimant-\(holder)"
                        ).claimed
                    }
                }
                var all: [AppleAdsClaim] = []
                for try await claimed in group { all += claimed }
                return all
            }
            let rest = try await shared.claimAppleAdsTokens(
                limit: 100,
                nowMs: now,
                dueByMs: now,
                leaseUntilMs: now + 60_000,
                holder: "rest"
            )
            #expect(rest.expired == 0)
            let leased = (first.claimed + together + rest.claimed).map(\.token)
            #expect(leased.count == Set(leased).count, "a token leased twice")
            #expect(Set(leased) == due)

            // Leased until the lease ends; then every one is claimable again, and only once more.
            let meanwhile = try await shared.claimAppleAdsTokens(
                limit: 100,
                nowMs: now + 59_999,
                dueByMs: now + 59_999,
                leaseUntilMs: now + 120_000,
                holder: "meanwhile"
            )
            #expect(meanwhile.claimed.isEmpty)
            let later = try await shared.claimAppleAdsTokens(
                limit: 100,
                nowMs: now + 60_000,
                dueByMs: now + 60_000,
                leaseUntilMs: now + 120_000,
                holder: "later"
            )
            #expect(Set(later.claimed.map(\.token)) == due)
            #expect(later.claimed.map(\.id) == later.claimed.map(\.id).sorted())
        }
        #expect(try await store.count("apple_ads_tokens", where: "state = 'expired' AND token IS NULL") == 3)
        #expect(try await store.count("apple_ads_tokens", where: "state = 'pending' AND leased_by = 'later'") == 40)
    }
}
