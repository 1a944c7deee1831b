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

/// Answers the hot routes (``PostbackResponder/Route/isHot(_:)``) on the event loop and hands every
/// other request on to Hummingbird, one request at a time: a request that arrives while another
/// is being answered (pipelined) waits, with reading paused, so answers leave in order.
final class HotRouteHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private struct HotRequest {
        var route: ServeRoute
        var head: HTTPRequest
        var body = ByteBuffer()
        /// The most body bytes the route reads.
        var limit: Int
        /// The client's `X-Request-Id`, or a new one.
        var requestID: String
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
                    answer(routes.tooLarge(request.route), to: request, context: context)
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
        guard let path = head.path, let route = ServeRoute.hot(path, head.method) else {
            state = .handedOn(requestEnded: false, answered: false)
            context.fireChannelRead(wrapInboundOut(.head(head)))
            return
        }
        let limit = routes.bodyLimit(route)
        let requestID = PostbackResponder.requestID(head.headerFields[.xRequestID])
        let request = HotRequest(route: route, head: head, limit: limit, requestID: requestID)
        if limit > 0, let length = head.headerFields[.contentLength].flatMap(Int.init), length > limit {
            state = .discarding
            answer(routes.tooLarge(route), to: request, context: context)
            return
        }
        state = .reading(request)
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
            let reply = onLoop(request, caller: caller, context: context)
            routes.receive(
                request.head,
                body: request.body,
                path: request.route == .appattribution ? .aak : .skan,
                caller: caller,
                arrival: request.arrival,
                requestID: request.requestID,
                reply: reply
            )
        default:
            let reply = onLoop(request, caller: caller, context: context)
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
        context: ChannelHandlerContext
    ) -> @Sendable (Answer) -> Void {
        let loop = context.eventLoop
        let bound = NIOLoopBound((handler: self, context: context, request: request, caller: caller), eventLoop: loop)
        return { answer in
            let send: @Sendable () -> Void = {
                let (handler, context, request, caller) = bound.value
                handler.answer(answer, to: request, caller: caller, context: context)
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
            requestID: request.requestID,
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
