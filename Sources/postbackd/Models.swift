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
                Each app has a timeline of models per conversion type (install: downloads and \
                redownloads; re-engagement: AdAttributionKit re-engagements). A model is in force \
                from its effective time until the next one's; the app's first is in force from the \
                beginning. A later model without --effective-from is in force from when it is \
                added; one with a time in the past is allowed, and add says which days received \
                it changes. A postback is decoded with the model in force when its value was set \
                (received_at minus 24 hours); see docs/models.md. The same file twice adds nothing.

                Examples:
                  postbackd models add SamplePostbacks/models/*.json
                  postbackd models add --bundle-id com.example.game game-model.json
                  postbackd models add --effective-from 2026-03-15 game-model-v2.json
                  postbackd models add --effective-from beginning game-model-fixed.json
                  postbackd models add --conversion-type re-engagement game-reengagement.json
                  postbackd models list
                  postbackd models show 525463029
                  postbackd models show --at 2026-03-01 525463029

                Exit status: 0 done; 2 a model is invalid (nothing is stored; every problem is \
                named with its file and JSON path), no such app, or a database that cannot be used.
                """,
            subcommands: [Add.self, List.self, Show.self]
        )

        struct Add: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Validate model files and add them to their apps' timelines."
            )

            @OptionGroup var database: DatabaseOptions

            @Option(
                help: ArgumentHelp(
                    "The app's bundle identifier, recorded with its model (one model): the app-facing conversion value endpoint finds the app by it.",
                    valueName: "bundle"
                )
            )
            var bundleID: String?

            @Option(
                help: ArgumentHelp(
                    "When the models are in force from: a day (its start, UTC), an ISO 8601 instant, or beginning (in place of the first model) (default: now; an app's first model is in force from the beginning).",
                    valueName: "time"
                )
            )
            var effectiveFrom: String?

            @Option(help: "The postbacks the models decode: install or re-engagement.")
            var conversionType: ConversionTypeOption = .install

            @Argument(help: "Model files (JSON).")
            var files: [String]

            func validate() throws {
                try checkTime(effectiveFrom, option: "--effective-from", orLiteral: "beginning")
            }

            func run() async throws {
                let added: [ModelsJob.Added]
                do {
                    added = try await ModelsJob.add(
                        files: files,
                        bundleID: bundleID,
                        effectiveFrom: effectiveFrom.flatMap(ModelEffectiveTime.init),
                        conversionType: conversionType.type,
                        location: database.location
                    )
                } catch let error as FileProblemsError {
                    throw failInput("no model was stored:\n" + error.description)
                } catch let error as BundleIDConflict {
                    throw failInput("no model was stored: \(error)")
                } catch {
                    throw failStore(error, database.location)
                }
                let output = TextOutput.standardOutput()
                for entry in added {
                    let type =
                        entry.result.conversionType == .install ? "" : " (\(entry.result.conversionType.rawValue))"
                    output.line(
                        "app \(entry.model.appID)\(type): \(entry.outcome.text) from \(entry.file) (\(ModelsJob.describe(entry.model)))"
                    )
                    if let reach = ModelsJob.reach(entry.result) { output.line("    \(reach)") }
                    if let bundleID {
                        output.line("    bundle identifier \(bundleID)")
                    }
                }
                output.flush()
            }
        }

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "List each app's timelines: its models, each with when it is in force from."
            )

            @OptionGroup var database: DatabaseOptions

            @Option(help: "text or json.")
            var format: ResultFormat = .text

            func run() async throws {
                let models: [StoredModel] = try await database.perform { try await ModelsJob.list(location: $0) }
                let output = TextOutput.standardOutput()
                switch format {
                case .text:
                    if models.isEmpty { output.line("no models (postbackd models add FILE)") }
                    for (stored, first) in ModelsJob.timelines(models) {
                        let bundle = stored.bundleID.map { " (\($0))" } ?? ""
                        let type = stored.conversionType == .install ? "" : " \(stored.conversionType.rawValue)"
                        let from = first ? "" : stored.effectiveFrom.map { " from \($0.iso8601)" } ?? ""
                        output.line(
                            "app \(stored.model.appID)\(bundle)\(type)\(from): \(ModelsJob.describe(stored.model))"
                        )
                        output.line(
                            "    added \(stored.addedAt) from \(stored.source), sha256 \(stored.sha256.prefix(16))…"
                        )
                    }
                case .json:
                    let objects = ModelsJob.timelines(models).map { stored, first -> String in
                        var object = JSONObjectWriter()
                        object.add("app_id", stored.model.appID)
                        object.add("bundle_id", stored.bundleID)
                        object.add("conversion_type", stored.conversionType.rawValue)
                        // nil: from the beginning (the timeline's first model, whatever it was given).
                        object.add("in_force_from", first ? nil : stored.effectiveFrom?.iso8601)
                        object.add("effective_from", stored.effectiveFrom?.iso8601)
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
            static let configuration = CommandConfiguration(
                abstract: "Print an app's model in force (now, or at --at) as JSON."
            )

            @OptionGroup var database: DatabaseOptions

            @Option(
                help: ArgumentHelp(
                    "The model in force at this time: a day (its start, UTC) or an ISO 8601 instant (default: now).",
                    valueName: "time"
                )
            )
            var at: String?

            @Option(help: "The timeline: install or re-engagement.")
            var conversionType: ConversionTypeOption = .install

            @Argument(help: "The app: its App Store id, or its bundle identifier.")
            var app: String

            func validate() throws {
                try checkTime(at, option: "--at")
            }

            func run() async throws {
                let stored: StoredModel? = try await database.perform {
                    try await ModelsJob.show(
                        app: app,
                        at: at.flatMap(UTCInstant.init(iso8601:)) ?? .now(),
                        conversionType: conversionType.type,
                        location: $0
                    )
                }
                guard let stored else {
                    let type = conversionType == .install ? "" : " \(conversionType.rawValue)"
                    throw failInput(
                        "no\(type) model for app \(app) (postbackd models list shows the apps that have one)"
                    )
                }
                let output = TextOutput.standardOutput()
                let pretty = (try? JSONValue.parse(Array(stored.model.json.utf8)))?.prettyText ?? stored.model.json
                output.line(pretty)
                output.flush()
            }
        }
    }
}

/// `--conversion-type`: the model timeline a command adds to or reads.
enum ConversionTypeOption: String, ExpressibleByArgument, CaseIterable {
    case install
    case reengagement = "re-engagement"

    var type: ModelConversionType {
        switch self {
        case .install: .install
        case .reengagement: .reengagement
        }
    }
}
