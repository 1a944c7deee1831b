import HTTPTypes
import Hummingbird
import HummingbirdCore
import NIOCore
import NIOHTTPTypes
import Synchronization

/// Counts open connections for the metrics, and stops accepting new ones at the cap (they wait
/// in the listen backlog until one closes).
struct ConnectionCap: AvailableConnectionsDelegate {
    final class Count: Sendable {
        let open = Atomic<Int>(0)
        let metrics: ServerMetrics
        init(metrics: ServerMetrics) { self.metrics = metrics }
    }

    let maximum: Int
    let count: Count

    mutating func connectionOpened() {
        let open = count.open.add(1, ordering: .relaxed).newValue
        count.metrics.connections(open)
    }

    mutating func connectionClosed() {
        let open = count.open.subtract(1, ordering: .relaxed).newValue
        count.metrics.connections(open)
    }

    func isAcceptingNewConnections() -> Bool {
        count.open.load(ordering: .relaxed) < maximum
    }
}
