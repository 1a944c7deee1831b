import Foundation
import PostbackTestSupport
import Testing

extension TestStore {
    /// The README's sample: the generated postbacks and Apple's, the models, aggregated.
    static func sample(_ engine: TestEngine, in directory: TemporaryDirectory) async throws -> TestStore {
        let store = try await TestStore.make(engine, in: directory)
        let generated = try FileManager.default.contentsOfDirectory(
            atPath: Repository.path("SamplePostbacks/generated")
        )
        .filter { $0.hasSuffix(".jsonl") }.sorted().map { Repository.path("SamplePostbacks/generated/" + $0) }
        let models = try FileManager.default.contentsOfDirectory(atPath: Repository.path("SamplePostbacks/models"))
            .filter { $0.hasSuffix(".json") }.sorted().map { Repository.path("SamplePostbacks/models/" + $0) }
        for arguments in [
            [
                "ingest", "--db", store.argument, "--keys", Repository.path("Keys/test"), "--keys",
                Repository.path("Keys/apple"),
            ]
                + generated + [Repository.path("SamplePostbacks/apple")],
            ["models", "add", "--db", store.argument] + models,
            ["aggregate", "--db", store.argument],
        ] {
            let run = try await Postbackd.run(arguments)
            #expect(run.status == 0, "\(arguments.prefix(2)): \(run.standardError)")
        }
        return store
    }
}
