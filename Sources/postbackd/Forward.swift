import ArgumentParser
import Foundation
import Logging
import PostbackKit
import PostbackServer
import PostbackStore

extension Postbackd {
    struct Forward: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Push stored postbacks (raw, decoded or in a partner's format) to partners' and BI endpoints, with durable delivery state.",
            discussion: """
                The config is a JSON object {"destinations": [...]}; each destination has name, \
                url, payload ("raw": the postback's bytes as received; "decoded": the export line \
                as JSON; "enriched": the postback as received with the members named by "fields" \
                added (ip-address, timestamp, partner-campaign-id, partner-campaign-name, \
                partner-ad-group, partner-creative), its signature intact; "skan-standard": the \
                open SKAN standard's attribution postback; "template": the JSON object "template" \
                with its {{column}} placeholders filled from export's columns and the campaign \
                mapping), and optionally filter (app_ids, ad_network_ids, kinds, key_spaces; \
                default: production postbacks only), headers, hmac_secret_env (the name of an \
                environment variable holding the secret: the body is signed with HMAC-SHA256 into \
                Postbackd-Signature: sha256=HEX), timeout_seconds (10), concurrency (8), and retry \
                (base_seconds 1, max_seconds 3600, give_up_hours 72).

                Each postback is one POST, with Postbackd-Delivery-Id the same on every attempt \
                (so a receiver can drop repeats). 2xx: delivered. 408, 429, 5xx, a timeout or a \
                connection error: retried, exponentially with jitter, until give_up_hours after \
                the first attempt (then failed). Any other status: rejected, not retried; the \
                status and the first KiB of the answer are kept. Delivery state lives in the \
                database, so a kill or restart loses nothing and sends nothing again after \
                success (only deliveries in flight at a kill are sent again); several forward \
                processes on one database share the work.

                Examples:
                  postbackd forward --config forward.json --follow
                  postbackd forward --config forward.json --drain --status
                  postbackd forward --config forward.json --status

                Exit status: 0 done (--drain: everything delivered); 1 --drain ended with a \
                delivery rejected or failed; 2 usage error, a config that cannot be used, or a \
                database that cannot be used.
                """
        )

        @OptionGroup var database: DatabaseOptions

        @Option(help: ArgumentHelp("The destinations (JSON).", valueName: "file"))
        var config: String

        @Flag(help: "Deliver until SIGTERM or SIGINT, picking up newly stored postbacks within a second.")
        var follow = false

        @Flag(help: "Deliver until nothing is pending (retrying on schedule), then stop.")
        var drain = false

        @Flag(help: "Print each destination's deliveries by state (after --drain or --follow ends, if given).")
        var status = false

        @Option(help: "For decoded payloads, the estimate of a revenue range: midpoint, lower or upper.")
        var revenueEstimate: RevenueEstimatePolicy = .midpoint

        func validate() throws {
            if follow && drain { throw ValidationError("--follow and --drain exclude each other: give one") }
            if !follow && !drain && !status { throw ValidationError("give --follow, --drain or --status") }
        }

        func run() async throws {
            let bytes = try readOptionFile(config, option: "--config", what: "a configuration file")
            let parsed: ForwardConfig
            do {
                parsed = try ForwardConfig.parse(bytes)
            } catch {
                throw failInput("\(config): \(error)")
            }
            let job = ForwardJob(
                location: database.location,
                config: parsed,
                environment: ProcessInfo.processInfo.environment,
                policy: revenueEstimate,
                logger: Logger(label: "postbackd.forward")
            )
            var summary: ForwardSummary?
            var states: [DeliveryStatus]
            do {
                if follow || drain {
                    let run = try await job.run(follow ? .follow : .drain)
                    summary = run
                    states = run.status
                } else {
                    states = try await job.status()
                }
            } catch let error as PostbackServerError {
                throw failInput("\(config): \(error.description)")
            } catch {
                throw failStore(error, database.location)
            }
            let errors = TextOutput.standardError()
            if let summary {
                var totals = ForwardSummary.Counts()
                for counts in summary.attempts.values {
                    totals.delivered += counts.delivered
                    totals.rejected += counts.rejected
                    totals.failed += counts.failed
                    totals.retried += counts.retried
                }
                errors.line(
                    "forwarded: \(formatCount(totals.delivered)) delivered, \(formatCount(totals.rejected)) rejected, \(formatCount(totals.failed)) failed, \(formatCount(totals.retried)) attempts to retry"
                )
            }
            errors.flush()
            if status {
                standardOutput(write: Self.statusTable(states, nowMs: UTCInstant.now().milliseconds))
            }
            if drain, let summary, summary.attempts.values.contains(where: { $0.rejected + $0.failed > 0 }) {
                throw ExitCode.notAllValid
            }
        }

        /// One line per destination: its deliveries by state and the oldest pending one's age.
        static func statusTable(_ states: [DeliveryStatus], nowMs: Int64) -> String {
            var rows = [["destination", "delivered", "pending", "retrying", "rejected", "failed", "oldest_pending"]]
            for state in states {
                rows.append([
                    state.destination, formatCount(state.delivered), formatCount(state.pending),
                    formatCount(state.retrying),
                    formatCount(state.rejected), formatCount(state.failed),
                    state.oldestPendingMs.map { age(max(0, nowMs - $0)) } ?? "-",
                ])
            }
            var widths = [Int](repeating: 0, count: rows[0].count)
            for row in rows { for (index, cell) in row.enumerated() { widths[index] = max(widths[index], cell.count) } }
            return rows.map { row in
                row.enumerated().map { index, cell in
                    index == 0
                        ? cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
                        : String(repeating: " ", count: widths[index] - cell.count) + cell
                }.joined(separator: "  ")
            }.joined(separator: "\n") + "\n"
        }

        private static func age(_ milliseconds: Int64) -> String {
            let seconds = milliseconds / 1000
            if seconds < 120 { return "\(seconds)s" }
            if seconds < 7200 { return "\(seconds / 60)m" }
            if seconds < 172_800 { return "\(seconds / 3600)h" }
            return "\(seconds / 86_400)d"
        }
    }
}
