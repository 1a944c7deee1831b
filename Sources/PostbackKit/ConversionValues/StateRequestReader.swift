/// A conversion value request (`POST /v1/conversion-value`: a state with its app) read straight
/// from its bytes, without a JSON tree: `serve` answers these after every session of every app,
/// and building a tree of a 1 KB state cost more than encoding it (BENCHMARKS.md, issue 42).
package struct StateRequest: Sendable, Equatable {
    /// `app_id` as written, a number's digits or a string's text; nil when absent or null.
    package var appID: String?
    /// `bundle_id`; nil when absent or null.
    package var bundleID: String?
    /// `conversion_type`; nil when absent or null.
    package var conversionType: String?
    /// `explain` is `true`.
    package var explain: Bool
    package var state: UserState
}

extension StateRequest {
    /// A request for `state` (the tests' expected requests).
    package init(_ state: UserState, appID: String?, bundleID: String?, conversionType: String?, explain: Bool) {
        self.init(appID: appID, bundleID: bundleID, conversionType: conversionType, explain: explain, state: state)
    }
}

extension UserStateParser {
    /// `bytes` read without a tree, when they are valid JSON (as strictly as everywhere: the
    /// same scanner runs first) and every field the request takes is usable. Nil for anything
    /// else: a syntax error, a field of the wrong type or value, a key written with escapes.
    /// The caller then reads the bytes through ``JSONValue`` and ``parse(_:)-(JSONValue)``,
    /// which say what is wrong; where this returns a request, that path gives the same one.
    package static func quickRequest(_ bytes: [UInt8]) -> StateRequest? {
        bytes.withUnsafeBufferPointer { buffer -> StateRequest? in
            var scanner = JSONScanner(buffer)
            guard case .object(let members)? = try? scanner.scanDocument() else { return nil }
            var reader = QuickStateReader(bytes: buffer)
            return reader.request(members)
        }
    }
}

/// Reads values from bytes the scanner has already accepted: every container is closed, every
/// string ends, every literal is whole, so it only walks, and gives up (nil) on whatever the
/// tree path should explain.
private struct QuickStateReader {
    let bytes: UnsafeBufferPointer<UInt8>
    var position = 0
    /// Set on the first thing not read: every walk stops there.
    var failed = false

    init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    mutating func request(_ members: [JSONMember]) -> StateRequest? {
        var request = StateRequest(explain: false, state: UserState(elapsedHours: 0, events: []))
        var elapsed: Double?
        for member in members {
            guard !member.keyEscaped else { return nil }
            let key = member.keyStart..<member.keyEnd
            let value = member.value
            if matches(key, "elapsed_hours") {
                guard value.kind == .number, let hours = number(value) else { return nil }
                elapsed = hours
            } else if matches(key, "events") {
                switch value.kind {
                case .null: break
                case .array:
                    position = value.start
                    guard let events = events(), !failed else { return nil }
                    request.state.events = events
                default: return nil
                }
            } else if matches(key, "current") {
                switch value.kind {
                case .null: break
                case .object:
                    position = value.start
                    guard current(into: &request.state), !failed else { return nil }
                default: return nil
                }
            } else if matches(key, "app_id") {
                switch value.kind {
                case .null: break
                case .number, .string: request.appID = JSONText.string(bytes, value)
                default: return nil
                }
            } else if matches(key, "bundle_id") {
                switch value.kind {
                case .null: break
                case .string: request.bundleID = JSONText.string(bytes, value)
                default: return nil
                }
            } else if matches(key, "conversion_type") {
                switch value.kind {
                case .null: break
                case .string: request.conversionType = JSONText.string(bytes, value)
                default: return nil
                }
            } else if matches(key, "explain") {
                request.explain = value.kind == .true
            }
        }
        guard let elapsed else { return nil }
        request.state.elapsedHours = elapsed
        return request
    }

    // MARK: The state's parts

    /// The array at `position`: its events, or nil when one is not usable.
    private mutating func events() -> [UserState.Event]? {
        var events: [UserState.Event] = []
        forEachElement { reader in
            guard events.count < UserStateParser.maximumEvents, let event = reader.event() else {
                return reader.fail()
            }
            events.append(event)
        }
        return failed ? nil : events
    }

    /// The event object at `position`.
    private mutating func event() -> UserState.Event? {
        guard peek() == UInt8(ascii: "{") else { return nil }
        var name: String?
        var hours: Double?
        var revenue: Double?
        var currency: String?
        forEachMember { reader, key in
            let value = reader.scalar()
            if value == nil { reader.skipValue() }  // a container
            guard let key else { return reader.fail() }
            if reader.matches(key, "name") {
                guard let value, value.kind == .string else { return reader.fail() }
                name = JSONText.string(reader.bytes, value)
            } else if reader.matches(key, "hours") {
                guard let value, value.kind == .number, let number = reader.number(value) else { return reader.fail() }
                hours = number
            } else if reader.matches(key, "revenue") {
                guard let value else { return reader.fail() }
                if value.kind == .null { return }
                guard value.kind == .number, let number = reader.number(value), number < 9e12 else {
                    return reader.fail()
                }
                revenue = number
            } else if reader.matches(key, "currency") {
                guard let value else { return reader.fail() }
                if value.kind == .null { return }
                guard value.kind == .string else { return reader.fail() }
                let code = JSONText.string(reader.bytes, value)
                guard isCurrencyCode(code) else { return reader.fail() }
                currency = code
            }
        }
        guard !failed, let name, !name.isEmpty, let hours else { return nil }
        if revenue != nil && currency == nil { return nil }
        return UserState.Event(
            name: name,
            hours: hours,
            revenueMicros: revenue.map { Int64(($0 * 1_000_000).rounded()) },
            currency: currency
        )
    }

    /// The `current` object at `position`, into `state`; false when a member is not usable.
    private mutating func current(into state: inout UserState) -> Bool {
        forEachMember { reader, key in
            guard let key else { return reader.fail() }
            if reader.matches(key, "fine") {
                guard let value = reader.scalar() else { return reader.fail() }
                if value.kind == .null { return }
                guard value.kind == .number, !value.flag, let fine = Int(reader.text(value)), (0...63).contains(fine)
                else { return reader.fail() }
                state.currentFine = fine
            } else if reader.matches(key, "coarse") {
                if reader.peek() == UInt8(ascii: "n") {
                    _ = reader.scalar()
                    return
                }
                guard let values = reader.triple() else { return reader.fail() }
                for (window, value) in values.enumerated() where value.kind != .null {
                    guard value.kind == .string,
                        let coarse = CoarseConversionValue(rawValue: JSONText.string(reader.bytes, value))
                    else { return reader.fail() }
                    state.currentCoarse[window] = coarse
                }
            } else if reader.matches(key, "locked") {
                if reader.peek() == UInt8(ascii: "n") {
                    _ = reader.scalar()
                    return
                }
                guard let values = reader.triple() else { return reader.fail() }
                for (window, value) in values.enumerated() {
                    switch value.kind {
                    case .null: break
                    case .true: state.currentLocked[window] = true
                    case .false: state.currentLocked[window] = false
                    default: return reader.fail()
                    }
                }
            } else {
                reader.skipValue()
            }
        }
        return !failed
    }

    /// The array at `position` of at most three scalars (one per window).
    private mutating func triple() -> [JSONSlice]? {
        guard peek() == UInt8(ascii: "[") else { return nil }
        var values: [JSONSlice] = []
        forEachElement { reader in
            guard values.count < 3, let value = reader.scalar() else { return reader.fail() }
            values.append(value)
        }
        return failed ? nil : values
    }

    /// Gives up: nothing more is read (the position is no longer at a value).
    private mutating func fail() {
        failed = true
    }

    // MARK: Walking

    /// A non-negative finite number, as the tree path reads it (`Double` of the text).
    private func number(_ slice: JSONSlice) -> Double? {
        guard let number = Double(text(slice)), number.isFinite, number >= 0 else { return nil }
        return number
    }

    private func text(_ slice: JSONSlice) -> String {
        String(decoding: UnsafeBufferPointer(rebasing: bytes[slice.start..<slice.end]), as: UTF8.self)
    }

    private func matches(_ key: Range<Int>, _ name: StaticString) -> Bool {
        guard key.count == name.utf8CodeUnitCount, key.upperBound <= bytes.count else { return false }
        let expected = UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
        return bytes[key].elementsEqual(expected)
    }

    private mutating func skipWhitespace() {
        while position < bytes.count, isJSONWhitespace(bytes[position]) { position += 1 }
    }

    private mutating func peek() -> UInt8 {
        skipWhitespace()
        return position < bytes.count ? bytes[position] : 0
    }

    /// The scalar at `position` (a string, number, literal), moved past; nil, moving nowhere,
    /// at an array or object.
    private mutating func scalar() -> JSONSlice? {
        let start = position
        switch peek() {
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            return nil
        case UInt8(ascii: "\""):
            let (contentStart, contentEnd, escaped) = string()
            return JSONSlice(kind: .string, start: contentStart, end: contentEnd, flag: escaped)
        case UInt8(ascii: "t"):
            position += 4
            return JSONSlice(kind: .true, start: start, end: start, flag: false)
        case UInt8(ascii: "f"):
            position += 5
            return JSONSlice(kind: .false, start: start, end: start, flag: false)
        case UInt8(ascii: "n"):
            position += 4
            return JSONSlice(kind: .null, start: start, end: start, flag: false)
        case 0:
            failed = true  // past the end: only after a walk went wrong
            return JSONSlice(kind: .null, start: start, end: start, flag: false)
        default:
            let numberStart = position
            var fractional = false
            while position < bytes.count {
                let byte = bytes[position]
                if byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") {
                    fractional = true
                } else if !(isDigit(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "+")) {
                    break
                }
                position += 1
            }
            return JSONSlice(kind: .number, start: numberStart, end: position, flag: fractional)
        }
    }

    /// The string at `position` (its opening quote), moved past: its content's range.
    private mutating func string() -> (start: Int, end: Int, escaped: Bool) {
        let extent = scannedString(bytes, at: position)
        position = extent.next
        return (extent.start, extent.end, extent.escaped)
    }

    /// Skips the value at `position`, whatever it is.
    private mutating func skipValue() {
        switch peek() {
        case UInt8(ascii: "{"):
            forEachMember { reader, _ in reader.skipValue() }
        case UInt8(ascii: "["):
            forEachElement { reader in reader.skipValue() }
        default:
            _ = scalar()
        }
    }

    /// Calls `body` at each member's value of the object at `position` with the member's key
    /// (nil when written with escapes); `body` must move past the value. Ends past the object.
    private mutating func forEachMember(_ body: (inout QuickStateReader, Range<Int>?) -> Void) {
        position += 1  // {
        if peek() == UInt8(ascii: "}") {
            position += 1
            return
        }
        while !failed && position < bytes.count {
            _ = peek()
            let key = string()
            _ = peek()
            position += 1  // :
            _ = peek()
            body(&self, key.escaped ? nil : key.start..<key.end)
            let separator = peek()
            position += 1
            if separator != UInt8(ascii: ",") { return }
        }
    }

    /// Calls `body` at each element of the array at `position`; `body` must move past it. Ends
    /// past the array.
    private mutating func forEachElement(_ body: (inout QuickStateReader) -> Void) {
        position += 1  // [
        if peek() == UInt8(ascii: "]") {
            position += 1
            return
        }
        while !failed && position < bytes.count {
            _ = peek()
            body(&self)
            let separator = peek()
            position += 1
            if separator != UInt8(ascii: ",") { return }
        }
    }
}
