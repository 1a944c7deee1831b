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

extension ConnectionCap {
    /// The most connections the listening socket accepts in one turn of its event loop.
    ///
    /// SwiftNIO accepts 4 a turn by default. When 256 clients connect at once to a busy server,
    /// their first requests then wait in their sockets, unread, for the 64 turns it takes to
    /// accept them all: 270–330 ms at the maximum rate on 2 cores, the whole of the maximum
    /// latency wrk saw (docs/benchmarks/2026-11-29-accepts.md). Accepting a turn's waiting
    /// connections at once took it to 60–74 ms.
    static let acceptsPerTurn = 256

    /// Sets how many connections the listening channel accepts in its next turn: as many as
    /// the cap leaves room for, at most ``acceptsPerTurn``. Hummingbird asks the cap only before
    /// a turn's accepts, so a turn of more than the room would open connections past it.
    ///
    /// It goes first in the listening channel's pipeline, and counts the connection it sees as
    /// opened (Hummingbird's handler after it counts it). The room only shrinks by accepts,
    /// which each set it again, so a turn never accepts more than the cap leaves.
    final class AcceptPacing: ChannelInboundHandler {
        typealias InboundIn = any Channel
        typealias InboundOut = any Channel

        private let cap: ConnectionCap

        init(cap: ConnectionCap) {
            self.cap = cap
        }

        func handlerAdded(context: ChannelHandlerContext) {
            pace(context, opening: 0)
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            pace(context, opening: 1)
            context.fireChannelRead(data)
        }

        private func pace(_ context: ChannelHandlerContext, opening: Int) {
            let room = cap.maximum - cap.count.open.load(ordering: .relaxed) - opening
            let accepts = UInt(min(max(room, 1), ConnectionCap.acceptsPerTurn))
            try? context.channel.syncOptions?.setOption(ChannelOptions.maxMessagesPerRead, value: accepts)
        }
    }

    /// Puts ``AcceptPacing`` first in `listening`'s pipeline.
    func pace(_ listening: any Channel) async throws {
        let cap = self
        try await listening.eventLoop.submit {
            try listening.pipeline.syncOperations.addHandler(AcceptPacing(cap: cap), position: .first)
        }.get()
    }
}
