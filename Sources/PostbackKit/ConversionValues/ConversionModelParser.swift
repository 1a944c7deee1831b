/// Why a conversion model was refused: every problem found, each with its JSON path.
public struct ConversionModelError: CodedError {
    /// What kind of failure this is; errors compare equal by code.
    public typealias Code = ErrorCode<Self>

    /// One problem: where (`$.fineGrainedConversionValueMappings[3].fineGrainedConversionValue`)
    /// and what.
    public struct Problem: Sendable, Hashable, CustomStringConvertible {
        public var path: String
        public var message: String
        public var description: String { "\(path): \(message)" }
    }

    public let code: Code
    public let problems: [Problem]
    public var reason: String { problems.map(\.description).joined(separator: "\n") }

    init(_ code: Code, _ problems: [Problem]) {
        self.code = code
        self.problems = problems
    }
}

extension ErrorCode where Domain == ConversionModelError {
    /// The file is not JSON.
    public static let notJSON = Self("notJSON")
    /// The JSON is not a valid model.
    public static let invalid = Self("invalid")
}

/// Reads conversion models in the Google Ads `SkAdNetworkConversionValueSchema` protobuf JSON
/// form, plain or wrapped as the API returns it (`{"resourceName": …, "schema": {…}}`).
///
/// Checks: `appId` is an App Store id; fine values are 0–63 and appear once; sequence indexes
/// are 0–2 and appear once; at most one lock-window trigger per postback; every event has a
/// name, at most one revenue form (`eventRevenueRange` or `eventRevenueValue`) and at most one
/// count form (`eventOccurrenceRange` or `eventCounter`), non-negative ranges with min ≤ max,
/// and a three-letter `currencyCode` when it has revenue. Protobuf JSON writes 64-bit integers
/// as strings, so both forms are accepted; unknown fields are ignored; 0 means unset.
package enum ConversionModelParser {
    /// Parses one model (plain or API-wrapped).
    package static func parse(_ bytes: [UInt8]) throws(ConversionModelError) -> ConversionModel {
        try parse(json(bytes))
    }

    /// Parses a file that holds one model or a JSON array of models.
    package static func parseAll(_ bytes: [UInt8]) throws(ConversionModelError) -> [ConversionModel] {
        let value = try json(bytes)
        guard case .array(let elements) = value else { return [try parse(value)] }
        var models: [ConversionModel] = []
        var problems: [ConversionModelError.Problem] = []
        for (index, element) in elements.enumerated() {
            do {
                models.append(try parse(element, path: "$[\(index)]"))
            } catch {
                problems += error.problems
            }
        }
        if !problems.isEmpty { throw ConversionModelError(.invalid, problems) }
        return models
    }

    private static func json(_ bytes: [UInt8]) throws(ConversionModelError) -> JSONValue {
        do {
            return try JSONValue.parse(bytes)
        } catch {
            let position = bytes.withUnsafeBufferPointer { lineAndColumn(of: error.offset, in: $0) }
            throw ConversionModelError(
                .notJSON,
                [
                    .init(
                        path: "line \(position.line), column \(position.column)",
                        message: "not valid JSON: \(error.message)"
                    )
                ]
            )
        }
    }

    /// Parses one model from a parsed JSON value.
    package static func parse(_ value: JSONValue, path: String = "$") throws(ConversionModelError) -> ConversionModel {
        var reader = ModelReader()
        let model = reader.model(value, path: path)
        if let model, reader.problems.isEmpty { return model }
        throw ConversionModelError(
            .invalid,
            reader.problems.isEmpty ? [.init(path: path, message: "not a model")] : reader.problems
        )
    }
}

/// Walks a model, collecting every problem rather than stopping at the first.
private struct ModelReader {
    var problems: [ConversionModelError.Problem] = []

    /// Whether `key`, a `what` (0 to `maximum`), names no entry of `mapped` yet; else fails at
    /// `path`: out of range, or `mappedWhat` `key` mapped more than once.
    mutating func isNew<Value>(
        _ key: Int64,
        in mapped: [Int: Value],
        upTo maximum: Int64,
        _ path: String,
        _ what: String,
        _ mappedWhat: String
    ) -> Bool {
        guard key <= maximum else {
            fail(path, "\(key) is not a \(what) (0–\(maximum))")
            return false
        }
        guard mapped[Int(key)] == nil else {
            fail(path, "\(mappedWhat) \(key) is mapped more than once")
            return false
        }
        return true
    }

    mutating func fail(_ path: String, _ message: String) {
        if problems.count < 50 { problems.append(.init(path: path, message: message)) }
    }

    mutating func model(_ value: JSONValue, path: String) -> ConversionModel? {
        guard case .object = value else {
            fail(path, "expected a conversion value schema object, found \(value.kindName)")
            return nil
        }
        // The API's wrapped form: {"resourceName": …, "schema": {…}}.
        if let schema = value["schema"], value["appId"] == nil {
            return model(schema, path: path + ".schema")
        }
        let appID = positiveInteger(value["appId"], path + ".appId", required: true)
        let window = integer(value["measurementWindowHours"], path + ".measurementWindowHours", minimum: 0)

        var fineValues: [Int: ConversionValueMapping] = [:]
        for (element, elementPath) in objects(value, "fineGrainedConversionValueMappings", path) {
            let valuePath = elementPath + ".fineGrainedConversionValue"
            let fine = protoInteger(element, "fineGrainedConversionValue", valuePath)
            let mapping = self.mapping(element["conversionValueMapping"], elementPath + ".conversionValueMapping")
            guard let fine, isNew(fine, in: fineValues, upTo: 63, valuePath, "fine conversion value", "fine value")
            else { continue }
            if let mapping { fineValues[Int(fine)] = mapping }
        }

        var coarseValues: [Int: [CoarseConversionValue: ConversionValueMapping]] = [:]
        var lockTriggers: [Int: LockTrigger] = [:]
        for (element, elementPath) in objects(value, "postbackMappings", path) {
            let indexPath = elementPath + ".postbackSequenceIndex"
            let sequence = protoInteger(element, "postbackSequenceIndex", indexPath)
            let locks = ["lockWindowCoarseConversionValue", "lockWindowFineConversionValue", "lockWindowEvent"].filter {
                element[$0] != nil
            }
            if locks.count > 1 {
                fail(
                    elementPath,
                    "sets \(locks.joined(separator: " and ")); a postback mapping has at most one lock-window trigger"
                )
            }
            var trigger: LockTrigger? = nil
            if let fine = element["lockWindowFineConversionValue"], fine != .null,
                let lock = integer(fine, elementPath + ".lockWindowFineConversionValue", minimum: 0)
            {
                if lock > 63 {
                    fail(
                        elementPath + ".lockWindowFineConversionValue",
                        "\(lock) is not a fine conversion value (0–63)"
                    )
                } else {
                    trigger = .fine(Int(lock))
                }
            }
            if let coarse = element["lockWindowCoarseConversionValue"], coarse != .null {
                let coarsePath = elementPath + ".lockWindowCoarseConversionValue"
                if case .string(let name) = coarse, let value = CoarseConversionValue(rawValue: name.lowercased()) {
                    trigger = .coarse(value)
                } else {
                    fail(coarsePath, "expected \"LOW\", \"MEDIUM\" or \"HIGH\", found \(coarse.text)")
                }
            }
            // The API's form is the event's name (`string lock_window_event`): the window locks
            // once it happens. An `Event` object, with counts and revenue, is read too.
            if let event = element["lockWindowEvent"], event != .null {
                let eventPath = elementPath + ".lockWindowEvent"
                switch event {
                case .string(let name) where !name.isEmpty:
                    trigger = .event(EventCondition(name: name, currency: nil, count: .once, revenue: .none))
                case .object:
                    if let locking = self.event(event, eventPath) { trigger = .event(locking.condition) }
                default:
                    fail(
                        eventPath,
                        "expected an event name (or an Event object), found \(event.kindName == "a string" ? "an empty string" : event.kindName)"
                    )
                }
            }
            var byCoarse: [CoarseConversionValue: ConversionValueMapping] = [:]
            let coarsePath = elementPath + ".coarseGrainedConversionValueMappings"
            if let coarse = element["coarseGrainedConversionValueMappings"], isObject(coarse, coarsePath) {
                for (key, coarseValue) in [
                    ("lowConversionValueMapping", CoarseConversionValue.low),
                    ("mediumConversionValueMapping", .medium),
                    ("highConversionValueMapping", .high),
                ] {
                    if let mapping = mapping(coarse[key], coarsePath + "." + key, absentIsNil: true) {
                        byCoarse[coarseValue] = mapping
                    }
                }
            }
            guard let sequence,
                isNew(
                    sequence,
                    in: coarseValues,
                    upTo: 2,
                    indexPath,
                    "postback sequence index",
                    "postback sequence index"
                )
            else { continue }
            coarseValues[Int(sequence)] = byCoarse
            if let trigger { lockTriggers[Int(sequence)] = trigger }
        }
        guard let appID else { return nil }
        return ConversionModel(
            appID: appID,
            measurementWindowHours: window,
            fineValues: fineValues,
            coarseValues: coarseValues,
            lockTriggers: lockTriggers,
            json: value.text
        )
    }

    /// A `ConversionValueMapping`; an absent one maps to no events (or is nil with `absentIsNil`).
    mutating func mapping(_ value: JSONValue?, _ path: String, absentIsNil: Bool = false) -> ConversionValueMapping? {
        guard let value, value != .null else {
            return absentIsNil ? nil : ConversionValueMapping(events: [])
        }
        guard isObject(value, path) else { return nil }
        let minHours = integer(value["minTimePostInstallHours"], path + ".minTimePostInstallHours", minimum: 0)
        let maxHours = integer(value["maxTimePostInstallHours"], path + ".maxTimePostInstallHours", minimum: 0)
        if let minHours, let maxHours, maxHours > 0, minHours > maxHours {
            fail(path, "minTimePostInstallHours \(minHours) is greater than maxTimePostInstallHours \(maxHours)")
        }
        var events: [MappedEvent] = []
        for (index, element) in array(value["mappedEvents"], path + ".mappedEvents") {
            if let event = event(element, path + ".mappedEvents[\(index)]") { events.append(event) }
        }
        return ConversionValueMapping(
            minTimePostInstallHours: minHours,
            maxTimePostInstallHours: maxHours,
            events: events
        )
    }

    mutating func event(_ value: JSONValue, _ path: String) -> MappedEvent? {
        guard isObject(value, path) else { return nil }
        var valid = true
        let name: String
        if case .string(let text)? = value["mappedEventName"], !text.isEmpty {
            name = text
        } else {
            fail(
                path + ".mappedEventName",
                value["mappedEventName"] == nil ? "missing: every event needs a name" : "expected a non-empty string"
            )
            name = ""
            valid = false
        }

        // Revenue: eventRevenueRange or eventRevenueValue; 0 means unset.
        var revenueCondition = EventCondition.Revenue.none
        var revenue: (min: Int64, max: Int64)? = nil
        let rangeValue = value["eventRevenueRange"]
        let exact = money(value["eventRevenueValue"], path + ".eventRevenueValue")
        var range: (min: Int64, max: Int64)? = nil
        if let rangeValue, isObject(rangeValue, path + ".eventRevenueRange") {
            let low = money(rangeValue["minEventRevenue"], path + ".eventRevenueRange.minEventRevenue") ?? 0
            let high = money(rangeValue["maxEventRevenue"], path + ".eventRevenueRange.maxEventRevenue") ?? 0
            if high > 0 && low > high {
                fail(
                    path + ".eventRevenueRange",
                    "minEventRevenue \(format(low)) is greater than maxEventRevenue \(format(high))"
                )
                valid = false
            } else {
                if high > 0 { range = (low, high) }
                if low > 0 || high > 0 { revenueCondition = .range(min: low, max: high > 0 ? high : nil) }
            }
        }
        if let exact, exact > 0, range != nil {
            fail(path, "sets both eventRevenueRange and eventRevenueValue; an event has one revenue form")
            valid = false
        }
        if let exact, exact > 0 {
            revenue = (exact, exact)
            revenueCondition = .atLeast(exact)
        } else {
            revenue = range
        }

        // Occurrences: eventOccurrenceRange or eventCounter; neither means once.
        var occurrences = CountRange(min: 1, max: 1)
        var countCondition = EventCondition.Count.once
        var counted = false
        if let rangeValue = value["eventOccurrenceRange"], isObject(rangeValue, path + ".eventOccurrenceRange") {
            let low =
                integer(rangeValue["minEventCount"], path + ".eventOccurrenceRange.minEventCount", minimum: 0) ?? 0
            let high =
                integer(rangeValue["maxEventCount"], path + ".eventOccurrenceRange.maxEventCount", minimum: 0) ?? 0
            if high > 0 && low > high {
                fail(path + ".eventOccurrenceRange", "minEventCount \(low) is greater than maxEventCount \(high)")
                valid = false
            } else {
                if high > 0 {
                    occurrences = CountRange(min: low, max: high)
                    counted = true
                }
                if low > 0 || high > 0 { countCondition = .range(min: low, max: high > 0 ? high : nil) }
            }
        }
        if let counter = integer(value["eventCounter"], path + ".eventCounter", minimum: 0), counter > 0 {
            if counted {
                fail(path, "sets both eventOccurrenceRange and eventCounter; an event has one count form")
                valid = false
            }
            occurrences = CountRange(min: counter, max: counter)
            countCondition = .atLeast(counter)
        }

        var currency: String? = nil
        if let code = value["currencyCode"] {
            if case .string(let text) = code, isCurrencyCode(text) {
                currency = text
            } else if code != .string("") {
                fail(
                    path + ".currencyCode",
                    "expected a three-letter ISO 4217 code such as \"USD\", found \(code.text)"
                )
                valid = false
            }
        }
        if revenue != nil && currency == nil {
            fail(path + ".currencyCode", "missing: an event with revenue needs its currency")
            valid = false
        }
        guard valid else { return nil }
        return MappedEvent(
            name: name,
            occurrences: occurrences,
            revenue: revenue.flatMap { range in
                currency.map { RevenueRange(currency: $0, minMicros: range.min, maxMicros: range.max) }
            },
            condition: EventCondition(name: name, currency: currency, count: countCondition, revenue: revenueCondition)
        )
    }

    // MARK: - Typed reads

    mutating func isObject(_ value: JSONValue, _ path: String) -> Bool {
        if case .object = value { return true }
        fail(path, "expected an object, found \(value.kindName)")
        return false
    }

    mutating func array(_ value: JSONValue?, _ path: String) -> [(Int, JSONValue)] {
        guard let value, value != .null else { return [] }
        guard case .array(let elements) = value else {
            fail(path, "expected an array, found \(value.kindName)")
            return []
        }
        return Array(elements.enumerated())
    }

    /// The elements of `value`'s array `key` that are objects, each with its path
    /// (`path.key[2]`); any other element fails.
    mutating func objects(_ value: JSONValue, _ key: String, _ path: String) -> [(JSONValue, String)] {
        array(value[key], path + "." + key).compactMap { index, element in
            let elementPath = path + ".\(key)[\(index)]"
            return isObject(element, elementPath) ? (element, elementPath) : nil
        }
    }

    /// The non-negative integer `element[key]`, where proto3's JSON leaves out a 0.
    mutating func protoInteger(_ element: JSONValue, _ key: String, _ path: String) -> Int64? {
        element[key] == nil ? 0 : integer(element[key], path, minimum: 0)
    }

    /// The text of a number written as a JSON number or, as protobuf JSON writes int64, as a
    /// string; nil, failing at `path` (`expected` names what was), for another kind of value.
    mutating func numberText(_ value: JSONValue, _ path: String, expected: String) -> String? {
        switch value {
        case .number(let number): return number
        case .string(let string): return string
        default:
            fail(path, "expected \(expected), found \(value.kindName)")
            return nil
        }
    }

    /// An integer written as a JSON integer or, as protobuf JSON writes int64, a string of digits.
    mutating func integer(_ value: JSONValue?, _ path: String, minimum: Int64) -> Int64? {
        guard let value, value != .null, let text = numberText(value, path, expected: "an integer") else { return nil }
        guard let parsed = Int64(text) else {
            fail(path, "expected an integer, found \(value.text)")
            return nil
        }
        guard parsed >= minimum else {
            fail(path, "\(parsed) is negative")
            return nil
        }
        return parsed
    }

    mutating func positiveInteger(_ value: JSONValue?, _ path: String, required: Bool) -> Int64? {
        guard let value, value != .null else {
            if required { fail(path, "missing: the App Store id the model belongs to") }
            return nil
        }
        guard let parsed = integer(value, path, minimum: 0) else { return nil }
        guard parsed > 0 else {
            fail(path, "0 is not an App Store id")
            return nil
        }
        return parsed
    }

    /// A non-negative amount of money, as micros.
    mutating func money(_ value: JSONValue?, _ path: String) -> Int64? {
        guard let value, value != .null, let text = numberText(value, path, expected: "a number") else { return nil }
        guard let amount = Double(text), amount.isFinite else {
            fail(path, "expected a number, found \(value.text)")
            return nil
        }
        guard amount >= 0 else {
            fail(path, "\(text) is negative")
            return nil
        }
        guard amount < 9e12 else {
            fail(path, "\(text) is implausibly large")
            return nil
        }
        return Int64((amount * 1_000_000).rounded())
    }

    private func format(_ micros: Int64) -> String {
        formatJSONNumber(Double(micros) / 1_000_000)
    }
}

/// Whether `text` has the form of an ISO 4217 currency code: three capital letters (`USD`).
package func isCurrencyCode(_ text: String) -> Bool {
    text.utf8.count == 3 && text.utf8.allSatisfy { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }
}
