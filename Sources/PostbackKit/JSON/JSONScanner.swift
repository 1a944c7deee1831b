/// A validating, non-allocating-where-possible JSON scanner over a byte buffer.
///
/// Accepts exactly RFC 8259 JSON and additionally refuses, because postbacks are untrusted:
/// an object with the same key twice (at any depth; parsers disagree on which copy wins),
/// strings that are not valid UTF-8 (overlong forms, surrogates, code points above U+10FFFF),
/// `\u` escapes that leave a lone surrogate, and nesting deeper than ``maximumDepth``.
/// Numbers are never converted to floating point: callers read integers from their digits.
struct JSONScanner: ~Copyable {
    static let maximumDepth = 32

    private let bytes: UnsafeBufferPointer<UInt8>
    private var position = 0
    private var depth = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    /// Scans one complete JSON document whose top level must be an object and returns its
    /// members in document order; a top-level value of another kind is reported by kind.
    mutating func scanDocument() throws(JSONSyntaxError) -> JSONDocument {
        skipWhitespace()
        guard position < bytes.count else {
            throw JSONSyntaxError(.unexpectedEnd, "empty input: expected a JSON object", at: 0)
        }
        let document: JSONDocument
        if bytes[position] == UInt8(ascii: "{") {
            document = .object(try scanObject(collecting: true))
        } else {
            document = .other(try scanValue().kind)
        }
        skipWhitespace()
        if position < bytes.count {
            throw JSONSyntaxError(
                .unexpectedCharacter,
                "unexpected \(describeByte(at: position)) after the end of the JSON value",
                at: position
            )
        }
        return document
    }

    // MARK: - Values

    private mutating func scanValue() throws(JSONSyntaxError) -> JSONSlice {
        guard position < bytes.count else {
            throw JSONSyntaxError(.unexpectedEnd, "unexpected end of input: expected a value", at: position)
        }
        let start = position
        switch bytes[position] {
        case UInt8(ascii: "{"):
            _ = try scanObject(collecting: false)
            return JSONSlice(kind: .object, start: start, end: position, flag: false)
        case UInt8(ascii: "["):
            try scanArray()
            return JSONSlice(kind: .array, start: start, end: position, flag: false)
        case UInt8(ascii: "\""):
            let (contentStart, contentEnd, escaped) = try scanString()
            return JSONSlice(kind: .string, start: contentStart, end: contentEnd, flag: escaped)
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return JSONSlice(kind: .true, start: start, end: position, flag: false)
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return JSONSlice(kind: .false, start: start, end: position, flag: false)
        case UInt8(ascii: "n"):
            try expectLiteral("null")
            return JSONSlice(kind: .null, start: start, end: position, flag: false)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            let isFractional = try scanNumber()
            return JSONSlice(kind: .number, start: start, end: position, flag: isFractional)
        default:
            throw JSONSyntaxError(
                .unexpectedCharacter,
                "unexpected \(describeByte(at: position)): expected a value",
                at: position
            )
        }
    }

    /// Scans an object; returns its members when `collecting` (the top level), else an empty
    /// array (nested objects are checked for duplicate keys all the same).
    private mutating func scanObject(collecting: Bool) throws(JSONSyntaxError) -> [JSONMember] {
        try enterContainer()
        position += 1  // {
        var members: [JSONMember] = []
        if collecting { members.reserveCapacity(16) }
        var keys: [(start: Int, end: Int, escaped: Bool)] = []
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
            position += 1
            depth -= 1
            return members
        }
        while true {
            skipWhitespace()
            guard position < bytes.count else {
                throw JSONSyntaxError(
                    .unexpectedEnd,
                    "unexpected end of input inside an object: expected a key",
                    at: position
                )
            }
            guard bytes[position] == UInt8(ascii: "\"") else {
                throw JSONSyntaxError(
                    .unexpectedCharacter,
                    "unexpected \(describeByte(at: position)): expected a quoted key",
                    at: position
                )
            }
            let keyOffset = position
            let key = try scanString()
            for earlier in keys where sameKey(earlier, key) {
                throw JSONSyntaxError(.duplicateKey, "duplicate key \"\(keyText(key))\"", at: keyOffset)
            }
            keys.append(key)
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else {
                throw JSONSyntaxError(
                    position < bytes.count ? .unexpectedCharacter : .unexpectedEnd,
                    position < bytes.count
                        ? "unexpected \(describeByte(at: position)) after key \"\(keyText(key))\": expected ':'"
                        : "unexpected end of input after key \"\(keyText(key))\"",
                    at: position
                )
            }
            position += 1
            skipWhitespace()
            let value = try scanValue()
            if collecting {
                members.append(JSONMember(keyStart: key.start, keyEnd: key.end, keyEscaped: key.escaped, value: value))
            }
            skipWhitespace()
            guard position < bytes.count else {
                throw JSONSyntaxError(
                    .unexpectedEnd,
                    "unexpected end of input inside an object: expected ',' or '}'",
                    at: position
                )
            }
            switch bytes[position] {
            case UInt8(ascii: ","):
                position += 1
            case UInt8(ascii: "}"):
                position += 1
                depth -= 1
                return members
            default:
                throw JSONSyntaxError(
                    .unexpectedCharacter,
                    "unexpected \(describeByte(at: position)) in an object: expected ',' or '}'",
                    at: position
                )
            }
        }
    }

    private mutating func scanArray() throws(JSONSyntaxError) {
        try enterContainer()
        position += 1  // [
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
            position += 1
            depth -= 1
            return
        }
        while true {
            skipWhitespace()
            _ = try scanValue()
            skipWhitespace()
            guard position < bytes.count else {
                throw JSONSyntaxError(
                    .unexpectedEnd,
                    "unexpected end of input inside an array: expected ',' or ']'",
                    at: position
                )
            }
            switch bytes[position] {
            case UInt8(ascii: ","):
                position += 1
            case UInt8(ascii: "]"):
                position += 1
                depth -= 1
                return
            default:
                throw JSONSyntaxError(
                    .unexpectedCharacter,
                    "unexpected \(describeByte(at: position)) in an array: expected ',' or ']'",
                    at: position
                )
            }
        }
    }

    private mutating func enterContainer() throws(JSONSyntaxError) {
        depth += 1
        if depth > Self.maximumDepth {
            throw JSONSyntaxError(.tooDeep, "nesting deeper than \(Self.maximumDepth) levels", at: position)
        }
    }

    // MARK: - Strings

    /// Scans a string starting at its opening quote; returns the content range and whether it
    /// holds escapes.
    private mutating func scanString() throws(JSONSyntaxError) -> (start: Int, end: Int, escaped: Bool) {
        position += 1  // opening quote
        let start = position
        var escaped = false
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                let end = position
                position += 1
                return (start, end, escaped)
            } else if byte == UInt8(ascii: "\\") {
                escaped = true
                try scanEscape()
            } else if byte < 0x20 {
                throw JSONSyntaxError(
                    .invalidString,
                    byte == 0x0A
                        ? "unterminated string (line ends inside it)"
                        : "control character U+\(hex4(UInt16(byte))) inside a string (must be escaped)",
                    at: position
                )
            } else if byte < 0x80 {
                position += 1
            } else {
                try scanUTF8Sequence()
            }
        }
        throw JSONSyntaxError(.unexpectedEnd, "unterminated string: input ends inside it", at: start - 1)
    }

    private mutating func scanEscape() throws(JSONSyntaxError) {
        let escapeStart = position
        position += 1  // backslash
        guard position < bytes.count else {
            throw JSONSyntaxError(.unexpectedEnd, "unterminated escape sequence", at: escapeStart)
        }
        switch bytes[position] {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
            UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            position += 1
        case UInt8(ascii: "u"):
            position += 1
            let unit = try scanHex4(escapeStart: escapeStart)
            if (0xD800...0xDBFF).contains(unit) {
                guard position + 1 < bytes.count, bytes[position] == UInt8(ascii: "\\"),
                    bytes[position + 1] == UInt8(ascii: "u")
                else {
                    throw JSONSyntaxError(.invalidString, "\\u\(hex4(unit)) is a lone high surrogate", at: escapeStart)
                }
                position += 2
                let low = try scanHex4(escapeStart: escapeStart)
                guard (0xDC00...0xDFFF).contains(low) else {
                    throw JSONSyntaxError(
                        .invalidString,
                        "\\u\(hex4(unit)) is not followed by a low surrogate",
                        at: escapeStart
                    )
                }
            } else if (0xDC00...0xDFFF).contains(unit) {
                throw JSONSyntaxError(.invalidString, "\\u\(hex4(unit)) is a lone low surrogate", at: escapeStart)
            }
        default:
            throw JSONSyntaxError(
                .invalidString,
                "invalid escape \\\(describeByte(at: position, quoted: false))",
                at: escapeStart
            )
        }
    }

    private mutating func scanHex4(escapeStart: Int) throws(JSONSyntaxError) -> UInt16 {
        guard position + 4 <= bytes.count else {
            throw JSONSyntaxError(.unexpectedEnd, "truncated \\u escape", at: escapeStart)
        }
        var value: UInt16 = 0
        for _ in 0..<4 {
            guard let digit = hexDigitValue(bytes[position]) else {
                throw JSONSyntaxError(
                    .invalidString,
                    "invalid \\u escape: expected four hexadecimal digits",
                    at: escapeStart
                )
            }
            value = value << 4 | UInt16(digit)
            position += 1
        }
        return value
    }

    /// Validates one multi-byte UTF-8 sequence (RFC 3629: no overlong forms, no surrogates,
    /// nothing above U+10FFFF).
    private mutating func scanUTF8Sequence() throws(JSONSyntaxError) {
        let lead = bytes[position]
        let length: Int
        var secondRange: ClosedRange<UInt8> = 0x80...0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0:
            length = 3
            secondRange = 0xA0...0xBF
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED:
            length = 3
            secondRange = 0x80...0x9F
        case 0xF0:
            length = 4
            secondRange = 0x90...0xBF
        case 0xF1...0xF3: length = 4
        case 0xF4:
            length = 4
            secondRange = 0x80...0x8F
        default:
            throw JSONSyntaxError(.invalidUTF8, "invalid UTF-8 byte 0x\(hex2(lead))", at: position)
        }
        guard position + length <= bytes.count else {
            throw JSONSyntaxError(
                .invalidUTF8,
                "truncated UTF-8 sequence starting with byte 0x\(hex2(lead))",
                at: position
            )
        }
        guard secondRange.contains(bytes[position + 1]) else {
            throw JSONSyntaxError(.invalidUTF8, "invalid UTF-8 byte 0x\(hex2(bytes[position + 1]))", at: position + 1)
        }
        var index = 2
        while index < length {
            guard (0x80...0xBF).contains(bytes[position + index]) else {
                throw JSONSyntaxError(
                    .invalidUTF8,
                    "invalid UTF-8 byte 0x\(hex2(bytes[position + index]))",
                    at: position + index
                )
            }
            index += 1
        }
        position += length
    }

    private func sameKey(
        _ lhs: (start: Int, end: Int, escaped: Bool),
        _ rhs: (start: Int, end: Int, escaped: Bool)
    ) -> Bool {
        if !lhs.escaped && !rhs.escaped {
            guard lhs.end - lhs.start == rhs.end - rhs.start else { return false }
            var index = 0
            while index < lhs.end - lhs.start {
                if bytes[lhs.start + index] != bytes[rhs.start + index] { return false }
                index += 1
            }
            return true
        }
        return JSONText.unescape(bytes, lhs.start..<lhs.end) == JSONText.unescape(bytes, rhs.start..<rhs.end)
    }

    private func keyText(_ key: (start: Int, end: Int, escaped: Bool)) -> String {
        let text = String(decoding: JSONText.unescape(bytes, key.start..<key.end), as: UTF8.self)
        return text.count > 64 ? String(text.prefix(64)) + "…" : text
    }

    // MARK: - Numbers and literals

    /// Scans `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`; returns whether it has a fraction
    /// or an exponent.
    private mutating func scanNumber() throws(JSONSyntaxError) -> Bool {
        let start = position
        if bytes[position] == UInt8(ascii: "-") { position += 1 }
        guard position < bytes.count, isDigit(bytes[position]) else {
            throw JSONSyntaxError(.invalidNumber, "invalid number: expected a digit", at: start)
        }
        if bytes[position] == UInt8(ascii: "0") {
            position += 1
            if position < bytes.count, isDigit(bytes[position]) {
                throw JSONSyntaxError(.invalidNumber, "invalid number: leading zero", at: start)
            }
        } else {
            while position < bytes.count, isDigit(bytes[position]) { position += 1 }
        }
        var isFractional = false
        if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
            isFractional = true
            position += 1
            guard position < bytes.count, isDigit(bytes[position]) else {
                throw JSONSyntaxError(.invalidNumber, "invalid number: expected a digit after '.'", at: start)
            }
            while position < bytes.count, isDigit(bytes[position]) { position += 1 }
        }
        if position < bytes.count, bytes[position] | 0x20 == UInt8(ascii: "e") {
            isFractional = true
            position += 1
            if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") {
                position += 1
            }
            guard position < bytes.count, isDigit(bytes[position]) else {
                throw JSONSyntaxError(.invalidNumber, "invalid number: expected a digit in the exponent", at: start)
            }
            while position < bytes.count, isDigit(bytes[position]) { position += 1 }
        }
        return isFractional
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(JSONSyntaxError) {
        let start = position
        let count = literal.utf8CodeUnitCount
        let matches = literal.withUTF8Buffer { expected in
            guard position + count <= bytes.count else { return false }
            for index in 0..<count where bytes[position + index] != expected[index] { return false }
            return true
        }
        guard matches else {
            throw JSONSyntaxError(
                .unexpectedCharacter,
                "unexpected \(describeByte(at: start)): expected a value",
                at: start
            )
        }
        position += count
    }

    // MARK: - Helpers

    @inline(__always)
    private mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x0A, 0x0D, 0x09: position += 1
            default: return
            }
        }
    }

    private func describeByte(at offset: Int, quoted: Bool = true) -> String {
        guard offset < bytes.count else { return "end of input" }
        let byte = bytes[offset]
        if byte >= 0x21 && byte < 0x7F {
            let character = String(UnicodeScalar(byte))
            return quoted ? "'\(character)'" : character
        }
        if byte >= 0x80 {
            return "byte 0x\(hex2(byte)) (JSON structure must be ASCII)"
        }
        return "byte 0x\(hex2(byte))"
    }
}
