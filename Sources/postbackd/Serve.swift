import ArgumentParser
import Foundation
import Logging
import PostbackKit
import PostbackServer
import PostbackStore

extension Postbackd {
    struct Serve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Receive postbacks over HTTP at Apple's report-attribution endpoints and store them exactly once.",
            discussion: """
                Devices POST each postback to \
                /.well-known/skadnetwork/report-attribution/ (SKAdNetwork) or \
                /.well-known/appattribution/report-attribution/ (AdAttributionKit). Every body is \
                parsed, verified, deduplicated and quarantined exactly as ingest does, and answered \
                only once its outcome is committed and flushed to disk: 200 stored, duplicate or \
                quarantined (retrying cannot change those); 400 malformed, naming the field; 413 a \
                body over --max-body; 503 with Retry-After when the store cannot commit. Requests \
                arriving together share one commit.

                Conversion values, from the models added with `postbackd models add`: POST \
                /v1/conversion-value with a state as `encode` reads it plus app_id or bundle_id \
                answers as encode does, storing nothing; GET /api/v2/conversion_value speaks the \
                client snippet's protocol (a, i, n, idfv and the snippet's SKAN parameters), \
                keeping each device's events (by SHA-256 of its idfv) for 35 days. With \
                --api-key or --api-key-file, both take only those keys (a=KEY, or \
                Authorization: Bearer KEY); others get 401.

                Reading, from the aggregate tables (run `postbackd aggregate`): GET /dashboard \
                (GET / redirects there) is the dashboard page, charts of the last 30 days with \
                data or of the filters from, to, date_basis, app_id and ad_network_id; GET \
                /api/v1/report takes report's options as parameters (by, from, to, events, \
                date_basis, app_id, ad_network_id, with_apple_ads) and answers exactly what \
                `postbackd report --format json` prints, the staleness warning in \
                X-Postbackd-Warning; GET /api/v1/summary answers the headline numbers. With \
                --dashboard-token or --dashboard-token-file, these take only that token \
                (Authorization: Bearer TOKEN, or sign in at /login for a cookie); the postback \
                routes stay open. With --read-db (PostgreSQL), these and GET /api/v1/postbacks \
                (the pull API) read there, from a standby for example, as far as it has replayed.

                Also: GET /healthz (the process is up), GET /readyz (the store accepts writes), \
                GET /metrics (Prometheus text).

                SIGTERM or SIGINT: stops accepting, finishes and commits what is in flight, exits 0.

                Examples:
                  postbackd serve
                  postbackd serve --db postgres://postbackd@db.internal/postbackd --host 0.0.0.0 --port 8080
                  postbackd serve --host 0.0.0.0 --port 443 --tls-cert /etc/postbackd/cert.pem --tls-key /etc/postbackd/key.pem
                  postbackd serve --api-key-file /etc/postbackd/api-keys
                  postbackd serve --dashboard-token-file /etc/postbackd/dashboard-token

                Exit status: 0 stopped by a signal; 2 usage error, a certificate or key file \
                that cannot be read, an address that cannot be listened on, a database that \
                cannot be used, or one that went away so that the end of the run could not be \
                recorded (what was answered is stored).
                """
        )

        @OptionGroup var database: DatabaseOptions

        @Option(
            name: .customLong("read-db"),
            help: ArgumentHelp(
                "Read the report API, summary, dashboard and pull API from this PostgreSQL URL rather than --db's, such as a standby's (postgres://USER@HOST[,HOST…]/DATABASE?target_session_attrs=prefer-standby). Postbacks, models and keys stay on --db. Default: $POSTBACKD_READ_DB, or --db.",
                valueName: "url"
            )
        )
        var readDatabase: String?

        @OptionGroup var keys: KeyOptions

        @Option(help: ArgumentHelp("The address to listen on (0.0.0.0: every interface).", valueName: "addr"))
        var host: String = "127.0.0.1"

        @Option(help: ArgumentHelp("The port to listen on (0: any free port, printed when ready).", valueName: "n"))
        var port: Int = 8080

        @Option(help: ArgumentHelp("Serve HTTPS with this PEM certificate chain (with --tls-key).", valueName: "file"))
        var tlsCert: String?

        @Option(help: ArgumentHelp("The PEM private key of --tls-cert.", valueName: "file"))
        var tlsKey: String?

        @Option(
            help: ArgumentHelp(
                "Refuse bodies over this many bytes with 413, without reading them whole.",
                valueName: "bytes"
            )
        )
        var maxBody: Int = ServeJob.defaultMaximumBody

        @Flag(help: "Log one line per request (method, path, status, client, request id, duration) at info level.")
        var accessLog = false

        @Option(
            help: ArgumentHelp(
                "Seconds a client may take to send a request's head (or stay idle between requests), and again its body; then the connection is closed.",
                valueName: "seconds"
            )
        )
        var readTimeout: Int = 10

        @Option(
            help: ArgumentHelp(
                "Open connections at most; more wait in the listen backlog. Memory is bounded by this times --max-body.",
                valueName: "n"
            )
        )
        var maxConnections: Int = ServeJob.defaultMaximumConnections

        @Option(
            help: ArgumentHelp(
                "New quarantine rows per hour at most: past it, refused bodies are counted in /metrics and not stored, so junk cannot fill the disk. A repeated body only adds to its row's count.",
                valueName: "n"
            )
        )
        var quarantineRowsPerHour: Int = ServeJob.defaultQuarantineRowsPerHour

        @Option(
            help: ArgumentHelp(
                "Behind a proxy or load balancer: take the client's address from the last entry of this header (X-Forwarded-For). Only with a proxy that sets it.",
                valueName: "name"
            )
        )
        var clientAddressHeader: String?

        enum ClientAddressOption: String, ExpressibleByArgument, CaseIterable {
            case keep, truncate, hash, drop
        }

        @Option(
            help: ArgumentHelp(
                "What is stored and logged of each client's address: keep; truncate (its IPv4 /24 or IPv6 /48); hash (HMAC-SHA256 under the secret of --client-address-key-file); drop (nothing). postbackd prune-addresses clears older rows'.",
                valueName: "policy"
            )
        )
        var clientAddress: ClientAddressOption = .keep

        @Option(
            help: ArgumentHelp(
                "With --client-address hash: a file whose first line is the secret (16 to 256 characters). Keep it: a new secret hashes the same address differently.",
                valueName: "file"
            )
        )
        var clientAddressKeyFile: String?

        @Option(
            name: .customLong("api-key"),
            help: ArgumentHelp(
                "An API key the conversion value endpoints accept (repeat for more). Visible in the process list: prefer --api-key-file.",
                valueName: "key"
            )
        )
        var apiKeys: [String] = []

        @Option(help: ArgumentHelp("A file of API keys, one per line (# starts a comment).", valueName: "file"))
        var apiKeyFile: String?

        @Option(
            help: ArgumentHelp(
                "Guard the dashboard and the report API with this token (Authorization: Bearer TOKEN, or the login form at /login). Visible in the process list: prefer --dashboard-token-file.",
                valueName: "token"
            )
        )
        var dashboardToken: String?

        @Option(help: ArgumentHelp("A file holding the dashboard token (its first line).", valueName: "file"))
        var dashboardTokenFile: String?

        @Option(
            help: ArgumentHelp(
                "Also forward stored postbacks to the destinations of this config, as `forward --follow` does (see `postbackd forward --help`); status in /metrics.",
                valueName: "file"
            )
        )
        var forward: String?

        @Flag(
            help:
                "Also exchange the Apple Ads tokens received at POST /v1/apple-ads/token with Apple, as `apple-ads fetch --follow` does."
        )
        var appleAds = false

        @Option(
            help: ArgumentHelp(
                "With --apple-ads: Apple's attribution endpoint (a stand-in in tests).",
                valueName: "url"
            )
        )
        var appleAdsEndpoint: String = AppleAdsFetchJob.appleEndpoint

        @Option(
            help: ArgumentHelp(
                "With --apple-ads: seconds before retrying after a 5xx or a timeout.",
                valueName: "seconds"
            )
        )
        var appleAdsRetryAfter: Int = 60

        /// Hidden: the wrong-key limit's window (a minute). Only the limit's own test lengthens
        /// it, so that ten wrong keys on a loaded machine cannot straddle the window's end.
        @Option(help: .hidden)
        var keyFailureWindow: Int = 60

        /// `--read-db`, checked: a PostgreSQL URL, beside a PostgreSQL `--db`.
        var readLocation: StoreLocation? {
            get throws {
                // From the environment too, so that a password need not be on the command line.
                guard let text = readDatabase ?? environmentValue("POSTBACKD_READ_DB") else { return nil }
                let location: StoreLocation
                do {
                    location = try StoreLocation(text, option: "--read-db")
                } catch {
                    throw ValidationError(error.reason)
                }
                guard case .postgres = location, case .postgres = database.location else {
                    throw ValidationError(
                        "--read-db takes a PostgreSQL URL, for a --db on PostgreSQL (a standby of its server, or the server itself); an SQLite store is read where it is written"
                    )
                }
                return location
            }
        }

        func validate() throws {
            _ = try readLocation
            try AppleAdsExchangeOptions.check(endpoint: appleAdsEndpoint, option: "--apple-ads-endpoint")
            guard keyFailureWindow >= 1 else { throw ValidationError("--key-failure-window must be at least 1") }
            guard appleAdsRetryAfter >= 1 else { throw ValidationError("--apple-ads-retry-after must be at least 1") }
            if (tlsCert == nil) != (tlsKey == nil) {
                throw ValidationError("--tls-cert and --tls-key go together: give both, or neither")
            }
            guard (0...65_535).contains(port) else {
                throw ValidationError("--port \(port) is not a port (0 to 65535)")
            }
            guard maxBody >= 1024 else { throw ValidationError("--max-body \(maxBody) must be at least 1024") }
            guard readTimeout >= 1 else { throw ValidationError("--read-timeout \(readTimeout) must be at least 1") }
            guard maxConnections >= 1 else { throw ValidationError("--max-connections must be at least 1") }
            guard quarantineRowsPerHour >= 0 else {
                throw ValidationError("--quarantine-rows-per-hour must be 0 or more")
            }
            if (clientAddress == .hash) != (clientAddressKeyFile != nil) {
                throw ValidationError(
                    "--client-address hash and --client-address-key-file go together: give both, or neither"
                )
            }
            if let clientAddressHeader, HTTPHeaderName.isValid(clientAddressHeader) == false {
                throw ValidationError("--client-address-header \(clientAddressHeader) is not a header name")
            }
        }

        /// The keys of --api-key and --api-key-file.
        func allAPIKeys() throws -> [String] {
            var keys = apiKeys
            if let apiKeyFile {
                let bytes = try readOptionFile(apiKeyFile, option: "--api-key-file", what: "a key file")
                for line in String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isNewline) {
                    let key = line.trimmingCharacters(in: .whitespaces)
                    if !key.isEmpty && !key.hasPrefix("#") { keys.append(key) }
                }
                guard !keys.isEmpty else { throw failInput("--api-key-file \(apiKeyFile) holds no key") }
            }
            for key in keys where key.isEmpty || key.utf8.count > 256 || key.contains(where: \.isWhitespace) {
                _ = key
                throw failInput("an API key has 1 to 256 characters and no spaces")
            }
            return keys
        }

        /// The token of --dashboard-token or --dashboard-token-file, checked.
        func theDashboardToken() throws -> String? {
            var token = dashboardToken
            if let dashboardTokenFile {
                guard token == nil else {
                    throw failInput("give --dashboard-token or --dashboard-token-file, not both")
                }
                let bytes = try readOptionFile(
                    dashboardTokenFile,
                    option: "--dashboard-token-file",
                    what: "a token file"
                )
                token =
                    String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isNewline).first
                    .map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
            }
            if let token, token.utf8.count < 16 || token.utf8.count > 256 || token.contains(where: \.isWhitespace) {
                _ = token
                throw failInput("a dashboard token has 16 to 256 characters and no spaces")
            }
            return token
        }

        /// The policy of --client-address, its secret read and checked.
        func clientAddressPolicy() throws -> ClientAddressPolicy {
            switch clientAddress {
            case .keep: return .keep
            case .truncate: return .truncate
            case .drop: return .drop
            case .hash:
                guard let clientAddressKeyFile else { return .drop }
                let bytes = try readOptionFile(
                    clientAddressKeyFile,
                    option: "--client-address-key-file",
                    what: "a secret file"
                )
                let secret =
                    String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isNewline).first
                    .map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
                guard (16...256).contains(secret.utf8.count) else {
                    throw failInput(
                        "--client-address-key-file \(clientAddressKeyFile): the secret (its first line) has 16 to 256 characters"
                    )
                }
                return .hash(key: Array(secret.utf8))
            }
        }

        /// The `--forward` job, its config read and checked.
        func forwardJob() throws -> ForwardJob? {
            guard let forward else { return nil }
            let bytes = try readOptionFile(forward, option: "--forward", what: "a configuration file")
            do {
                return ForwardJob(
                    location: database.location,
                    config: try ForwardConfig.parse(bytes),
                    environment: ProcessInfo.processInfo.environment,
                    logger: Logger(label: "postbackd.forward")
                )
            } catch {
                throw failInput("\(forward): \(error)")
            }
        }

        func run() async throws {
            let readLocation = try readLocation
            var job = ServeJob(
                location: database.location,
                readLocation: readLocation,
                keyRing: try keys.keyRing(),
                host: host,
                port: port,
                tls: tlsCert.flatMap { certificate in tlsKey.map { (certificate, $0) } },
                maximumBody: maxBody,
                accessLog: accessLog,
                readTimeout: .seconds(readTimeout),
                maximumConnections: maxConnections,
                quarantineRowsPerHour: quarantineRowsPerHour,
                clientAddressHeader: clientAddressHeader,
                clientAddressPolicy: try clientAddressPolicy(),
                apiKeys: try allAPIKeys(),
                forward: try forwardJob(),
                appleAds: appleAds
                    ? AppleAdsFetchJob(
                        location: database.location,
                        endpoint: appleAdsEndpoint,
                        rules: AppleAdsExchangeRules(retryAfterMs: Int64(appleAdsRetryAfter) * 1000),
                        logger: Logger(label: "postbackd.apple-ads")
                    ) : nil,
                dashboardToken: try theDashboardToken(),
                logger: Logger(label: "postbackd.serve")
            )
            job.keyFailureWindow = .seconds(keyFailureWindow)
            let summary: IngestSummary
            do {
                summary = try await job.run { line in
                    standardOutput(line: line)
                }
            } catch let error as PostbackServerError where error.code != .stopping {
                throw failInput(error.reason)
            } catch {
                throw failStore(error, database.location)
            }
            standardOutput(
                line:
                    "stopped: \(formatCount(summary.read)) received, \(formatCount(summary.accepted)) stored, \(formatCount(summary.duplicates)) duplicates, \(formatCount(summary.quarantined)) quarantined"
            )
        }
    }
}

/// Header names as RFC 9110 allows them: one or more token characters.
enum HTTPHeaderName {
    static func isValid(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 64
            && name.utf8.allSatisfy { byte in
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                    || "!#$%&'*+-.^_`|~".utf8.contains(byte)
            }
    }
}
