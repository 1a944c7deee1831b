import AsyncHTTPClient
import Foundation
import PostbackServer
import PostbackTestSupport
import Testing

/// docs/openapi.yaml against the routes `serve` has: the document `GET /openapi.json` answers
/// names every route with its methods, and nothing else.
@Suite("the HTTP contract", .timeLimit(.minutes(20)))
struct ContractTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory("contract")
    }

    @Test("GET /openapi.json: every route and method of the server, and no other")
    func routes() async throws {
        let server = try await ServerProcess.start(
            ["--db", directory.path + "/store.sqlite", "--keys", TestKeys.directory],
            directory: directory.path
        )
        let answer = try await HTTPClient.forTests().send(.GET, server.base + "/openapi.json")
        #expect(server.stop() == 0)
        #expect(answer.status == 200)
        #expect(answer.header("Content-Type") == "application/json")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any])
        #expect((document["openapi"] as? String)?.hasPrefix("3.1") == true)
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        // The report paths take a trailing slash too: the document names them as Apple calls them.
        let documented = Set(
            paths.flatMap { path, operations in
                let route = path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
                return operations.keys.filter {
                    ["get", "post", "put", "delete", "patch", "head", "options"].contains($0)
                }
                .map { "\($0.uppercased()) \(route)" }
            }
        )
        let served = Set(
            ServeRoute.allCases.flatMap { route in route.methods.map { "\($0.rawValue) \(route.pattern)" }
            }
        )
        #expect(
            documented == served,
            "documented, not served: \(documented.subtracting(served)); served, not documented: \(served.subtracting(documented))"
        )
        // Every operation documents its answers with a content type (or none, for a redirect).
        for (path, operations) in paths {
            for (method, operation) in operations {
                guard let operation = operation as? [String: Any],
                    let responses = operation["responses"] as? [String: Any]
                else { continue }
                #expect(!responses.isEmpty, "\(method) \(path) documents no answer")
            }
        }
    }
}
