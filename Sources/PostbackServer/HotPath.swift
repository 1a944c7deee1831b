import Foundation
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

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            // Hummingbird's HTTP1Channel defaults.
            var limits = NIOHTTPDecoderLimitConfiguration()
            limits.maxHeaderFieldSize = 80 * 1024
            limits.maxHeaderListSize = 80 * 1024
            limits.maxHeaderFieldCount = 1000
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
            try pipeline.addHandler(HotRouteHandler(routes: routes))
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

/// Answers the hot routes (``PostbackResponder/isHot(_:_:)``) on the event loop and hands every
/// other request on to Hummingbird, one request at a time: a request that arrives while another
/// is being answered (pipelined) waits, with reading paused, so answers leave in order.
final class HotRouteHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private struct HotRequest {
        var route: PostbackResponder.Route
        var head: HTTPRequest
        var body = ByteBuffer()
        /// The most body bytes the route reads.
        var limit: Int
        var started = ContinuousClock.now
        var arrival = UTCInstant.now()
    }

    private enum State {
        case idle
        /// A request of another route, handed on: its end and Hummingbird's answer's end are
        /// awaited.
        case handedOn(requestEnded: Bool, answered: Bool)
        /// A hot request's body arriving.
        case reading(HotRequest)
        /// A hot request answered before its end (413): what is left of it is dropped.
        case discarding
        /// A hot request read whole, its answer not written yet.
        case answering
        case closed
    }

    private let routes: PostbackResponder
    private var state = State.idle
    /// Parts of the next requests, held while one is answered.
    private var waiting = CircularBuffer<HTTPRequestPart>()
    /// Whether a read was held back while waiting.
    private var readHeld = false
    /// Whether ``resume(context:)`` is under way.
    private var resuming = false
    /// The client shut down its side while requests here were under way: Hummingbird is told
    /// once they are answered.
    private var inputClosed = false

    init(routes: PostbackResponder) {
        self.routes = routes
    }

    // MARK: Requests in

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        if !waiting.isEmpty || !take(part, context: context) {
            waiting.append(part)
        }
    }

    /// Takes `part` in the current state; false when it must wait for the answer under way.
    private func take(_ part: HTTPRequestPart, context: ChannelHandlerContext) -> Bool {
        switch state {
        case .idle:
            guard case .head(let head) = part else {
                // Only Hummingbird's loop knows what to do with a part out of place.
                context.fireChannelRead(wrapInboundOut(part))
                return true
            }
            start(head, context: context)
        case .handedOn(requestEnded: false, let answered):
            context.fireChannelRead(wrapInboundOut(part))
            if case .end = part { state = answered ? .idle : .handedOn(requestEnded: true, answered: false) }
        case .handedOn(requestEnded: true, _), .answering:
            return false
        case .reading(var request):
            switch part {
            case .head:
                return false  // the codec gives no head before an end
            case .body(let chunk):
                // A GET's body is not read (Hummingbird's loop dropped it too).
                if request.limit == 0 { return true }
                guard request.body.readableBytes + chunk.readableBytes <= request.limit else {
                    state = .discarding
                    answer(tooLarge(request.route), to: request, context: context)
                    return true
                }
                state = .idle  // the buffer is uniquely referenced while it grows
                request.body.writeImmutableBuffer(chunk)
                state = .reading(request)
            case .end:
                state = .answering
                dispatch(request, context: context)
            }
        case .discarding:
            if case .end = part {
                state = .idle
                resume(context: context)
            }
        case .closed:
            break
        }
        return true
    }

    /// A new request: a hot one is read here, any other handed on.
    private func start(_ head: HTTPRequest, context: ChannelHandlerContext) {
        guard let path = head.path, let route = PostbackResponder.Route(path: Self.pathOnly(path)),
            PostbackResponder.isHot(route, head.method)
        else {
            state = .handedOn(requestEnded: false, answered: false)
            context.fireChannelRead(wrapInboundOut(.head(head)))
            return
        }
        let limit =
            switch route {
            case .skadnetwork, .appattribution: routes.maximumBody
            case .conversionValue: PostbackResponder.maximumStateBody
            default: 0  // a GET's body is not read
            }
        let request = HotRequest(route: route, head: head, limit: limit)
        if limit > 0, let length = head.headerFields[.contentLength].flatMap(Int.init), length > limit {
            state = .discarding
            answer(tooLarge(route), to: request, context: context)
            return
        }
        state = .reading(request)
    }

    private func tooLarge(_ route: PostbackResponder.Route) -> Answer {
        route == .conversionValue ? PostbackResponder.stateTooLarge() : routes.tooLarge()
    }

    private static func pathOnly(_ path: String) -> String {
        guard let query = path.utf8.firstIndex(of: UInt8(ascii: "?")) else { return path }
        return String(path[..<query])
    }

    /// Answers `request`, read whole: at once, or when the writer calls back.
    private func dispatch(_ request: HotRequest, context: ChannelHandlerContext) {
        let caller = Caller(peer: context.channel.remoteAddress)
        switch request.route {
        case .conversionValue:
            let answer = routes.conversionValue(
                Request(head: request.head, body: RequestBody(buffer: request.body)),
                body: request.body,
                context: caller
            )
            self.answer(answer, to: request, caller: caller, context: context)
        case .skadnetwork, .appattribution:
            let requestID = PostbackResponder.requestID(request.head.headerFields[.xRequestID])
            let reply = onLoop(request, caller: caller, requestID: requestID, context: context)
            routes.receive(
                request.head,
                body: request.body,
                path: request.route == .appattribution ? .aak : .skan,
                caller: caller,
                arrival: request.arrival,
                requestID: requestID,
                reply: reply
            )
        default:
            let reply = onLoop(request, caller: caller, requestID: nil, context: context)
            routes.snippetConversionValue(
                Request(head: request.head, body: RequestBody(buffer: ByteBuffer())),
                context: caller,
                arrival: request.arrival,
                reply: reply
            )
        }
    }

    /// A reply that answers `request` on this connection's event loop, from whatever thread
    /// calls it.
    private func onLoop(
        _ request: HotRequest,
        caller: Caller,
        requestID: String?,
        context: ChannelHandlerContext
    ) -> @Sendable (Answer) -> Void {
        let loop = context.eventLoop
        let bound = NIOLoopBound((handler: self, context: context, request: request, caller: caller), eventLoop: loop)
        return { answer in
            let send: @Sendable () -> Void = {
                let (handler, context, request, caller) = bound.value
                handler.answer(answer, to: request, caller: caller, requestID: requestID, context: context)
            }
            if loop.inEventLoop {
                send()
            } else {
                loop.execute(send)
            }
        }
    }

    // MARK: Answers out

    private func answer(
        _ answer: Answer,
        to request: HotRequest,
        caller: Caller? = nil,
        requestID: String? = nil,
        context: ChannelHandlerContext
    ) {
        if case .closed = state { return }
        var answer = answer
        let caller = caller ?? Caller(peer: context.channel.remoteAddress)
        routes.finish(
            &answer,
            route: request.route,
            request.head,
            caller: caller,
            requestID: requestID ?? PostbackResponder.requestID(request.head.headerFields[.xRequestID]),
            started: request.started
        )
        var headers = answer.headers
        headers[.contentLength] = String(answer.body.readableBytes)
        headers[.date] = HTTPDate.now()
        context.write(wrapOutboundOut(.head(HTTPResponse(status: answer.status, headerFields: headers))), promise: nil)
        if request.head.method != .head && answer.body.readableBytes > 0 {
            context.write(wrapOutboundOut(.body(answer.body)), promise: nil)
        }
        if request.head.headerFields[.connection]?.lowercased() == "close" {
            let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
                loopBound.value.close(promise: nil)
            }
            state = .closed
            return
        }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        if case .answering = state {
            state = .idle
            resume(context: context)
        }
    }

    /// Hummingbird's answers pass here on their way out: the end of one lets the next request in.
    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        context.write(data, promise: promise)
        guard case .end = unwrapOutboundIn(data), case .handedOn(let ended, _) = state else { return }
        if ended {
            state = .idle
            resume(context: context)
        } else {
            state = .handedOn(requestEnded: false, answered: true)
        }
    }

    /// Takes the requests that waited, then lets reading go on if it was held.
    private func resume(context: ChannelHandlerContext) {
        // A request answered at once (a conversion value) comes back here from within `take`:
        // the loop below goes on with the next one instead, so a long run of pipelined requests
        // is a loop, not a recursion as deep as the run.
        guard !resuming else { return }
        resuming = true
        defer { resuming = false }
        var took = false
        while let part = waiting.popFirst() {
            guard take(part, context: context) else {
                waiting.prepend(part)
                break
            }
            took = true
        }
        // Hummingbird's channel hands what it was given on to its request loop at the end of a
        // read; these parts came after that read.
        if took { context.fireChannelReadComplete() }
        guard waiting.isEmpty else { return }
        if inputClosed && quiet {
            inputClosed = false
            context.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        }
        if readHeld {
            readHeld = false
            context.read()
        }
    }

    /// Whether nothing of this handler's is under way: no hot request, nothing waiting.
    private var quiet: Bool {
        guard waiting.isEmpty else { return false }
        switch state {
        case .idle, .handedOn, .closed: return true
        case .reading, .answering, .discarding: return false
        }
    }

    /// A client that sends its requests and then shuts down its side is answered all the same:
    /// Hummingbird, told the input ended, closes the output after its own request, so it is
    /// told once the requests here are answered and the waiting ones handed on.
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .inputClosed? = event as? ChannelEvent, !quiet {
            inputClosed = true
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func read(context: ChannelHandlerContext) {
        switch state {
        case .answering, .handedOn(requestEnded: true, answered: false):
            readHeld = true
        default:
            if waiting.isEmpty { context.read() } else { readHeld = true }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        state = .closed
        waiting.removeAll()
        context.fireChannelInactive()
    }
}

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
