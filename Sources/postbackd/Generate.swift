import ArgumentParser
import PostbackKit
import PostbackStore

extension Postbackd {
    struct Generate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write realistic signed test postbacks as JSON Lines.",
            discussion: """
                Signs with your private keys (never Apple's): verify or ingest the output with \
                --keys pointing at the matching public keys. The same options and seed always give \
                the same file.

                Examples:
                  postbackd generate --key Keys/test/p256-private.pem --count 1000 --output sample.jsonl
                  postbackd generate --key Keys/test/p192-private.pem --key Keys/test/p256-private.pem \\
                      --versions 1.0,2.0,2.1,2.2,3.0,4.0 --count 100000 --duplicates 0.05 --invalid 0.01
                  postbackd generate --key Keys/test/p256-private.pem --kind aak --count 1000

                Exit status: 0 written; 2 usage error or a key or output that cannot be used.
                """
        )

        @Option(
            help: ArgumentHelp(
                "A PEM private key; P-192 signs 1.0 and 2.0, P-256 the rest. Repeat for both.",
                valueName: "file"
            )
        )
        var key: [String] = []

        @Option(help: "How many postbacks (lines) to write.")
        var count: Int

        @Option(help: "Seed: the same seed gives the same file.")
        var seed: UInt64 = 1

        @Option(help: ArgumentHelp("Comma-separated SKAdNetwork versions to mix.", valueName: "list"))
        var versions: String = "2.1,3.0,4.0"

        @Option(help: ArgumentHelp("Share of lines that exactly repeat an earlier line (0–1).", valueName: "rate"))
        var duplicates: Double = 0.02

        @Option(help: ArgumentHelp("Share of lines with a broken signature (0–1).", valueName: "rate"))
        var invalid: Double = 0.01

        @Option(help: ArgumentHelp("Share of test-mode postbacks (source-app-id 0) (0–1).", valueName: "rate"))
        var testMode: Double = 0.002

        @Option(
            help:
                "skan: SKAdNetwork postbacks; aak: AdAttributionKit; mixed: both (one attribution in four is AdAttributionKit's)."
        )
        var kind: GeneratedKind = .skan

        @Option(
            help: ArgumentHelp(
                "Share of AdAttributionKit postbacks signed under the development kid (0–1).",
                valueName: "rate"
            )
        )
        var development: Double = 0.02

        @Option(help: "Number of advertised apps.")
        var apps: Int = 5

        @Option(help: "Number of ad networks.")
        var networks: Int = 4

        @Option(help: "Days the forwarder timestamps spread over (ending 2026-11-21).")
        var days: Int = 7

        @Option(help: ArgumentHelp("Write here instead of standard output.", valueName: "file"))
        var output: String?

        func validate() throws {
            guard !key.isEmpty else { throw ValidationError("give at least one --key") }
            guard count >= 0 else { throw ValidationError("--count must not be negative") }
            for (name, rate) in [
                ("--duplicates", duplicates), ("--invalid", invalid), ("--test-mode", testMode),
                ("--development", development),
            ]
            where !(0...1).contains(rate) {
                throw ValidationError("\(name) must be between 0 and 1")
            }
            _ = try parsedVersions()
        }

        private func parsedVersions() throws -> [SKANVersion] {
            let parsed = versions.split(separator: ",").map { $0.withoutSurroundingSpaces }
            var result: [SKANVersion] = []
            for text in parsed {
                guard let version = SKANVersion(rawValue: text) else {
                    throw ValidationError("--versions: \(text) is not one of 1.0, 2.0, 2.1, 2.2, 3.0, 4.0")
                }
                result.append(version)
            }
            guard !result.isEmpty else { throw ValidationError("--versions is empty") }
            return result
        }

        func run() throws {
            let options = GeneratorOptions(
                count: count,
                seed: seed,
                versions: try parsedVersions(),
                duplicateRate: duplicates,
                invalidRate: invalid,
                testModeRate: testMode,
                apps: apps,
                networks: networks,
                days: days,
                kind: kind,
                developmentRate: development
            )
            do {
                let destination = try output.map(TextOutput.file) ?? .standardOutput()
                try GenerateJob(options: options, keyFiles: key).run(output: destination)
            } catch let error as PostbackKitError {
                throw failInput(error.reason)
            }
        }
    }
}

extension GeneratedKind: ExpressibleByArgument {}
