import PostbackKit
import PostbackStore
import PostbackTestSupport
import Testing

/// A report asked for by options (`postbackd report`, and the report API): parsing, refusals,
/// and the app and network filters on both engines.
@Suite("Report requests and their filters, on every engine")
struct ReportRequestTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory("report-request")
    }

    private func request(_ edit: (inout ReportRequest.Options) -> Void) throws(ReportRequestError) -> ReportRequest {
        var options = ReportRequest.Options()
        edit(&options)
        return try ReportRequest.parse(options)
    }

    @Test("options parse into the query; by given empty is one row of totals, not the default")
    func parse() throws {
        let plain = try request { _ in }
        #expect(plain.query.dimensions == [.date, .adNetworkID])
        let install = try request { $0.dateBasis = "install" }
        #expect(install.query.dimensions == [.installDate, .adNetworkID])
        #expect(try request { $0.by = "" }.query.dimensions == [])
        let filtered = try request {
            $0.appIDs = ["12, 34", "12"]
            $0.adNetworkIDs = ["a.skadnetwork,b.skadnetwork"]
            $0.from = "2026-11-01"
            $0.to = "2026-11-30"
        }
        #expect(filtered.query.appIDs == [12, 34])
        #expect(filtered.query.adNetworkIDs == ["a.skadnetwork", "b.skadnetwork"])
        #expect(filtered.query.from == UTCDay("2026-11-01"))
    }

    private static func options(_ edit: (inout ReportRequest.Options) -> Void) -> ReportRequest.Options {
        var options = ReportRequest.Options()
        edit(&options)
        return options
    }

    @Test(
        "a bad option is refused, naming it",
        arguments: [
            ("app-id", options { $0.appIDs = ["x"] }),
            ("app-id", options { $0.appIDs = ["0"] }),
            ("ad-network-id", options { $0.adNetworkIDs = [" , "] }),
            ("from", options { $0.from = "2026-13-01" }),
            (
                "from",
                options {
                    $0.from = "2026-11-20"
                    $0.to = "2026-11-01"
                }
            ),
            ("by", options { $0.by = "date,nope" }),
            ("date-basis", options { $0.dateBasis = "sent" }),
            (
                "with-apple-ads",
                options {
                    $0.withAppleAds = true
                    $0.appIDs = ["12"]
                }
            ),
        ]
    )
    func refusals(_ option: String, _ options: ReportRequest.Options) {
        #expect(throws: ReportRequestError.self) { try ReportRequest.parse(options) }
        do {
            _ = try ReportRequest.parse(options)
        } catch {
            #expect(error.option == option)
        }
    }

    @Test(
        "the app and network filters keep exactly the rows of those apps and networks",
        arguments: TestEngine.available
    )
    func filters(_ engine: TestEngine) async throws {
        let store = try await TestStore.make(engine, in: directory, name: "filters")
        try await ingest([Repository.path("SamplePostbacks/generated")], into: store.location)
        _ = try await AggregateJob.run(store.location, .all, policy: .midpoint)
        let all = try await ReportJob.run(store.location, try request { $0.by = "app_id,ad_network_id" }).report
        let apps = Set(all.rows.map { $0.dimensions[0] })
        let networks = Set(all.rows.map { $0.dimensions[1] })
        #expect(apps.count > 2 && networks.count > 2)
        guard case .integer(let app) = all.rows[0].dimensions[0], case .text(let network) = all.rows.last?.dimensions[1]
        else {
            Issue.record("the sample has no app id or network")
            return
        }
        let expected = all.rows.filter { $0.dimensions[0] == .integer(app) || $0.dimensions[1] == .text(network) }
        func filtered(_ edit: (inout ReportRequest.Options) -> Void) async throws -> [ReportRow] {
            let parsed = try request {
                $0.by = "app_id,ad_network_id"
                edit(&$0)
            }
            return try await ReportJob.run(store.location, parsed).report.rows
        }
        let byApp = try await filtered { $0.appIDs = [String(app)] }
        #expect(byApp.map(\.dimensions) == all.rows.filter { $0.dimensions[0] == .integer(app) }.map(\.dimensions))
        #expect(
            byApp.map { $0.counts[.installs] }
                == all.rows.filter { $0.dimensions[0] == .integer(app) }.map { $0.counts[.installs] }
        )
        let byNetwork = try await filtered { $0.adNetworkIDs = [network] }
        #expect(byNetwork.map(\.dimensions) == all.rows.filter { $0.dimensions[1] == .text(network) }.map(\.dimensions))
        let both = try await filtered {
            $0.appIDs = [String(app)]
            $0.adNetworkIDs = [network]
        }
        #expect(
            both.map(\.dimensions)
                == expected.filter { $0.dimensions[0] == .integer(app) && $0.dimensions[1] == .text(network) }.map(
                    \.dimensions
                )
        )
        // Revenue is filtered with the counts.
        let total = try await filtered {
            $0.by = ""
            $0.appIDs = [String(app)]
        }
        let appRevenue = all.rows.filter { $0.dimensions[0] == .integer(app) }.compactMap {
            $0.revenue["USD"]?.estimate
        }.reduce(0, +)
        #expect(abs((total.first?.revenue["USD"]?.estimate ?? 0) - appRevenue) < 0.01)
        #expect(try await filtered { $0.appIDs = ["999999999"] }.isEmpty)
    }
}
