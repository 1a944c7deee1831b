/// Tracks strings and nesting over a stream of bytes, to find where a JSON value ends without
/// parsing it (the parser validates each entry afterwards).
struct BoundaryScanner {
    private(set) var depth = 0
    private(set) var inString = false
    private var escaped = false
    /// Whether anything but whitespace was seen.
    private(set) var started = false

    /// True when not inside any object, array or string.
    var atTopLevel: Bool { depth == 0 }

    @inline(__always)
    mutating func feed(_ byte: UInt8) {
        if inString {
            if escaped {
                escaped = false
            } else if byte == UInt8(ascii: "\\") {
                escaped = true
            } else if byte == UInt8(ascii: "\"") {
                inString = false
            }
            return
        }
        switch byte {
        case UInt8(ascii: "\""):
            inString = true
            started = true
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            depth += 1
            started = true
        case UInt8(ascii: "}"), UInt8(ascii: "]"):
            if depth > 0 { depth -= 1 }
            started = true
        case 0x20, 0x09, 0x0A, 0x0D:
            break
        default:
            started = true
        }
    }
}

/// The offset just past the first complete JSON object or array starting at `start`, or nil
/// if the bytes end first (scalars are not looked for: only containers start postbacks).
func valueEnd(in bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int? {
    guard start < bytes.count, bytes[start] == UInt8(ascii: "{") || bytes[start] == UInt8(ascii: "[") else {
        return nil
    }
    var scanner = BoundaryScanner()
    var index = start
    while index < bytes.count {
        scanner.feed(bytes[index])
        index += 1
        if scanner.atTopLevel && !scanner.inString { return index }
    }
    return nil
}
