import ArgumentParser
import PostbackKit
import PostbackStore

extension Postbackd {
    struct Campaigns: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Map each network's source identifiers to its campaigns, ad groups and creatives.",
            discussion: """
                A mapping file is CSV with the header \(CampaignMapping.header) \
                (further columns after these are ignored). source_identifier is a prefix of 1 to 4 \
                digits; valid_from and valid_to are days (YYYY-MM-DD, inclusive; empty for \
                open-ended); ad_group and creative may be empty. A postback takes the row of its ad \
                network whose prefix is the longest that begins its source-identifier (before 4.0: \
                its campaign-id in decimal) and whose validity contains its install date; none: \
                unmapped. Adding files replaces every row of the networks they name; the next \
                aggregate run applies them (report by campaign, ad_group, creative).

                Examples:
                  postbackd campaigns add mappings/example-network.csv
                  postbackd campaigns list
                  postbackd campaigns list --network example123.skadnetwork --format csv > mapping.csv

                Exit status: 0 done; 2 a file has problems (nothing is stored; each problem names \
                its file and line, and rows that overlap name both lines), or a database that \
                cannot be used.
                """,
            subcommands: [Add.self, List.self]
        )

        struct Add: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Check mapping files and store them, replacing the rows of the networks they name."
            )

            @OptionGroup var database: DatabaseOptions

            @Option(help: "text or json.")
            var format: ResultFormat = .text

            @Argument(help: "Mapping files (CSV); - reads standard input.")
            var files: [String]

            func run() async throws {
                let change: CampaignMappingChange
                do {
                    change = try await CampaignsJob.add(database.location, files: files)
                } catch let error as FileProblemsError {
                    throw failInput("no mapping was stored:\n" + error.description)
                } catch {
                    throw failStore(error, database.location)
                }
                standardOutput(line: format == .json ? change.json : change.text)
            }
        }

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Show the stored mapping rows.")

            @OptionGroup var database: DatabaseOptions

            @Option(help: ArgumentHelp("Only this ad network's rows.", valueName: "id"))
            var network: String?

            @Option(help: "table, csv (a mapping file, with where and when each row was added) or json (JSON Lines).")
            var format: ListFormat = .table

            func run() async throws {
                let rows: [StoredCampaignMapping] = try await database.perform {
                    try await CampaignsJob.list($0, network: network)
                }
                format.write(rows, table: CampaignsJob.table, csv: CampaignsJob.csv, json: CampaignsJob.json)
            }
        }
    }
}
