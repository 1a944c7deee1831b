import PostbackKit
import PostbackStore
import Testing

/// `Report.folded(keeping:)`: the one way rows are summed to fewer dimensions (the dashboard's
/// panels, a report converted day by day then summed back).
@Suite("Folding a report's rows")
struct ReportFoldTests {
    private func row(_ day: String, _ network: String, installs: Int, usd: Double, spend: Double? = nil) -> ReportRow {
        var row = ReportRow(dimensions: [.text(day), .text(network)])
        row.counts[.installs] = installs
        row.counts[.postbacks] = installs
        row.revenue["USD"] = RevenueTotal(min: usd, max: usd * 2, estimate: usd * 1.5)
        if let spend { row.spend["USD"] = spend }
        return row
    }

    private func report(_ rows: [ReportRow]) -> Report {
        Report(dimensions: [.date, .adNetworkID], events: false, rows: rows, currencies: ["USD"], policy: nil)
    }

    @Test("amounts read from the store are summed in micros: exact, whatever the order of the rows")
    func exactSums() {
        let rows = [
            row("2026-01-01", "b", installs: 1, usd: 0.1, spend: 0.1),
            row("2026-01-02", "b", installs: 2, usd: 0.2, spend: 0.2),
            row("2026-01-03", "b", installs: 3, usd: 0.3, spend: 0.3),
            row("2026-01-01", "a", installs: 4, usd: 1.000001),
        ]
        // As doubles, 0.1 + 0.2 + 0.3 is 0.6000000000000001.
        #expect(0.1 + 0.2 + 0.3 != 0.6)
        for order in [rows, rows.reversed()] {
            let byNetwork = report(order).folded(keeping: [1])
            #expect(byNetwork.dimensions == [.adNetworkID])
            #expect(byNetwork.rows.map(\.dimensions) == [[.text("a")], [.text("b")]])
            let b = byNetwork.rows[1]
            #expect(b.counts[.installs] == 6)
            #expect(b.revenue["USD"] == RevenueTotal(min: 0.6, max: 1.2, estimate: 0.9))
            #expect(b.spend["USD"] == 0.6)
            #expect(byNetwork.rows[0].revenue["USD"]?.min == 1.000001)
            #expect(byNetwork.rows[0].spend.isEmpty)
        }
        let byDay = report(rows).folded(keeping: [0])
        #expect(byDay.rows.map(\.dimensions) == [[.text("2026-01-01")], [.text("2026-01-02")], [.text("2026-01-03")]])
        #expect(byDay.rows[0].counts[.installs] == 5)
        #expect(report(rows).folded(keeping: []).rows.map { $0.counts[.installs] } == [10])
    }

    @Test("converted amounts are summed as they are, in row order; one unconverted part empties the row")
    func convertedSums() {
        var converted = report([
            row("2026-01-01", "a", installs: 1, usd: 0.1234567),
            row("2026-01-02", "a", installs: 1, usd: 0.0000004),
            row("2026-01-01", "b", installs: 1, usd: 5, spend: 2),
            row("2026-01-02", "b", installs: 1, usd: 5, spend: 2),
        ])
        converted.currency = "USD"
        converted.rows[3].unconverted = true
        let folded = converted.folded(keeping: [1])
        // Not rounded to micros part by part.
        #expect(folded.rows[0].revenue["USD"]?.min == 0.1234567 + 0.0000004)
        #expect(!folded.rows[0].unconverted)
        #expect(folded.rows[1].unconverted)
        #expect(folded.rows[1].revenue.isEmpty && folded.rows[1].spend.isEmpty)
        #expect(folded.rows[1].counts[.installs] == 2)
        #expect(folded.currency == "USD")
    }

    @Test("events keep their event and model apart; tier shares are computed again")
    func eventsAndTiers() {
        func event(_ network: String, _ name: String, _ occurrences: Int) -> ReportRow {
            var row = ReportRow(dimensions: [.text("2026-01-01"), .text(network)])
            row.event = name
            row.eventModel = "install"
            row.occurrencesMin = occurrences
            row.occurrencesMax = occurrences
            row.eventPostbacks = 1
            return row
        }
        let events = Report(
            dimensions: [.date, .adNetworkID],
            events: true,
            rows: [event("a", "purchase", 1), event("a", "signup", 2), event("b", "purchase", 3)],
            currencies: [],
            policy: nil
        ).folded(keeping: [0])
        #expect(events.rows.map(\.event) == ["purchase", "signup"])
        #expect(events.rows.map(\.occurrencesMin) == [4, 2])
        #expect(events.rows.map(\.eventPostbacks) == [2, 1])

        func tier(_ network: String, _ tier: Int64, _ postbacks: Int) -> ReportRow {
            var row = ReportRow(dimensions: [.text(network), .integer(tier)])
            row.counts[.postbacks] = postbacks
            return row
        }
        let tiers = Report(
            dimensions: [.adNetworkID, .crowdAnonymityTier],
            events: false,
            rows: [tier("a", 1, 1), tier("a", 2, 3), tier("b", 1, 2), tier("b", 2, 2)],
            currencies: [],
            policy: nil
        ).folded(keeping: [1])
        #expect(tiers.rows.map { $0.counts[.postbacks] } == [3, 5])
        #expect(tiers.rows.map(\.tierShare) == [3.0 / 8, 5.0 / 8])
    }
}
