import ArgumentParser
import PostbackKit
import PostbackStore

extension ExportJob.Format: ExpressibleByArgument {}
extension ExportTable: ExpressibleByArgument {}

extension Postbackd {
    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Write every stored postback, decoded through its app's model, as JSON Lines or CSV for a warehouse.",
            discussion: """
                One line (CSV: one row per decoded event) per stored postback: every stored column \
                (raw as the postback's JSON text, hashes in hex, times in ISO 8601 UTC), and \
                conversion (mapped, unmapped, null or unmodelled) with its events: name, \
                occurrences, revenue range and estimate (--revenue-estimate) in the event's \
                currency, through the app's model in force when its value was set. --table \
                quarantine writes the \
                quarantined entries instead (raw also in raw_base64). Rows are read from one \
                snapshot and streamed: memory stays flat.

                --consumer NAME remembers in the database where that consumer's export ended, and \
                exports only what was stored since: each postback exactly once across runs, \
                whatever ingests or servers write meanwhile. The cursor moves only after the \
                output is written whole and flushed to disk (--output is written as FILE.partial \
                and renamed), so a failed run exports the same rows again.

                Examples:
                  postbackd export --output postbacks.jsonl
                  postbackd export --consumer warehouse --output /data/postbacks-$(date +%F).jsonl
                  postbackd export --from 2026-11-15 --to 2026-11-21 --format csv > week.csv
                  postbackd export --table quarantine --format csv --output quarantine.csv

                Exit status: 0 done; 2 usage error, output that cannot be written, or a database \
                that cannot be used (the consumer's cursor is then unchanged).
                """
        )

        @OptionGroup var database: DatabaseOptions

        @Option(help: "postbacks or quarantine.")
        var table: ExportTable = .postbacks

        @Option(help: ArgumentHelp("First day received (UTC) to include.", valueName: "YYYY-MM-DD"))
        var from: String?

        @Option(help: ArgumentHelp("Last day received (UTC) to include.", valueName: "YYYY-MM-DD"))
        var to: String?

        @Option(
            help: ArgumentHelp(
                "Export only what was stored since this consumer's last complete export, and remember where this one ends.",
                valueName: "name"
            )
        )
        var consumer: String?

        @Option(help: "jsonl or csv.")
        var format: ExportJob.Format = .jsonl

        @Option(help: ArgumentHelp("Write here instead of standard output.", valueName: "file"))
        var output: String?

        @Option(help: "The estimate of a revenue range: midpoint, lower or upper.")
        var revenueEstimate: RevenueEstimatePolicy = .midpoint

        func validate() throws {
            let first = try from.map { try day($0, option: "--from") }
            let last = try to.map { try day($0, option: "--to") }
            if let first, let last, last < first {
                throw ValidationError("--to \(to ?? "") is before --from \(from ?? "")")
            }
            if let consumer, consumer.isEmpty || consumer.utf8.count > 200 {
                throw ValidationError("--consumer names a consumer in 1 to 200 characters")
            }
        }

        func run() async throws {
            let first = try from.map { try day($0, option: "--from") }
            let last = try to.map { try day($0, option: "--to") }
            var days: ClosedRange<UTCDay>?
            if first != nil || last != nil {
                days = (first ?? UTCDay(daysSinceEpoch: 0))...(last ?? UTCDay(daysSinceEpoch: 2_932_896))
            }
            let options = ExportJob.Options(
                table: table,
                days: days,
                consumer: consumer,
                format: format,
                output: output,
                policy: revenueEstimate
            )
            let summary: ExportJob.Summary
            do {
                summary = try await ExportJob.run(options, location: database.location)
            } catch let error as StoreError where error.code == .otherEngine {
                throw failInput(error.description)
            } catch let error as StoreError {
                throw failInput(
                    error.description + (consumer == nil ? "" : "; the cursor of \(consumer ?? "") is unchanged")
                )
            } catch {
                throw failStore(error, database.location)
            }
            let errors = TextOutput.standardError()
            let what = table == .postbacks ? "postback" : "quarantined entr"
            let plural = table == .postbacks ? (summary.rows == 1 ? "" : "s") : (summary.rows == 1 ? "y" : "ies")
            errors.line(
                "exported \(formatCount(summary.rows)) \(what)\(plural)"
                    + (output.map { " to \($0)" } ?? "")
                    + (consumer.map { "; the next export for \($0) starts after them" } ?? "")
            )
            if summary.rawPruned > 0 {
                errors.line(
                    "\(formatCount(summary.rawPruned)) of them without their raw bytes, pruned by the retention (raw): \"raw\" is null and \"raw_pruned\" true (an empty raw in CSV); their digests and decoded columns are whole"
                )
            }
            errors.flush()
        }
    }
}
