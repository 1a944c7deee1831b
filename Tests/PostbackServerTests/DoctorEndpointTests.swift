import Foundation
import NIOSSL
import PostbackTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `postbackd doctor --endpoint`: the built binary against `postbackd serve` over HTTPS and
/// against small HTTPS servers that answer wrongly, all on loopback ports chosen at run time,
/// with certificates from a test authority made at run time (Fixtures/doctor/make-test-ca.sh).
@Suite("doctor --endpoint", .serialized, .timeLimit(.minutes(20)))
struct DoctorEndpointTests {
    let directory: TemporaryDirectory
    let certificates: String

    init() async throws {
        directory = try TemporaryDirectory("doctor")
        certificates = directory.path + "/ca"
        try FileManager.default.createDirectory(atPath: certificates, withIntermediateDirectories: true)
        let script = try #require(
            Bundle.module.path(forResource: "make-test-ca", ofType: "sh", inDirectory: "Fixtures/doctor")
        )
        let made = try await Shell.run("bash \(Shell.quoted(script)) \(Shell.quoted(certificates))", in: directory.path)
        #expect(made.status == 0, "\(made.output)")
    }

    private var caFile: String { certificates + "/ca.pem" }

    /// `serve` over HTTPS with the certificate `name` (good, expiring, expired, otherhost).
    private func serve(_ name: String) async throws -> (ServerProcess, String) {
        let store = try await TestStore.make(.sqlite, in: directory)
        let server = try await ServerProcess.start(
            [
                "--db", store.argument, "--tls-cert", "\(certificates)/\(name).pem", "--tls-key",
                "\(certificates)/\(name)-key.pem",
            ],
            directory: directory.path
        )
        let port = try #require(server.base.split(separator: ":").last)
        return (server, "https://localhost:\(port)")
    }

    private func doctor(_ endpoint: String, _ more: [String] = []) async throws -> Postbackd.Run {
        try await Postbackd.run(
            ["doctor", "--endpoint", endpoint, "--timeout", "10"] + more,
            directory: directory.path
        )
    }

    /// The JSON report's findings of the endpoint check as `subject kind`.
    private func findings(_ run: Postbackd.Run) throws -> [[String: Any]] {
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(run.standardOutput.utf8)) as? [String: Any]
        )
        let checks = try #require(object["checks"] as? [[String: Any]])
        return try #require(checks.first?["findings"] as? [[String: Any]])
    }

    private static func kinds(_ findings: [[String: Any]]) -> [String] {
        findings.map { "\($0["subject"] as? String ?? "?") \($0["kind"] as? String ?? "?")" }.sorted()
    }

    /// `2026-12-07 05:26:30 UTC` for the certificate's notAfter, read by NIOSSL.
    private func expiry(_ name: String) throws -> String {
        let certificate = try #require(try NIOSSLCertificate.fromPEMFile("\(certificates)/\(name).pem").first)
        let formatter = ISO8601DateFormatter()
        let text = formatter.string(from: Date(timeIntervalSince1970: TimeInterval(certificate.notValidAfter)))
        return text.prefix(10) + " " + text.dropFirst(11).prefix(8) + " UTC"
    }

    @Test("a sound server: no findings, both paths answered stored or duplicate, the metrics file written")
    func sound() async throws {
        let (server, endpoint) = try await serve("good")
        defer { server.stop() }
        let metrics = directory.path + "/doctor.prom"
        let first = try await doctor(endpoint, ["--ca-file", caFile, "--prometheus-textfile", metrics])
        #expect(first.status == 0, "\(first.standardOutput)\(first.standardError)")
        #expect(first.standardOutput.contains("endpoint \(endpoint): no findings"))
        #expect(first.standardOutput.contains("POST /.well-known/skadnetwork/report-attribution/: 200 stored in "))
        #expect(
            first.standardOutput.contains("POST /.well-known/appattribution/report-attribution/: 200 duplicate in ")
        )
        // Again: the same bytes, answered duplicate on both paths, nothing more stored.
        let again = try await doctor(endpoint, ["--ca-file", caFile, "--format", "json"])
        #expect(again.status == 0)
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(again.standardOutput.utf8)) as? [String: Any]
        )
        let check = try #require((object["checks"] as? [[String: Any]])?.first)
        let probes = try #require(check["probes"] as? [[String: Any]])
        #expect(probes.map { $0["status"] as? Int } == [200, 200])
        #expect(probes.map { $0["answer"] as? String } == ["duplicate", "duplicate"])
        #expect(probes.allSatisfy { ($0["milliseconds"] as? Int).map { $0 >= 0 && $0 < 10_000 } ?? false })
        let certificate = try #require(check["certificate"] as? [String: Any])
        #expect(certificate["verified"] as? Bool == true)

        let text = try String(contentsOfFile: metrics, encoding: .utf8)
        let notAfter = try #require(try NIOSSLCertificate.fromPEMFile("\(certificates)/good.pem").first).notValidAfter
        #expect(
            text.contains(
                "postbackd_doctor_certificate_expiry_timestamp_seconds{endpoint=\"\(endpoint)\"} \(notAfter)\n"
            ),
            "\(text)"
        )
        #expect(text.contains("postbackd_doctor_findings{check=\"endpoint\",target=\"\(endpoint)\"} 0\n"))
        #expect(text.contains("postbackd_doctor_endpoint_up{endpoint=\"\(endpoint)\"} 1\n"))
        #expect(
            text.contains(
                "postbackd_doctor_probe_status{endpoint=\"\(endpoint)\",path=\"/.well-known/appattribution/report-attribution/\"} 200\n"
            )
        )
        #expect(text.contains("# TYPE postbackd_doctor_last_run_timestamp_seconds gauge\n"))
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(!files.contains { $0.hasSuffix(".tmp") }, "\(files)")
    }

    @Test("a chain devices do not trust, a certificate for another host")
    func untrusted() async throws {
        let (server, endpoint) = try await serve("good")
        defer { server.stop() }
        // Without --ca-file the test authority is not among the system's roots.
        let run = try await doctor(endpoint, ["--format", "json"])
        #expect(run.status == 1, "\(run.standardOutput)\(run.standardError)")
        #expect(Self.kinds(try findings(run)) == ["certificate certificate-untrusted"])
        #expect(run.standardOutput.contains("probed without verifying"))

        let (other, otherEndpoint) = try await serve("otherhost")
        defer { other.stop() }
        let mismatch = try await doctor(otherEndpoint, ["--ca-file", caFile, "--format", "json"])
        #expect(mismatch.status == 1, "\(mismatch.standardOutput)")
        let found = try findings(mismatch)
        #expect(Self.kinds(found) == ["certificate host-mismatch"])
        #expect((found.first?["problem"] as? String)?.contains("does not name localhost") == true)
    }

    @Test("an expired certificate names the day it expired; one expiring in 10 days names its date")
    func expiry() async throws {
        let (expired, expiredEndpoint) = try await serve("expired")
        defer { expired.stop() }
        let run = try await doctor(expiredEndpoint, ["--ca-file", caFile, "--format", "json"])
        #expect(run.status == 1, "\(run.standardOutput)\(run.standardError)")
        let found = try findings(run)
        #expect(Self.kinds(found) == ["certificate certificate-expired"])
        let problem = try #require(found.first?["problem"] as? String)
        #expect(problem.contains("expired on \(try expiry("expired"))"), "\(problem)")

        let (expiring, expiringEndpoint) = try await serve("expiring")
        defer { expiring.stop() }
        let soon = try await doctor(expiringEndpoint, ["--ca-file", caFile])
        #expect(soon.status == 1, "\(soon.standardOutput)")
        #expect(soon.standardOutput.contains("certificate [certificate-expiring]"))
        #expect(
            soon.standardOutput.contains("expires on \(try expiry("expiring")), in 9 days"),
            "\(soon.standardOutput)"
        )
    }

    @Test("a redirect, a refused POST and a page that is not postbackd's answer", arguments: ["301", "405", "html"])
    func wrongAnswers(_ mode: String) async throws {
        let stub = try await StubServer(
            mode: mode,
            certificate: certificates + "/good.pem",
            key: certificates + "/good-key.pem",
            directory: directory.path
        )
        defer { stub.stop() }
        let run = try await doctor("https://localhost:\(stub.port)", ["--ca-file", caFile, "--format", "json"])
        #expect(run.status == 1, "\(run.standardOutput)\(run.standardError)")
        let found = try findings(run)
        let kind = mode == "html" ? "unexpected-answer" : "unexpected-status"
        #expect(
            Self.kinds(found) == [
                "POST /.well-known/appattribution/report-attribution/ \(kind)",
                "POST /.well-known/skadnetwork/report-attribution/ \(kind)",
            ]
        )
        let problem = try #require(found.first?["problem"] as? String)
        switch mode {
        case "301": #expect(problem.hasPrefix("answered 301 to https://www.example.com/.well-known/"), "\(problem)")
        case "405": #expect(problem.hasPrefix("answered 405"), "\(problem)")
        default: #expect(problem.contains("Content-Type text/html"), "\(problem)")
        }
    }

    @Test("an endpoint that cannot be reached at all exits 2")
    func unreachable() async throws {
        // A port that was free a moment ago: bind, read the port, close.
        let port = try StubServer.freePort()
        let metrics = directory.path + "/down.prom"
        let run = try await doctor("https://localhost:\(port)", ["--prometheus-textfile", metrics])
        #expect(run.status == 2, "\(run.standardOutput)\(run.standardError)")
        #expect(run.standardError.contains("cannot reach localhost:\(port)"), "\(run.standardError)")
        let text = try String(contentsOfFile: metrics, encoding: .utf8)
        #expect(text.contains("postbackd_doctor_endpoint_up{endpoint=\"https://localhost:\(port)\"} 0\n"))
        #expect(
            text.contains("postbackd_doctor_findings{check=\"endpoint\",target=\"https://localhost:\(port)\"} -1\n")
        )

        let plain = try await Postbackd.run(["doctor", "--endpoint", "http://example.com"])
        #expect(plain.status == 2)
        #expect(plain.standardError.contains("not https://DOMAIN"))
    }
}

/// Fixtures/doctor/stub-server.py: an HTTPS server on a loopback port that answers every POST
/// with a redirect, a 405, or an HTML page. Started in the background by a shell (not by
/// Foundation's Process, whose start-up waits were seen to hang here), stopped by its pid.
final class StubServer {
    let pid: pid_t
    let port: Int

    init(mode: String, certificate: String, key: String, directory: String) async throws {
        let script = try #require(
            Bundle.module.path(forResource: "stub-server", ofType: "py", inDirectory: "Fixtures/doctor")
        )
        let portFile = directory + "/stub-\(mode).port"
        let command =
            ["python3", script, certificate, key, mode].map(Shell.quoted).joined(separator: " ")
            + " >\(Shell.quoted(portFile)) 2>/dev/null & echo $!"
        let started = try await Shell.run(command, in: directory)
        pid = try #require(pid_t(started.output.trimmingCharacters(in: .whitespacesAndNewlines)), "\(started.output)")
        var found: Int?
        let deadline = Date().addingTimeInterval(20)
        while found == nil && Date() < deadline {
            let text = (try? String(contentsOfFile: portFile, encoding: .utf8)) ?? ""
            if text.hasSuffix("\n") { found = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) }
            if found == nil { usleep(20_000) }
        }
        port = try #require(found, "stub-server.py printed no port")
    }

    /// SIGKILL: the test process may ignore SIGTERM, and its children inherit that.
    func stop() {
        kill(pid, SIGKILL)
        for _ in 0..<250 where kill(pid, 0) == 0 { usleep(20_000) }
    }

    /// A loopback port nothing listens on (bound, read, and closed again).
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        try #require(bound)
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
