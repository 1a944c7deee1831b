import ArgumentParser
import Logging
import PostbackKit
import PostbackStore

#if canImport(Glibc)
import Glibc
#endif

@main
struct Postbackd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "postbackd",
        abstract: "Verify, deduplicate and count Apple's SKAdNetwork install postbacks.",
        discussion: """
            Examples:
              postbackd verify SamplePostbacks/apple
              postbackd verify --format json --explain postback.json
              cat postbacks.jsonl | postbackd verify -
              postbackd ingest --db postbacks.sqlite incoming/
              postbackd models add models/*.json && postbackd aggregate && postbackd report

            Logging: POSTBACKD_LOG_LEVEL=debug (trace, debug, info, notice, warning, error) logs to standard error.

            Exit status: \(ExitStatus.documentation)
            """,
        version: PostbackdVersion.current,
        subcommands: [
            Verify.self, Ingest.self, Serve.self, Models.self, Campaigns.self, Costs.self, Claims.self, Rates.self,
            Encode.self,
            Aggregate.self,
            Report.self, Reconcile.self,
            Export.self, Forward.self, AppleAds.self, Apps.self, Keys.self, Retention.self, Prune.self,
            PruneAddresses.self, Check.self, Doctor.self,
            Generate.self,
        ]
    )

    /// Like ArgumentParser's `main`, but usage errors exit with status 2 (as I/O errors do),
    /// keeping 1 for "some postback is not valid".
    static func main() async {
        bootstrapLogging()
        do {
            var command = try parseAsRoot()
            if var command = command as? AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch {
            if exitCode(for: error) == .validationFailure {
                let message = fullMessage(for: error)
                let errors = TextOutput.standardError()
                errors.write(message.hasSuffix("\n") ? message : message + "\n")
                errors.flush()
                Glibc.exit(ExitStatus.usageOrInputError.rawValue)
            }
            exit(withError: error)
        }
    }
}

/// Logs go to standard error at the level in `POSTBACKD_LOG_LEVEL` (default: warning).
private func bootstrapLogging() {
    let level =
        getenv("POSTBACKD_LOG_LEVEL").flatMap { String(validatingCString: $0) }.flatMap {
            Logger.Level(rawValue: $0.lowercased())
        }
        ?? .warning
    LoggingSystem.bootstrap { label in
        var handler = StreamLogHandler.standardError(label: label)
        handler.logLevel = level
        return handler
    }
}
