import ArgumentParser
import PostbackKit
import PostbackStore

extension Postbackd {
    struct Encode: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Answer which conversion value a user's app should set next, from the app's model.",
            discussion: """
                Reads one state per line (JSON Lines) and prints one answer per state, by the \
                encoding rules (docs/models.md, "Encoding"): the same model that decodes postbacks decides \
                the values the app sets, so a value means the same thing both ways.

                A state:
                  {"elapsed_hours": 30.5, "events": [{"name": "purchase", "hours": 2.0, "revenue": 4.99, "currency": "USD"}], "current": {"fine": 3, "coarse": ["low", null, null], "locked": [false, false, false]}}
                An answer:
                  {"window": 0, "fine": 20, "coarse": "medium", "lock": false}

                Examples:
                  postbackd encode --model SamplePostbacks/models/525463029.json --state states.jsonl
                  echo '{"elapsed_hours": 1, "events": [{"name": "session", "hours": 0.5}]}' | postbackd encode --db postbackd.sqlite --app 525463029 --explain

                Exit status: 0 every state answered; 1 some line could not be read (it is named on \
                standard error and answered with {"line": N, "error": "…"}; the rest are answered); \
                2 no model, an unreadable input, or a usage error.
                """
        )

        @Option(help: ArgumentHelp("A model file (JSON; one model).", valueName: "file"))
        var model: String?

        @OptionGroup var database: DatabaseOptions

        @Option(
            help: ArgumentHelp(
                "With --db: the app whose model in force now answers (its App Store id, or its bundle identifier).",
                valueName: "app"
            )
        )
        var app: String?

        @Option(
            help:
                "With --db: the state's conversion type, install or re-engagement (an AdAttributionKit re-engagement, answered from the app's re-engagement model)."
        )
        var conversionType: ConversionTypeOption = .install

        @Option(help: ArgumentHelp("The states, one JSON object per line; - for standard input.", valueName: "file|-"))
        var state: String = "-"

        @Flag(
            help:
                "Add to each answer which mappings held and the condition that kept the next higher value from holding."
        )
        var explain = false

        func validate() throws {
            if model != nil && app != nil {
                throw ValidationError("give either --model FILE, or --app APP with the models in --db")
            }
            if model != nil && conversionType != .install {
                throw ValidationError(
                    "--conversion-type picks one of an app's timelines in --db (with --app); --model FILE answers from the file's model"
                )
            }
            if model == nil && app == nil {
                throw ValidationError(
                    "which model? give --model FILE, or --app APP to use the app's model in force in --db"
                )
            }
        }

        func run() async throws {
            let chosen: ConversionModel
            if let model {
                let models: [ConversionModel]
                do {
                    models = try ConversionModelFile.read(file: model)
                } catch {
                    throw failInput("cannot use the model:\n" + error.description)
                }
                guard models.count == 1, let only = models.first else {
                    throw failInput(
                        "\(model) holds \(models.count) models; encode answers from one (use --db and --app)"
                    )
                }
                chosen = only
            } else if let app {
                let stored: StoredModel? = try await database.perform {
                    try await ModelsJob.show(
                        app: app,
                        conversionType: conversionType.type,
                        location: $0
                    )
                }
                guard let stored else {
                    let type = conversionType == .install ? "" : " --conversion-type \(conversionType.rawValue)"
                    let kind = conversionType == .install ? "" : " \(conversionType.rawValue)"
                    throw failInput(
                        "no\(kind) model for app \(app) in \(database.location) (postbackd models add\(type) FILE)"
                    )
                }
                chosen = stored.model
            } else {
                throw failInput("which model? give --model FILE or --app APP")
            }
            let output = TextOutput.standardOutput()
            let errors = TextOutput.standardError()
            let summary: EncodeJob.Summary
            do {
                summary = try EncodeJob.run(
                    model: chosen,
                    input: state,
                    explain: explain,
                    output: output,
                    errors: errors
                )
            } catch {
                output.flush()
                errors.flush()
                throw failInput(error.description)
            }
            output.flush()
            errors.flush()
            if summary.refused > 0 { throw ExitCode.notAllValid }
        }
    }
}
