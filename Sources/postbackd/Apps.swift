import ArgumentParser
import PostbackKit
import PostbackStore

extension Postbackd {
    struct Apps: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The apps this postbackd counts postbacks for.",
            discussion: """
                The open report endpoint receives whatever a device sends it: another network's \
                traffic, replays, tests. Under `apps policy registered`, postbacks of an app that \
                is not registered are stored as usual (verified, deduplicated, quarantined when \
                bad) but unclaimed: no aggregate, report, dashboard, export, pull or forward \
                counts them. Registering the app claims them: the next `postbackd aggregate` of \
                their days counts them (export and forward take them from then on: a consumer's \
                cursor does not go back). `apps policy all`, the default, counts every app. \
                `models add --bundle-id` registers its app too. See docs/access-and-privacy.md.

                Examples:
                  postbackd apps add 1254734734 --name "Example Game" --bundle-id com.example.game
                  postbackd apps policy registered
                  postbackd apps unclaimed
                  postbackd apps list
                  postbackd apps remove 1254734734

                Exit status: 0 done; 2 an app id, name or policy that cannot be used, an app not \
                registered, or a database that cannot be used.
                """,
            subcommands: [Add.self, List.self, Remove.self, Unclaimed.self, Policy.self]
        )

        enum ListFormat: String, ExpressibleByArgument, CaseIterable {
            case table, json
        }

        struct Add: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Register an app (or change the name and bundle identifier of a registered one)."
            )

            @OptionGroup var database: DatabaseOptions

            @Argument(help: "The App Store id.")
            var appID: Int64

            @Option(help: "A name for people.")
            var name: String?

            @Option(help: ArgumentHelp("The app's bundle identifier.", valueName: "id"))
            var bundleID: String?

            func run() async throws {
                let outcome = try await database.perform(refusals: true) {
                    try await AppsJob.add($0, appID: appID, name: name, bundleID: bundleID)
                }
                standardOutput(
                    line:
                        "app \(appID) \(outcome.rawValue)"
                        + (outcome == .added
                            ? "; postbackd aggregate counts its postbacks under policy registered" : "")
                )
            }
        }

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Show the policy and the registered apps.")

            @OptionGroup var database: DatabaseOptions

            @Option(help: "table, or json (JSON Lines of the apps).")
            var format: ListFormat = .table

            func run() async throws {
                let (apps, policy): ([StoredApp], AppsPolicy) = try await database.perform {
                    try await AppsJob.list($0)
                }
                standardOutput(write: format == .json ? AppsJob.json(apps) : AppsJob.table(apps, policy: policy))
            }
        }

        struct Remove: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Unregister an app: under policy registered, the next aggregate leaves its postbacks out."
            )

            @OptionGroup var database: DatabaseOptions

            @Argument(help: "The App Store id.")
            var appID: Int64

            func run() async throws {
                let removed: Bool = try await database.perform { try await AppsJob.remove($0, appID: appID) }
                guard removed else { throw failInput("app \(appID) is not registered (postbackd apps list)") }
                standardOutput(line: "app \(appID) removed")
            }
        }

        struct Unclaimed: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "App ids of stored postbacks that are not registered, with counts and first and last seen."
            )

            @OptionGroup var database: DatabaseOptions

            @Option(help: "table, or json (JSON Lines).")
            var format: ListFormat = .table

            func run() async throws {
                let (apps, policy): ([UnclaimedApp], AppsPolicy) = try await database.perform {
                    try await AppsJob.unclaimed($0)
                }
                standardOutput(
                    write:
                        format == .json ? AppsJob.unclaimedJSON(apps) : AppsJob.unclaimedTable(apps, policy: policy)
                )
            }
        }

        struct Policy: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Show or set which apps' postbacks count: all (the default) or registered."
            )

            @OptionGroup var database: DatabaseOptions

            @Argument(help: "all or registered; none shows the policy.")
            var policy: String?

            func run() async throws {
                let output = TextOutput.standardOutput()
                guard let policy else {
                    do {
                        let current = try await AppsJob.policy(database.location)
                        output.line(current.rawValue)
                    } catch {
                        throw failStore(error, database.location)
                    }
                    output.flush()
                    return
                }
                guard let chosen = AppsPolicy(rawValue: policy) else {
                    throw failInput("\"\(policy)\" is not a policy: all or registered")
                }
                try await database.perform { try await AppsJob.setPolicy($0, chosen) }
                output.line("policy \(chosen.rawValue); postbackd aggregate applies it to the aggregates")
                output.flush()
            }
        }
    }
}
