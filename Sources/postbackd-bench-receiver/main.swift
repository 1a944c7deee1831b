import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Synchronization

// scripts/forward-bench.sh: a fast local receiver for `postbackd forward`. Answers every POST
// with 200 at once, prints `listening on PORT` when ready, and on SIGTERM prints how many
// requests it answered and how many distinct delivery ids it saw.
//
//   postbackd-bench-receiver [PORT]   (0, the default: a free port)

let port = CommandLine.arguments.dropFirst().first.flatMap(Int.init) ?? 0
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
    onServerRunning: { channel in
        FileHandle.standardOutput.write(Data("listening on \(channel.localAddress?.port ?? 0)\n".utf8))
    },
    logger: Logger(label: "receiver", factory: { _ in SwiftLogNoOpLogHandler() })
)
try await app.runService(gracefulShutdownSignals: [.sigterm, .sigint])
print("answered \(answered.load(ordering: .relaxed)) requests, \(ids.withLock { $0.count }) delivery ids")
