import Glibc
import Synchronization

/// The `Date` header's value (RFC 9110's IMF-fixdate), made once a second.
enum HTTPDate {
    private static let cache = Mutex<(second: Int, text: String)>((0, ""))
    private static let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    static func now() -> String {
        let second = time(nil)
        return cache.withLock { cache in
            if cache.second != second {
                cache = (second, format(second))
            }
            return cache.text
        }
    }

    static func format(_ seconds: Int) -> String {
        var clock = seconds
        var parts = tm()
        gmtime_r(&clock, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let day = days[Int(parts.tm_wday) % 7]
        let month = months[Int(parts.tm_mon) % 12]
        return "\(day), \(two(parts.tm_mday)) \(month) \(1900 + Int(parts.tm_year)) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}
