import ArgumentParser
import PostbackKit
import PostbackStore

extension Postbackd {
    struct Verify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check whether Apple really signed each postback, and if not, why.",
            discussion: """
                Reads one postback, a file of them (a JSON object, a JSON array, or JSON Lines) or \
                folders of .json, .jsonl and .ndjson files (recursively), and prints one result per \
                postback: valid, invalid (the signature does not verify), malformed (not a \
                well-formed postback of its version) or unsupported (unknown version), with the \
                field and reason for anything not valid, then a summary.

                Examples:
                  postbackd verify SamplePostbacks/apple
                  postbackd verify --format json postbacks.jsonl
                  postbackd verify --explain postback.json
                  postbackd verify --keys Keys/test SamplePostbacks/generated
                  postbackd verify --model SamplePostbacks/models/app-525463029.json SamplePostbacks/apple
                  postbackd verify --format json --received-at 2026-11-21T08:00:00Z postback.json

                --format json and --explain also show what each valid postback tells about itself: \
                its estimated install time and day (received_at minus 84, 252 or 924 hours for \
                postbacks 0, 1 and 2 of SKAdNetwork 4.0 and AdAttributionKit, 36 hours before 4.0), \
                its crowd-anonymity tier (0-3, postback 0 of a winning 4.0 or AdAttributionKit \
                attribution only) and the digits of its source identifier. Received is decided as \
                ingest decides it: --received-at, else a forwarder's timestamp field, else now.

                Exit status: \(ExitStatus.documentation)
                """
        )

        @OptionGroup var keys: KeyOptions

        @Option(
            help:
                "text: one line per postback and a summary; json: JSON Lines, one object per postback (summary on standard error)."
        )
        var format: ResultFormat = .text

        @Flag(
            help: "Also show each postback's signed message (separators made visible), its SHA-256 and the key outcome."
        )
        var explain = false

        @Option(
            help: ArgumentHelp(
                "Also decode each valid postback's conversion value through the conversion model(s) in <file>.",
                valueName: "file"
            )
        )
        var model: String?

        @Option(
            help: ArgumentHelp(
                "When the postbacks were received, for their estimated install time (default: a forwarder's timestamp field, else now).",
                valueName: "time"
            )
        )
        var receivedAt: String?

        @Argument(help: "Files or folders to read; - or nothing reads standard input.")
        var paths: [String] = []

        func validate() throws {
            try checkTime(receivedAt, option: "--received-at")
        }

        func run() async throws {
            var models: ConversionModels? = nil
            if let model {
                do {
                    models = ConversionModels(try ConversionModelFile.read(file: model))
                } catch {
                    throw failInput("--model: " + error.description)
                }
            }
            let job = VerifyJob(
                paths: paths,
                keyRing: try keys.keyRing(),
                format: format,
                explain: explain,
                models: models,
                receivedTime: ReceivedTimeRule(fixed: receivedAt.flatMap(UTCInstant.init(iso8601:)))
            )
            let summary: VerificationSummary
            do {
                summary = try await job.run(output: .standardOutput(), errors: .standardError())
            } catch let error as PostbackKitError {
                throw failInput(error.reason)
            }
            if summary.unreadableFiles > 0 { throw ExitCode.usageOrInputError }
            if !summary.allValid { throw ExitCode.notAllValid }
        }
    }
}
