import NIOCore
import PostbackKit
import PostgresNIO

/// Rows for `COPY table (columns) FROM STDIN`, in PostgreSQL's text format: fields separated by
/// tabs, rows ended by newlines, NULL as `\N`, and in text a backslash, newline, carriage return
/// or tab escaped with a backslash.
///
/// `aggregate` writes its rows this way rather than as arrays unnested by an `INSERT … SELECT`
/// (``PostgresArrayColumn``): the server parses a day's `aggregate_daily` rows from COPY text in
/// about a third of the time it takes to unnest the same rows from 35 arrays, each of which it
/// materializes before it joins them into rows (41,422 rows: 104 ms against 300 ms; see
/// BENCHMARKS.md). PostgresNIO's `copyFrom` speaks only the text format.
///
/// Each value is written as the column's input function reads it back exactly: integers in
/// decimal, `t`/`f`, dates as `YYYY-MM-DD`, doubles as Swift's shortest text that reads back as
/// the same double (`float8in` rounds correctly).
package struct PostgresCopyRows {
    /// The text. An array, not a `ByteBuffer`: each of a `ByteBuffer`'s small writes checks its
    /// storage object's exclusive access at run time (7% of `aggregate`'s client samples).
    private(set) var bytes: [UInt8] = []
    /// Rows ended.
    package private(set) var count = 0
    /// Whether the current row has no field yet (no tab before the next).
    private var atRowStart = true

    /// `capacity`: bytes to reserve.
    package init(capacity: Int = 4096) {
        bytes.reserveCapacity(capacity)
    }

    private mutating func separate() {
        if atRowStart {
            atRowStart = false
        } else {
            bytes.append(UInt8(ascii: "\t"))
        }
    }

    private mutating func appendNull() {
        separate()
        bytes.append(UInt8(ascii: "\\"))
        bytes.append(UInt8(ascii: "N"))
    }

    /// Ends the current row.
    package mutating func endRow() {
        bytes.append(UInt8(ascii: "\n"))
        atRowStart = true
        count += 1
    }

    package mutating func append(_ value: String?) {
        guard var text = value else { return appendNull() }
        separate()
        text.withUTF8 { utf8 in
            guard utf8.contains(where: Self.needsEscape) else {
                bytes.append(contentsOf: utf8)
                return
            }
            for byte in utf8 {
                switch byte {
                case UInt8(ascii: "\\"): escape(UInt8(ascii: "\\"))
                case UInt8(ascii: "\n"): escape(UInt8(ascii: "n"))
                case UInt8(ascii: "\r"): escape(UInt8(ascii: "r"))
                case UInt8(ascii: "\t"): escape(UInt8(ascii: "t"))
                default: bytes.append(byte)
                }
            }
        }
    }

    private mutating func escape(_ letter: UInt8) {
        bytes.append(UInt8(ascii: "\\"))
        bytes.append(letter)
    }

    private static func needsEscape(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "\\") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r")
            || byte == UInt8(ascii: "\t")
    }

    package mutating func append(_ value: Int64?) {
        guard let value else { return appendNull() }
        separate()
        writeDecimal(value)
    }

    package mutating func append(_ value: Int?) {
        append(value.map(Int64.init))
    }

    package mutating func append(_ value: Bool?) {
        guard let value else { return appendNull() }
        separate()
        bytes.append(value ? UInt8(ascii: "t") : UInt8(ascii: "f"))
    }

    package mutating func append(_ value: Double?) {
        guard let value else { return appendNull() }
        separate()
        // Swift's `description` is the shortest text that reads back as the same double:
        // `inf`, `-inf` and `nan` included, which `float8in` also reads.
        bytes.append(contentsOf: value.description.utf8)
    }

    package mutating func append(_ value: UTCDay?) {
        guard let value else { return appendNull() }
        separate()
        let (year, month, day) = civilDate(fromDays: value.daysSinceEpoch)
        guard (0...9999).contains(year) else {
            // Outside four digits: the general spelling (a year PostgreSQL reads as such).
            bytes.append(contentsOf: value.description.utf8)
            return
        }
        writeDigits(year, 4)
        bytes.append(UInt8(ascii: "-"))
        writeDigits(month, 2)
        bytes.append(UInt8(ascii: "-"))
        writeDigits(day, 2)
    }

    /// `value` in decimal, without a String.
    private mutating func writeDecimal(_ value: Int64) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        let magnitude = value.magnitude
        var divisor: UInt64 = 1
        while divisor <= magnitude / 10 { divisor *= 10 }
        var rest = magnitude
        while divisor > 0 {
            bytes.append(UInt8(ascii: "0") + UInt8(rest / divisor))
            rest %= divisor
            divisor /= 10
        }
    }

    /// `value` (non-negative) in exactly `width` digits, zeros first.
    private mutating func writeDigits(_ value: Int64, _ width: Int) {
        var divisor: Int64 = 1
        for _ in 1..<width { divisor *= 10 }
        var rest = value
        while divisor > 0 {
            bytes.append(UInt8(ascii: "0") + UInt8(rest / divisor))
            rest %= divisor
            divisor /= 10
        }
    }
}

extension PostgresCopyRows: AggregateRowSink {
    mutating func put(_ value: String?) { append(value) }
    mutating func put(_ value: Int64?) { append(value) }
    mutating func put(_ value: Int?) { append(value) }
    mutating func put(_ value: Bool?) { append(value) }
    mutating func put(_ value: Double?) { append(value) }
    mutating func put(_ value: UTCDay?) { append(value) }
}

extension PostgresConnection {
    /// Writes `rows` into `table`'s `columns` (a comma-separated list of column names, ours, not
    /// input) with `COPY … FROM STDIN`, in slices of at most a megabyte.
    package func copy(_ rows: PostgresCopyRows, into table: String, columns: String, logger: Logger) async throws {
        guard rows.count > 0 else { return }
        let names = columns.split(separator: ",").map { String($0.withoutSurroundingSpaces) }
        try await copyFrom(table: table, columns: names, logger: logger) { writer in
            var start = 0
            while start < rows.bytes.count {
                let end = min(start + (1 << 20), rows.bytes.count)
                try await writer.write(ByteBuffer(bytes: rows.bytes[start..<end]))
                start = end
            }
        }
    }
}
