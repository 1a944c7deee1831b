import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL
import PostbackTestSupport
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// `postbackd serve` as a user runs it: the built binary, listening on a loopback port it
/// chooses (`--port 0`) and prints when ready.
final class ServerProcess: Sendable {
    let process: Process
    /// `http://127.0.0.1:PORT` (or https).
    let base: String
    private let output: OutputBuffer
    private let errors: OutputBuffer

    /// What a pipe delivered so far.
    final class OutputBuffer: Sendable {
        private let data = Mutex(Data())
        func append(_ more: Data) { data.withLock { $0.append(more) } }
        var text: String { data.withLock { String(decoding: $0, as: UTF8.self) } }
    }

    private init(process: Process, base: String, output: OutputBuffer, errors: OutputBuffer) {
        self.process = process
        self.base = base
        self.output = output
        self.errors = errors
    }

    /// Starts `postbackd serve --port 0 arguments…` and waits until it listens.
    static func start(
        _ arguments: [String],
        directory: String,
        environment: [String: String] = [:]
    ) async throws -> ServerProcess {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Postbackd.executable)
        process.arguments = ["serve", "--port", "0"] + arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        let outPipe = Pipe()
        let errPipe = Pipe()
        process.standardOutput = outPipe
        process.standardError = errPipe
        process.standardInput = FileHandle.nullDevice
        let output = OutputBuffer()
        let errors = OutputBuffer()
        outPipe.fileHandleForReading.readabilityHandler = { output.append($0.availableData) }
        errPipe.fileHandleForReading.readabilityHandler = { errors.append($0.availableData) }
        try process.run()
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            let text = output.text
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("listening on ") }) {
                return ServerProcess(
                    process: process,
                    base: String(line.dropFirst("listening on ".count)),
                    output: output,
                    errors: errors
                )
            }
            if !process.isRunning {
                let message = errors.text
                throw ServerError(description: "serve exited \(process.terminationStatus) before listening: \(message)")
            }
            // Suspended, not asleep: the cooperative pool's few threads serve every other test.
            try await Task.sleep(for: .milliseconds(20))
        }
        process.terminate()
        throw ServerError(description: "serve did not print 'listening on' within 60 s")
    }

    /// A random address of 127.0.0.0/8 (all of it is loopback on Linux), for a server that a
    /// client may go on calling after it ends: no other test's server, on 127.0.0.1, answers
    /// there, even on the same port.
    static func loopbackAddressOfItsOwn() -> String {
        "127.\(Int.random(in: 1...254)).\(Int.random(in: 0...255)).\(Int.random(in: 1...254))"
    }

    /// The loopback port it listens on, for raw exchanges.
    var port: UInt16 { UInt16(base.split(separator: ":").last ?? "") ?? 0 }

    /// A socket connected to the loopback `port`, for raw exchanges.
    static func connect(port: UInt16) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ServerError(description: "socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            let error = errno
            close(fd)
            throw ServerError(description: "connect to 127.0.0.1:\(port): errno \(error)")
        }
        return fd
    }

    var standardOutput: String { output.text }
    var standardError: String { errors.text }

    /// Sends `signal` and waits for the process to end; returns its exit status.
    @discardableResult
    func stop(_ signal: Int32 = SIGTERM) -> Int32 {
        kill(process.processIdentifier, signal)
        process.waitUntilExit()
        // Let the readability handlers take the last output.
        usleep(100_000)
        return process.terminationStatus
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}

struct ServerError: Error, CustomStringConvertible {
    var description: String
}

/// A real HTTP client's answer.
struct Answer: Sendable {
    var status: Int
    var headers: [(String, String)]
    var body: String

    /// The body's JSON object.
    var json: [String: any Sendable] {
        (try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: any Sendable]) ?? [:]
    }

    var jsonStatus: String? { json["status"] as? String }
    var verdict: String? { json["verdict"] as? String }

    func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }
}

extension HTTPClient {
    /// Every test client's configuration: a connection idle for 5 s is closed by the client,
    /// before `serve` closes it (after `--read-timeout`, 10 s by default). A request sent on a
    /// connection the server is closing at that moment fails with "I/O on closed channel" (seen
    /// in CI: a test that waits 10 s for the keys' reload between two requests).
    static func testConfiguration() -> HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.idleTimeout = .seconds(5)
        return configuration
    }

    /// The tests' plain HTTP client, shared and never shut down; it takes the place of
    /// AsyncHTTPClient's `shared`, whose idle connections outlive `serve`'s.
    static let tests = HTTPClient(eventLoopGroupProvider: .singleton, configuration: testConfiguration())

    /// The tests' plain HTTP client (``tests``).
    static func forTests() throws -> HTTPClient { tests }

    /// A client that trusts `certificate` (the fixture's) for HTTPS; shut it down after use.
    static func forTests(trusting certificate: String?) throws -> HTTPClient {
        var configuration = testConfiguration()
        configuration.timeout = .init(connect: .seconds(10), read: .seconds(30))
        if let certificate {
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(certificate))
            configuration.tlsConfiguration = tls
        }
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    /// A client for a load that outlives its server: `connections` connections, and a refused
    /// connection fails its request at once, where the shared client retries it until the
    /// request's 30 s deadline. Shut it down after use.
    static func forLoad(connections: Int) -> HTTPClient {
        var configuration = testConfiguration()
        configuration.timeout = .init(connect: .seconds(10), read: .seconds(30))
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = connections
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    /// `method url` with `body`, its answer read whole.
    func send(
        _ method: HTTPMethod = .POST,
        _ url: String,
        body: [UInt8]? = nil,
        headers: [(String, String)] = []
    ) async throws -> Answer {
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        let response = try await execute(request, timeout: .seconds(30))
        let bytes = try await response.body.collect(upTo: 1 << 20)
        return Answer(
            status: Int(response.status.code),
            headers: response.headers.map { ($0.name, $0.value) },
            body: String(buffer: bytes)
        )
    }
}
