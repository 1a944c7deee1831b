import Foundation
import PostbackTestSupport
import Testing

/// `postbackd encode`, run as the built binary: from a model file and from the store.
@Suite("postbackd encode", .timeLimit(.minutes(20)))
struct EncodeCommandTests {
    let directory: TemporaryDirectory
    let model = Repository.path("SamplePostbacks/models/app-525463029-apple-examples.json")

    init() throws {
        directory = try TemporaryDirectory("encode-cli")
    }

    private func run(_ arguments: [String], input: String? = nil) async throws -> Postbackd.Run {
        try await Postbackd.run(arguments, input: input.map { Array($0.utf8) }, directory: directory.path)
    }

    private let states = """
        {"elapsed_hours": 30.5, "events": [{"name": "purchase", "hours": 2, "revenue": 4.99, "currency": "USD"}], "current": {"fine": 3, "coarse": ["low", null, null]}}

        {"elapsed_hours": 5, "events": [{"name": "purchase", "hours": 1, "revenue": 7.5, "currency": "USD"}]}
        {"elapsed_hours": 1, "events": [{"name": "a", "hours": "2"}]}
        not json
        {"elapsed_hours": 1000, "current": {"fine": 9}}
        """

    @Test("one answer per state; a bad line is named with its field and answered with an error; exit 1")
    func answers() async throws {
        let result = try await run(["encode", "--model", model], input: states)
        #expect(result.status == 1, "\(result.standardError)")
        #expect(
            result.outputLines == [
                #"{"window":0,"fine":3,"coarse":"medium","lock":false}"#,
                #"{"window":0,"fine":20,"coarse":"medium","lock":false}"#,
                #"{"line":4,"error":"events[0].hours: expected a number, found \"2\""}"#,
                #"{"line":5,"error":"not valid JSON: unexpected 'n': expected a value"}"#,
                #"{"window":null,"fine":9,"coarse":null,"lock":false}"#,
            ],
            "\(result.standardOutput)"
        )
        #expect(result.standardError.contains("standard input:4: events[0].hours: expected a number"))
        #expect(result.standardError.contains("standard input:5: not valid JSON"))
    }

    @Test("--db and --app answer from the app's current model, as --model does; --explain says why")
    func fromStore() async throws {
        let database = directory.path + "/postbackd.sqlite"
        #expect(try await run(["models", "add", "--db", database, model]).status == 0)
        let good = states.split(separator: "\n").prefix(2).joined(separator: "\n")
        let fromFile = try await run(["encode", "--model", model], input: good)
        let fromStore = try await run(["encode", "--db", database, "--app", "525463029"], input: good)
        #expect(fromStore.status == 0, "\(fromStore.standardError)")
        #expect(fromStore.standardOutput == fromFile.standardOutput)
        let explained = try await run(["encode", "--model", model, "--explain"], input: good)
        #expect(
            explained.outputLines.first?.contains(#""failed":"purchase: revenue 4.99 USD, needs at least 5""#) == true,
            "\(explained.standardOutput)"
        )
    }

    @Test("no model, two models, or an app without one: exit 2 with a message")
    func usage() async throws {
        #expect(try await run(["encode"]).status == 2)
        #expect(try await run(["encode", "--model", model, "--app", "1"]).status == 2)
        let noStore = try await run(["encode", "--db", directory.path + "/none.sqlite", "--app", "1"], input: "")
        #expect(noStore.status == 2)
        #expect(noStore.standardError.contains("no store at \(directory.path)/none.sqlite"), "\(noStore.standardError)")
        // A store without that app's model.
        let empty = directory.path + "/empty.sqlite"
        #expect(try await run(["ingest", "--db", empty, "-"], input: "").status == 0)
        let missing = try await run(["encode", "--db", empty, "--app", "1"], input: "")
        #expect(missing.status == 2)
        #expect(missing.standardError.contains("no model for app 1"), "\(missing.standardError)")
        let unreadable = try await run(["encode", "--model", model, "--state", directory.path + "/nope.jsonl"])
        #expect(unreadable.status == 2)
        #expect(unreadable.standardError.contains("cannot read"))
    }
}
