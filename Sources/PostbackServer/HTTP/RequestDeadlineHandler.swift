import HTTPTypes
import Hummingbird
import HummingbirdCore
import NIOCore
import NIOHTTPTypes
import Synchronization

/// Bounds how long a client may take to send a request's body once its head has arrived (the
/// server's idle timeout bounds the wait for a head), and closes the connection after a 413
/// instead of reading the refused body to its end.
///
/// Sits after the HTTP codec, so it sees request and response parts.
final class RequestDeadlineHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let bodyTimeout: TimeAmount
    private var deadline: Scheduled<Void>?
    private var closeAfterResponse = false

    init(bodyTimeout: TimeAmount) {
        self.bodyTimeout = bodyTimeout
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            deadline?.cancel()
            let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
            deadline = context.eventLoop.scheduleTask(in: bodyTimeout) {
                loopBound.value.close(promise: nil)
            }
        case .body:
            break
        case .end:
            deadline?.cancel()
            deadline = nil
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let response):
            if response.status == .contentTooLarge { closeAfterResponse = true }
            context.write(data, promise: promise)
        case .body:
            context.write(data, promise: promise)
        case .end:
            guard closeAfterResponse else {
                context.write(data, promise: promise)
                return
            }
            let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
            context.writeAndFlush(data).whenComplete { result in
                promise?.completeWith(result)
                loopBound.value.close(promise: nil)
            }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
    }
}
