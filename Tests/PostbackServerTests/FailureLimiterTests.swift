import PostbackServer
import Testing

@Suite("the wrong-key limit's window, on a clock of the test's own")
struct FailureLimiterTests {
    @Test("ten failures in a minute: the address waits out the minute from its first failure; others do not")
    func window() {
        let limiter = FailureLimiter()
        let start: Int64 = 1_000_000
        for second in 0..<9 {
            limiter.fail("198.51.100.7", nowMs: start + Int64(second) * 5_000)
            #expect(limiter.retryAfter("198.51.100.7", nowMs: start + Int64(second) * 5_000) == nil)
        }
        limiter.fail("198.51.100.7", nowMs: start + 50_000)
        #expect(limiter.retryAfter("198.51.100.7", nowMs: start + 50_000) == 10)
        #expect(limiter.retryAfter("198.51.100.7", nowMs: start + 59_001) == 1)
        #expect(limiter.retryAfter("198.51.100.8", nowMs: start + 50_000) == nil)
        // The minute is over: allowed again, and the next failure opens a new window of one.
        #expect(limiter.retryAfter("198.51.100.7", nowMs: start + 60_000) == nil)
        limiter.fail("198.51.100.7", nowMs: start + 60_000)
        #expect(limiter.retryAfter("198.51.100.7", nowMs: start + 60_001) == nil)
    }

    @Test("ten failures spread over more than the window never reach the limit")
    func spread() {
        let limiter = FailureLimiter()
        for attempt in 0..<20 {
            let nowMs = Int64(attempt) * 7_000
            limiter.fail("203.0.113.9", nowMs: nowMs)
            #expect(limiter.retryAfter("203.0.113.9", nowMs: nowMs) == nil, "attempt \(attempt)")
        }
    }

    @Test("a longer window (serve's hidden --key-failure-window) holds the limit that long")
    func longerWindow() {
        let limiter = FailureLimiter(windowMs: 3_600_000)
        for attempt in 0..<10 { limiter.fail("2001:db8:7::/64", nowMs: Int64(attempt) * 60_000) }
        #expect(limiter.retryAfter("2001:db8:7::/64", nowMs: 600_000) == 3_000)
        #expect(limiter.retryAfter("2001:db8:7::/64", nowMs: 3_600_000) == nil)
    }

    @Test("an IPv6 address counts under its /64; an IPv4 address and text as they are")
    func buckets() {
        #expect(FailureLimiter.bucket("2001:db8:7::1") == FailureLimiter.bucket("2001:db8:7::2"))
        #expect(FailureLimiter.bucket("2001:db8:7::1") != FailureLimiter.bucket("2001:db8:8::1"))
        #expect(FailureLimiter.bucket("198.51.100.7") == "198.51.100.7")
        #expect(FailureLimiter.bucket(nil) == "-")
    }
}
