import Foundation
import PostbackKit
import PostbackServer
import PostbackStore
import PostbackTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The hot routes answer alike whichever path serves them: ``HotRouteHandler`` below
/// Hummingbird, or the router with the hot path off (``ServeJob/hotPath``). Every hot route's
/// requests (good, bad, oversized, HEAD, pipelined) go through both, and the answers are
/// compared byte for byte, but for the `Date` header and the request ids the server makes: a
/// Hummingbird upgrade that changes what the router writes splits them here.
@Suite(.timeLimit(.minutes(20)))
struct HotPathParityTests {
    static let skan = "/.well-known/skadnetwork/report-attribution"
    static let aak = "/.well-known/appattribution/report-attribution"

    static func post(_ path: String, _ body: String, headers: String = "") -> String {
        "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(body.utf8.count)\r\n\(headers)\r\n\(body)"
    }

    static func get(_ path: String, method: String = "GET", headers: String = "") -> String {
        "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\(headers)\r\n"
    }

    static let close = get("/healthz", headers: "Connection: close\r\n")

    /// Each a connection's whole input; the server closes each connection at its end.
    static func exchanges() throws -> [String] {
        let postback = try SamplePostback.signedJSON(
            .v4_0,
            transactionID: "11111111-0000-4000-8000-0000000000c1",
            conversionValue: .fine(20)
        )
        let big = String(repeating: "x", count: 3_000)
        let chunked =
            "POST \(skan) HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "bb8\r\n\(big)\r\n0\r\n\r\n"
        return [
            post(skan, postback) + close,
            post(skan + "/", postback, headers: "X-Request-Id: parity-1\r\n") + close,
            post(aak + "?x=1", "{}") + close,
            post(skan, "not json") + close,
            post(skan, big),
            chunked,
            "POST \(skan) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 999999\r\n\r\nabc",
            post("/v1/conversion-value", "{}") + close,
            post("/v1/conversion-value/", #"{"app_id":1,"events":[]}"#) + close,
            "POST /v1/conversion-value HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2000000\r\n\r\n{",
            get("/api/v2/conversion_value") + close,
            get("/api/v2/conversion_value?a=key&app_id=1", method: "HEAD") + close,
            get("/api/v2/conversion_value/?app_id=1&device_id=d") + close,
            "GET /api/v2/conversion_value HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\n\r\nhello" + close,
            get(skan) + get("/v1/conversion-value", method: "HEAD") + close,
            post(skan, postback) + get("/healthz") + post("/v1/conversion-value", "{}") + get("/nowhere")
                + get("/api/v2/conversion_value", method: "HEAD") + post(aak, "{}") + post(skan, postback)
                + get("/api/v2/conversion_value", headers: "Connection: close\r\n"),
            post(skan, postback) + post(skan, big) + close,
        ]
    }

    @Test("the hot path and the router answer the hot routes byte for byte alike")
    func parity() async throws {
        let directory = try TemporaryDirectory("parity")
        let exchanges = try Self.exchanges()
        let hot = try await Self.answers(exchanges, hotPath: true, in: directory)
        let routed = try await Self.answers(exchanges, hotPath: false, in: directory)
        #expect(hot.count == exchanges.count)
        for (index, (hot, routed)) in zip(hot, routed).enumerated() {
            #expect(!hot.isEmpty, "exchange \(index) was not answered")
            #expect(
                hot == routed,
                "exchange \(index):\n\(exchanges[index])\n--- hot path:\n\(hot)\n--- router:\n\(routed)"
            )
        }
    }

    /// What a server with or without the hot path answers `exchanges`, on a fresh store.
    static func answers(
        _ exchanges: [String],
        hotPath: Bool,
        in directory: TemporaryDirectory
    ) async throws
        -> [String]
    {
        let store = try await TestStore.make(.sqlite, in: directory, name: hotPath ? "hot" : "routed")
        var job = ServeJob(location: store.location, port: 0, maximumBody: 2_048)
        job.hotPath = hotPath
        let listening = Listening()
        let server = Task { [job] in try await job.run { line in listening.line.withLock { $0 = line } } }
        defer { server.cancel() }
        var port: UInt16?
        for _ in 0..<1_000 where port == nil {
            port = listening.line.withLock { $0 }.flatMap { UInt16($0.split(separator: ":").last ?? "") }
            if port == nil { try await Task.sleep(for: .milliseconds(10)) }
        }
        let open = try #require(port, "the server did not listen")
        var answers: [String] = []
        for text in exchanges { answers.append(normalized(try await offPool { try exchange(text, port: open) })) }
        server.cancel()
        _ = try? await server.value
        return answers
    }

    /// The line `serve` prints once it listens.
    final class Listening: Sendable {
        let line = Mutex<String?>(nil)
    }

    /// The answers without what differs by the clock or chance: `Date`, and request ids made
    /// by the server.
    static func normalized(_ text: String) -> String {
        text.replacing(/(?i)\r\ndate: [^\r]*/, with: "\r\ndate: -")
            .replacing(/(?i)\r\nx-request-id: [0-9a-f]{32}\r\n/, with: "\r\nx-request-id: -\r\n")
            .replacing(/"request_id":"[0-9a-f]{32}"/, with: #""request_id":"-""#)
    }

    /// `body` on a thread of its own: its blocking socket calls must not hold one of the
    /// cooperative pool's few threads, which the router's requests in this process need.
    static func offPool(_ body: @escaping @Sendable () throws -> String) async throws -> String {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try body() }) }.start()
        }
    }

    /// Sends `text` on a new connection and returns what came back until the server closed it
    /// (at most 30 s).
    static func exchange(_ text: String, port: UInt16) throws -> String {
        let fd = try ServerProcess.connect(port: port)
        defer { Glibc.close(fd) }
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        _ = text.withCString { send(fd, $0, strlen($0), 0) }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count > 0 {
                received += buffer[0..<count]
                continue
            }
            if count == 0 || errno == ECONNRESET { break }
            return "(still open after 30 s) " + String(decoding: received, as: UTF8.self)
        }
        return String(decoding: received, as: UTF8.self)
    }
}
