/// A parsed JSON document, for inputs read as a whole (conversion models): strict like every
/// JSON postbackd reads (duplicate keys, invalid UTF-8 and deep nesting refused), with numbers
/// kept as their text so that nothing is rounded before the reader decides what it needs.
package indirect enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    /// A number as written (`42`, `0.99`, `1e3`).
    case number(String)
    case string(String)
    case array([JSONValue])
    /// Members in document order.
    case object([(key: String, value: JSONValue)])

    /// Parses `bytes`, which must hold one JSON object or array.
    package static func parse(_ bytes: [UInt8]) throws(JSONSyntaxError) -> JSONValue {
        try bytes.withUnsafeBufferPointer { buffer throws(JSONSyntaxError) in
            var scanner = JSONScanner(buffer)
            _ = try scanner.scanDocument()
            var builder = JSONTreeBuilder(bytes: buffer)
            return builder.value()
        }
    }

    /// The member named `key` of an object.
    package subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    /// What kind of value this is, for error messages.
    package var kindName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    package static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.number(let a), .number(let b)): a == b
        case (.string(let a), .string(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.object(let a), .object(let b)):
            a.count == b.count && zip(a, b).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default: false
        }
    }

    package func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .bool(let value): hasher.combine(value)
        case .number(let value): hasher.combine(value)
        case .string(let value): hasher.combine(value)
        case .array(let values): hasher.combine(values)
        case .object(let members):
            for member in members {
                hasher.combine(member.key)
                hasher.combine(member.value)
            }
        }
    }

    /// Compact JSON text.
    package var text: String {
        switch self {
        case .null: "null"
        case .bool(let value): value ? "true" : "false"
        case .number(let value): value
        case .string(let value): jsonQuoted(value)
        case .array(let values): "[" + values.map(\.text).joined(separator: ",") + "]"
        case .object(let members):
            "{" + members.map { jsonQuoted($0.key) + ":" + $0.value.text }.joined(separator: ",") + "}"
        }
    }
}

/// Builds a tree from bytes the scanner has already validated.
private struct JSONTreeBuilder {
    let bytes: UnsafeBufferPointer<UInt8>
    var position = 0

    init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    mutating func value() -> JSONValue {
        skipWhitespace()
        guard position < bytes.count else { return .null }
        switch bytes[position] {
        case UInt8(ascii: "{"):
            position += 1
            var members: [(key: String, value: JSONValue)] = []
            skipWhitespace()
            if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
                position += 1
                return .object(members)
            }
            while position < bytes.count {
                skipWhitespace()
                let key = string()
                skipWhitespace()
                position += 1  // :
                members.append((key, value()))
                skipWhitespace()
                let separator = position < bytes.count ? bytes[position] : UInt8(ascii: "}")
                position += 1
                if separator == UInt8(ascii: "}") { break }
            }
            return .object(members)
        case UInt8(ascii: "["):
            position += 1
            var values: [JSONValue] = []
            skipWhitespace()
            if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
                position += 1
                return .array(values)
            }
            while position < bytes.count {
                values.append(value())
                skipWhitespace()
                let separator = position < bytes.count ? bytes[position] : UInt8(ascii: "]")
                position += 1
                if separator == UInt8(ascii: "]") { break }
            }
            return .array(values)
        case UInt8(ascii: "\""):
            return .string(string())
        case UInt8(ascii: "t"):
            position += 4
            return .bool(true)
        case UInt8(ascii: "f"):
            position += 5
            return .bool(false)
        case UInt8(ascii: "n"):
            position += 4
            return .null
        default:
            let start = position
            while position < bytes.count, !isJSONWhitespace(bytes[position]), bytes[position] != UInt8(ascii: ","),
                bytes[position] != UInt8(ascii: "]"), bytes[position] != UInt8(ascii: "}")
            {
                position += 1
            }
            return .number(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self))
        }
    }

    private mutating func string() -> String {
        let extent = scannedString(bytes, at: position)
        position = extent.next
        return JSONText.string(
            bytes,
            JSONSlice(kind: .string, start: extent.start, end: extent.end, flag: extent.escaped)
        )
    }

    private mutating func skipWhitespace() {
        while position < bytes.count, isJSONWhitespace(bytes[position]) { position += 1 }
    }
}

extension JSONValue {
    /// Indented JSON text, two spaces per level.
    package var prettyText: String {
        pretty(indent: "")
    }

    private func pretty(indent: String) -> String {
        let inner = indent + "  "
        switch self {
        case .array(let values):
            if values.isEmpty { return "[]" }
            return "[\n" + values.map { inner + $0.pretty(indent: inner) }.joined(separator: ",\n") + "\n" + indent
                + "]"
        case .object(let members):
            if members.isEmpty { return "{}" }
            return "{\n"
                + members.map { inner + jsonQuoted($0.key) + ": " + $0.value.pretty(indent: inner) }.joined(
                    separator: ",\n"
                )
                + "\n" + indent + "}"
        default:
            return text
        }
    }
}

/// The string whose opening quote is at `position` in bytes the scanner has accepted: its
/// content's range, whether it holds escapes, and the offset past its closing quote. Stays
/// within `bytes` whatever they hold.
func scannedString(
    _ bytes: UnsafeBufferPointer<UInt8>,
    at position: Int
) -> (start: Int, end: Int, escaped: Bool, next: Int) {
    var position = position + 1
    let start = position
    var escaped = false
    while position < bytes.count {
        let byte = bytes[position]
        if byte == UInt8(ascii: "\\") {
            escaped = true
            position += 2
            continue
        }
        if byte == UInt8(ascii: "\"") { break }
        position += 1
    }
    let end = min(position, bytes.count)
    return (min(start, end), end, escaped, position + 1)
}
