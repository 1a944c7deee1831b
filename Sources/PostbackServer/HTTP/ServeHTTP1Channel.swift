import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import PostbackKit
import Synchronization

// Why `serve` handles some HTTP itself (issue 42; BENCHMARKS.md has the figures).
//
// Every request Hummingbird answers crosses its per-connection task: the request parts go from
// the event loop into an async sequence, the connection's task (on Swift's cooperative pool)
// takes them, builds a request context and a logger, runs the responder, and sends the answer
// back through an async writer to the event loop. Measured on two cores, that crossing is most
// of what a request costs: `GET /healthz` through it took 54–83 µs of CPU, through a plain
// SwiftNIO pipeline a fraction of that. The routes every device and app calls (the two
// report-attribution paths and the two conversion value routes) are answered here instead, on
// the event loop, by ``HotRouteHandler``: it reads the request whole, calls the same route code
// the router would (verification, the group commit, models, keys), and writes the answer. A
// postback's answer still waits for its commit: the writer calls back, and the answer hops to
// the connection's event loop once. Every other route, and every other method on these paths,
// goes on to Hummingbird unchanged.
//
// The handler sits after Hummingbird's connection state handler, so its idle timeout and
// graceful shutdown's quiescing count these requests as they count their own, and after
// ``RequestDeadlineHandler``, so the body deadline and the close after a 413 hold for both.

/// `serve`'s HTTP/1 connections: the pipeline Hummingbird's `HTTP1Channel` builds (its decoder
/// limits, its connection state handler, its request loop), with ``RequestDeadlineHandler`` and
/// ``HotRouteHandler`` in it.
struct ServeHTTP1Channel: ServerChildChannel, HTTPChannelHandler {
    typealias Value = NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>

    let responder: HTTPChannelHandler.Responder
    /// The routes the hot path answers (the same responder the router calls).
    let routes: PostbackResponder
    /// How long a client may take over a request's body, and may stay idle between requests.
    let readTimeout: TimeAmount
    /// Whether ``HotRouteHandler`` answers the hot routes; off, the router does (``ServeJob/hotPath``).
    var hotPath = true
    /// The request decoder's limits: Hummingbird's `HTTP1Channel`'s.
    var decoder = HTTP1Channel.Configuration().httpDecoder

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            var limits = NIOHTTPDecoderLimitConfiguration()
            limits.maxHeaderFieldSize = decoder.maxHeaderFieldSize
            limits.maxHeaderListSize = decoder.maxHeaderListSize
            limits.maxHeaderFieldCount = decoder.maxHeaderFieldCount
            let pipeline = channel.pipeline.syncOperations
            try pipeline.configureHTTPServerPipeline(
                withPipeliningAssistance: false,
                withErrorHandling: false,
                withOutboundHeaderValidation: false,
                withEncoderConfiguration: .init(),
                withDecoderLimitConfiguration: limits
            )
            try pipeline.addHandler(HTTP1ToHTTPServerCodec(secure: false))
            try pipeline.addHandler(RequestDeadlineHandler(bodyTimeout: readTimeout))
            try pipeline.addHandler(
                HTTPConnectionStateHandler(idleTimeout: .nanoseconds(readTimeout.nanoseconds), logger: logger)
            )
            if hotPath { try pipeline.addHandler(HotRouteHandler(routes: routes)) }
            return try NIOAsyncChannel(
                wrappingChannelSynchronously: channel,
                configuration: .init(isOutboundHalfClosureEnabled: true)
            )
        }
    }

    func handle(value: Value, logger: Logger) async {
        await handleHTTP(asyncChannel: value, logger: logger)
    }
}
