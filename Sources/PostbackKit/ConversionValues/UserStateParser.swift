/// Why a state could not be read: the field (`events[1].hours`) and what is wrong with it.
///
/// Errors compare equal by ``code``; ``reason`` is what a person reads.
public struct UserStateError: CodedError, Sendable {
    /// What kind of failure this is; errors compare equal by code.
    public typealias Code = ErrorCode<Self>

    /// What went wrong.
    public let code: Code
    /// The field at fault (`events[1].hours`); empty for the state as a whole.
    public var field: String
    /// What is wrong with the field, without its name (`missing`, `-1 is negative`).
    public var message: String
    /// What a person reads: the field, then what is wrong with it (`events[1].hours: missing`).
    public var reason: String { field.isEmpty ? message : "\(field): \(message)" }

    init(_ code: Code, field: String, message: String) {
        self.code = code
        self.field = field
        self.message = message
    }
}

extension ErrorCode where Domain == UserStateError {
    /// The text is not JSON.
    public static let notJSON = Self("notJSON")
    /// A field the state needs is missing: `elapsed_hours`, an event's `name` or `hours`, or
    /// the `currency` of an event with revenue.
    public static let missing = Self("missing")
    /// A field holds another kind of JSON value than it takes (a string for a number, an
    /// object for an array).
    public static let wrongType = Self("wrongType")
    /// A field's value cannot be used: a negative number, a fine value over 63, a coarse
    /// value or currency code that does not exist, an empty event name, implausible revenue,
    /// more than three windows.
    public static let invalidValue = Self("invalidValue")
    /// The state is larger than is read: more than 10,000 events, or a line longer than
    /// `postbackd encode` reads.
    public static let tooLarge = Self("tooLarge")
}

/// Reads a user's state for encoding from JSON (spec, "Encoding"):
/// `{"elapsed_hours": 30.5, "events": [{"name": "purchase", "hours": 2, "revenue": 4.99,
/// "currency": "USD"}], "current": {"fine": 3, "coarse": ["low", null, null], "locked":
/// [false, false, false]}}`. `current` and any of its members may be missing (null / false);
/// unknown fields are ignored, so a request may carry more (an app id).
package enum UserStateParser {
    /// At most this many events in one state: a user's 35 days, with room to spare.
    package static let maximumEvents = 10_000

    package static func parse(_ bytes: [UInt8]) throws(UserStateError) -> UserState {
        let value: JSONValue
        do {
            value = try JSONValue.parse(bytes)
        } catch {
            throw UserStateError(.notJSON, field: "", message: "not valid JSON: \(error.message)")
        }
        return try parse(value)
    }

    package static func parse(_ value: JSONValue) throws(UserStateError) -> UserState {
        guard case .object = value else {
            throw UserStateError(.wrongType, field: "", message: "expected a JSON object, found \(value.kindName)")
        }
        let elapsed = try number(value["elapsed_hours"], "elapsed_hours", required: true) ?? 0
        var events: [UserState.Event] = []
        if let list = value["events"], list != .null {
            guard case .array(let elements) = list else {
                throw UserStateError(.wrongType, field: "events", message: "expected an array, found \(list.kindName)")
            }
            guard elements.count <= maximumEvents else {
                throw UserStateError(.tooLarge, field: "events", message: "more than \(maximumEvents) events")
            }
            events.reserveCapacity(elements.count)
            for (index, element) in elements.enumerated() {
                events.append(try event(element, "events[\(index)]"))
            }
        }
        var state = UserState(elapsedHours: elapsed, events: events)
        if let current = value["current"], current != .null {
            guard case .object = current else {
                throw UserStateError(
                    .wrongType,
                    field: "current",
                    message: "expected an object, found \(current.kindName)"
                )
            }
            if let fine = current["fine"], fine != .null {
                guard case .number(let text) = fine, let parsed = Int(text), (0...63).contains(parsed) else {
                    throw UserStateError(
                        .invalidValue,
                        field: "current.fine",
                        message: "expected a fine conversion value 0–63, found \(fine.text)"
                    )
                }
                state.currentFine = parsed
            }
            if let coarse = current["coarse"], coarse != .null {
                let values = try triple(coarse, "current.coarse")
                for (window, value) in values.enumerated() where value != .null {
                    guard case .string(let name) = value, let parsed = CoarseConversionValue(rawValue: name) else {
                        throw UserStateError(
                            .invalidValue,
                            field: "current.coarse[\(window)]",
                            message: "expected \"low\", \"medium\", \"high\" or null, found \(value.text)"
                        )
                    }
                    state.currentCoarse[window] = parsed
                }
            }
            if let locked = current["locked"], locked != .null {
                let values = try triple(locked, "current.locked")
                for (window, value) in values.enumerated() {
                    switch value {
                    case .null: break
                    case .bool(let flag): state.currentLocked[window] = flag
                    default:
                        throw UserStateError(
                            .wrongType,
                            field: "current.locked[\(window)]",
                            message: "expected true, false or null, found \(value.text)"
                        )
                    }
                }
            }
        }
        return state
    }

    private static func event(_ value: JSONValue, _ path: String) throws(UserStateError) -> UserState.Event {
        guard case .object = value else {
            throw UserStateError(.wrongType, field: path, message: "expected an object, found \(value.kindName)")
        }
        guard case .string(let name)? = value["name"], !name.isEmpty else {
            throw UserStateError(
                value["name"] == nil ? .missing : .invalidValue,
                field: path + ".name",
                message: value["name"] == nil ? "missing" : "expected a non-empty string"
            )
        }
        let hours = try number(value["hours"], path + ".hours", required: true) ?? 0
        var micros: Int64? = nil
        var currencyCode: String? = nil
        if let revenue = try number(value["revenue"], path + ".revenue", required: false) {
            guard revenue < 9e12 else {
                throw UserStateError(
                    .invalidValue,
                    field: path + ".revenue",
                    message: "\(formatJSONNumber(revenue)) is implausibly large"
                )
            }
            micros = Int64((revenue * 1_000_000).rounded())
        }
        if let currency = value["currency"], currency != .null {
            guard case .string(let code) = currency, isCurrencyCode(code) else {
                throw UserStateError(
                    .invalidValue,
                    field: path + ".currency",
                    message: "expected a three-letter ISO 4217 code such as \"USD\", found \(currency.text)"
                )
            }
            currencyCode = code
        }
        if micros != nil && currencyCode == nil {
            throw UserStateError(.missing, field: path + ".currency", message: "missing: revenue needs its currency")
        }
        return UserState.Event(name: name, hours: hours, revenueMicros: micros, currency: currencyCode)
    }

    /// A non-negative finite number.
    private static func number(_ value: JSONValue?, _ path: String, required: Bool) throws(UserStateError) -> Double? {
        guard let value, value != .null else {
            if required { throw UserStateError(.missing, field: path, message: "missing") }
            return nil
        }
        guard case .number(let text) = value, let number = Double(text), number.isFinite else {
            throw UserStateError(.wrongType, field: path, message: "expected a number, found \(value.text)")
        }
        guard number >= 0 else { throw UserStateError(.invalidValue, field: path, message: "\(text) is negative") }
        return number
    }

    /// An array of at most three values, one per window, padded with null.
    private static func triple(_ value: JSONValue, _ path: String) throws(UserStateError) -> [JSONValue] {
        guard case .array(let elements) = value else {
            throw UserStateError(
                .wrongType,
                field: path,
                message: "expected an array of three (one per window), found \(value.kindName)"
            )
        }
        guard elements.count <= 3 else {
            throw UserStateError(
                .invalidValue,
                field: path,
                message: "\(elements.count) entries; there are three windows"
            )
        }
        return elements + Array(repeating: .null, count: 3 - elements.count)
    }
}

extension ConversionValueAnswer {
    /// The answer as one JSON object: `{"window": 0, "fine": 20, "coarse": "medium", "lock":
    /// false}`, with `"explain": {…}` when explained.
    public var json: String {
        var object = JSONObjectWriter()
        object.add("window", window)
        object.add("fine", fine)
        object.add("coarse", coarse?.rawValue)
        object.add("lock", lock)
        if let explanation {
            var explain = JSONObjectWriter()
            if let unchanged = explanation.unchanged {
                explain.add("unchanged", unchanged)
            } else {
                if window == 0 {
                    explain.addRaw(
                        "fine_held",
                        json: "[" + explanation.fineHeld.map(String.init).joined(separator: ",") + "]"
                    )
                    explain.addRaw("fine_next", json: Self.json(explanation.fineNext) { $0.add("value", $1) })
                }
                explain.add("coarse_held", strings: explanation.coarseHeld.map(\.rawValue))
                explain.addRaw("coarse_next", json: Self.json(explanation.coarseNext) { $0.add("value", $1.rawValue) })
                explain.add("lock", explanation.lock)
            }
            object.addRaw("explain", json: explain.text)
        }
        return object.text
    }

    /// `{"value": …, "failed": "…"}`, or `null`.
    private static func json<Value>(
        _ next: Explanation.Next<Value>?,
        value: (inout JSONObjectWriter, Value) -> Void
    ) -> String {
        guard let next else { return "null" }
        var object = JSONObjectWriter()
        value(&object, next.value)
        object.add("failed", next.failed)
        return object.text
    }
}
