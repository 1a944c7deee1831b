import HTTPTypes
import Hummingbird
import Logging
import PostbackKit
import PostbackStore
import ServiceLifecycle
import Synchronization

/// Failed sign-ins and failed keys per client address: at most ``limit`` a window (a minute),
/// then every request of that address that needs a key is answered 429 until the window is over.
/// Bounded: past ``maximumAddresses`` addresses the oldest windows are forgotten.
package final class FailureLimiter: Sendable {
    static let limit = 10
    package static let defaultWindowMs: Int64 = 60_000
    static let maximumAddresses = 65_536

    private struct Window {
        var startMs: Int64
        var failures: Int
    }

    private let windows = Mutex<[String: Window]>([:])
    /// How long a window lasts, from an address's first failure in it.
    let windowMs: Int64

    package init(windowMs: Int64 = FailureLimiter.defaultWindowMs) {
        self.windowMs = max(1, windowMs)
    }

    /// What failures are counted under: an IPv4 address, an IPv6 /64 (one client's usual
    /// allocation, which it could otherwise walk through), or the text as given.
    package static func bucket(_ address: String?) -> String {
        guard let address else { return "-" }
        guard let parsed = IPAddress(address), parsed.bytes.count == 16 else { return address }
        return IPAddress(bytes: Array(parsed.bytes.prefix(8)) + Array(repeating: 0, count: 8)).text + "/64"
    }

    /// Seconds until `address` may try again, when it has failed ``limit`` times this window.
    package func retryAfter(_ address: String, nowMs: Int64 = UTCInstant.now().milliseconds) -> Int? {
        windows.withLock { windows in
            guard let window = windows[address], nowMs - window.startMs < windowMs,
                window.failures >= Self.limit
            else { return nil }
            return Int((window.startMs + windowMs - nowMs + 999) / 1000)
        }
    }

    /// Counts a failure of `address`.
    package func fail(_ address: String, nowMs: Int64 = UTCInstant.now().milliseconds) {
        windows.withLock { windows in
            if windows.count >= Self.maximumAddresses {
                windows = windows.filter { nowMs - $0.value.startMs < windowMs }
                // Still full within the minute: the oldest half goes, the newest (an attacker's
                // current window among them) stays.
                if windows.count >= Self.maximumAddresses {
                    let kept = windows.sorted { $0.value.startMs > $1.value.startMs }.prefix(Self.maximumAddresses / 2)
                    windows = Dictionary(uniqueKeysWithValues: kept.map { ($0.key, $0.value) })
                }
            }
            if let window = windows[address], nowMs - window.startMs < windowMs {
                windows[address]?.failures = window.failures + 1
            } else {
                windows[address] = Window(startMs: nowMs, failures: 1)
            }
        }
    }
}

/// Compares in time that depends only on the lengths, so that a key cannot be guessed byte by
/// byte from answer times.
func constantTimeEqual(_ a: String, _ b: String) -> Bool {
    constantTimeEqual(Array(a.utf8), Array(b.utf8))
}

func constantTimeEqual(_ x: [UInt8], _ y: [UInt8]) -> Bool {
    guard x.count == y.count else { return false }
    var difference: UInt8 = 0
    for index in x.indices { difference |= x[index] ^ y[index] }
    return difference == 0
}
