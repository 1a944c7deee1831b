/// Reading values out of bytes the ``JSONScanner`` has validated.
enum JSONText {
    /// The UTF-8 bytes of a string's content with its escapes resolved. The content must have
    /// passed the scanner (valid escapes, paired surrogates).
    static func unescape(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(range.count)
        var index = range.lowerBound
        while index < range.upperBound {
            let byte = bytes[index]
            guard byte == UInt8(ascii: "\\"), index + 1 < range.upperBound else {
                out.append(byte)
                index += 1
                continue
            }
            let escape = bytes[index + 1]
            index += 2
            switch escape {
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = UInt32(hexValue(bytes, at: index))
                index += 4
                if (0xD800...0xDBFF).contains(scalar), index + 6 <= range.upperBound {
                    let low = UInt32(hexValue(bytes, at: index + 2))
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    index += 6
                }
                appendUTF8(scalar, to: &out)
            default: out.append(escape)  // " \ /
            }
        }
        return out
    }

    /// A string slice as a Swift `String` (fast path when it has no escapes).
    static func string(_ bytes: UnsafeBufferPointer<UInt8>, _ slice: JSONSlice) -> String {
        if !slice.flag {
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[slice.start..<slice.end]), as: UTF8.self)
        }
        return String(decoding: unescape(bytes, slice.start..<slice.end), as: UTF8.self)
    }

    /// Reads a number slice as a 64-bit integer, exactly from its digits.
    static func integer(_ bytes: UnsafeBufferPointer<UInt8>, _ slice: JSONSlice) -> IntegerReading {
        guard slice.kind == .number else { return .notANumber }
        if slice.flag { return .notAnInteger }
        var index = slice.start
        let negative = bytes[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        var magnitude: UInt64 = 0
        while index < slice.end {
            let (timesTen, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = timesTen.addingReportingOverflow(UInt64(bytes[index] - UInt8(ascii: "0")))
            if overflow1 || overflow2 { return .outOfRange }
            magnitude = sum
            index += 1
        }
        if negative {
            guard magnitude <= UInt64(Int64.max) + 1 else { return .outOfRange }
            return .value(magnitude == UInt64(Int64.max) + 1 ? Int64.min : -Int64(magnitude))
        }
        guard magnitude <= UInt64(Int64.max) else { return .outOfRange }
        return .value(Int64(magnitude))
    }

    /// The slice's bytes as written in the document, for messages (shortened).
    static func excerpt(_ bytes: UnsafeBufferPointer<UInt8>, _ slice: JSONSlice, limit: Int = 40) -> String {
        let start = slice.kind == .string ? slice.start - 1 : slice.start
        let end = slice.kind == .string ? slice.end + 1 : slice.end
        let shown = min(end - start, limit)
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<(start + shown)]), as: UTF8.self)
        return shown < end - start ? text + "…" : text
    }

    private static func hexValue(_ bytes: UnsafeBufferPointer<UInt8>, at index: Int) -> UInt16 {
        var value: UInt16 = 0
        for offset in 0..<4 {
            value = value << 4 | UInt16(hexDigitValue(bytes[index + offset]) ?? 0)
        }
        return value
    }

    private static func appendUTF8(_ scalar: UInt32, to out: inout [UInt8]) {
        switch scalar {
        case 0..<0x80:
            out.append(UInt8(scalar))
        case 0x80..<0x800:
            out.append(UInt8(0xC0 | (scalar >> 6)))
            out.append(UInt8(0x80 | (scalar & 0x3F)))
        case 0x800..<0x10000:
            out.append(UInt8(0xE0 | (scalar >> 12)))
            out.append(UInt8(0x80 | ((scalar >> 6) & 0x3F)))
            out.append(UInt8(0x80 | (scalar & 0x3F)))
        default:
            out.append(UInt8(0xF0 | (scalar >> 18)))
            out.append(UInt8(0x80 | ((scalar >> 12) & 0x3F)))
            out.append(UInt8(0x80 | ((scalar >> 6) & 0x3F)))
            out.append(UInt8(0x80 | (scalar & 0x3F)))
        }
    }
}

/// The outcome of reading a JSON number as a 64-bit integer.
enum IntegerReading: Equatable {
    case value(Int64)
    case notANumber
    /// A fraction or an exponent (`42.0`, `4.2e1`): postbacks carry plain integers.
    case notAnInteger
    case outOfRange
}

/// Line and column (both 1-based) of a byte offset.
func lineAndColumn(of offset: Int, in bytes: UnsafeBufferPointer<UInt8>) -> (line: Int, column: Int) {
    var line = 1
    var lineStart = 0
    var index = 0
    let end = min(offset, bytes.count)
    while index < end {
        if bytes[index] == 0x0A {
            line += 1
            lineStart = index + 1
        }
        index += 1
    }
    return (line, end - lineStart + 1)
}
