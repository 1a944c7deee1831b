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

/// `serve`'s routes: the two report-attribution endpoints, the conversion value endpoints
/// (``ConversionValueRoutes.swift``), the report API and the dashboard
/// (``DashboardRoutes.swift``), health, readiness and metrics.
///
/// Routing is a switch over the path rather than Hummingbird's router, which answers a wrong
/// method with 404: here an unknown path is 404 and a known path with another method is 405
/// with `Allow`. Every outcome is an answer; nothing thrown reaches Hummingbird, so a 500 can
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

    /// The routes, by path without its trailing slash (docs/openapi.yaml describes each).
    enum Route: String, CaseIterable {
        case skadnetwork = "/.well-known/skadnetwork/report-attribution"
        case appattribution = "/.well-known/appattribution/report-attribution"
        case conversionValue = "/v1/conversion-value"
        case snippet = "/api/v2/conversion_value"
        case appleAdsToken = "/v1/apple-ads/token"
        case health = "/healthz"
        case ready = "/readyz"
        case metrics = "/metrics"
        case report = "/api/v1/report"
        case summary = "/api/v1/summary"
        case postbacks = "/api/v1/postbacks"
        case root = "/"
        case dashboard = "/dashboard"
        case login = "/login"
        case openAPI = "/openapi.json"

        init?(path: String) {
            var path = Substring(path)
            if path.count > 1 && path.hasSuffix("/") { path = path.dropLast() }
            self.init(rawValue: String(path))
        }

        /// The methods the route takes (`GET` also takes `HEAD`).
        var methods: [HTTPRequest.Method] {
            switch self {
            case .skadnetwork, .appattribution, .conversionValue, .appleAdsToken: [.post]
            case .health, .ready, .metrics, .snippet, .report, .summary, .postbacks, .root, .dashboard, .openAPI: [.get]
            case .login: [.get, .post]
            }
        }

        func takes(_ method: HTTPRequest.Method) -> Bool {
            methods.contains(method) || (method == .head && methods.contains(.get))
        }
    }

    func respond(to request: Request, context: ServeRequestContext) async throws -> Response {
        let arrival = UTCInstant.now()
        let started = ContinuousClock.now
        let requestID = Self.requestID(request.headers[.xRequestID])
        let route = Route(path: request.uri.path)
        var response: Response
        if let route {
            if route.takes(request.method) {
                switch route {
                case .skadnetwork, .appattribution:
                    response = await receive(
                        request,
                        path: route == .appattribution ? .aak : .skan,
                        context: context,
                        arrival: arrival,
                        requestID: requestID
                    )
                case .conversionValue:
                    response = await conversionValue(request, context: context, arrival: arrival)
                case .snippet:
                    response = await snippetConversionValue(request, context: context, arrival: arrival)
                case .appleAdsToken:
                    response = await appleAdsToken(request, context: context, arrival: arrival)
                case .health:
                    response = Self.json(.ok, #"{"status":"up"}"#)
                case .ready:
                    if let problem = await committer.checkWritable() {
                        logger.warning("not ready", metadata: ["serve.reason": "\(problem)"])
                        response = Self.json(
                            .serviceUnavailable,
                            Self.problem(status: "unavailable", reason: "the store does not accept writes now")
                        )
                        response.headers[.retryAfter] = "5"
                    } else {
                        response = Self.json(.ok, #"{"status":"ready"}"#)
                    }
                case .metrics:
                    response = Response(
                        status: .ok,
                        headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                        body: ResponseBody(byteBuffer: ByteBuffer(bytes: metrics.text()))
                    )
                case .report:
                    response = await report(request, context: context)
                case .summary:
                    response = await summary(request, context: context)
                case .postbacks:
                    response = await pullPostbacks(request, context: context)
                case .root:
                    response = Self.redirect(to: Route.dashboard.rawValue)
                case .dashboard:
                    response = await dashboard(request, context: context)
                case .login:
                    response = await login(request, context: context)
                case .openAPI:
                    response = Self.json(.ok, openAPIDocument)
                }
            } else {
                let allowed = route.methods.map(\.rawValue).joined(separator: ", ")
                response = Self.json(
                    .methodNotAllowed,
                    Self.problem(status: "method_not_allowed", reason: "\(route.rawValue) takes \(allowed)")
                )
                response.headers[.allow] = route.methods.contains(.get) ? allowed + ", HEAD" : allowed
            }
        } else {
            response = Self.json(.notFound, Self.problem(status: "not_found", reason: "no such endpoint"))
        }
        response.headers[.xRequestID] = requestID
        metrics.request(route: route?.rawValue ?? "other", status: response.status.code)
        if accessLog {
            logger.info(
                "\(request.method.rawValue) \(request.uri.path) \(response.status.code)",
                metadata: [
                    "http.client": "\(clientAddressPolicy.stored(clientAddress(request, context)) ?? "-")",
                    "http.request_id": "\(requestID)",
                    "http.duration_ms": "\((ContinuousClock.now - started).milliseconds)",
                ]
            )
        }
        return response
    }

    /// One postback: read the body (at most ``maximumBody`` bytes), verify it, wait for its
    /// commit, answer. `path` is the kind the report path it arrived at takes.
    private func receive(
        _ request: Request,
        path: PostbackKind,
        context: ServeRequestContext,
        arrival: UTCInstant,
        requestID: String
    ) async -> Response {
        if let length = request.headers[.contentLength].flatMap(Int.init), length > maximumBody {
            return tooLarge()
        }
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: maximumBody)
        } catch is NIOTooManyBytesError {
            return tooLarge()
        } catch {
            // The client went away or timed out mid-body: nothing to store, nobody to answer.
            return Self.json(
                .badRequest,
                Self.problem(status: "incomplete", reason: "the request body did not arrive whole")
            )
        }
        let bytes = Array(body.readableBytesView)
        let (result, digest) = verifiers.withVerifier { verifier in
            bytes.withUnsafeBufferPointer { buffer in
                (verifier.check(buffer, path: path), verifier.sha256(buffer))
            }
        }
        let submission = GroupCommitter.Submission(
            bytes: bytes,
            result: result,
            digest: digest,
            request: ReceivedRequest(
                receivedAt: arrival,
                clientAddress: clientAddressPolicy.stored(clientAddress(request, context)),
                requestID: requestID
            )
        )
        switch await committer.submit(submission) {
        case .unavailable(let reason):
            var response = Self.json(
                .serviceUnavailable,
                Self.problem(status: "unavailable", reason: "the postback was not stored: \(reason)")
            )
            response.headers[.retryAfter] = "5"
            return response
        case .done(let outcome):
            return Self.answer(outcome, result, requestID: requestID)
        }
    }

    private func tooLarge() -> Response {
        Self.json(
            .contentTooLarge,
            Self.problem(
                status: "too_large",
                reason: "the body is over \(maximumBody) bytes; a postback is under 1 KiB"
            )
        )
    }

    /// 200 for whatever retrying cannot change; 400 for a malformed body, naming the field.
    static func answer(_ outcome: ReceiptOutcome, _ result: VerificationResult, requestID: String) -> Response {
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

    static func json(_ status: HTTPResponse.Status, _ text: String) -> Response {
        Response(
            status: status,
            headers: [.contentType: "application/json"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: text + "\n"))
        )
    }

    static func problem(status: String, reason: String) -> String {
        var object = JSONObjectWriter()
        object.add("status", status)
        object.add("reason", reason)
        return object.text
    }

    /// The client's address: the last entry of the trusted proxy's header when configured,
    /// else the peer's IP address.
    func clientAddress(_ request: Request, _ context: ServeRequestContext) -> String? {
        if let name = clientAddressHeader, let value = request.headers[name] {
            let last = (value.split(separator: ",").last ?? "").drop { $0 == " " }.reversed().drop { $0 == " " }
            if !last.isEmpty && last.count <= 64 { return String(last.reversed()) }
        }
        return context.peer?.ipAddress
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
