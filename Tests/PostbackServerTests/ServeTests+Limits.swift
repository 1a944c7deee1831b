import AsyncHTTPClient
import Foundation
import NIOHTTP1
import PostbackKit
import PostbackStore
import PostbackTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension ServeTests {
    // MARK: Limits

    @Test("a flood of junk adds at most the hour's quarantine rows; repeats add to a count")
    func quarantineBudget() async throws {
        let (store, server) = try await start(.sqlite, ["--quarantine-rows-per-hour", "2"])
        let client = try HTTPClient.forTests()
        var statuses: [String] = []
        for index in 0..<4 {
            let answer = try await client.send(.POST, server.base + Self.skan, body: Array("junk \(index)".utf8))
            #expect(answer.status == 400)
            statuses.append(answer.jsonStatus ?? "-")
        }
        #expect(statuses == ["quarantined", "quarantined", "dropped", "dropped"])
        // A valid postback is stored whatever the budget.
        let genuine = try Self.signed("33333333-0000-4000-8000-000000000001")
        #expect(try await client.send(.POST, server.base + Self.skan, body: genuine).jsonStatus == "stored")
        let metrics = try await client.send(.GET, server.base + "/metrics").body
        #expect(metrics.contains("postbackd_quarantine_dropped_total 2\n"))
        #expect(server.stop() == 0)
        #expect(try await store.strings("SELECT count(*) FROM quarantine") == ["2"])

        let repeats = try await start(store, ["--quarantine-rows-per-hour", "5"])
        for _ in 0..<3 {
            _ = try await client.send(.POST, repeats.base + Self.skan, body: Array("junk 0".utf8))
        }
        #expect(repeats.stop() == 0)
        #expect(
            try await store.strings("SELECT received_count FROM quarantine WHERE raw = CAST('junk 0' AS BLOB)") == ["4"]
        )
    }

    @Test("a client that stops sending mid-request is disconnected after --read-timeout")
    func slowClient() async throws {
        let server = try await start(.sqlite, ["--read-timeout", "1"]).server
        let port = server.port
        for partial in [
            "POST \(Self.skan) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le",  // head never ends
            "POST \(Self.skan) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{\"a\"",  // body never ends
        ] {
            let started = Date()
            let closed = try Self.sendAndWaitForClose(partial, port: port)
            let seconds = Date().timeIntervalSince(started)
            #expect(closed, "the server kept the connection open")
            #expect(seconds < 8, "closed after \(seconds) s")
        }
        #expect(server.stop() == 0)
    }

    @Test("--max-connections holds when clients connect at once: the rest wait unanswered until one closes")
    func connectionCap() async throws {
        let server = try await start(.sqlite, ["--max-connections", "3", "--read-timeout", "60"]).server
        // A stopped server accepts nothing: all eight connect into the listen backlog, and its
        // next turn finds them waiting together (a turn that accepted them all passes the cap).
        let pid = server.process.processIdentifier
        kill(pid, SIGSTOP)
        var sockets: [Int32] = []
        defer { for fd in sockets { close(fd) } }
        for _ in 0..<8 { sockets.append(try ServerProcess.connect(port: server.port)) }
        for fd in sockets {
            _ = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".withCString { send(fd, $0, strlen($0), 0) }
        }
        kill(pid, SIGCONT)
        let first = try await Self.answered(sockets, atLeast: 3)
        #expect(first.count == 3, "answered: \(first.count) of 8")
        // One of them closes: the server accepts one more, and answers it.
        let closing = try #require(first.first)
        close(closing)
        sockets.removeAll { $0 == closing }
        let then = try await Self.answered(sockets, atLeast: 3)
        #expect(then.count == 3, "answered after a close: \(then.count) of 7")
        #expect(Set(first).subtracting([closing]).isSubset(of: Set(then)))
        #expect(server.stop() == 0)
    }

    /// The sockets with an answer to read: waits up to 20 s for `atLeast` of them, then 1 s
    /// more for any other.
    private static func answered(_ sockets: [Int32], atLeast count: Int) async throws -> [Int32] {
        func readable() -> [Int32] {
            var polled = sockets.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            _ = poll(&polled, nfds_t(polled.count), 0)
            return polled.filter { $0.revents & Int16(POLLIN) != 0 }.map(\.fd)
        }
        let deadline = Date().addingTimeInterval(20)
        while readable().count < count, Date() < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        try await Task.sleep(for: .seconds(1))
        return readable()
    }

    /// Sends `text` on a new connection and returns what the server sends until it closes the
    /// connection (empty when it has not within 10 s).
    static func exchange(_ text: String, port: UInt16) throws -> String {
        var received: [UInt8] = []
        let closed = try sendAndWaitForClose(text, port: port) { received += $0 }
        return closed ? String(decoding: received, as: UTF8.self) : ""
    }

    /// Sends `text` on a new connection and waits (at most 10 s) for the server to close it.
    private static func sendAndWaitForClose(
        _ text: String,
        port: UInt16,
        received: ([UInt8]) -> Void = { _ in }
    ) throws -> Bool {
        let fd = try ServerProcess.connect(port: port)
        defer { close(fd) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        _ = text.withCString { send(fd, $0, strlen($0), 0) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count == 0 { return true }  // closed by the server
            if count > 0 {
                received(Array(buffer[0..<count]))
                continue
            }
            if count < 0 { return errno == ECONNRESET }  // timed out: still open
        }
    }

    // MARK: TLS and start-up

    @Test("HTTPS with its own certificate")
    func tls() async throws {
        let certificate = try #require(
            Bundle.module.path(forResource: "localhost-cert", ofType: "pem", inDirectory: "Fixtures")
        )
        let key = try #require(Bundle.module.path(forResource: "localhost-key", ofType: "pem", inDirectory: "Fixtures"))
        let server = try await start(.sqlite, ["--tls-cert", certificate, "--tls-key", key]).server
        #expect(server.base.hasPrefix("https://127.0.0.1:"))
        let client = try HTTPClient.forTests(trusting: certificate)
        let answer = try await client.send(
            .POST,
            server.base + Self.skan + "/",
            body: try Self.signed("44444444-0000-4000-8000-000000000001")
        )
        #expect(answer.status == 200 && answer.jsonStatus == "stored")
        // Plain HTTP to the TLS port gets no answer.
        let plain = try HTTPClient.forTests()
        let http = server.base.replacingOccurrences(of: "https://", with: "http://")
        await #expect(throws: (any Error).self) { _ = try await plain.send(.GET, http + "/healthz") }
        #expect(server.stop() == 0)
        try await client.shutdown()
    }

    @Test("what cannot start says why and exits 2")
    func startFailures() async throws {
        let missing = try await Postbackd.run(
            [
                "serve", "--port", "0", "--tls-cert", directory.path + "/none.pem", "--tls-key",
                directory.path + "/none.pem",
            ],
            directory: directory.path
        )
        #expect(missing.status == 2)
        #expect(missing.standardError.contains("none.pem (--tls-cert)"), "\(missing.standardError)")
        let half = try await Postbackd.run(["serve", "--tls-cert", "x.pem"], directory: directory.path)
        #expect(half.status == 2 && half.standardError.contains("--tls-key"))
        let unreachable = try await Postbackd.run(
            ["serve", "--port", "0", "--db", "postgres://postbackd:hunter2secret@127.0.0.1:1/postbackd"],
            directory: directory.path
        )
        #expect(unreachable.status == 2)
        #expect(unreachable.standardError.contains("127.0.0.1"))
        #expect(
            !unreachable.standardError.contains("hunter2secret")
                && !unreachable.standardOutput.contains("hunter2secret")
        )

        // A port in use.
        let first = try await ServerProcess.start(["--db", directory.path + "/a.sqlite"], directory: directory.path)
        let port = String(first.base.split(separator: ":").last ?? "")
        let second = try await Postbackd.run(
            ["serve", "--port", port, "--db", directory.path + "/b.sqlite"],
            directory: directory.path
        )
        #expect(second.status == 2)
        #expect(second.standardError.contains("cannot listen on 127.0.0.1:\(port)"), "\(second.standardError)")
        #expect(first.stop() == 0)
    }
}
