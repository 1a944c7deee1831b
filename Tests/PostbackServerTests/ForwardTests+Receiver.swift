import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Synchronization

extension ForwardTests {
    // MARK: The receiver

    /// What the receiver did with each request.
    struct Received: Sendable {
        var destination: String
        var deliveryID: String
        var attempt: Int
        var body: [UInt8]
        var signature: String?
        var status: Int
    }

    /// A Hummingbird server on a loopback port: `POST /DESTINATION`, answering by rule, and
    /// recording every request (and the most requests for one delivery at once).
    final class Receiver: Sendable {
        struct State {
            var received: [Received] = []
            var inFlight: [String: Int] = [:]
            var mostAtOnce = 0
        }

        final class Log: Sendable {
            let state = Mutex(State())
        }

        private let log = Log()
        let port: Int
        private let task: Task<Void, any Error>

        /// `rule(deliveryID, attempt)` gives the status to answer and a delay before answering;
        /// `gate`, if given, holds requests to `gated` past its limit (a held request is then
        /// answered 503 and not recorded).
        init(
            gate: Gate? = nil,
            gated: String = "network",
            rule: @escaping @Sendable (String, Int) -> (status: Int, delay: Duration)
        ) async throws {
            let log = self.log
            let router = Router()
            router.post("/{destination}") { request, context -> Response in
                let body = try await request.body.collect(upTo: 1 << 20)
                let destination = context.parameters.get("destination") ?? ""
                let id = request.headers.value("Postbackd-Delivery-Id") ?? ""
                let attempt = Int(request.headers.value("Postbackd-Attempt") ?? "") ?? 0
                let signature = request.headers.value("Postbackd-Signature")
                if destination == gated, let gate, await !gate.pass() { return Response(status: .serviceUnavailable) }
                let key = destination + "/" + id
                log.state.withLock { state in
                    state.inFlight[key, default: 0] += 1
                    state.mostAtOnce = max(state.mostAtOnce, state.inFlight[key] ?? 0)
                }
                let (status, delay) = rule(id, attempt)
                if delay > .zero { try? await Task.sleep(for: delay) }
                log.state.withLock { state in
                    state.inFlight[key, default: 1] -= 1
                    state.received.append(
                        Received(
                            destination: destination,
                            deliveryID: id,
                            attempt: attempt,
                            body: Array(body.readableBytesView),
                            signature: signature,
                            status: status
                        )
                    )
                }
                return Response(
                    status: HTTPResponse.Status(code: status),
                    body: ResponseBody(
                        byteBuffer: ByteBuffer(string: status == 410 ? "gone: this postback is not ours" : "ok")
                    )
                )
            }
            (port, task) = await runOnLoopback(router, label: "receiver")
        }

        func stop() async {
            task.cancel()
            _ = try? await task.value
        }

        var received: [Received] { log.state.withLock { $0.received } }
        var mostAtOnce: Int { log.state.withLock { $0.mostAtOnce } }

        /// The 2xx answers by destination and delivery id.
        func delivered(_ destination: String) -> [String: [Received]] {
            Dictionary(
                grouping: received.filter { $0.destination == destination && (200..<300).contains($0.status) },
                by: \.deliveryID
            )
        }
    }
}

/// Runs the test receiver's tasks on threads of their own (a concurrent dispatch queue).
final class ReceiverExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked: the queue is Sendable and the only state.
    private let queue = DispatchQueue(label: "postbackd.tests.receiver", attributes: .concurrent)

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

/// Runs `router` on a loopback port chosen at run time, on ``ReceiverExecutor`` (off the
/// cooperative pool: other suites' tests block its threads while they wait for processes, and
/// a server starved of threads would time out at random). Returns the port and the server's
/// task (cancel it to stop).
func runOnLoopback(
    _ router: Router<BasicRequestContext>,
    label: String
) async -> (port: Int, task: Task<Void, any Error>) {
    let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
    let app = Application(
        router: router,
        configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0)),
        onServerRunning: { channel in
            portContinuation.yield(channel.localAddress?.port ?? 0)
            portContinuation.finish()
        },
        logger: Logger(label: label, factory: { _ in SwiftLogNoOpLogHandler() })
    )
    let task = Task {
        try await withTaskExecutorPreference(ReceiverExecutor()) {
            try await app.runService(gracefulShutdownSignals: [])
        }
    }
    var iterator = ports.makeAsyncIterator()
    return (await iterator.next() ?? 0, task)
}

extension HTTPFields {
    /// The value of the field named `name`, if it is a valid name and present.
    fileprivate func value(_ name: String) -> String? {
        HTTPField.Name(name).flatMap { self[$0] }
    }
}
