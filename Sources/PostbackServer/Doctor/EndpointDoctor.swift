import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import PostbackKit
import Synchronization

/// `postbackd doctor --endpoint https://DOMAIN`: what a device meets when it posts a copy of a
/// postback there.
///
/// 1. The TLS certificate the server presents (read without verifying it): expired ("expired
///    on DATE"), or expiring within ``Options/warningDays`` (named with its date).
/// 2. Both report-attribution paths as devices post to them (with the trailing slash:
///    `/.well-known/skadnetwork/report-attribution/` and
///    `/.well-known/appattribution/report-attribution/`, docs/openapi.yaml and
///    ../spec/postbacks.md section 7), over a connection that verifies the chain against the
///    system's roots (or `--ca-file`) and the host name, as a device does. A chain or name
///    that does not verify is a finding, and the paths are then probed without verifying, to
///    say what else is wrong.
/// 3. Each path answers a POST of ``probePostback`` as `postbackd serve` does: 200 with
///    `"status":"stored"` or `"duplicate"` and `"verdict":"valid"`. A redirect (never
///    followed: devices do not follow one), 404, 405, 5xx, or a 200 that is not postbackd's
///    answer (an HTML page) is a finding naming the status and the path; the time to answer
///    is reported for each path.
package enum EndpointDoctor {
    package struct Options: Sendable {
        /// A PEM file of the certificates to trust instead of the system's roots.
        package var caFile: String?
        /// The bound on a connection attempt.
        package var connectTimeout: TimeAmount = .seconds(5)
        /// The bound on each request, from sending to the whole answer.
        package var timeout: TimeAmount = .seconds(10)
        /// A certificate expiring within this many days is a finding.
        package var warningDays = 30

        package init() {}
    }

    /// The paths devices post to, with the trailing slash they use.
    package static let paths = [
        "/.well-known/skadnetwork/report-attribution/",
        "/.well-known/appattribution/report-attribution/",
    ]

    /// Apple's AdAttributionKit example postback (SamplePostbacks/apple/apple-aak-dev1-reengagement.json,
    /// from "Identifying the parameters in a postback"), byte for byte. It is signed with
    /// Apple's development key: `serve` stores it once, flagged `development` (never counted
    /// as an install), and answers every later copy of these very bytes `duplicate` without
    /// storing anything more (a copy with the stored bytes adds no sighting). It is posted to
    /// both paths: a `jws-string` makes a body AdAttributionKit whichever path it arrives on.
    package static let probePostback = Array(
        #"""
        {
          "jws-string": "eyJraWQiOiJhcHBsZS1kZXZlbG9wbWVudC1pZGVudGlmaWVyXC8xIiwiYWxnIjoiRVMyNTYifQ.eyJwb3N0YmFjay1pZGVudGlmaWVyIjoiODU1NDZFQjctRkQzOS00NEJDLTg5OTAtQzk4QTRBQzM2QTQ5IiwicHVibGlzaGVyLWl0ZW0taWRlbnRpZmllciI6MCwibWFya2V0cGxhY2UtaWRlbnRpZmllciI6ImNvbS5hcHBsZS5BcHBTdG9yZSIsImltcHJlc3Npb24tdHlwZSI6ImFwcC1pbXByZXNzaW9uIiwiYWQtbmV0d29yay1pZGVudGlmaWVyIjoiZGV2ZWxvcG1lbnQuYWRhdHRyaWJ1dGlvbmtpdCIsImRpZC13aW4iOnRydWUsInBvc3RiYWNrLXNlcXVlbmNlLWluZGV4IjowLCJjb252ZXJzaW9uLXR5cGUiOiJyZS1lbmdhZ2VtZW50Iiwic291cmNlLWlkZW50aWZpZXIiOiIxMjM0IiwiYWR2ZXJ0aXNlZC1pdGVtLWlkZW50aWZpZXIiOjEwNzM4MDI3NzU2fQ.bAdNwKd6OfHK9tofvjjua4X_JPcFTxXPQSspD9gZkinw97pY7R1aI-LSjl-oxZZF3_K2H5JK5TSEBee4_1U4oQ",
          "conversion-value": 24,
          "ad-interaction-type": "click",
          "country-code": "US"
        }

        """#.utf8
    )

    /// The answer bodies read, at most (postbackd's is under 1 KiB).
    static let maximumAnswer = 64 << 10

    /// `https://HOST[:PORT][/]` taken apart, or why it is not that.
    package static func parse(_ url: String) -> Result<(host: String, port: Int), PostbackServerError> {
        let lower = url.lowercased()
        guard lower.hasPrefix("https://") else {
            return .failure(
                PostbackServerError(.endpointUnusable, "\(url): not https://DOMAIN (devices post only over HTTPS)")
            )
        }
        var rest = Substring(url.dropFirst("https://".count))
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.isEmpty, !rest.contains("/"), !rest.contains("?"), !rest.contains("#"), !rest.contains("@") else {
            return .failure(
                PostbackServerError(
                    .endpointUnusable,
                    "\(url): give the domain alone, https://DOMAIN: the doctor probes the paths devices post to"
                )
            )
        }
        var host = String(rest)
        var port = 443
        if let colon = rest.lastIndex(of: ":"), !rest.hasSuffix("]") {
            guard let number = Int(rest[rest.index(after: colon)...]), (1...65535).contains(number) else {
                return .failure(
                    PostbackServerError(.endpointUnusable, "\(url): the port is not a number from 1 to 65535")
                )
            }
            port = number
            host = String(rest[..<colon])
        }
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { return .failure(PostbackServerError(.endpointUnusable, "\(url): no host")) }
        return .success((host, port))
    }

    /// Checks `url` (`https://DOMAIN`, a port allowed) as ``EndpointDoctor`` says.
    package static func check(_ url: String, options: Options) async -> DoctorSection {
        var section = DoctorSection(check: "endpoint", target: url)
        let up = { (value: Double) in
            DoctorMetric(
                "postbackd_doctor_endpoint_up",
                help: "1 when the endpoint answered a TLS handshake, 0 when it could not be reached at all.",
                labels: [("endpoint", url)],
                value: value
            )
        }
        let host: String
        let port: Int
        switch parse(url) {
        case .failure(let error):
            section.failure = error.reason
            return section
        case .success(let parsed):
            (host, port) = parsed
        }
        // 1. The certificate, read without verifying it.
        let certificate: NIOSSLCertificate
        do {
            certificate = try await presentedCertificate(host: host, port: port, options: options)
        } catch {
            section.failure = "cannot reach \(host):\(port) over TLS: \(describe(error))"
            section.metrics.append(up(0))
            return section
        }
        section.metrics.append(up(1))
        let now = Double(UTCInstant.now().milliseconds) / 1000
        let notAfter = Double(certificate.notValidAfter)
        let expiry = utcText(notAfter)
        let daysLeft = Int(((notAfter - now) / 86_400).rounded(.down))
        var explained = false
        if notAfter <= now {
            explained = true
            section.findings.append(
                DoctorFinding(
                    "certificate",
                    .certificateExpired,
                    problem: "the TLS certificate of \(host) expired on \(expiry): devices refuse the connection",
                    fix: "renew the certificate and reload the server that terminates TLS"
                )
            )
        } else if notAfter - now < Double(options.warningDays) * 86_400 {
            section.findings.append(
                DoctorFinding(
                    "certificate",
                    .certificateExpiring,
                    problem: "the TLS certificate of \(host) expires on \(expiry), in \(daysLeft) days",
                    fix: "renew it before then (and check that automatic renewal runs)"
                )
            )
        }
        section.notes.append("certificate: expires \(expiry)" + (daysLeft >= 0 ? " (in \(daysLeft) days)" : ""))
        section.metrics.append(
            DoctorMetric(
                "postbackd_doctor_certificate_expiry_timestamp_seconds",
                help: "When the endpoint's TLS certificate expires (its notAfter), in Unix seconds.",
                labels: [("endpoint", url)],
                value: notAfter
            )
        )
        // 2. The paths over a verifying connection, as a device connects.
        var verified = true
        var probes = await probeAll(host: host, port: port, options: options, verify: true)
        if let tlsError = probes.tlsError {
            verified = false
            if let extra = tlsError as? NIOSSLExtraError, extra == .failedToValidateHostname {
                section.findings.append(
                    DoctorFinding(
                        "certificate",
                        .hostMismatch,
                        problem: "the TLS certificate does not name \(host): devices refuse the connection",
                        fix: "serve a certificate whose subject alternative names include \(host)"
                    )
                )
            } else if !explained {
                section.findings.append(
                    DoctorFinding(
                        "certificate",
                        .certificateUntrusted,
                        problem:
                            "the TLS certificate chain does not verify against \(options.caFile.map { "--ca-file \($0)" } ?? "the system's trusted roots"): \(describe(tlsError))",
                        fix:
                            "serve the whole chain (the certificate and its intermediates) from a certificate authority devices trust"
                    )
                )
            }
            probes = await probeAll(host: host, port: port, options: options, verify: false)
            section.notes.append("the paths were probed without verifying the certificate, which devices do not do")
        }
        // 3. What each path answered.
        var probeJSON: [String] = []
        for probe in probes.results {
            var object = JSONObjectWriter()
            object.add("path", probe.path)
            object.add("status", probe.status)
            object.add("milliseconds", probe.milliseconds)
            object.add("answer", probe.answerStatus)
            object.add("error", probe.error)
            probeJSON.append(object.text)
            if let status = probe.status {
                section.notes.append(
                    "POST \(probe.path): \(status)\(probe.answerStatus.map { " \($0)" } ?? "") in \(probe.milliseconds) ms"
                )
            } else {
                section.notes.append("POST \(probe.path): no answer after \(probe.milliseconds) ms")
            }
            section.findings += findings(probe, host: host)
            section.metrics.append(
                DoctorMetric(
                    "postbackd_doctor_probe_status",
                    help: "The HTTP status the path answered to the doctor's test postback (0: no answer).",
                    labels: [("endpoint", url), ("path", probe.path)],
                    value: Double(probe.status ?? 0)
                )
            )
            section.metrics.append(
                DoctorMetric(
                    "postbackd_doctor_probe_duration_seconds",
                    help: "How long the path took to answer the doctor's test postback, in seconds.",
                    labels: [("endpoint", url), ("path", probe.path)],
                    value: Double(probe.milliseconds) / 1000
                )
            )
        }
        var certificateJSON = JSONObjectWriter()
        certificateJSON.add("not_after", expiry)
        certificateJSON.add("expiry_timestamp", Int64(notAfter))
        certificateJSON.add("days_left", daysLeft)
        certificateJSON.add("verified", verified)
        section.details = [
            DoctorDetail("certificate", json: certificateJSON.text),
            DoctorDetail("probes", json: "[" + probeJSON.joined(separator: ",") + "]"),
        ]
        return section
    }

    // MARK: The certificate

    /// The leaf certificate `host:port` presents, read over a handshake that verifies nothing
    /// (so that an expired or untrusted one can still be named): a verification callback that
    /// takes the chain and accepts it.
    private static func presentedCertificate(
        host: String,
        port: Int,
        options: Options
    ) async throws
        -> NIOSSLCertificate
    {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.certificateVerification = .noHostnameVerification
        let context = try NIOSSLContext(configuration: tls)
        let serverName = isAddress(host) ? nil : host
        let group = MultiThreadedEventLoopGroup.singleton
        let waiter = CertificateWaiter(group.any().makePromise())
        let bootstrap = ClientBootstrap(group: group)
            .connectTimeout(options.connectTimeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let handler = try NIOSSLClientHandler(context: context, serverHostname: serverName) {
                        chain,
                        verification in
                        if let leaf = chain.first {
                            waiter.complete(.success(leaf))
                        } else {
                            waiter.complete(
                                .failure(PostbackServerError(.endpointUnusable, "the server presented no certificate"))
                            )
                        }
                        verification.succeed(.certificateVerified)
                    }
                    try channel.pipeline.syncOperations.addHandler(handler)
                    try channel.pipeline.syncOperations.addHandler(HandshakeWatcher(waiter: waiter))
                }
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.connect(host: host, port: port).get()
        } catch {
            // The promise must be completed on every path (NIO traps on a leaked one).
            waiter.complete(.failure(error))
            throw error
        }
        let deadline = channel.eventLoop.scheduleTask(in: options.timeout) {
            waiter.complete(
                .failure(
                    PostbackServerError(
                        .endpointUnusable,
                        "no TLS handshake within \(options.timeout.nanoseconds / 1_000_000_000) s"
                    )
                )
            )
        }
        defer { deadline.cancel() }
        do {
            let certificate = try await waiter.promise.futureResult.get()
            try? await channel.close()
            return certificate
        } catch {
            try? await channel.close()
            throw error
        }
    }

    /// The presented certificate's promise, completed once: by the verification callback, or
    /// by an error, a closed connection or the deadline before it.
    private final class CertificateWaiter: Sendable {
        let promise: EventLoopPromise<NIOSSLCertificate>
        private let completed = Mutex(false)

        init(_ promise: EventLoopPromise<NIOSSLCertificate>) { self.promise = promise }

        func complete(_ result: Result<NIOSSLCertificate, any Error>) {
            let first = completed.withLock { done in
                defer { done = true }
                return !done
            }
            if first { promise.completeWith(result) }
        }
    }

    /// Fails the waiter on an error or a closed connection during the handshake.
    private final class HandshakeWatcher: ChannelInboundHandler {
        typealias InboundIn = NIOAny
        let waiter: CertificateWaiter

        init(waiter: CertificateWaiter) { self.waiter = waiter }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            waiter.complete(.failure(error))
            context.close(promise: nil)
        }

        func channelInactive(context: ChannelHandlerContext) {
            waiter.complete(
                .failure(
                    PostbackServerError(.endpointUnusable, "the server closed the connection during the TLS handshake")
                )
            )
            context.fireChannelInactive()
        }
    }

    // MARK: Helpers

    static func isTLSError(_ error: any Error) -> Bool {
        error is NIOSSLError || error is NIOSSLExtraError || error is BoringSSLError
    }

    static func isAddress(_ host: String) -> Bool {
        host.contains(":") || host.split(separator: ".").allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isNumber) }
    }

    static func describe(_ error: any Error) -> String {
        if let endpoint = error as? PostbackServerError { return endpoint.reason }
        if let client = error as? HTTPClientError {
            switch client {
            case .connectTimeout: return "no connection within the connect timeout"
            case .deadlineExceeded, .readTimeout: return "no answer within the timeout"
            default: return String(describing: client)
            }
        }
        if let channel = error as? ChannelError, case .connectTimeout = channel {
            return "no connection within the connect timeout"
        }
        if let connection = error as? NIOConnectionError {
            if let first = connection.connectionErrors.first { return "\(first.error)" }
            return "cannot resolve \(connection.host)"
        }
        return String(describing: error)
    }

    /// `2026-11-07 05:26:30 UTC`.
    static func utcText(_ seconds: Double) -> String {
        let text = UTCInstant(milliseconds: Int64(seconds) * 1000).iso8601
        // `2026-11-07T05:26:30.000Z` → `2026-11-07 05:26:30 UTC`.
        return text.prefix(10) + " " + text.dropFirst(11).prefix(8) + " UTC"
    }
}
