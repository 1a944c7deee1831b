/// The records of a CSV text (RFC 4180: commas, double-quoted fields with `""` for a quote,
/// quoted line breaks; `\n` or `\r\n` ends a record; a UTF-8 byte order mark is skipped).
struct CSVRecords {
    struct Record {
        var fields: [String]
        /// The 1-based line the record begins on.
        var line: Int
        /// Why the record cannot be read (an unclosed quote, a quote inside a bare field).
        var problem: String?
    }

    private let bytes: [UInt8]
    private var position = 0
    private var line = 1

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { position = 3 }
    }

    /// The next record: unquoted fields without leading and trailing spaces and tabs, quoted
    /// ones exactly as quoted.
    mutating func next() -> Record? {
        guard position < bytes.count else { return nil }
        let first = line
        var fields: [String] = []
        var field: [UInt8] = []
        var problem: String?
        var quoted = false
        var wasQuoted = false
        func finish() {
            if wasQuoted {
                fields.append(String(decoding: field, as: UTF8.self))
            } else {
                fields.append(String(decoding: field, as: UTF8.self).trimmingSpaces)
            }
            field = []
            wasQuoted = false
        }
        while position < bytes.count {
            let byte = bytes[position]
            position += 1
            if quoted {
                if byte == UInt8(ascii: "\"") {
                    if position < bytes.count && bytes[position] == UInt8(ascii: "\"") {
                        field.append(byte)
                        position += 1
                    } else {
                        quoted = false
                    }
                } else {
                    if byte == UInt8(ascii: "\n") { line += 1 }
                    field.append(byte)
                }
                continue
            }
            switch byte {
            case UInt8(ascii: ","):
                finish()
            case UInt8(ascii: "\n"):
                line += 1
                if !wasQuoted, field.last == UInt8(ascii: "\r") { field.removeLast() }
                finish()
                return Record(fields: fields, line: first, problem: problem)
            case UInt8(ascii: "\""):
                if !wasQuoted && field.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }) {
                    quoted = true
                    wasQuoted = true
                    field = []
                } else if problem == nil {
                    problem = "a quote inside an unquoted field (quote the whole field and double the quote)"
                }
            default:
                if wasQuoted {
                    // After a closing quote only spaces may come before the comma or line end.
                    if byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r") {
                        continue
                    }
                    if problem == nil { problem = "text after a closing quote (quote the whole field)" }
                } else {
                    field.append(byte)
                }
            }
        }
        if quoted { problem = problem ?? "a quoted field is not closed before the end of the file" }
        if !wasQuoted, field.last == UInt8(ascii: "\r") { field.removeLast() }
        finish()
        return Record(fields: fields, line: first, problem: problem)
    }
}

extension String {
    /// Without leading and trailing spaces and tabs.
    var trimmingSpaces: String {
        let scalars = unicodeScalars
        guard let start = scalars.firstIndex(where: { $0 != " " && $0 != "\t" }),
            let end = scalars.lastIndex(where: { $0 != " " && $0 != "\t" })
        else { return "" }
        return String(scalars[start...end])
    }
}

extension CSVRecords {
    /// The records after the header, each given to `row` with its line, which returns its
    /// problems; every problem in the order of the lines. A record that cannot be read, or whose
    /// fields are not as many as `header`'s (named `headerText`), is a problem itself
    /// (`source:line: …`); a blank line is passed over.
    mutating func rows(
        source: String,
        header: [String],
        headerText: String,
        _ row: (_ fields: [String], _ line: Int) -> [String]
    ) -> [String] {
        var problems: [String] = []
        while let record = next() {
            if let problem = record.problem {
                problems.append("\(source):\(record.line): \(problem)")
                continue
            }
            if record.fields.allSatisfy({ $0.isEmpty }) { continue }  // a blank line
            guard record.fields.count == header.count else {
                problems.append(
                    "\(source):\(record.line): \(record.fields.count) columns; the header has \(header.count) (\(headerText))"
                )
                continue
            }
            problems += row(record.fields, record.line)
        }
        return problems
    }
}
