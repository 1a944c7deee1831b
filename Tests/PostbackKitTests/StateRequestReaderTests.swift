import PostbackKit
import Testing

/// The conversion value request read without a JSON tree (`UserStateParser.quickRequest`): where
/// it gives a request, the tree path gives the same; where the tree path refuses, it gives none.
@Suite("A state read without a tree")
struct StateRequestReaderTests {
    /// What the tree path reads from `text`: the state, or nil when it refuses; with the fields
    /// `serve`'s route reads beside it.
    private func tree(_ text: String) -> StateRequest? {
        guard let value = try? JSONValue.parse(Array(text.utf8)), case .object = value,
            let state = try? UserStateParser.parse(value)
        else { return nil }
        func scalar(_ value: JSONValue?) -> String? {
            switch value {
            case .number(let text)?, .string(let text)?: text
            default: nil
            }
        }
        return StateRequest(
            state,
            appID: scalar(value["app_id"]),
            bundleID: scalar(value["bundle_id"]),
            conversionType: scalar(value["conversion_type"]),
            explain: value["explain"] == .bool(true)
        )
    }

    /// Checks the property on `text`; true when the quick reader took it.
    @discardableResult
    private func check(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        let quick = UserStateParser.quickRequest(Array(text.utf8))
        let expected = tree(text)
        if let quick {
            #expect(quick == expected, "\(text)", sourceLocation: sourceLocation)
            return true
        }
        return false
    }

    @Test("generated states: the same request as the tree's, every one taken")
    func generated() {
        var generator = SplitMix(seed: 42)
        var taken = 0
        for _ in 0..<3_000 {
            let text = Self.state(&generator)
            if check(text) {
                taken += 1
            } else if taken < 3 {
                Issue.record("not taken: \(text); the tree reads \(String(describing: tree(text)))")
            }
        }
        #expect(taken == 3_000)
    }

    @Test("what the tree refuses, or reads otherwise, is not taken")
    func edges() {
        let taken = [
            #"{"app_id": 1, "elapsed_hours": 1}"#,
            #"{"bundle_id": "com.example", "elapsed_hours": 0, "events": null, "current": null}"#,
            #"{"app_id": "12", "elapsed_hours": 1e2, "events": [], "current": {"coarse": [], "locked": null}}"#,
            #"{"app_id": 1, "elapsed_hours": 1, "events": [{"name": "a\u0062", "hours": 0, "x": {"y": [1, {"z": 2}]}}]}"#,
            #"{"app_id": 1, "elapsed_hours": 1, "events": [{"name": "p", "hours": 2, "revenue": null, "currency": "EUR"}]}"#,
            #"{"app_id": 1, "elapsed_hours": 1, "current": {"fine": -0, "coarse": ["low", null], "locked": [true]}}"#,
            #"{"app_id": 1, "elapsed_hours": 1, "explain": true, "other": [[], {}], "conversion_type": "re-engagement"}"#,
            #"{"app_id":null,"bundle_id":"b","elapsed_hours":1,"current":{"fine":null,"coarse":null,"x":{}}}"#,
        ]
        for text in taken {
            #expect(check(text), "not taken: \(text)")
        }
        let refused = [
            "", "[]", "{", #"{"app_id": 1}"#, #"{"elapsed_hours": null}"#, #"{"elapsed_hours": -1}"#,
            #"{"elapsed_hours": "1"}"#, #"{"elapsed_hours": 1, "elapsed_hours": 2}"#,
            #"{"elapsed\u005fhours": 1}"#, #"{"elapsed_hours": 1, "events": {}}"#,
            #"{"elapsed_hours": 1, "events": [1]}"#, #"{"elapsed_hours": 1, "events": [{"hours": 1}]}"#,
            #"{"elapsed_hours": 1, "events": [{"name": "", "hours": 1}]}"#,
            #"{"elapsed_hours": 1, "events": [{"name": "a", "hours": 1, "revenue": 1}]}"#,
            #"{"elapsed_hours": 1, "events": [{"name": "a", "hours": 1, "revenue": 9e12, "currency": "USD"}]}"#,
            #"{"elapsed_hours": 1, "events": [{"name": "a", "hours": 1, "currency": "usd"}]}"#,
            #"{"elapsed_hours": 1, "events": [{"name": "a", "hours": 1, "hours": 2}]}"#,
            #"{"elapsed_hours": 1, "events": [{"n\u0061me": "a", "hours": 1}]}"#,
            #"{"elapsed_hours": 1, "events": [{"name": ["a"], "hours": 1}]}"#,
            #"{"elapsed_hours": 1, "current": []}"#, #"{"elapsed_hours": 1, "current": {"fine": 64}}"#,
            #"{"elapsed_hours": 1, "current": {"fine": 1.0}}"#, #"{"elapsed_hours": 1, "current": {"fine": "1"}}"#,
            #"{"elapsed_hours": 1, "current": {"coarse": [null, null, null, null]}}"#,
            #"{"elapsed_hours": 1, "current": {"coarse": ["LOW"]}}"#,
            #"{"elapsed_hours": 1, "current": {"coarse": "low"}}"#,
            #"{"elapsed_hours": 1, "current": {"locked": [1]}}"#,
            #"{"elapsed_hours": 1, "current": {"locked": [[true]]}}"#,
            #"{"elapsed_hours": 1, "app_id": true}"#, #"{"elapsed_hours": 1, "bundle_id": 5}"#,
            #"{"elapsed_hours": 1, "conversion_type": 1}"#, #"{"elapsed_hours": 1} x"#,
            #"{"elapsed_hours": 1, "events": [{"name": "a", "hours": 1}, {"name": "\ud800", "hours": 1}]}"#,
        ]
        for text in refused {
            #expect(!check(text), "taken: \(text)")
        }
        // More than the events a state may hold.
        let many = Array(repeating: #"{"name":"s","hours":1}"#, count: UserStateParser.maximumEvents + 1)
        #expect(!check(#"{"elapsed_hours": 1, "events": ["# + many.joined(separator: ",") + "]}"))
    }

    /// A state as apps send it, with the variations JSON allows: member order, whitespace,
    /// members the reader skips, escapes in values, nulls for absent values.
    private static func state(_ generator: inout SplitMix) -> String {
        func pick<T>(_ values: [T]) -> T { values[Int(generator.next() % UInt64(values.count))] }
        func chance(_ percent: UInt64) -> Bool { generator.next() % 100 < percent }
        let space = { (generator: inout SplitMix) -> String in ["", " ", "\n  ", "\t"][Int(generator.next() % 4)] }
        var members: [String] = []
        members.append(#""elapsed_hours":\#(space(&generator))\#(pick(["0", "1", "2.5", "900", "1e1", "3.25E1"]))"#)
        if chance(80) { members.append(#""app_id": \#(pick(["1254734734", "\"1254734734\"", "null"]))"#) }
        if chance(30) {
            members.append(#""bundle_id": \#(pick(["\"com.example.game\"", "\"com.ex\\u0061mple\"", "null"]))"#)
        }
        if chance(20) { members.append(#""conversion_type": \#(pick(["\"install\"", "\"re-engagement\"", "null"]))"#) }
        if chance(20) { members.append(#""explain": \#(pick(["true", "false", "null", "1"]))"#) }
        if chance(20) {
            members.append(#""extra": \#(pick(["[1, [2, {\"a\": null}]]", "{\"b\": {\"c\": []}}", "\"x\""]))"#)
        }
        if chance(90) {
            var events: [String] = []
            for _ in 0..<(generator.next() % 41) {
                var fields = [
                    #""name": \#(pick(["\"session\"", "\"purchase\"", "\"level_complete\"", "\"caf\\u00e9\""]))"#,
                    #""hours":\#(space(&generator))\#(pick(["0", "1", "12.5", "400", "0.001"]))"#,
                ]
                if chance(30) {
                    fields.append(#""revenue": \#(pick(["0.99", "4.99", "19", "null", "1e-2"]))"#)
                    fields.append(#""currency": \#(pick(["\"USD\"", "\"EUR\"", "null"]))"#)
                    if fields[2].hasSuffix("null") == false && fields[3].hasSuffix("null") { fields.removeLast(2) }
                }
                if chance(10) { fields.append(#""meta": {"k": [1, 2, {"x": "y"}]}"#) }
                var shuffled = fields
                shuffled.swapAt(0, Int(generator.next() % UInt64(fields.count)))
                events.append("{" + shuffled.joined(separator: "," + space(&generator)) + "}")
            }
            members.append(#""events": [\#(events.joined(separator: ", "))]"#)
        }
        if chance(50) {
            var current: [String] = []
            if chance(70) { current.append(#""fine": \#(pick(["0", "20", "63", "null"]))"#) }
            if chance(70) {
                current.append(
                    #""coarse": \#(pick(["[\"low\", null, null]", "[\"medium\"]", "[]", "null", "[null, \"high\", \"low\"]"]))"#
                )
            }
            if chance(50) {
                current.append(#""locked": \#(pick(["[false, false, false]", "[true]", "null", "[null, true]"]))"#)
            }
            if chance(10) { current.append(#""note": {"a": [1]}"#) }
            members.append(#""current": {\#(current.joined(separator: ", "))}"#)
        }
        let first = Int(generator.next() % UInt64(members.count))
        members.swapAt(0, first)
        return "{" + space(&generator) + members.joined(separator: "," + space(&generator)) + space(&generator) + "}"
    }
}

/// A small seeded generator (SplitMix64), so a failure repeats.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
