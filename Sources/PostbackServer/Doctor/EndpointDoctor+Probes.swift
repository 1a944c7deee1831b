import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import PostbackKit
import Synchronization

extension EndpointDoctor {
    // MARK: The probes

    struct Probe {
        var path: String
        var status: Int?
        var milliseconds: Int
        /// The `status` member of postbackd's JSON answer (`stored`, `duplicate`), if any.
        var answerStatus: String?
        var verdict: String?
        var contentType: String?
        var location: String?
        var error: String?
    }

    struct Probes {
        var results: [Probe] = []
        /// The TLS error that stopped the verifying connection, when it did.
        var tlsError: (any Error)?
    }

    static func probeAll(host: String, port: Int, options: Options, verify: Bool) async -> Probes {
        var tls = TLSConfiguration.makeClientConfiguration()
        if verify {
            if let caFile = options.caFile { tls.trustRoots = .file(caFile) }
        } else {
            tls.certificateVerification = .none
        }
        var configuration = HTTPClient.Configuration()
        configuration.tlsConfiguration = tls
        configuration.redirectConfiguration = .disallow
        configuration.timeout = .init(connect: options.connectTimeout, read: options.timeout)
        configuration.decompression = .disabled
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let probes = await probe(client, host: host, port: port, options: options, verify: verify)
        try? await client.shutdown()
        return probes
    }

    static func probe(
        _ client: HTTPClient,
        host: String,
        port: Int,
        options: Options,
        verify: Bool
    ) async -> Probes {
        var probes = Probes()
        let authority = (host.contains(":") ? "[\(host)]" : host) + (port == 443 ? "" : ":\(port)")
        for path in paths {
            var request = HTTPClientRequest(url: "https://\(authority)\(path)")
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/json")
            request.headers.add(name: "User-Agent", value: "postbackd-doctor")
            request.body = .bytes(ByteBuffer(bytes: probePostback))
            let started = ContinuousClock.now
            var probe = Probe(path: path, milliseconds: 0)
            do {
                let response = try await client.execute(request, timeout: options.timeout)
                probe.status = Int(response.status.code)
                probe.contentType = response.headers.first(name: "Content-Type")
                probe.location = response.headers.first(name: "Location")
                var body = [UInt8]()
                for try await chunk in response.body {
                    if body.count < maximumAnswer { body += chunk.readableBytesView.prefix(maximumAnswer - body.count) }
                }
                if let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] {
                    probe.answerStatus = object["status"] as? String
                    probe.verdict = object["verdict"] as? String
                }
            } catch {
                if verify && isTLSError(error) {
                    probes.tlsError = error
                    return probes
                }
                probe.error = describe(error)
            }
            probe.milliseconds = Int((ContinuousClock.now - started) / .milliseconds(1))
            probes.results.append(probe)
        }
        return probes
    }

    /// What is wrong with one probe's answer, as a device meets it.
    static func findings(_ probe: Probe, host: String) -> [DoctorFinding] {
        let subject = "POST \(probe.path)"
        guard let status = probe.status else {
            return [
                DoctorFinding(
                    subject,
                    .noAnswer,
                    problem: "no answer: \(probe.error ?? "the connection ended") after \(probe.milliseconds) ms",
                    fix: "route \(probe.path) on \(host) to postbackd serve and check that it runs"
                )
            ]
        }
        if status == 200 {
            if ["stored", "duplicate"].contains(probe.answerStatus ?? ""), probe.verdict == "valid" { return [] }
            let what =
                probe.answerStatus.map {
                    "\"status\":\"\($0)\"" + (probe.verdict.map { ", \"verdict\":\"\($0)\"" } ?? "")
                }
                ?? "a body that is not postbackd's JSON answer (Content-Type \(probe.contentType ?? "none"))"
            return [
                DoctorFinding(
                    subject,
                    .unexpectedAnswer,
                    problem:
                        "answered 200 with \(what): not postbackd's answer to a valid postback (stored or duplicate); the postback may be dropped",
                    fix: "route \(probe.path) on \(host) to postbackd serve"
                )
            ]
        }
        let problem: String
        let fix: String
        switch status {
        case 300..<400:
            problem =
                "answered \(status)\(probe.location.map { " to \($0)" } ?? ""): devices do not follow redirects, so the postback is lost"
            fix =
                "serve \(probe.path) at https://\(host) itself, without a redirect (a proxy that rewrites http to https or adds www)"
        case 404:
            problem = "answered 404: nothing serves this path"
            fix = "route \(probe.path) on \(host) to postbackd serve"
        case 405:
            problem = "answered 405: something in front of postbackd refuses POST here"
            fix = "let POST through to postbackd serve for \(probe.path)"
        case 413:
            problem = "answered 413 to a 1 KiB postback: a body limit in front of postbackd is too small"
            fix = "allow request bodies of at least 64 KiB on \(probe.path)"
        case 503:
            problem =
                "answered 503: postbackd could not commit (or a proxy has no backend); devices retry, but not forever"
            fix = "check the store (postbackd check) and serve's log; check the proxy's backend"
        default:
            problem = "answered \(status): postbackd answers 200 to a valid postback"
            fix = "route \(probe.path) on \(host) to postbackd serve"
        }
        return [DoctorFinding(subject, .unexpectedStatus, problem: problem, fix: fix)]
    }

}
