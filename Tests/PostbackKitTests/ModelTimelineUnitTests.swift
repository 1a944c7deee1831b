import PostbackKit
import PostbackTestSupport
import Testing

@Suite("Model timelines")
struct ModelTimelineUnitTests {
    /// App 111's fixture model, fine value 20 worth `min`–`max` USD.
    static func model(_ min: Int, _ max: Int) throws -> ConversionModel {
        try ConversionModelParser.parse(
            Array(
                FixtureModels.app111.replacingOccurrences(
                    of: "\"minEventRevenue\": 5.0, \"maxEventRevenue\": 10.0",
                    with: "\"minEventRevenue\": \(min), \"maxEventRevenue\": \(max)"
                ).utf8
            )
        )
    }

    @Test("the first model is in force from the beginning, each later one from its time")
    func inForce() throws {
        let first = try Self.model(5, 10)
        let second = try Self.model(6, 12)
        let start = try #require(UTCInstant(iso8601: "2026-03-15T00:00:00Z"))
        // Given in either order, with the first's own time later than nothing before it.
        let models = ConversionModels(timeline: [
            TimelineModel(second, effectiveFrom: start),
            TimelineModel(first, effectiveFrom: UTCInstant(iso8601: "2026-03-10T00:00:00Z")),
        ])
        func usd(_ received: String, version: String? = "4.0") throws -> (Int64?, Bool) {
            let (decoded, ambiguous) = models.decode(
                appID: 111,
                value: .fine(20),
                sequenceIndex: 0,
                receivedAt: try #require(UTCInstant(iso8601: received)),
                version: version
            )
            guard case .mapped(let events) = decoded else { return (nil, ambiguous) }
            return (events.first?.revenue?.minMicros, ambiguous)
        }
        #expect(try usd("2026-01-01T00:00:00Z") == (5_000_000, false), "before the first's own time: the first")
        #expect(try usd("2026-03-15T23:59:59.999Z") == (5_000_000, false), "set by 03-14T23:59: the first")
        #expect(try usd("2026-03-16T00:00:00Z") == (6_000_000, true), "set by 03-15T00:00: the second, ambiguous")
        #expect(try usd("2026-03-19T00:00:00Z") == (6_000_000, false), "96 hours on: clear")
        #expect(try usd("2026-03-17T00:00:00Z", version: "3.0") == (6_000_000, false), "48 hours before 4.0")
        #expect(try usd("2026-03-16T23:59:59.999Z", version: "3.0") == (6_000_000, true))
        #expect(models.decode(appID: 111, value: .fine(20), sequenceIndex: 0).isSecond(second))
        #expect(models.decode(appID: 222, value: .fine(20), sequenceIndex: 0) == .unmodelled)
        #expect(
            models.decode(appID: 111, value: .fine(20), sequenceIndex: 0, conversionType: .reengagement)
                == .unmodelled,
            "a re-engagement is never decoded with the install model"
        )
    }

    @Test("a day's breakpoints: every received_at decodes like its bucket's representative")
    func breakpoints() throws {
        let models = ConversionModels(timeline: [
            TimelineModel(try Self.model(5, 10)),
            TimelineModel(try Self.model(6, 12), effectiveFrom: UTCInstant(iso8601: "2026-03-15T07:30:00Z")),
            TimelineModel(try Self.model(7, 14), effectiveFrom: UTCInstant(iso8601: "2026-03-17T19:00:00Z")),
        ])
        var days = 0
        var withBreakpoints = 0
        // Every day from before the first change to past the last one's longest span.
        for offset in 0..<50 {
            let day = UTCDay(daysSinceEpoch: try #require(UTCDay("2026-03-14")).daysSinceEpoch + Int64(offset))
            let (apps, points) = models.breakpoints(in: day)
            days += 1
            if !points.isEmpty { withBreakpoints += 1 }
            #expect(apps == (points.isEmpty ? [] : [111]))
            // Every 10 minutes of the day, each version and index, each value.
            for minute in stride(from: 0, to: 1_440, by: 10) {
                let received = UTCInstant(milliseconds: day.start.milliseconds + Int64(minute) * 60_000 + 7)
                let bucket = ConversionModels.bucket(received, breakpoints: points)
                let stand = ConversionModels.representative(bucket: bucket, breakpoints: points, day: day)
                for (version, index) in [("3.0", 0), ("4.0", 0), ("4.0", 1), ("4.0", 2), (nil, 2)] as [(String?, Int)] {
                    for value in [ConversionValue.fine(20), .coarse(.medium), nil] {
                        let actual = models.decode(
                            appID: 111,
                            value: value,
                            sequenceIndex: index,
                            receivedAt: received,
                            version: version
                        )
                        let represented = models.decode(
                            appID: 111,
                            value: value,
                            sequenceIndex: index,
                            receivedAt: stand,
                            version: version
                        )
                        #expect(
                            actual.decoded == represented.decoded && actual.ambiguous == represented.ambiguous,
                            "\(received.iso8601) (bucket \(bucket), as \(stand.iso8601)) \(version ?? "AAK") #\(index)"
                        )
                    }
                }
            }
        }
        // Two starts, five breakpoints each, some on the same day.
        #expect(withBreakpoints >= 6 && withBreakpoints <= 10, "\(withBreakpoints) of \(days) days")
    }
}

extension DecodedConversionValue {
    fileprivate func isSecond(_ second: ConversionModel) -> Bool {
        self == second.decode(.fine(20), sequenceIndex: 0)
    }
}
