import Foundation
import PostbackKit
import PostbackStore
import PostbackTestSupport
import PostgresNIO
import Testing

/// ``PostgresCopyRows`` against a real server: every value written as COPY text reads back as
/// the value written, the characters COPY escapes and the doubles that need every digit
/// included.
@Suite("COPY text rows on PostgreSQL")
struct PostgresCopyRowsTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory("copy-rows")
    }

    static let texts: [String?] = [
        "plain", "", "tab\there", "line\nbreak", "carriage\rreturn", "back\\slash", "\\N", "\\.", "a\\tb",
        "Ünïcödé 広告 🚀", " leading and trailing ", nil,
    ]
    static let integers: [Int64?] = [0, 1, -1, 42, 1_000_000, Int64.max, Int64.min, nil]
    static let doubles: [Double?] = [
        0, -0.0, 0.1, 1.0 / 3, 12.345678, 1e-7, .leastNonzeroMagnitude, .leastNormalMagnitude, .greatestFiniteMagnitude,
        -123_456.789_012_5, Double(Int64(1) << 53) + 2, nil,
    ]
    static let days: [UTCDay?] = [
        UTCDay("1970-01-01"), UTCDay("2000-02-29"), UTCDay("2026-11-25"), UTCDay("0001-01-01"),
        UTCDay("9999-12-31"), UTCDay("1969-12-31"), nil,
    ]
    static let bools: [Bool?] = [true, false, nil]

    @Test(
        "every value reads back as written",
        .enabled(if: TestEngine.postgresURL != nil, "\(TestEngine.skipNotice)")
    )
    func roundTrip() async throws {
        let store = try await TestStore.make(.postgres, in: directory)
        let count = [Self.texts.count, Self.integers.count, Self.doubles.count, Self.days.count].max() ?? 0
        var rows = PostgresCopyRows(capacity: 16)
        for index in 0..<count {
            rows.append(index)
            rows.append(Self.texts[index % Self.texts.count])
            rows.append(Self.integers[index % Self.integers.count])
            rows.append(Self.doubles[index % Self.doubles.count])
            rows.append(Self.days[index % Self.days.count])
            rows.append(Self.bools[index % Self.bools.count])
            rows.endRow()
        }
        #expect(rows.count == count)
        let logger = Logger(label: "postbackd.tests.copy")
        try await store.withPostgresConnection { connection in
            try await connection.query(
                "CREATE TABLE copied (position bigint, text text, integer bigint, number float8, day date, flag bool)",
                logger: logger
            )
            try await connection.copy(
                rows,
                into: "copied",
                columns: "position, text, integer, number, day, flag",
                logger: logger
            )
            let read = try await connection.query(
                "SELECT position, text, integer, number, (day - DATE '1970-01-01')::bigint, flag FROM copied ORDER BY position",
                logger: logger
            )
            var seen = 0
            for try await (position, text, integer, number, day, flag) in read.decode(
                (Int, String?, Int64?, Double?, Int64?, Bool?).self
            ) {
                #expect(position == seen)
                #expect(text == Self.texts[position % Self.texts.count])
                #expect(integer == Self.integers[position % Self.integers.count])
                let double = Self.doubles[position % Self.doubles.count]
                #expect(number?.bitPattern == double?.bitPattern, "\(String(describing: double))")
                #expect(day == Self.days[position % Self.days.count]?.daysSinceEpoch)
                #expect(flag == Self.bools[position % Self.bools.count])
                seen += 1
            }
            #expect(seen == count)
        }
    }
}
