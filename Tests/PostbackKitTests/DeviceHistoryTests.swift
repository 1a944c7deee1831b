import PostbackKit
import Testing

/// What the server keeps per device for the client snippet's endpoint.
@Suite("Device histories of the conversion value endpoint")
struct DeviceHistoryTests {
    let start = UTCInstant(seconds: 1_795_000_000)

    private func call(
        _ event: String,
        at hours: Double,
        first: Bool = true,
        revenue: [String: Int64]? = nil,
        adRevenue: [String: Int64]? = nil,
        request: [UInt8]? = nil
    ) -> DeviceCall {
        let at = UTCInstant(milliseconds: start.milliseconds + Int64(hours * 3_600_000))
        return DeviceCall(
            appID: 1,
            device: [1, 2, 3],
            at: at,
            event: event,
            firstCallAt: first ? start : nil,
            revenueTotals: revenue,
            adRevenueTotals: adRevenue,
            request: request ?? Array("\(event)\(hours)".utf8)
        )
    }

    private func replay(_ calls: [DeviceCall]) -> DeviceHistory? {
        var history: DeviceHistory? = nil
        for call in calls { history = DeviceHistory.recording(call, after: history) }
        return history
    }

    @Test("each call is an event at its hour after the first call")
    func eventsAtTheirHours() throws {
        let history = try #require(replay([call("__SESSION__", at: 0), call("level", at: 2.5), call("level", at: 30)]))
        #expect(history.events.map(\.name) == ["__SESSION__", "level", "level"])
        #expect(history.events.map(\.hours) == [0, 2.5, 30])
        #expect(history.firstCallAt == start)
    }

    @Test("without the app's timestamp the first call the server saw starts the clock")
    func firstCallWithoutTimestamp() throws {
        let history = try #require(replay([call("a", at: 1, first: false), call("b", at: 4, first: false)]))
        #expect(history.events.map(\.hours) == [0, 3])
    }

    @Test("revenue is the increase of each currency's totals since the previous call, in-app and ad revenue together")
    func revenueIncrease() throws {
        let history = try #require(
            replay([
                call("purchase", at: 1, revenue: ["USD": 4_990_000]),
                call("__SESSION__", at: 2, revenue: ["USD": 4_990_000]),
                call("purchase", at: 3, revenue: ["USD": 9_980_000, "EUR": 1_000_000], adRevenue: ["USD": 20_000]),
                // A reinstall resets the app's totals: the new base adds nothing.
                call("purchase", at: 4, revenue: ["USD": 1_000_000, "EUR": 1_000_000]),
                call("purchase", at: 5, revenue: ["USD": 3_000_000]),
            ])
        )
        #expect(history.events[0].revenue == [.init(micros: 4_990_000, currency: "USD")])
        #expect(history.events[1].revenue == [])
        #expect(
            history.events[2].revenue == [
                .init(micros: 1_000_000, currency: "EUR"), .init(micros: 5_010_000, currency: "USD"),
            ]
        )
        #expect(history.events[3].revenue == [])
        #expect(history.events[4].revenue == [.init(micros: 2_000_000, currency: "USD")])
        // A call without totals changes nothing about them.
        let after = try #require(DeviceHistory.recording(call("x", at: 6), after: history))
        #expect(after.revenueTotals == history.revenueTotals && after.events.last?.revenue == [])
    }

    @Test("the same request again within a minute is a retry and records nothing; later it is a new event")
    func retries() throws {
        let first = call("level", at: 1, request: [9])
        let history = try #require(DeviceHistory.recording(first, after: nil))
        var again = first
        again.at = UTCInstant(milliseconds: first.at.milliseconds + 5_000)
        #expect(DeviceHistory.recording(again, after: history) == history)
        again.at = UTCInstant(milliseconds: first.at.milliseconds + 61_000)
        #expect(DeviceHistory.recording(again, after: history)?.events.count == 2)
        var other = first
        other.request = [8]
        #expect(DeviceHistory.recording(other, after: history)?.events.count == 2)
    }

    @Test("a retry of any of the device's last requests records nothing, even after others")
    func retryOfAnEarlierRequest() throws {
        let first = call("level", at: 1, request: [1])
        let second = call("level", at: 1.001, request: [2])
        var history = try #require(replay([first, second]))
        var again = first
        again.at = UTCInstant(milliseconds: second.at.milliseconds + 1_000)
        #expect(DeviceHistory.recording(again, after: history) == history)
        // Only the last few are remembered.
        for index in 3...12 {
            history = try #require(
                DeviceHistory.recording(call("e", at: 1.002, request: [UInt8(index)]), after: history)
            )
        }
        #expect(history.recentRequests.count == DeviceHistory.recentRequestCount)
    }

    @Test("a later first call is a new install: the history starts again")
    func reinstall() throws {
        let history = try #require(replay([call("level", at: 1, revenue: ["USD": 5_000_000]), call("level", at: 2)]))
        var reinstalled = call("level", at: 100, revenue: ["USD": 1_000_000])
        reinstalled.firstCallAt = UTCInstant(milliseconds: start.milliseconds + 99 * 3_600_000)
        let next = try #require(DeviceHistory.recording(reinstalled, after: history))
        #expect(next.firstCallAt == reinstalled.firstCallAt)
        #expect(next.events.map(\.hours) == [1])
        #expect(next.events[0].revenue == [.init(micros: 1_000_000, currency: "USD")])
    }

    @Test("an event the model does not name is not kept; its revenue still moves the totals")
    func unnamedEvents() throws {
        var unnamed = call("tutorial", at: 1, revenue: ["USD": 2_000_000])
        unnamed.recordsEvent = false
        let history = try #require(DeviceHistory.recording(unnamed, after: nil))
        #expect(history.events.isEmpty)
        let next = try #require(
            DeviceHistory.recording(call("purchase", at: 2, revenue: ["USD": 3_000_000]), after: history)
        )
        #expect(next.events.map(\.revenue) == [[.init(micros: 1_000_000, currency: "USD")]])

        let model = try ConversionModelParser.parse(
            Array(
                #"""
                {"appId": "1", "fineGrainedConversionValueMappings": [{"fineGrainedConversionValue": 1, "conversionValueMapping":
                {"mappedEvents": [{"mappedEventName": "purchase"}]}}], "postbackMappings": [{"postbackSequenceIndex": 1,
                "lockWindowEvent": "boss", "coarseGrainedConversionValueMappings": {"lowConversionValueMapping":
                {"mappedEvents": [{"mappedEventName": "session"}]}}}]}
                """#.utf8
            )
        )
        #expect(DeviceHistory.keeps("purchase", for: model))
        #expect(DeviceHistory.keeps("boss", for: model), "a lock trigger's event")
        #expect(DeviceHistory.keeps("__SESSION__", for: model))
        #expect(!DeviceHistory.keeps("tutorial", for: model))
    }

    @Test("a device's currencies are bounded")
    func boundedCurrencies() throws {
        var totals: [String: Int64] = [:]
        for index in 0..<40 {
            let code =
                String(UnicodeScalar(UInt8(65 + index / 26))) + String(UnicodeScalar(UInt8(65 + index % 26))) + "X"
            totals[code] = 1_000_000
        }
        let history = try #require(DeviceHistory.recording(call("purchase", at: 1, revenue: totals), after: nil))
        #expect(history.revenueTotals.count == DeviceHistory.maximumCurrencies)
    }

    @Test("nothing is kept 35 days after the first call")
    func retention() throws {
        let history = replay([call("a", at: 0), call("b", at: 839.9)])
        #expect(history?.events.count == 2)
        #expect(DeviceHistory.recording(call("c", at: 840), after: history) == nil)
    }

    @Test("a device's events are bounded")
    func bounded() throws {
        var history: DeviceHistory? = nil
        for index in 0..<(DeviceHistory.maximumEvents + 10) {
            history = DeviceHistory.recording(call("e", at: Double(index) / 100), after: history)
        }
        #expect(history?.events.count == DeviceHistory.maximumEvents)
    }

    @Test("the stored form reads back the same history")
    func storedForm() throws {
        let history = try #require(
            replay([
                call("__SESSION__", at: 0),
                call("purchase \"big\"", at: 1.0001033333333333, revenue: ["USD": 4_990_000, "EUR": 1]),
                call("ad", at: 700, adRevenue: ["JPY": 120_000_000]),
            ])
        )
        let read = DeviceHistory(
            storedJSON: history.storedJSON,
            firstCallAt: history.firstCallAt,
            lastCallAt: history.lastCallAt,
            lastRequest: history.lastRequest
        )
        #expect(read == history)
        #expect(DeviceHistory(storedJSON: "{", firstCallAt: start, lastCallAt: start, lastRequest: []) == nil)
    }

    @Test("__SESSION__ counts as the model's session event unless the model names __SESSION__")
    func sessionAlias() throws {
        let history = try #require(replay([call("__SESSION__", at: 0)]))
        func answer(_ eventName: String) throws -> CoarseConversionValue? {
            let text = #"""
                {"appId": "1", "postbackMappings": [{"postbackSequenceIndex": 0, "coarseGrainedConversionValueMappings":
                {"lowConversionValueMapping": {"mappedEvents": [{"mappedEventName": "\#(eventName)"}]}}}]}
                """#
            let model = try ConversionModelParser.parse(Array(text.utf8))
            let state = history.state(
                for: model,
                at: start,
                currentFine: nil,
                currentCoarse: [nil, nil, nil],
                currentLocked: [false, false, false]
            )
            return model.encode(state).coarse
        }
        #expect(try answer("session") == .low)
        #expect(try answer("__SESSION__") == .low)
        #expect(try answer("level") == nil)
    }
}
