import Foundation
import PostbackKit
import PostbackTestSupport
import Testing

/// `postbackd models` over time, run as the built binary: the README's tour of a new schema.
@Suite("postbackd models: timelines", .timeLimit(.minutes(20)))
struct ModelsCommandTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory("models-cli")
    }

    private func run(_ arguments: [String]) async throws -> Postbackd.Run {
        try await Postbackd.run(arguments, directory: directory.path)
    }

    @Test("models add --effective-from names the days it changes; list, show --at; the same file again adds nothing")
    func timeline() async throws {
        let first = Repository.path("SamplePostbacks/models/app-734771186-subscriptions.json")
        let next = Repository.path("SamplePostbacks/schema-v2/app-734771186-subscriptions.json")
        #expect(try await run(["models", "add", first]).standardOutput.contains("app 734771186: added from"))
        let added = try await run(["models", "add", "--effective-from", "2026-03-15", next])
        #expect(added.status == 0, "\(added.standardError)")
        #expect(added.standardOutput.contains("app 734771186: added to the timeline from"), "\(added.standardOutput)")
        #expect(
            added.standardOutput.contains(
                "in force from 2026-03-15T00:00:00.000Z: changes the days received from 2026-03-16 on (re-run postbackd aggregate --from 2026-03-16 --to "
            ),
            "\(added.standardOutput)"
        )
        let again = try await run(["models", "add", "--effective-from", "2026-03-15", next])
        #expect(again.standardOutput.contains("app 734771186: unchanged from"), "\(again.standardOutput)")

        let list = try await run(["models", "list"])
        #expect(list.standardOutput.contains("app 734771186: 64 fine values"), "\(list.standardOutput)")
        #expect(list.standardOutput.contains("app 734771186 from 2026-03-15T00:00:00.000Z: 64 fine values"))
        let json = try await run(["models", "list", "--format", "json"])
        let entries = try #require(
            try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [[String: Any]]
        )
        #expect(entries.map { $0["in_force_from"] as? String } == [nil, "2026-03-15T00:00:00.000Z"])
        #expect(entries.allSatisfy { $0["conversion_type"] as? String == "install" })

        // The subscription's price: 9.99 before the new schema, 12.99 in it.
        let before = try await run(["models", "show", "--at", "2026-03-14T23:59:59Z", "734771186"])
        let after = try await run(["models", "show", "--at", "2026-03-15", "734771186"])
        #expect(before.standardOutput.contains(": 9.99") && !before.standardOutput.contains(": 12.99"))
        #expect(after.standardOutput.contains(": 12.99") && !after.standardOutput.contains(": 9.99"))
        let none = try await run(["models", "show", "--conversion-type", "re-engagement", "734771186"])
        #expect(none.status == 2 && none.standardError.contains("no re-engagement model for app 734771186"))
        let bad = try await run(["models", "add", "--effective-from", "soon", next])
        #expect(bad.status == 2 && bad.standardError.contains("--effective-from soon is not an ISO 8601"))
    }
}
