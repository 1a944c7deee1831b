import PostbackKit
import Testing

@Suite("UTC instants")
struct UTCInstantTests {
    @Test(
        "ISO 8601 dates and date-times parse to the right instant",
        arguments: [
            ("2026-11-21", Int64(1_795_219_200_000)),
            ("2026-11-21T00:00:00Z", 1_795_219_200_000),
            ("2026-11-21T08:30", 1_795_249_800_000),
            ("2026-11-21T08:30:15.250Z", 1_795_249_815_250),
            ("2026-11-21T10:30:15+02:00", 1_795_249_815_000),
            ("2026-11-21T03:30:15-0500", 1_795_249_815_000),
            ("2024-02-29", 1_709_164_800_000),
            ("1970-01-01T00:00:00.000Z", 0),
            ("2100-01-01", 4_102_444_800_000),
        ]
    )
    func parse(_ text: String, _ milliseconds: Int64) {
        #expect(UTCInstant(iso8601: text)?.milliseconds == milliseconds)
    }

    @Test(
        "nonsense is refused",
        arguments: [
            "", "2026-13-01", "2026-02-30", "2025-02-29", "21-11-2026", "2026-11-21T25:00", "2026-11-21x", "yesterday",
        ]
    )
    func refuse(_ text: String) {
        #expect(UTCInstant(iso8601: text) == nil)
    }

    @Test("formatting round-trips and sorts as text")
    func format() {
        for milliseconds: Int64 in [0, 1_613_095_729_123, 1_795_219_199_999, 4_102_444_799_000, -1] {
            let instant = UTCInstant(milliseconds: milliseconds)
            #expect(UTCInstant(iso8601: instant.iso8601) == instant)
        }
        #expect(UTCInstant(milliseconds: 1_613_095_729_123).iso8601 == "2021-02-12T02:08:49.123Z")
        #expect(UTCInstant(milliseconds: -1).iso8601 == "1969-12-31T23:59:59.999Z")
        #expect(UTCInstant(milliseconds: 1_795_219_200_000).day.description == "2026-11-21")
        #expect(UTCDay("2026-11-21")?.next.description == "2026-11-22")
        #expect(UTCDay("2026-12-31")?.next.description == "2027-01-01")
    }

    @Test(
        "a day read from stored bytes parses as the text does, valid or not",
        arguments: [
            "2026-11-21", "2024-02-29", "2025-02-29", "2026-12-31", "1970-01-01", "0000-03-01", "9999-12-31",
            "2026-13-01", "2026-00-10", "2026-11-00", "2026-04-31", "2026-11-2", "2026-11-210", "2026/11/21",
            "2026-1a-21", "+026-11-21", "", "2026-11-21 ",
        ]
    )
    func dayFromBytes(_ text: String) {
        let fromBytes = Array(text.utf8).withUnsafeBufferPointer { UTCDay(utf8: $0) }
        #expect(fromBytes == UTCDay(text))
    }
}
