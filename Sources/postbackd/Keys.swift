import ArgumentParser
import PostbackKit
import PostbackStore

extension Postbackd {
    struct Keys: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Access keys for serve's routes, each opening a set of apps.",
            discussion: """
                A key opens the apps it was given (or every app) to its scopes: report (GET \
                /api/v1/report and /api/v1/summary), dashboard (the page, signed in at /login), \
                export (GET /api/v1/postbacks), conversion-value (POST /v1/conversion-value, GET \
                /api/v2/conversion_value), apple-ads (POST /v1/apple-ads/token) and forwards \
                (POST /v1/forwards/CHANNEL, on the channels given with --channels, or every \
                channel). Without --scope a key reads: report, dashboard, export. Every serve sharing the store \
                takes a new or revoked key within 10 seconds. The secret is printed once; only \
                its SHA-256 is stored. See docs/serve.md, "Access keys".

                Examples:
                  postbackd keys add acme --apps 1254734734,1500000001
                  postbackd keys add acme-app --apps 1254734734 --scope conversion-value,apple-ads
                  postbackd keys add operations --all-apps
                  postbackd keys add network-x --all-apps --scope forwards --channels network-x
                  postbackd keys list
                  postbackd keys revoke acme

                Exit status: 0 done; 2 a name, app or scope that cannot be used, a name taken \
                or unknown, or a database that cannot be used.
                """,
            subcommands: [Add.self, List.self, Revoke.self]
        )

        struct Add: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Make a key and print its secret, once."
            )

            @OptionGroup var database: DatabaseOptions

            @Argument(help: "The key's name: 1 to 64 letters, digits, '.', '_' or '-'.")
            var name: String

            @Option(help: ArgumentHelp("The App Store ids the key opens, comma-separated.", valueName: "id,…"))
            var apps: String?

            @Flag(help: "The key opens every app, present and future.")
            var allApps = false

            @Option(
                help: ArgumentHelp(
                    "What the key may do, comma-separated: report, dashboard, export, conversion-value, apple-ads, forwards. Default: report,dashboard,export.",
                    valueName: "scope,…"
                )
            )
            var scope: String?

            @Option(
                help: ArgumentHelp(
                    "With scope forwards: the channels the key posts on, comma-separated (default: every channel).",
                    valueName: "name,…"
                )
            )
            var channels: String?

            func validate() throws {
                guard (apps == nil) != !allApps else {
                    throw ValidationError("give --apps ID,… or --all-apps (one of them)")
                }
            }

            func run() async throws {
                let created = try await database.perform(refusals: true) {
                    let appIDs = try apps.map { try AccessKeySecret.parseApps($0) }
                    let scopes = try scope.map { try AccessScope.parse($0) } ?? AccessScope.defaults
                    let channelList = try channels.map { try AccessKeySecret.parseChannels($0) }
                    if channelList != nil && !scopes.contains(.forwards) {
                        throw StoreError(.invalidChannel, "--channels goes with --scope forwards")
                    }
                    return try await AccessKeysJob.add(
                        $0,
                        name: name,
                        apps: appIDs,
                        scopes: scopes,
                        channels: channelList
                    )
                }
                standardOutput(line: created.secret)
                let errors = TextOutput.standardError()
                errors.line(
                    "key \(created.key.name): apps \(AccessKeysJob.appsText(created.key.apps)), scopes \(created.key.scopes.map(\.rawValue).joined(separator: ","))\(created.key.scopes.contains(.forwards) ? ", channels " + AccessKeysJob.channelsText(created.key) : ""). Keep the secret above now: it is not stored and cannot be shown again."
                )
                errors.flush()
            }
        }

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Show the keys: name, apps, scopes, channels, created, last used, revoked (never a secret)."
            )

            enum ListFormat: String, ExpressibleByArgument, CaseIterable {
                case table, json
            }

            @OptionGroup var database: DatabaseOptions

            @Option(help: "table, or json (JSON Lines).")
            var format: ListFormat = .table

            func run() async throws {
                let keys: [StoredAccessKey] = try await database.perform { try await AccessKeysJob.list($0) }
                standardOutput(write: format == .json ? AccessKeysJob.json(keys) : AccessKeysJob.table(keys))
            }
        }

        struct Revoke: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Revoke a key: every serve sharing the store refuses it within 10 seconds."
            )

            @OptionGroup var database: DatabaseOptions

            @Argument(help: "The key's name.")
            var name: String

            func run() async throws {
                let revoked = try await database.perform(refusals: true) {
                    try await AccessKeysJob.revoke($0, name: name)
                }
                standardOutput(line: revoked ? "revoked \(name)" : "\(name) was revoked already")
            }
        }
    }
}
