import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle
import Synchronization

// Two local servers for the benchmarks (BENCHMARKS.md), printing `listening on PORT` when ready.
//
//   postbackd-bench-receiver [PORT]
//       scripts/forward-bench.sh: a fast receiver for `postbackd forward`. Answers every POST
//       with 200 at once, and on SIGTERM prints how many requests it answered and how many
//       distinct delivery ids it saw.
//   postbackd-bench-receiver --floor core|nio [PORT]
//       scripts/http-floor.sh: `GET /healthz` answered `{"status":"up"}` by HummingbirdCore's
//       HTTP/1 server with a bare responder (no router, no request context), or by a plain
//       SwiftNIO HTTP/1 pipeline (NIO's codec and one handler), to measure what each layer
//       under `serve` costs a request.
//
// PORT 0, the default, takes a free port.

var arguments = Array(CommandLine.arguments.dropFirst())
var floor: String?
if arguments.first == "--floor", arguments.count >= 2 {
    floor = arguments[1]
    arguments.removeFirst(2)
}
let port = arguments.first.flatMap(Int.init) ?? 0
let quiet = Logger(label: "receiver", factory: { _ in SwiftLogNoOpLogHandler() })
let healthBody = ByteBuffer(string: "{\"status\":\"up\"}\n")

func announce(_ channel: any Channel) {
    FileHandle.standardOutput.write(Data("listening on \(channel.localAddress?.port ?? 0)\n".utf8))
}

switch floor {
case nil:
    let answered = Atomic<Int>(0)
    let ids = Mutex(Set<String>())
    let deliveryID = HTTPField.Name("Postbackd-Delivery-Id")
    let router = Router()
    router.post("/{destination}") { request, _ -> Response in
        _ = try await request.body.collect(upTo: 1 << 20)
        answered.add(1, ordering: .relaxed)
        if let deliveryID, let id = request.headers[deliveryID] {
            ids.withLock { _ = $0.insert(id) }
        }
        return Response(status: .ok, body: ResponseBody(byteBuffer: ByteBuffer(string: "ok")))
    }
    let app = Application(
        router: router,
        configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: port)),
        onServerRunning: { announce($0) },
        logger: quiet
    )
    try await app.runService(gracefulShutdownSignals: [.sigterm, .sigint])
    print("answered \(answered.load(ordering: .relaxed)) requests, \(ids.withLock { $0.count }) delivery ids")

case "core":
    // HummingbirdCore's server: its per-connection task, NIOAsyncChannel and request/response
    // parts, without Hummingbird's Application (router, request context, date header).
    let channel = HTTP1Channel(responder: { _, writer, _ in
        try await writer.write(
            response: HTTPResponse(status: .ok, headerFields: [.contentType: "application/json"]),
            body: ResponseBody(byteBuffer: healthBody)
        )
    })
    let server = channel.server(
        configuration: ServerConfiguration(address: .hostname("127.0.0.1", port: port)),
        onServerRunning: { announce($0) },
        eventLoopGroup: MultiThreadedEventLoopGroup.singleton,
        logger: quiet
    )
    try await ServiceGroup(services: [server], gracefulShutdownSignals: [.sigterm, .sigint], logger: quiet).run()

case "nio":
    let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        .serverChannelOption(.backlog, value: 256)
        .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
        .childChannelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                try channel.pipeline.syncOperations.addHandler(HealthHandler())
            }
        }
        .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
    let channel = try await bootstrap.bind(host: "127.0.0.1", port: port).get()
    announce(channel)
    let signals = DispatchSource.makeSignalSource(signal: SIGTERM, queue: .main)
    signal(SIGTERM, SIG_IGN)
    signals.setEventHandler { channel.close(promise: nil) }
    signals.resume()
    try await channel.closeFuture.get()

default:
    FileHandle.standardError.write(Data("--floor takes core or nio\n".utf8))
    exit(2)
}

/// Answers every request with the health body once its end has arrived.
final class HealthHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .end = unwrapInboundIn(data) else { return }
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        headers.add(name: "Content-Length", value: String(healthBody.readableBytes))
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))),
            promise: nil
        )
        context.write(wrapOutboundOut(.body(.byteBuffer(healthBody))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}
