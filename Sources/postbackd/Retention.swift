import ArgumentParser
import PostbackKit
import PostbackStore

extension Postbackd {
    struct Retention: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "How long each kind of data is kept before postbackd prune removes it.",
            discussion: """
                Kept in the store, so every prune (a timer, cron, any host) applies the same \
                policy. Nothing is pruned until a kind is set. A production postback's row is \
                never removed, nor the dedup key of any postback: a replay years later is still \
                a duplicate. Aggregates are never touched. See docs/retention.md.

                Kinds: quarantine, test, development, unclaimed (postbacks of apps not \
                registered, under apps policy registered), raw (the raw bytes of stored \
                postbacks), deliveries (delivered or rejected), apple-ads-tokens (resolved), \
                runs (finished ingest and prune runs).

                Examples:
                  postbackd retention set quarantine=90 test=30 development=30 raw=400
                  postbackd retention set raw=off
                  postbackd retention show

                Exit status: 0 done; 2 a setting that cannot be used, or a database that cannot \
                be used.
                """,
            subcommands: [Set.self, Show.self]
        )

        struct Set: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Keep each KIND for DAYS days (off: forever)."
            )

            @OptionGroup var database: DatabaseOptions

            @Argument(help: ArgumentHelp("KIND=DAYS, DAYS 1 to 36500 or off.", valueName: "kind=days"))
            var settings: [String]

            func validate() throws {
                guard !settings.isEmpty else { throw ValidationError("give at least one KIND=DAYS") }
            }

            func run() async throws {
                let parsed = try await database.perform(whileWriting: true, refusals: true) {
                    try await RetentionJob.set($0, settings)
                }
                let output = TextOutput.standardOutput()
                for (kind, days) in parsed {
                    output.line("\(kind.rawValue): " + (days.map { "kept \($0) days" } ?? "kept forever"))
                }
                output.flush()
            }
        }

        struct Show: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Show each kind's retention.")

            @OptionGroup var database: DatabaseOptions

            func run() async throws {
                let rules: [RetentionRule] = try await database.perform { try await RetentionJob.rules($0) }
                let output = TextOutput.standardOutput()
                let width = RetentionKind.allCases.map(\.rawValue.count).max() ?? 0
                for rule in rules {
                    let kept = rule.days.map { "\($0) days" } ?? "forever"
                    let progress =
                        rule.examinedBefore.map { "; pruned through \(UTCDay(daysSinceEpoch: $0.daysSinceEpoch - 1))" }
                        ?? ""
                    output.line(
                        rule.kind.rawValue.padding(toLength: width, withPad: " ", startingAt: 0)
                            + "  \(kept.padding(toLength: 10, withPad: " ", startingAt: 0))  \(rule.kind.what)\(progress)"
                    )
                }
                output.flush()
            }
        }
    }

    struct Prune: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove what the retention says is no longer kept.",
            discussion: """
                Applies `postbackd retention`, kind by kind, in batches of at most 2,000 rows (--batch), \
                each its own short transaction: serve, ingest and reports go on meanwhile. Kinds \
                kept by day received (quarantine, test, development, unclaimed, raw) record \
                their progress day by day, so a daily prune reads a day's rows, and a prune \
                killed part way is finished by the next. A removed postback takes its copies, \
                conflicts and deliveries with it; its dedup key and first-seen time stay, and \
                the intake counts of what was removed stay in the aggregates. Run it daily (a \
                timer or cron).

                --full examines every day again, not only those since the last prune: for \
                postbacks ingested with an old time received after it, or apps unregistered \
                since.

                Examples:
                  postbackd prune --dry-run
                  postbackd prune
                  postbackd prune --db postgres://postbackd@db/postbackd

                Exit status: 0 done (nothing set is done too); 2 a database that cannot be used.
                """
        )

        @OptionGroup var database: DatabaseOptions

        @Flag(help: "Count what would be removed; change nothing.")
        var dryRun = false

        @Flag(help: "Examine every day again, not only those since the last prune.")
        var full = false

        @Option(help: "Rows removed per transaction (shorter transactions: less waiting for serve and ingest).")
        var batch = 2_000

        func validate() throws {
            guard (1...100_000).contains(batch) else { throw ValidationError("--batch takes 1 to 100000 rows") }
        }

        func run() async throws {
            let output = TextOutput.standardOutput()
            let verb = dryRun ? "would remove" : "removed"
            let report: PruneReport
            do {
                report = try await RetentionJob.prune(database.location, dryRun: dryRun, full: full, batch: batch) {
                    output.line(Self.line($0, verb: verb))
                    output.flush()
                }
            } catch {
                throw failStore(error, database.location, whileWriting: !dryRun)
            }
            if report.kinds.isEmpty {
                output.line("no retention is set: nothing pruned (postbackd retention set KIND=DAYS)")
            } else if let runID = report.runID {
                output.line("prune run \(runID) completed")
            }
            output.flush()
        }

        static func line(_ pruned: PrunedKind, verb: String) -> String {
            if let skipped = pruned.skipped { return "\(pruned.kind.rawValue): not examined (\(skipped))" }
            let rows: String
            switch pruned.kind {
            case .raw:
                rows =
                    "the raw bytes of \(formatCount(pruned.rows)) postbacks and \(formatCount(pruned.sightings)) copies"
            case .test, .development, .unclaimed:
                rows = "\(formatCount(pruned.rows)) postbacks with \(formatCount(pruned.sightings)) copies"
            case .quarantine: rows = "\(formatCount(pruned.rows)) quarantined entries"
            case .deliveries: rows = "\(formatCount(pruned.rows)) deliveries"
            case .appleAdsTokens: rows = "\(formatCount(pruned.rows)) Apple Ads tokens"
            case .runs: rows = "\(formatCount(pruned.rows)) runs"
            }
            let when = pruned.kind.isByDay ? "received before" : "finished before"
            return "\(pruned.kind.rawValue): \(verb) \(rows) \(when) \(pruned.before)"
        }
    }
}
