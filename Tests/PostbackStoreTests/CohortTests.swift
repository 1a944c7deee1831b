import Foundation
import PostbackKit
import PostbackStore
import PostbackTestSupport
import Testing

/// `report --cohorts` on every engine: cohorts by install date from postbacks 0, 1 and 2
/// received days apart, their counts, rates and revenue per window as the test plans them, and
/// each window final at its edge.
@Suite("Cohorts by install date, on every engine")
struct CohortTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory("cohorts")
    }

    /// The install dates of the corpus and, per window, how many postbacks each has (app 111:
    /// postbacks 0 fine 20, USD 5–10 each; postbacks 1 coarse medium, EUR 2–4; postbacks 2
    /// coarse low, which its model does not map).
    static let first = "2026-11-10"
    static let second = "2026-11-11"
    static let plan: [String: [Int]] = [first: [10, 6, 3], second: [4, 0, 0]]

    /// A postback of window `window` of an install at noon of `day` arrives its mean delay
    /// later (84, 252 or 924 hours), so that its estimated install date is `day`.
    func corpusStore(_ engine: TestEngine) async throws -> TestStore {
        let store = try await TestStore.make(engine, in: directory, name: "cohorts")
        _ = try await ModelsJob.add(
            files: [try directory.write("m111.json", FixtureModels.app111)],
            location: store.location
        )
        var id = 0
        for (day, counts) in Self.plan.sorted(by: { $0.key < $1.key }) {
            for (window, count) in counts.enumerated() where count > 0 {
                let lines = try (0..<count).map { _ in
                    id += 1
                    let value: ConversionValue =
                        window == 0 ? .fine(20) : window == 1 ? .coarse(.medium) : .coarse(.low)
                    let postback = AggregateFixture.postback(.v4_0, id: id, value: value, sequenceIndex: window)
                    return try TestKeys.signer.signed(postback).jsonText()
                }
                let hours = [84, 252, 924][window]
                let noon = try #require(UTCInstant(iso8601: day + "T12:00:00Z"))
                try await ingest(
                    [try directory.write("\(day)-\(window)-\(engine).jsonl", lines.joined(separator: "\n"))],
                    into: store.location,
                    receivedAt: UTCInstant(milliseconds: noon.milliseconds + Int64(hours) * 3_600_000)
                )
            }
        }
        _ = try await AggregateJob.run(store.location, .all, policy: .midpoint)
        return store
    }

    private func cohorts(_ store: TestStore, asOf: String) async throws -> Report {
        var options = ReportRequest.Options()
        options.cohorts = true
        options.asOf = asOf
        return try await ReportJob.run(store.location, try ReportRequest.parse(options)).report
    }

    @Test(
        "counts, rates and revenue per window equal the plan; each window is final at its edge",
        arguments: TestEngine.available
    )
    func cohorts(_ engine: TestEngine) async throws {
        let store = try await corpusStore(engine)
        func instant(_ day: String, plus days: Int64) throws -> String {
            let start = try #require(UTCDay(day))
            return UTCInstant(milliseconds: (start.daysSinceEpoch + days) * 86_400_000).iso8601
        }
        let report = try await cohorts(store, asOf: try instant(Self.first, plus: 23))
        let rows = try #require(report.cohortRows)
        #expect(rows.map(\.dimensions) == [[.text(Self.first)], [.text(Self.second)]])
        for row in rows {
            guard case .text(let day) = row.dimensions[0], let planned = Self.plan[day] else {
                Issue.record("unplanned \(row.dimensions)")
                continue
            }
            #expect(row.installs == planned[0], "\(day)")
            #expect(row.postbacks == planned, "\(day)")
            #expect(row.rate(1) == Double(planned[1]) / Double(planned[0]), "\(day)")
            #expect(row.rate(2) == Double(planned[2]) / Double(planned[0]), "\(day)")
            // Window 0: fine 20, USD 7.5 each at the midpoint; window 1: coarse medium, EUR 3
            // each; window 2: not mapped.
            #expect(row.revenue[0]["USD"]?.estimate == 7.5 * Double(planned[0]), "\(day)")
            #expect(row.revenue[1]["EUR"]?.estimate == (planned[1] > 0 ? 3 * Double(planned[1]) : nil), "\(day)")
            #expect(row.revenue[2].isEmpty, "\(day)")
        }
        // 23 days after the first install date begins: its windows 0 and 1 are final, its window
        // 2 not; the second day's window 1 not yet.
        #expect(report.maturity(rows[0]).map { [$0.installs, $0.window1, $0.values] } == [true, true, false])
        #expect(report.maturity(rows[1]).map { [$0.installs, $0.window1, $0.values] } == [true, false, false])
        let csv = report.formatted(.csv)
        #expect(csv.hasPrefix("install_date,installs,postbacks_0,revenue_0_EUR,revenue_0_USD,window_0_final,"))
        #expect(csv.contains("\n\(Self.first),10,10,0,75,true,6,0.6,18,0,true,3,0.3,0,0,false\n"), "\(csv)")
        // The first day's window 2 is final 51 days after it begins, not a millisecond before.
        let edge = try await cohorts(store, asOf: try instant(Self.first, plus: 51))
        #expect(edge.cohortRows.map { $0.map { edge.maturity($0)?.values } } == [true, false])
        let start = try #require(UTCDay(Self.first))
        let justBefore = UTCInstant(milliseconds: (start.daysSinceEpoch + 51) * 86_400_000 - 1).iso8601
        let before = try await cohorts(store, asOf: justBefore)
        #expect(before.cohortRows.map { $0.map { before.maturity($0)?.values } } == [false, false])
        let table = report.formatted(.table)
        #expect(table.contains("*: not final as of"), "\(table)")

        // Cohorts group by install date: other options are refused, naming --cohorts.
        for (by, basis) in [
            ("ad_network_id", "install"), ("install_date", "received"),
            ("install_date,postback_sequence_index", "install"),
        ] {
            var options = ReportRequest.Options()
            options.cohorts = true
            options.by = by
            options.dateBasis = basis
            #expect(throws: ReportRequestError.self) { try ReportRequest.parse(options) }
        }
    }
}
