import PostbackKit
import Testing

/// Encoding (spec, "Encoding"): the next conversion value from the same model decoding uses.
/// One test per rule, then a property over generated models and states.
@Suite("Encoding the next conversion value")
struct EncodingTests {
    /// A model from the JSON of its fine mappings, postback mappings and extra fields.
    private func model(fine: String = "[]", postbacks: String = "[]") throws -> ConversionModel {
        let text =
            #"{"appId": "525463029", "fineGrainedConversionValueMappings": \#(fine), "postbackMappings": \#(postbacks)}"#
        return try ConversionModelParser.parse(Array(text.utf8))
    }

    private func fine(_ value: Int, _ mapping: String) -> String {
        #"{"fineGrainedConversionValue": \#(value), "conversionValueMapping": \#(mapping)}"#
    }

    private func event(
        _ name: String,
        hours: Double,
        revenue: Double? = nil,
        currency: String? = "USD"
    )
        -> UserState.Event
    {
        UserState.Event(
            name: name,
            hours: hours,
            revenueMicros: revenue.map { Int64(($0 * 1_000_000).rounded()) },
            currency: revenue == nil ? nil : currency
        )
    }

    @Test("time bounds: only events in [min, max) hours count; max 0 or unset is no bound")
    func timeBounds() throws {
        let model = try model(
            fine: "["
                + fine(
                    1,
                    #"{"minTimePostInstallHours": "6", "maxTimePostInstallHours": "24", "mappedEvents": [{"mappedEventName": "level"}]}"#
                )
                + ","
                + fine(
                    2,
                    #"{"minTimePostInstallHours": 10, "maxTimePostInstallHours": "0", "mappedEvents": [{"mappedEventName": "boss"}]}"#
                )
                + "]"
        )
        func answer(_ events: [UserState.Event]) -> Int? {
            model.encode(UserState(elapsedHours: 40, events: events)).fine
        }
        #expect(answer([event("level", hours: 5.99)]) == 0)
        #expect(answer([event("level", hours: 6)]) == 1)
        #expect(answer([event("level", hours: 23.99)]) == 1)
        #expect(answer([event("level", hours: 24)]) == 0)
        #expect(answer([event("boss", hours: 9.5)]) == 0)
        #expect(answer([event("boss", hours: 47)]) == 2)
    }

    @Test(
        "counts: eventCounter is at least n; a range is [a, b] with b unset meaning no bound; neither is at least once"
    )
    func counts() throws {
        let model = try model(
            fine: "["
                + fine(10, #"{"mappedEvents": [{"mappedEventName": "once"}]}"#) + ","
                + fine(20, #"{"mappedEvents": [{"mappedEventName": "counter", "eventCounter": "3"}]}"#) + ","
                + fine(
                    30,
                    #"{"mappedEvents": [{"mappedEventName": "range", "eventOccurrenceRange": {"minEventCount": "2", "maxEventCount": "3"}}]}"#
                ) + ","
                + fine(
                    40,
                    #"{"mappedEvents": [{"mappedEventName": "open", "eventOccurrenceRange": {"minEventCount": 5}}]}"#
                )
                + "]"
        )
        func answer(_ name: String, times: Int) -> Int? {
            let events = (0..<times).map { event(name, hours: Double($0)) }
            return model.encode(UserState(elapsedHours: 47, events: events)).fine
        }
        #expect(answer("once", times: 0) == 0)
        #expect(answer("once", times: 1) == 10)
        #expect(answer("once", times: 7) == 10)
        #expect(answer("counter", times: 2) == 0)
        #expect(answer("counter", times: 3) == 20)
        #expect(answer("counter", times: 9) == 20)
        #expect(answer("range", times: 1) == 0)
        #expect(answer("range", times: 2) == 30)
        #expect(answer("range", times: 3) == 30)
        #expect(answer("range", times: 4) == 0)
        #expect(answer("open", times: 4) == 0)
        #expect(answer("open", times: 50) == 40)
    }

    @Test("revenue: a value is at least v; a range is [lo, hi) with hi unset meaning no bound; neither is no condition")
    func revenue() throws {
        let model = try model(
            fine: "["
                + fine(1, #"{"mappedEvents": [{"mappedEventName": "free"}]}"#) + ","
                + fine(
                    2,
                    #"{"mappedEvents": [{"mappedEventName": "buy", "currencyCode": "USD", "eventRevenueValue": 10}]}"#
                ) + ","
                + fine(
                    3,
                    #"{"mappedEvents": [{"mappedEventName": "sub", "currencyCode": "USD", "eventRevenueRange": {"minEventRevenue": 5, "maxEventRevenue": 20}}]}"#
                ) + ","
                + fine(
                    4,
                    #"{"mappedEvents": [{"mappedEventName": "whale", "currencyCode": "USD", "eventRevenueRange": {"minEventRevenue": 100}}]}"#
                )
                + "]"
        )
        func answer(_ events: [UserState.Event]) -> Int? {
            model.encode(UserState(elapsedHours: 1, events: events)).fine
        }
        #expect(answer([event("free", hours: 0)]) == 1)
        #expect(answer([event("free", hours: 0, revenue: 3)]) == 1)
        #expect(answer([event("buy", hours: 0, revenue: 9.99)]) == 0)
        #expect(answer([event("buy", hours: 0, revenue: 4), event("buy", hours: 1, revenue: 6)]) == 2, "revenue sums")
        #expect(answer([event("buy", hours: 0)]) == 0, "an event without revenue adds 0")
        #expect(answer([event("sub", hours: 0, revenue: 4.99)]) == 0)
        #expect(answer([event("sub", hours: 0, revenue: 5)]) == 3)
        #expect(answer([event("sub", hours: 0, revenue: 19.99)]) == 3)
        #expect(answer([event("sub", hours: 0, revenue: 20)]) == 0, "the top of a range is excluded")
        #expect(answer([event("whale", hours: 0, revenue: 99.99)]) == 0)
        #expect(answer([event("whale", hours: 0, revenue: 1_000)]) == 4)
    }

    @Test("currencies: only revenue in the event's currency counts")
    func currencies() throws {
        let model = try model(
            fine: "["
                + fine(
                    5,
                    #"{"mappedEvents": [{"mappedEventName": "buy", "currencyCode": "EUR", "eventRevenueValue": 10}]}"#
                ) + "]"
        )
        func answer(_ events: [UserState.Event]) -> Int? {
            model.encode(UserState(elapsedHours: 1, events: events)).fine
        }
        #expect(answer([event("buy", hours: 0, revenue: 50, currency: "USD")]) == 0)
        #expect(
            answer([
                event("buy", hours: 0, revenue: 6, currency: "EUR"),
                event("buy", hours: 1, revenue: 50, currency: "GBP"),
            ]) == 0
        )
        #expect(
            answer([
                event("buy", hours: 0, revenue: 6, currency: "EUR"),
                event("buy", hours: 1, revenue: 4, currency: "EUR"),
            ]) == 5
        )
    }

    @Test("values never go down: fine in window 0, coarse in every window")
    func neverDown() throws {
        let model = try model(
            fine: "[" + fine(7, #"{"mappedEvents": [{"mappedEventName": "a"}]}"#) + "]",
            postbacks:
                #"[{"postbackSequenceIndex": 1, "coarseGrainedConversionValueMappings": {"lowConversionValueMapping": {"mappedEvents": [{"mappedEventName": "a"}]}}}]"#
        )
        let events = [event("a", hours: 0)]
        #expect(model.encode(UserState(elapsedHours: 1, events: events, currentFine: 30)).fine == 30)
        #expect(model.encode(UserState(elapsedHours: 1, events: events, currentFine: 3)).fine == 7)
        #expect(
            model.encode(UserState(elapsedHours: 1, events: [], currentFine: nil)).fine == 0,
            "nothing holds, nothing set: 0"
        )
        let window1 = UserState(elapsedHours: 100, events: events, currentFine: 3, currentCoarse: [nil, .high, nil])
        #expect(model.encode(window1).coarse == .high)
        #expect(model.encode(window1).fine == 3, "windows 1 and 2 keep the fine value")
        #expect(model.encode(UserState(elapsedHours: 100, events: events)).coarse == .low)
        #expect(model.encode(UserState(elapsedHours: 100, events: events)).fine == nil)
        #expect(
            model.encode(UserState(elapsedHours: 100, events: [])).coarse == nil,
            "no mapping holds, none set: null"
        )
    }

    @Test("a locked window answers its current values, unchanged, with lock true")
    func lockedWindow() throws {
        let model = try model(
            fine: "[" + fine(9, #"{"mappedEvents": []}"#) + "]",
            postbacks:
                #"[{"postbackSequenceIndex": 0, "coarseGrainedConversionValueMappings": {"highConversionValueMapping": {"mappedEvents": []}}}]"#
        )
        let state = UserState(
            elapsedHours: 2,
            currentFine: 4,
            currentCoarse: [.low, nil, nil],
            currentLocked: [true, false, false]
        )
        #expect(model.encode(state) == ConversionValueAnswer(window: 0, fine: 4, coarse: .low, lock: true))
        var open = state
        open.currentLocked = [false, true, true]
        #expect(model.encode(open) == ConversionValueAnswer(window: 0, fine: 9, coarse: .high, lock: false))
    }

    @Test("each lock trigger: a coarse value reached, a fine value reached (window 0), an event over all time")
    func lockTriggers() throws {
        let model = try model(
            fine: "["
                + fine(
                    40,
                    #"{"mappedEvents": [{"mappedEventName": "buy", "currencyCode": "USD", "eventRevenueValue": 20}]}"#
                ) + "]",
            postbacks: #"""
                [{"postbackSequenceIndex": 0, "lockWindowFineConversionValue": 40},
                 {"postbackSequenceIndex": 1, "lockWindowCoarseConversionValue": "MEDIUM",
                  "coarseGrainedConversionValueMappings": {
                    "lowConversionValueMapping": {"mappedEvents": [{"mappedEventName": "open"}]},
                    "mediumConversionValueMapping": {"mappedEvents": [{"mappedEventName": "open", "eventCounter": 3}]}}},
                 {"postbackSequenceIndex": 2, "lockWindowEvent": "tutorial",
                  "coarseGrainedConversionValueMappings": {
                    "highConversionValueMapping": {"maxTimePostInstallHours": "1", "mappedEvents": [{"mappedEventName": "tutorial"}]}}}]
                """#
        )
        #expect(model.encode(UserState(elapsedHours: 3, events: [event("buy", hours: 1, revenue: 19)])).lock == false)
        #expect(model.encode(UserState(elapsedHours: 3, events: [event("buy", hours: 1, revenue: 25)])).lock == true)
        #expect(
            model.encode(UserState(elapsedHours: 3, currentFine: 41)).lock == true,
            "the answered value, kept from current"
        )

        let opens = (0..<3).map { event("open", hours: 50 + Double($0)) }
        #expect(model.encode(UserState(elapsedHours: 60, events: Array(opens.prefix(1)))).lock == false)
        #expect(model.encode(UserState(elapsedHours: 60, events: opens)).lock == true)
        #expect(model.encode(UserState(elapsedHours: 60, currentCoarse: [nil, .high, nil])).lock == true)

        // The event trigger ignores time bounds: a tutorial at hour 200 locks window 2 though its
        // high mapping (hours [0, 1)) does not hold.
        let late = model.encode(UserState(elapsedHours: 300, events: [event("tutorial", hours: 200)]))
        #expect(late.lock == true)
        #expect(late.coarse == nil)
        #expect(model.encode(UserState(elapsedHours: 300, events: [event("open", hours: 200)])).lock == false)

        // An Event object as the trigger, with its count.
        let counted = try self.model(
            postbacks:
                #"[{"postbackSequenceIndex": 0, "lockWindowEvent": {"mappedEventName": "open", "eventCounter": "2"}}]"#
        )
        #expect(counted.encode(UserState(elapsedHours: 3, events: [event("open", hours: 1)])).lock == false)
        #expect(
            counted.encode(UserState(elapsedHours: 3, events: [event("open", hours: 1), event("open", hours: 2)])).lock
                == true
        )
    }

    @Test("window boundaries at 48, 168 and 840 hours")
    func windows() throws {
        let model = try model(
            fine: "[" + fine(1, #"{"mappedEvents": []}"#) + "]",
            postbacks: #"""
                [{"postbackSequenceIndex": 0, "coarseGrainedConversionValueMappings": {"lowConversionValueMapping": {}}},
                 {"postbackSequenceIndex": 1, "coarseGrainedConversionValueMappings": {"mediumConversionValueMapping": {}}},
                 {"postbackSequenceIndex": 2, "coarseGrainedConversionValueMappings": {"highConversionValueMapping": {}}}]
                """#
        )
        let expectations: [(Double, Int?, CoarseConversionValue?)] = [
            (0, 0, .low), (47.999, 0, .low), (48, 1, .medium), (167.999, 1, .medium), (168, 2, .high),
            (839.999, 2, .high), (840, nil, .low),
        ]
        for (hours, window, coarse) in expectations {
            let answer = model.encode(UserState(elapsedHours: hours, currentCoarse: [nil, nil, .low]))
            #expect(answer.window == window, "at \(hours) hours")
            #expect(answer.coarse == coarse, "at \(hours) hours")
        }
        let after = model.encode(UserState(elapsedHours: 900, currentFine: 12, currentLocked: [true, true, false]))
        #expect(after == ConversionValueAnswer(window: nil, fine: 12, coarse: nil, lock: false))
    }

    @Test("a model without coarse mappings answers a null coarse value, or the current one")
    func noCoarseMappings() throws {
        let model = try model(fine: "[" + fine(3, #"{"mappedEvents": []}"#) + "]")
        #expect(
            model.encode(UserState(elapsedHours: 10))
                == ConversionValueAnswer(window: 0, fine: 3, coarse: nil, lock: false)
        )
        #expect(model.encode(UserState(elapsedHours: 100, currentCoarse: [nil, .medium, nil])).coarse == .medium)
    }

    @Test("a malformed lock trigger is refused, naming its JSON path")
    func malformedTriggers() throws {
        let cases: [(String, String)] = [
            (
                #"{"postbackSequenceIndex": 0, "lockWindowCoarseConversionValue": "ENORMOUS"}"#,
                "$.postbackMappings[0].lockWindowCoarseConversionValue"
            ),
            (
                #"{"postbackSequenceIndex": 0, "lockWindowFineConversionValue": 64}"#,
                "$.postbackMappings[0].lockWindowFineConversionValue"
            ),
            (
                #"{"postbackSequenceIndex": 0, "lockWindowEvent": {"eventCounter": 2}}"#,
                "$.postbackMappings[0].lockWindowEvent.mappedEventName"
            ),
            (#"{"postbackSequenceIndex": 0, "lockWindowEvent": 7}"#, "$.postbackMappings[0].lockWindowEvent"),
        ]
        for (mapping, path) in cases {
            let error = #expect(throws: ConversionModelError.self) { try model(postbacks: "[" + mapping + "]") }
            #expect(error?.problems.map(\.path).contains(path) == true, "\(mapping): \(error?.reason ?? "")")
        }
    }

    @Test("a state that cannot be read names its field")
    func badStates() {
        let cases: [(String, String)] = [
            (#"{"events": []}"#, "elapsed_hours"),
            (#"{"elapsed_hours": -1}"#, "elapsed_hours"),
            (#"{"elapsed_hours": 1, "events": [{"name": "a", "hours": 1}, {"hours": 2}]}"#, "events[1].name"),
            (#"{"elapsed_hours": 1, "events": [{"name": "a", "hours": "2"}]}"#, "events[0].hours"),
            (
                #"{"elapsed_hours": 1, "events": [{"name": "a", "hours": 2, "revenue": 3, "currency": "usd"}]}"#,
                "events[0].currency"
            ),
            (#"{"elapsed_hours": 1, "current": {"fine": 64}}"#, "current.fine"),
            (#"{"elapsed_hours": 1, "current": {"coarse": ["low", "huge"]}}"#, "current.coarse[1]"),
            (#"{"elapsed_hours": 1, "current": {"locked": [false, false, false, true]}}"#, "current.locked"),
        ]
        for (text, field) in cases {
            let error = #expect(throws: UserStateError.self) { try UserStateParser.parse(Array(text.utf8)) }
            #expect(error?.field == field, "\(text): \(error?.description ?? "")")
        }
    }

    /// A generated `Event` condition, with its own evaluation written from the spec's words, apart
    /// from the encoder's.
    private struct GeneratedEvent {
        var name: String
        var counter: Int?
        var occurrences: (min: Int, max: Int)?
        var revenueValue: Int?
        var revenueRange: (min: Int, max: Int)?

        var json: String {
            var fields = [#""mappedEventName": "\#(name)""#]
            if let counter { fields.append(#""eventCounter": \#(counter)"#) }
            if let occurrences {
                fields.append(
                    #""eventOccurrenceRange": {"minEventCount": \#(occurrences.min), "maxEventCount": \#(occurrences.max)}"#
                )
            }
            if let revenueValue { fields.append(#""currencyCode": "USD", "eventRevenueValue": \#(revenueValue)"#) }
            if let revenueRange {
                fields.append(
                    #""currencyCode": "USD", "eventRevenueRange": {"minEventRevenue": \#(revenueRange.min), "maxEventRevenue": \#(revenueRange.max)}"#
                )
            }
            return "{" + fields.joined(separator: ", ") + "}"
        }

        func holds(_ events: [UserState.Event], before maximum: Double?) -> Bool {
            let matching = events.filter { event in event.name == name && (maximum.map { event.hours < $0 } ?? true) }
            let count = matching.count
            let dollars = matching.reduce(0.0) {
                $0 + Double($1.revenue.filter { $0.currency == "USD" }.reduce(0) { $0 + $1.micros }) / 1e6
            }
            if let counter, count < counter { return false }
            if let occurrences, count < occurrences.min || (occurrences.max > 0 && count > occurrences.max) {
                return false
            }
            if counter == nil && occurrences == nil && count < 1 { return false }
            if let revenueValue, dollars < Double(revenueValue) - 1e-9 { return false }
            if let revenueRange, dollars < Double(revenueRange.min) - 1e-9 || dollars >= Double(revenueRange.max) - 1e-9
            {
                return false
            }
            return true
        }
    }

    @Test(
        "property: in window 0 a raised fine value's mapping holds, and no higher mapped value holds",
        arguments: 0..<4
    )
    func property(_ seed: Int) throws {
        var random = SeededRandom(seed: UInt64(20_261_123 + seed))
        let names = ["open", "level", "buy", "share"]
        for _ in 0..<50 {
            // A generated model: up to 20 fine values, each with up to 3 events of any form.
            var generated: [Int: (maximumHours: Int?, events: [GeneratedEvent])] = [:]
            for _ in 0..<Int.random(in: 1...20, using: &random) {
                var events: [GeneratedEvent] = []
                for _ in 0..<Int.random(in: 0...3, using: &random) {
                    var event = GeneratedEvent(name: names.randomElement(using: &random) ?? "open")
                    switch Int.random(in: 0...2, using: &random) {
                    case 0: event.counter = Int.random(in: 1...4, using: &random)
                    case 1:
                        let low = Int.random(in: 0...3, using: &random)
                        event.occurrences = (low, low + Int.random(in: 1...3, using: &random))
                    default: break
                    }
                    switch Int.random(in: 0...2, using: &random) {
                    case 0: event.revenueValue = Int.random(in: 1...30, using: &random)
                    case 1:
                        let low = Int.random(in: 0...20, using: &random)
                        event.revenueRange = (low, low + Int.random(in: 1...20, using: &random))
                    default: break
                    }
                    events.append(event)
                }
                let maximum = Bool.random(using: &random) ? Int.random(in: 1...48, using: &random) : nil
                generated[Int.random(in: 0...63, using: &random)] = (maximum, events)
            }
            let model = try model(
                fine: "["
                    + generated.map { value, mapping in
                        let bounds = mapping.maximumHours.map { #""maxTimePostInstallHours": "\#($0)", "# } ?? ""
                        return fine(
                            value,
                            "{" + bounds + #""mappedEvents": ["# + mapping.events.map(\.json).joined(separator: ", ")
                                + "]}"
                        )
                    }.joined(separator: ",") + "]"
            )
            for _ in 0..<20 {
                let events = (0..<Int.random(in: 0...12, using: &random)).map { _ in
                    event(
                        names.randomElement(using: &random) ?? "open",
                        hours: Double(Int.random(in: 0...470, using: &random)) / 10,
                        revenue: Bool.random(using: &random)
                            ? Double(Int.random(in: 1...1500, using: &random)) / 100 : nil
                    )
                }
                let current: Int? = Bool.random(using: &random) ? Int.random(in: 0...63, using: &random) : nil
                let answer = model.encode(UserState(elapsedHours: 47.5, events: events, currentFine: current))
                func holds(_ value: Int) -> Bool {
                    guard let mapping = generated[value] else { return false }
                    return mapping.events.allSatisfy { $0.holds(events, before: mapping.maximumHours.map(Double.init)) }
                }
                let fine = try #require(answer.fine)
                #expect(fine >= (current ?? 0))
                if fine > (current ?? 0) { #expect(holds(fine), "the answer \(fine) does not hold") }
                for value in generated.keys where value > fine {
                    #expect(!holds(value), "value \(value) holds above the answer \(fine)")
                }
            }
        }
    }
}
