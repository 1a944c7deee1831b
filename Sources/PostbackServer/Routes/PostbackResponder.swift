import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import PostbackKit
import PostbackStore

/// The request context: Hummingbird's core context and the connection's peer address.
struct ServeRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let peer: SocketAddress?

    init(source: ApplicationRequestContextSource) {
        coreContext = CoreRequestContextStorage(source: source)
        peer = source.channel.remoteAddress
    }
}

/// Who sent a request: the connection's peer address.
struct Caller {
    let peer: SocketAddress?
}

/// A whole answer, its body in memory: what every route returns, so that the hot routes'
/// answers are written from the event loop (``HotRouteHandler``) and the others handed to
/// Hummingbird (``response``).
struct Answer {
    var status: HTTPResponse.Status
    var headers: HTTPFields
    var body: ByteBuffer

    init(status: HTTPResponse.Status, headers: HTTPFields = [:], body: ByteBuffer = ByteBuffer()) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    var response: Response {
        Response(status: status, headers: headers, body: ResponseBody(byteBuffer: body))
    }
}

/// `serve`'s routes: the two report-attribution endpoints, the conversion value endpoints
/// (`ConversionValueRoutes.swift`), the report API and the dashboard
/// (``DashboardRoutes.swift``), health, readiness and metrics.
///
/// Routing is a switch over ``Route``, the one table of routes, rather than Hummingbird's
/// router, which answers a wrong method with 404: here an unknown path is 404 and a known path
/// with another method is 405 with `Allow`. Every outcome is an answer; nothing thrown reaches Hummingbird, so a 500 can
/// only come from a defect.
struct PostbackResponder: HTTPResponder {
    typealias Context = ServeRequestContext

    let verifiers: VerifierPool
    let committer: GroupCommitter
    let metrics: ServerMetrics
    /// The conversion value endpoints' models (the committer's).
    var models: ModelDirectory { committer.models }
    /// The keys the routes take (``KeyDirectory``), and the limit on wrong ones.
    let keys: KeyDirectory
    let limiter: FailureLimiter
    let maximumBody: Int
    /// A header a trusted proxy sets to the client's address (`X-Forwarded-For`): its last
    /// entry is stored instead of the peer's address.
    let clientAddressHeader: HTTPField.Name?
    /// What is stored and logged of the client's address (`--client-address`).
    let clientAddressPolicy: ClientAddressPolicy
    let accessLog: Bool
    /// The store the report, summary and dashboard routes read.
    let reader: ReportReader
    /// Whether the login cookie is marked `Secure` (served over TLS).
    let secureCookie: Bool
    let logger: Logger

    /// Every route but the hot ones (``Route/isHot(_:)``), which ``HotRouteHandler`` answers
    /// before a request reaches Hummingbird; the hot ones too where the hot path is off
    /// (``ServeJob/hotPath``, for the tests that compare both paths).
    func respond(to request: Request, context: ServeRequestContext) async throws -> Response {
        let started = ContinuousClock.now
        let caller = Caller(peer: context.peer)
        let requestID = Self.requestID(request.headers[.xRequestID])
        let route = ServeRoute(path: request.uri.path)
        var answer: Answer
        if let route {
            if route.takes(request.method) {
                switch route {
                case .skadnetwork, .appattribution, .conversionValue, .snippet:
                    answer = try await hot(route, request, caller: caller, requestID: requestID)
                case .appleAdsToken:
                    answer = await appleAdsToken(request, context: caller, arrival: .now())
                case .forwards:
                    answer = await forward(request, caller: caller, requestID: requestID)
                case .health:
                    answer = Self.json(.ok, #"{"status":"up"}"#)
                case .ready:
                    if let problem = await committer.checkWritable() {
                        logger.warning("not ready", metadata: ["serve.reason": "\(problem)"])
                        answer = Self.unavailable(status: "unavailable", reason: "the store does not accept writes now")
                    } else {
                        answer = Self.json(.ok, #"{"status":"ready"}"#)
                    }
                case .metrics:
                    answer = Answer(
                        status: .ok,
                        headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                        body: ByteBuffer(bytes: metrics.text())
                    )
                case .report:
                    answer = await report(request, context: caller)
                case .reconcile:
                    answer = await reconcile(request, context: caller)
                case .summary:
                    answer = await summary(request, context: caller)
                case .postbacks:
                    answer = await pullPostbacks(request, context: caller)
                case .root:
                    answer = Self.redirect(to: ServeRoute.dashboard.rawValue)
                case .dashboard:
                    answer = await dashboard(request, context: caller)
                case .login:
                    answer = await login(request, context: caller)
                case .openAPI:
                    answer = Self.json(.ok, openAPIDocument)
                }
            } else {
                let allowed = route.methods.map(\.rawValue).joined(separator: ", ")
                answer = Self.json(
                    .methodNotAllowed,
                    Self.problem(status: "method_not_allowed", reason: "\(route.rawValue) takes \(allowed)")
                )
                answer.headers[.allow] = route.methods.contains(.get) ? allowed + ", HEAD" : allowed
            }
        } else {
            answer = Self.json(.notFound, Self.problem(status: "not_found", reason: "no such endpoint"))
        }
        finish(&answer, route: route, request.head, caller: caller, requestID: requestID, started: started)
        return answer.response
    }

    /// What every answer gets, from either path: its request id, its count in the metrics, and
    /// its line in the access log.
    func finish(
        _ answer: inout Answer,
        route: ServeRoute?,
        _ head: HTTPRequest,
        caller: Caller,
        requestID: String,
        started: ContinuousClock.Instant
    ) {
        answer.headers[.xRequestID] = requestID
        metrics.request(route: route?.rawValue ?? "other", status: answer.status.code)
        if accessLog {
            let path = head.path.map { $0.split(separator: "?", maxSplits: 1).first.map(String.init) ?? $0 } ?? ""
            logger.info(
                "\(head.method.rawValue) \(path) \(answer.status.code)",
                metadata: [
                    "http.client": "\(clientAddressPolicy.stored(clientAddress(head.headerFields, caller)) ?? "-")",
                    "http.request_id": "\(requestID)",
                    "http.duration_ms": "\((ContinuousClock.now - started).milliseconds)",
                ]
            )
        }
    }

    /// One postback, its body read whole (``HotRouteHandler`` refuses one over ``maximumBody``
    /// bytes): verify it, hand it to the writer, and `reply` once its commit is durable (on the
    /// writer's thread). `path` is the kind the report path it arrived at takes; `channel` the
    /// channel it came by (a network's at its forwards route), and `admits` whether the
    /// request's key may store it (a forwards key's apps), else its refusal, nothing stored.
    func receive(
        _ head: HTTPRequest,
        body: ByteBuffer,
        path: PostbackKind,
        channel: PostbackChannel = .device,
        admits: (VerificationResult) -> Answer? = { _ in nil },
        caller: Caller,
        arrival: UTCInstant,
        requestID: String,
        reply: @escaping @Sendable (Answer) -> Void
    ) {
        let bytes = Array(body.readableBytesView)
        let (result, digest) = verifiers.withVerifier { verifier in
            bytes.withUnsafeBufferPointer { buffer in
                (verifier.check(buffer, path: path), verifier.sha256(buffer))
            }
        }
        if let refusal = admits(result) {
            reply(refusal)
            return
        }
        let submission = GroupCommitter.Submission(
            bytes: bytes,
            result: result,
            digest: digest,
            request: ReceivedRequest(
                receivedAt: arrival,
                clientAddress: clientAddressPolicy.stored(clientAddress(head.headerFields, caller)),
                requestID: requestID,
                channel: channel
            )
        )
        committer.submit(submission) { receipt in
            switch receipt {
            case .unavailable(let reason):
                reply(Self.unavailable(status: "unavailable", reason: "the postback was not stored: \(reason)"))
            case .done(let outcome):
                reply(Self.answer(outcome, result, requestID: requestID))
            }
        }
    }

    /// 200 for whatever retrying cannot change; 400 for a malformed body, naming the field.
    static func answer(_ outcome: ReceiptOutcome, _ result: VerificationResult, requestID: String) -> Answer {
        var object = JSONObjectWriter()
        let status: String
        switch outcome {
        case .stored: status = "stored"
        case .duplicate, .conflict, .signedConflict: status = "duplicate"
        case .quarantined: status = "quarantined"
        case .dropped: status = "dropped"
        }
        object.add("status", status)
        VerificationReport.addVerdict(result, to: &object)
        if outcome == .conflict || outcome == .signedConflict { object.add("conflict", true) }
        if outcome == .signedConflict { object.add("signed_differs", true) }
        if result.testMode { object.add("test_mode", true) }
        if result.development { object.add("development", true) }
        object.add("request_id", requestID)
        return json(result.verdict == .malformed ? .badRequest : .ok, object.text)
    }

    static func json(_ status: HTTPResponse.Status, _ text: String) -> Answer {
        var body = ByteBuffer()
        body.reserveCapacity(text.utf8.count + 1)
        body.writeString(text)
        body.writeInteger(UInt8(ascii: "\n"))
        return Answer(status: status, headers: [.contentType: "application/json"], body: body)
    }

    /// 503 with `Retry-After: 5`: nothing of the request was stored.
    static func unavailable(status: String, reason: String) -> Answer {
        var answer = json(.serviceUnavailable, problem(status: status, reason: reason))
        answer.headers[.retryAfter] = "5"
        return answer
    }

    static func problem(status: String, reason: String) -> String {
        var object = JSONObjectWriter()
        object.add("status", status)
        object.add("reason", reason)
        return object.text
    }

    /// The client's address: the last entry of the trusted proxy's header when configured,
    /// else the peer's IP address.
    func clientAddress(_ headers: HTTPFields, _ caller: Caller) -> String? {
        if let name = clientAddressHeader, let value = headers[name] {
            let last = (value.split(separator: ",").last ?? "").drop { $0 == " " }.reversed().drop { $0 == " " }
            if !last.isEmpty && last.count <= 64 { return String(last.reversed()) }
        }
        return caller.peer?.ipAddress
    }

    func clientAddress(_ request: Request, _ caller: Caller) -> String? {
        clientAddress(request.headers, caller)
    }

    /// The client's `X-Request-Id` when it is short and plain, else a new random one.
    static func requestID(_ given: String?) -> String {
        if let given, (1...64).contains(given.utf8.count),
            given.utf8.allSatisfy({
                $0 == 0x2D || $0 == 0x2E || $0 == 0x5F || $0 == 0x3A || ($0 >= 0x30 && $0 <= 0x39)
                    || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A)
            })
        {
            return given
        }
        var generator = SystemRandomNumberGenerator()
        let high = generator.next() as UInt64
        let low = generator.next() as UInt64
        return hex(high) + hex(low)
    }

    private static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}

extension HTTPField.Name {
    // A constant name, valid as written: HTTPTypes offers only a failable initializer.
    // swift-format-ignore: NeverForceUnwrap
    static let xRequestID = HTTPField.Name("X-Request-Id")!
}

extension Duration {
    var milliseconds: Int64 { nanoseconds / 1_000_000 }
}
