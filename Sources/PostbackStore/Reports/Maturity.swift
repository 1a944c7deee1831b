import PostbackKit

/// Whether the numbers of an install date can still grow: postbacks arrive days after the
/// install, and a device retries one it could not deliver.
///
/// Postback 0 of an install on day D arrives by the end of D plus its window (2 days) plus
/// Apple's delay (at most 48 hours): 4 days; postback 1 by the end of D plus 7 days and at most
/// 144 hours: 13 days; postback 2 by 35 days and 144 hours: 41 days (SKAdNetwork 4.0 and
/// AdAttributionKit; before 4.0 a postback comes sooner after its last value update). A device
/// that got no 200 retries for up to 9 days more (docs/postbacks: transport). So a day's
/// installs are final 14 days after it begins (1 + 4 + 9), its postbacks 1 after 23 (1 + 13 +
/// 9) and its values 51 days after (1 + 41 + 9).
package struct Maturity: Sendable, Hashable {
    /// Every postback 0 of the day can have arrived.
    package var installs: Bool
    /// Every postback 1 too.
    package var window1: Bool
    /// Every postback 1 and 2 too.
    package var values: Bool

    /// Days from the start of an install date until its postbacks 0 can all have arrived.
    static let installsFinalDays: Int64 = 14
    /// Days from the start of an install date until its postbacks 1 can all have arrived.
    static let window1FinalDays: Int64 = 23
    /// Days from the start of an install date until its postbacks 1 and 2 can all have arrived.
    static let valuesFinalDays: Int64 = 51

    /// The maturity of install date `day` as of `asOf`.
    package init(day: UTCDay, asOf: UTCInstant) {
        let start = day.daysSinceEpoch * 86_400_000
        installs = asOf.milliseconds >= start + Self.installsFinalDays * 86_400_000
        window1 = asOf.milliseconds >= start + Self.window1FinalDays * 86_400_000
        values = asOf.milliseconds >= start + Self.valuesFinalDays * 86_400_000
    }

    /// Whether conversion window 0, 1 or 2 of the day is final.
    func window(_ window: Int) -> Bool { window == 0 ? installs : window == 1 ? window1 : values }

    /// For the table: `yes`, `installs` (values still growing) or `no`.
    var word: String { values ? "yes" : installs ? "installs" : "no" }
}

extension Report {
    /// The maturity of a row of a report by install date (nil: not judged, or a row without an
    /// install date).
    package func maturity(_ row: ReportRow) -> Maturity? {
        guard let asOf = maturityAsOf, !events, let position = dimensions.firstIndex(of: .installDate),
            case .text(let text) = row.dimensions[position], let day = UTCDay(text)
        else { return nil }
        return Maturity(day: day, asOf: asOf)
    }
}
