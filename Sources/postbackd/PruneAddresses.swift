import ArgumentParser
import PostbackKit
import PostbackStore

extension Postbackd {
    struct PruneAddresses: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "prune-addresses",
            abstract: "Clear the stored client addresses of rows received more than DAYS days ago.",
            discussion: """
                serve stores the address each postback came from (as --client-address says: \
                kept, truncated, hashed or not at all), in postbacks, sightings and quarantine. \
                This clears it from rows received before the cutoff, walking each table in \
                ranges of 10,000 rows, each its own short transaction: serve and ingest keep \
                writing meanwhile, and a run stopped part way is finished by the next. Nothing \
                else of a row changes. Run it daily (a timer or cron) to keep addresses only so \
                long.

                Examples:
                  postbackd prune-addresses --older-than 30
                  postbackd prune-addresses --older-than 0 --db postgres://postbackd@db/postbackd

                Exit status: 0 done; 2 a database that cannot be used.
                """
        )

        @OptionGroup var database: DatabaseOptions

        @Option(
            help: ArgumentHelp(
                "Clear the addresses of rows received more than this many days ago (0: all).",
                valueName: "days"
            )
        )
        var olderThan: Int

        func validate() throws {
            guard (0...36_500).contains(olderThan) else { throw ValidationError("--older-than takes 0 to 36500 days") }
        }

        func run() async throws {
            let (cutoff, cleared): (UTCInstant, ClearedAddresses) = try await database.perform(whileWriting: true) {
                try await PruneAddressesJob.run($0, olderThan: olderThan)
            }
            standardOutput(
                line:
                    "cleared the client addresses of \(formatCount(cleared.postbacks)) postbacks, \(formatCount(cleared.sightings)) sightings and \(formatCount(cleared.quarantine)) quarantined entries received before \(cutoff.iso8601)"
            )
        }
    }
}
