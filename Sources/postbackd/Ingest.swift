import ArgumentParser
import Logging
import PostbackKit
import PostbackStore

extension Postbackd {
    struct Ingest: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Store postbacks exactly once (SQLite or PostgreSQL): accepted, counted as duplicates, or quarantined.",
            discussion: """
                Reads inputs exactly as verify does, verifies on every core, and writes each valid \
                postback once under its dedup key (ad network, transaction id, sequence index); \
                copies become sightings (conflicts when their unsigned values or their signed \
                content differ); invalid, \
                malformed and unsupported entries go to quarantine with their reason and bytes. \
                Re-running on the same input adds nothing; a run killed at any point and started \
                again ends as one clean run would. Several ingests may share a database: an SQLite \
                file on one machine, or a PostgreSQL database (--db postgres://…) that workers on \
                many machines write into at once.

                When each postback was received: --received-at if given; otherwise a forwarder's \
                timestamp field holding an epoch (seconds or milliseconds) between 2018 and 2100; \
                otherwise the time of ingestion. Always stored in UTC.

                Examples:
                  postbackd ingest SamplePostbacks/apple
                  postbackd ingest --db /var/lib/postbackd/2026.sqlite --received-at 2026-11-21 incoming/
                  postbackd ingest --db postgres://postbackd@db.internal/postbackd incoming/
                  postbackd ingest --channel network-x forwards/network-x/2026-11-21.jsonl
                  postbackd ingest --format json --keys Keys/test SamplePostbacks/generated

                Exit status: 0 the run completed (quarantined postbacks are data, not failure); \
                2 usage error, a path that does not exist, an input that could not be read, or a \
                database that cannot be used.
                """
        )

        @OptionGroup var database: DatabaseOptions

        @OptionGroup var keys: KeyOptions

        @Option(
            help: ArgumentHelp(
                "When these postbacks were received: an ISO 8601 date (2026-11-21) or date-time (2026-11-21T08:00:00Z).",
                valueName: "time"
            )
        )
        var receivedAt: String?

        @Option(
            help: ArgumentHelp(
                "The channel these postbacks came by: a network's or partner's name for its forwards (network-x), or device for devices' copies archived elsewhere.",
                valueName: "name"
            )
        )
        var channel: String = PostbackChannel.file.name

        @Option(help: "text: a readable summary; json: the summary as one JSON object on one line.")
        var format: ResultFormat = .text

        @Option(
            help: ArgumentHelp(
                "Postbacks per transaction, at most (a transaction also commits after four seconds). Smaller lets other writers in sooner; larger writes less.",
                valueName: "count"
            )
        )
        var commitEvery: Int = IngestJob.defaultEntriesPerTransaction

        @Option(
            help: ArgumentHelp(
                "PostgreSQL: connections writing at once, each taking its share of the dedup keys; worth more than 1 where the server has cores to spare. SQLite has one writer.",
                valueName: "count"
            )
        )
        var writers: Int = 1

        @Argument(help: "Files or folders to read; - or nothing reads standard input.")
        var paths: [String] = []

        func validate() throws {
            if commitEvery < 1 {
                throw ValidationError("--commit-every \(commitEvery) must be at least 1")
            }
            if writers < 1 || writers > IngestJob.maximumWriters {
                throw ValidationError("--writers \(writers) must be from 1 to \(IngestJob.maximumWriters)")
            }
            if writers > 1, case .sqlite = database.location {
                throw ValidationError(
                    "--writers \(writers): a SQLite store has one writer at a time; several need a PostgreSQL store (--db postgres://…)"
                )
            }
            try checkTime(receivedAt, option: "--received-at")
            guard PostbackChannel(channel) != nil else {
                throw ValidationError("--channel '\(channel.escapedForTerminal)': \(PostbackChannel.rule)")
            }
        }

        func run() async throws {
            let errors = TextOutput.standardError()
            let job = IngestJob(
                paths: paths,
                location: database.location,
                keyRing: try keys.keyRing(),
                receivedAt: receivedAt.flatMap(UTCInstant.init(iso8601:)),
                channel: PostbackChannel(channel) ?? .file,
                logger: Logger(label: "postbackd.ingest"),
                entriesPerTransaction: commitEvery,
                writers: writers
            )
            let summary: IngestSummary
            do {
                summary = try await job.run(errors: errors, showProgress: errors.isTerminal)
            } catch let error as PostbackKitError {
                throw failInput(error.reason)
            } catch {
                throw failStore(error, database.location, whileWriting: true)
            }
            standardOutput(line: format == .json ? summary.json : summary.text)
            if summary.unreadableFiles > 0 {
                throw failInput(
                    "\(summary.unreadableFiles) input(s) could not be read (see above); fix them and run the same command again"
                )
            }
        }
    }
}
