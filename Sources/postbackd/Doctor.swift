import ArgumentParser
import PostbackKit
import PostbackServer
import PostbackStore

extension Postbackd {
    struct Doctor: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Check an operator's setup: an app's Info.plist, the endpoint devices post to, what a store receives.",
            discussion: """
                Each option is one check; give any combination (at least one). Every finding \
                names where (a key path in the plist, a path on the endpoint), what is wrong, \
                and the fix. Reads only, except that --endpoint posts Apple's AdAttributionKit \
                example postback (signed with Apple's development key) to both report-attribution \
                paths: postbackd serve stores it once, flagged development (never counted as an \
                install), and answers it duplicate from then on without storing more.

                --plist FILE (XML or binary) checks NSAdvertisingAttributionReportEndpoint and \
                AttributionCopyEndpoint (present at the top level, https:// and a bare registrable \
                domain), the same keys nested in another dictionary (iOS ignores them there), \
                SKAdNetworkItems and AdNetworkIdentifiers (lower-case ad network IDs, no \
                duplicates), AdAttributionKitConfigurations (attribution windows: click 1-30 \
                days, view 1-7 days, ignoreInteractionType per ad network only; cooldowns 0-720 \
                hours) and the Booleans EligibleForAdAttributionKitOverlappingConversions and \
                EligibleForAdAttributionKitReengagementPostbackCopies.

                --endpoint https://DOMAIN checks what a device meets: the TLS certificate (its \
                chain against the system's roots or --ca-file, the host name, expiry: a finding \
                within 30 days), then a POST to /.well-known/skadnetwork/report-attribution/ and \
                /.well-known/appattribution/report-attribution/ answered as postbackd answers \
                (200, stored or duplicate); a redirect (never followed), 404, 405, 5xx or another \
                page is a finding naming the status. The time to answer each is shown.

                --db STORE reads what the store received (by received time, production \
                postbacks only): apps with SKAdNetwork postbacks but no AdAttributionKit copy \
                in 14 days, apps whose postbacks stopped (none for 2 days after a steady week), \
                networks whose share of postbacks without a conversion value jumped (the last 3 \
                days against the 14 before), and models in force that no postback matched in 7 \
                days. The thresholds and why: docs/doctor.md.

                Examples:
                  postbackd doctor --plist MyApp/Info.plist
                  postbackd doctor --endpoint https://example.com --prometheus-textfile /var/lib/node_exporter/postbackd_doctor.prom
                  postbackd doctor --plist Info.plist --endpoint https://example.com --format json
                  postbackd doctor --db "$POSTBACKD_DB" --prometheus-textfile /var/lib/node_exporter/postbackd_doctor.prom

                Exit status: 0 nothing wrong found; 1 findings; 2 a usage error, a file that \
                cannot be read or is not a property list, or an endpoint that cannot be reached \
                at all (the other checks still run and print).
                """
        )

        @Option(help: ArgumentHelp("An app's Info.plist (XML or binary) to check.", valueName: "file"))
        var plist: String?

        @Option(
            help: ArgumentHelp("The domain devices post copies of postbacks to, as https://DOMAIN.", valueName: "url")
        )
        var endpoint: String?

        @Option(
            name: .customLong("db"),
            help: ArgumentHelp(
                "A store to check: an SQLite file or a PostgreSQL URL (read only).",
                valueName: "file|url"
            )
        )
        var database: String?

        @Option(
            name: .customLong("ca-file"),
            help: ArgumentHelp(
                "With --endpoint: trust the certificates in this PEM file instead of the system's roots.",
                valueName: "file"
            )
        )
        var caFile: String?

        @Option(help: ArgumentHelp("With --endpoint: seconds each request may take.", valueName: "seconds"))
        var timeout: Int = 10

        @Option(help: "text: a block per finding; json: one object.")
        var format: ResultFormat = .text

        @Option(
            name: .customLong("prometheus-textfile"),
            help: ArgumentHelp(
                "Also write the run's metrics to this file for node_exporter's textfile collector (atomically).",
                valueName: "file"
            )
        )
        var prometheusTextfile: String?

        func validate() throws {
            guard plist != nil || endpoint != nil || database != nil else {
                throw ValidationError("give at least one check: --plist FILE, --endpoint https://DOMAIN, --db STORE")
            }
            if let database {
                do {
                    _ = try StoreLocation(database)
                } catch {
                    throw ValidationError(error.reason)
                }
            }
            guard (1...300).contains(timeout) else { throw ValidationError("--timeout: from 1 to 300 seconds") }
            if caFile != nil && endpoint == nil { throw ValidationError("--ca-file goes with --endpoint") }
            if let endpoint, case .failure(let error) = EndpointDoctor.parse(endpoint) {
                throw ValidationError("--endpoint " + error.reason)
            }
        }

        func run() async throws {
            if let caFile { _ = try readOptionFile(caFile, option: "--ca-file", what: "a PEM file") }
            var sections: [DoctorSection] = []
            if let plist { sections.append(InfoPlistDoctor.check(plist)) }
            if let endpoint {
                var options = EndpointDoctor.Options()
                options.caFile = caFile
                options.timeout = .seconds(Int64(timeout))
                sections.append(await EndpointDoctor.check(endpoint, options: options))
            }
            if let database {
                let location = (try? StoreLocation(database)) ?? .sqlite(path: database)
                sections.append(await StoreDoctor.section(location, now: .now()))
            }
            let report = DoctorReport(sections)
            standardOutput(write: format == .json ? report.json : report.text)
            if let prometheusTextfile {
                let now = Double(UTCInstant.now().milliseconds) / 1000
                do {
                    try PrometheusTextfile.write(report.prometheus(now: now), to: prometheusTextfile)
                } catch {
                    throw failInput("--prometheus-textfile " + error.reason)
                }
            }
            let errors = TextOutput.standardError()
            for section in sections {
                if let failure = section.failure {
                    errors.line("postbackd: \(section.check): \(failure.escapedForTerminal)")
                }
            }
            errors.flush()
            if report.exitStatus != 0 { throw ExitCode(report.exitStatus) }
        }
    }
}
