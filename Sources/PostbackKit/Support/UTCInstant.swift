#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An instant in UTC with millisecond precision, formatted and parsed without Foundation's
/// formatters (one is formatted per stored postback, so it must be cheap).
package struct UTCInstant: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Milliseconds since 1970-01-01T00:00:00Z.
    package var milliseconds: Int64

    package init(milliseconds: Int64) {
        self.milliseconds = milliseconds
    }

    package init(seconds: Int64) {
        self.milliseconds = seconds * 1000
    }

    /// The current time.
    package static func now() -> UTCInstant {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return UTCInstant(milliseconds: Int64(time.tv_sec) * 1000 + Int64(time.tv_nsec) / 1_000_000)
    }

    package static func < (lhs: UTCInstant, rhs: UTCInstant) -> Bool { lhs.milliseconds < rhs.milliseconds }

    /// `2026-11-21T08:30:00.000Z`: sorts as text in time order.
    package var iso8601: String {
        withISO8601Bytes { String(decoding: $0, as: UTF8.self) }
    }

    /// Calls `body` with the 24 ASCII bytes of ``iso8601``, formatted on the stack (one is
    /// formatted per stored postback).
    package func withISO8601Bytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try ISO8601Text(self).withBytes(body)
    }

    /// The UTC day, `2026-11-21`.
    package var day: UTCDay {
        UTCDay(daysSinceEpoch: milliseconds.floorDivided(by: 86_400_000).quotient)
    }

    package var description: String { iso8601 }

    /// Parses an ISO 8601 date (`2026-11-21`, midnight UTC) or date-time
    /// (`2026-11-21T08:30`, `…:00`, `…:00.250`, with `Z`, `+02:00`, `+0200` or no offset,
    /// which means UTC).
    package init?(iso8601 text: String) {
        var scanner = DigitScanner(Array(text.utf8))
        guard let date = scanner.date() else { return nil }
        var milliseconds = date.daysSinceEpoch * 86_400_000
        if scanner.atEnd {
            self.milliseconds = milliseconds
            return
        }
        guard scanner.take(UInt8(ascii: "T")) || scanner.take(UInt8(ascii: " ")),
            let hour = scanner.number(2), hour < 24,
            scanner.take(UInt8(ascii: ":")),
            let minute = scanner.number(2), minute < 60
        else { return nil }
        var second: Int64 = 0
        var fraction: Int64 = 0
        if scanner.take(UInt8(ascii: ":")) {
            guard let value = scanner.number(2), value < 61 else { return nil }
            second = value
            if scanner.take(UInt8(ascii: ".")) || scanner.take(UInt8(ascii: ",")) {
                guard let (value, digits) = scanner.digits(), digits > 0 else { return nil }
                fraction = digits >= 3 ? value / Int64(pow10(digits - 3)) : value * Int64(pow10(3 - digits))
            }
        }
        milliseconds += ((hour * 60 + minute) * 60 + second) * 1000 + fraction
        if scanner.take(UInt8(ascii: "Z")) || scanner.take(UInt8(ascii: "z")) {
            // UTC
        } else if let sign = scanner.sign() {
            guard let offsetHours = scanner.number(2), offsetHours < 24 else { return nil }
            _ = scanner.take(UInt8(ascii: ":"))
            guard let offsetMinutes = scanner.number(2), offsetMinutes < 60 else { return nil }
            milliseconds -= sign * (offsetHours * 60 + offsetMinutes) * 60_000
        }
        guard scanner.atEnd else { return nil }
        self.milliseconds = milliseconds
    }

    static func dateText(_ year: Int64, _ month: Int64, _ day: Int64) -> String {
        let yearText = year >= 0 && year < 10_000 ? pad4(year) : String(year)
        return yearText + "-" + pad2(month) + "-" + pad2(day)
    }
}

/// A UTC calendar day.
package struct UTCDay: Sendable, Hashable, Comparable, CustomStringConvertible {
    package var daysSinceEpoch: Int64

    package init(daysSinceEpoch: Int64) {
        self.daysSinceEpoch = daysSinceEpoch
    }

    /// Parses `YYYY-MM-DD`.
    package init?(_ text: String) {
        var scanner = DigitScanner(Array(text.utf8))
        guard let day = scanner.date(), scanner.atEnd else { return nil }
        self = day
    }

    /// Parses `YYYY-MM-DD` from UTF-8 bytes, as ``init(_:)`` does, without making a String or an
    /// array (a stored column read a million times by `aggregate`).
    package init?(utf8 bytes: UnsafeBufferPointer<UInt8>) {
        guard bytes.count == 10, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-") else { return nil }
        func number(_ range: Range<Int>) -> Int64? {
            var value: Int64 = 0
            for index in range {
                let digit = bytes[index] &- UInt8(ascii: "0")
                guard digit < 10 else { return nil }
                value = value * 10 + Int64(digit)
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10), (1...12).contains(month),
            day >= 1, day <= daysInMonth(year, month)
        else { return nil }
        self.init(daysSinceEpoch: days(fromCivil: year, month, day))
    }

    package static func < (lhs: UTCDay, rhs: UTCDay) -> Bool { lhs.daysSinceEpoch < rhs.daysSinceEpoch }

    /// Midnight UTC at the start of the day.
    package var start: UTCInstant { UTCInstant(milliseconds: daysSinceEpoch * 86_400_000) }

    /// The following day.
    package var next: UTCDay { UTCDay(daysSinceEpoch: daysSinceEpoch + 1) }

    /// `2026-11-21`.
    package var description: String {
        let (year, month, day) = civilDate(fromDays: daysSinceEpoch)
        return UTCInstant.dateText(year, month, day)
    }
}

/// Reads the pieces of ISO 8601 text.
private struct DigitScanner {
    let bytes: [UInt8]
    var index = 0

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    var atEnd: Bool { index == bytes.count }

    mutating func take(_ byte: UInt8) -> Bool {
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    mutating func sign() -> Int64? {
        if take(UInt8(ascii: "+")) { return 1 }
        if take(UInt8(ascii: "-")) { return -1 }
        return nil
    }

    /// Exactly `count` digits.
    mutating func number(_ count: Int) -> Int64? {
        guard index + count <= bytes.count else { return nil }
        var value: Int64 = 0
        for offset in 0..<count {
            let byte = bytes[index + offset]
            guard isDigit(byte) else { return nil }
            value = value * 10 + Int64(byte - UInt8(ascii: "0"))
        }
        index += count
        return value
    }

    /// One or more digits (at most 9 kept) and how many there were.
    mutating func digits() -> (Int64, Int)? {
        var value: Int64 = 0
        var count = 0
        while index < bytes.count, isDigit(bytes[index]) {
            if count < 9 { value = value * 10 + Int64(bytes[index] - UInt8(ascii: "0")) }
            count += 1
            index += 1
        }
        return count == 0 ? nil : (value, min(count, 9))
    }

    /// `YYYY-MM-DD`, checked against the calendar.
    mutating func date() -> UTCDay? {
        guard let year = number(4), take(UInt8(ascii: "-")), let month = number(2), take(UInt8(ascii: "-")),
            let day = number(2), (1...12).contains(month), day >= 1, day <= daysInMonth(year, month)
        else { return nil }
        return UTCDay(daysSinceEpoch: days(fromCivil: year, month, day))
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
func days(fromCivil year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
    let y = month <= 2 ? year - 1 : year
    let era = (y >= 0 ? y : y - 399) / 400
    let yearOfEra = y - era * 400
    let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
    let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
    return era * 146_097 + dayOfEra - 719_468
}

/// The proleptic Gregorian date of a day count since 1970-01-01.
package func civilDate(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
    let z = days + 719_468
    let era = (z >= 0 ? z : z - 146_096) / 146_097
    let dayOfEra = z - era * 146_097
    let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
    let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
    let mp = (5 * dayOfYear + 2) / 153
    let day = dayOfYear - (153 * mp + 2) / 5 + 1
    let month = mp < 10 ? mp + 3 : mp - 9
    return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
}

private func daysInMonth(_ year: Int64, _ month: Int64) -> Int64 {
    switch month {
    case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
    case 4, 6, 9, 11: 30
    default: 31
    }
}

private func pow10(_ exponent: Int) -> Int {
    var value = 1
    for _ in 0..<exponent { value *= 10 }
    return value
}

private func pad2(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
private func pad4(_ value: Int64) -> String {
    value < 10 ? "000\(value)" : value < 100 ? "00\(value)" : value < 1000 ? "0\(value)" : "\(value)"
}

extension Int64 {
    /// Division rounding toward negative infinity, with a non-negative remainder.
    func floorDivided(by divisor: Int64) -> (quotient: Int64, remainder: Int64) {
        var quotient = self / divisor
        var remainder = self % divisor
        if remainder < 0 {
            quotient -= 1
            remainder += divisor
        }
        return (quotient, remainder)
    }
}

/// An instant's ``UTCInstant/iso8601`` text, 24 ASCII bytes held inline (no allocation): made
/// where there is time (ingest's verifiers), bound where there is none (its writer).
package struct ISO8601Text: Sendable {
    private var storage: (UInt64, UInt64, UInt64) = (0, 0, 0)

    package init(_ instant: UTCInstant) {
        let (days, millisecondOfDay) = instant.milliseconds.floorDivided(by: 86_400_000)
        let (year, month, day) = civilDate(fromDays: days)
        let seconds = millisecondOfDay / 1000
        withUnsafeMutableBytes(of: &storage) { buffer in
            func put(_ value: Int64, at offset: Int, digits: Int) {
                var value = value
                for position in stride(from: offset + digits - 1, through: offset, by: -1) {
                    buffer[position] = UInt8(ascii: "0") + UInt8(value % 10)
                    value /= 10
                }
            }
            put(min(max(year, 0), 9999), at: 0, digits: 4)
            buffer[4] = UInt8(ascii: "-")
            put(month, at: 5, digits: 2)
            buffer[7] = UInt8(ascii: "-")
            put(day, at: 8, digits: 2)
            buffer[10] = UInt8(ascii: "T")
            put(seconds / 3600, at: 11, digits: 2)
            buffer[13] = UInt8(ascii: ":")
            put(seconds / 60 % 60, at: 14, digits: 2)
            buffer[16] = UInt8(ascii: ":")
            put(seconds % 60, at: 17, digits: 2)
            buffer[19] = UInt8(ascii: ".")
            put(millisecondOfDay % 1000, at: 20, digits: 3)
            buffer[23] = UInt8(ascii: "Z")
        }
    }

    /// Calls `body` with the 24 bytes.
    package func withBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try withUnsafeBytes(of: storage) { try body(UnsafeRawBufferPointer(rebasing: $0[0..<24])) }
    }
}
