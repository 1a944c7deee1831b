import ArgumentParser
import PostbackKit
import PostbackStore

extension Postbackd {
    struct Models: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add, list and show the advertisers' conversion models.",
            discussion: """
                A model is the conversion value schema App Attribution Partners share with Google \
                Ads (SkAdNetworkConversionValueSchema, protobuf JSON), plain or as the API returns it \
                ({"resourceName": …, "schema": {…}}); a file may also hold a JSON array of models. \
                Each app has one current model; adding a changed one replaces it (the old one is \
                kept), and the next aggregate run uses it for every day it recomputes.

                Examples:
                  postbackd models add SamplePostbacks/models/*.json
                  postbackd models add --bundle-id com.example.game game-model.json
                  postbackd models list
                  postbackd models show 525463029

                Exit status: 0 done; 2 a model is invalid (nothing is stored; every problem is \
                named with its file and JSON path), no such app, or a database that cannot be used.
                """,
            subcommands: [Add.self, List.self, Show.self]
        )

        struct Add: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Validate model files and store them, one current model per app."
            )

            @OptionGroup var database: DatabaseOptions

            @Option(
                help: ArgumentHelp(
                    "The app's bundle identifier, recorded with its model (one model): the app-facing conversion value endpoint finds the app by it.",
                    valueName: "bundle"
                )
            )
            var bundleID: String?

            @Argument(help: "Model files (JSON).")
            var files: [String]

            func run() async throws {
                let added: [ModelsJob.Added]
                do {
                    added = try await ModelsJob.add(files: files, bundleID: bundleID, location: database.location)
                } catch let error as ModelFilesError {
                    throw failInput("no model was stored:\n" + error.description)
                } catch let error as BundleIDConflict {
                    throw failInput("no model was stored: \(error)")
                } catch {
                    throw failStore(error, database.location)
                }
                let output = TextOutput.standardOutput()
                for entry in added {
                    output.line(
                        "app \(entry.model.appID): \(entry.outcome.rawValue) from \(entry.file) (\(ModelsJob.describe(entry.model)))"
                    )
                    if let bundleID {
                        output.line("    bundle identifier \(bundleID)")
                    }
                }
                output.flush()
            }
        }

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "List the current model of each app.")

            @OptionGroup var database: DatabaseOptions

            @Option(help: "text or json.")
            var format: ResultFormat = .text

            func run() async throws {
                let models: [StoredModel]
                do {
                    models = try await ModelsJob.list(location: database.location)
                } catch {
                    throw failStore(error, database.location)
                }
                let output = TextOutput.standardOutput()
                switch format {
                case .text:
                    if models.isEmpty { output.line("no models (postbackd models add FILE)") }
                    for stored in models {
                        let bundle = stored.bundleID.map { " (\($0))" } ?? ""
                        output.line("app \(stored.model.appID)\(bundle): \(ModelsJob.describe(stored.model))")
                        output.line(
                            "    added \(stored.addedAt) from \(stored.source), sha256 \(stored.sha256.prefix(16))…"
                        )
                    }
                case .json:
                    let objects = models.map { stored -> String in
                        var object = JSONObjectWriter()
                        object.add("app_id", stored.model.appID)
                        object.add("bundle_id", stored.bundleID)
                        object.add("fine_values", stored.model.fineValues.count)
                        object.addRaw(
                            "coarse_postbacks",
                            json: "[" + stored.model.coarseValues.keys.sorted().map(String.init).joined(separator: ",")
                                + "]"
                        )
                        object.add("events", strings: stored.model.eventNames.sorted())
                        object.add("currencies", strings: stored.model.currencies.sorted())
                        object.add("added_at", stored.addedAt)
                        object.add("source", stored.source)
                        object.add("sha256", stored.sha256)
                        return object.text
                    }
                    output.line("[" + objects.joined(separator: ",\n ") + "]")
                }
                output.flush()
            }
        }

        struct Show: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Print an app's current model as JSON.")

            @OptionGroup var database: DatabaseOptions

            @Argument(help: "The app: its App Store id, or its bundle identifier.")
            var app: String

            func run() async throws {
                let stored: StoredModel?
                do {
                    stored = try await ModelsJob.show(app: app, location: database.location)
                } catch {
                    throw failStore(error, database.location)
                }
                guard let stored else {
                    throw failInput("no model for app \(app) (postbackd models list shows the apps that have one)")
                }
                let output = TextOutput.standardOutput()
                let pretty = (try? JSONValue.parse(Array(stored.model.json.utf8)))?.prettyText ?? stored.model.json
                output.line(pretty)
                output.flush()
            }
        }
    }
}
