/// What a postback tells about itself without saying it (`../shared/spec/postbacks.md`,
/// section 9): its estimated install time, its crowd-anonymity tier and the number of digits
/// of its source identifier. Inferred the same way every time, and reported as inferred.
///
/// **Estimated install time**: `received_at` minus the mean delay from install to postback.
/// SKAdNetwork 4.0 and AdAttributionKit: 84 hours for postback 0 (window of 48 h, then 24–48 h
/// of random delay), 252 for postback 1 (168 h, then 24–144 h) and 924 for postback 2 (840 h,
/// then 24–144 h). Before 4.0: 36 hours (a 24-hour timer after the last update, then 0–24 h),
/// the latest plausible install time. A window locked early makes the estimate too early.
///
/// **Crowd-anonymity tier** (4.0 and AdAttributionKit, postback 0 of a winning attribution;
/// nil otherwise): 3 with a fine value and a source app or domain, 2 with a fine value
/// without them, 1 with only a coarse value, 0 with no value.
///
/// **Source identifier digits**: 2, 3 or 4 as observed; nil before 4.0 (no source identifier).
package struct PostbackInference: Sendable, Hashable {
    package var estimatedInstallAt: UTCInstant
    /// Hours subtracted from the received time.
    package var installOffsetHours: Int
    package var crowdAnonymityTier: Int?
    package var sourceIdentifierDigits: Int?
    /// Why the tier is what it is (or why there is none), for `verify --explain`.
    var tierBasis: String
    /// SKAdNetwork 4.0 or AdAttributionKit: three conversion windows.
    var windowed: Bool
    package var sequenceIndex: Int

    /// The UTC day of ``estimatedInstallAt``.
    package var installDate: UTCDay { estimatedInstallAt.day }

    /// The SKAdNetwork versions with the three conversion windows of 4.0.
    static let windowedVersions: [SKANVersion] = SKANVersion.allCases.filter { $0 >= .v4_0 }

    /// Before 4.0: the one postback arrives 24 h after the last update plus 0–24 h.
    static let singleWindowOffsetHours = 36

    /// 4.0 and AdAttributionKit: the end of the window (48, 168, 840 h after install) plus the
    /// mean delay after it (36 h for postback 0, 84 h for postbacks 1 and 2).
    static func windowedOffsetHours(sequenceIndex: Int) -> Int {
        switch sequenceIndex {
        case ...0: 48 + 36
        case 1: 168 + 84
        default: 840 + 84
        }
    }

    /// Every offset in hours, smallest first: the received days that can hold an install day
    /// are those from `smallest` to `largest` hours after it.
    static let offsetsHours: [Int] = [
        singleWindowOffsetHours, windowedOffsetHours(sequenceIndex: 0), windowedOffsetHours(sequenceIndex: 1),
        windowedOffsetHours(sequenceIndex: 2),
    ].sorted()

    /// The received days whose postbacks can have an install date within `from...to`.
    package static func receivedDays(forInstallDays from: UTCDay, _ to: UTCDay) -> (from: UTCDay, to: UTCDay) {
        let smallest = Int64(offsetsHours.first ?? 0)
        let largest = Int64(offsetsHours.last ?? 0)
        // install = received - h, so received = install + h: from the first instant of `from`
        // plus the smallest offset to the last instant of `to` plus the largest.
        let first = UTCInstant(milliseconds: from.start.milliseconds + smallest * 3_600_000).day
        let last = UTCInstant(milliseconds: to.next.start.milliseconds - 1 + largest * 3_600_000).day
        return (first, last)
    }

    /// The install days a postback received within `from...to` can have: the inverse of
    /// ``receivedDays(forInstallDays:_:)``.
    package static func installDays(forReceivedDays from: UTCDay, _ to: UTCDay) -> (from: UTCDay, to: UTCDay) {
        let smallest = Int64(offsetsHours.first ?? 0)
        let largest = Int64(offsetsHours.last ?? 0)
        // install = received - h: from the first instant of `from` minus the largest offset to
        // the last instant of `to` minus the smallest.
        let first = UTCInstant(milliseconds: from.start.milliseconds - largest * 3_600_000).day
        let last = UTCInstant(milliseconds: to.next.start.milliseconds - 1 - smallest * 3_600_000).day
        return (first, last)
    }

    package init(_ postback: Postback, receivedAt: UTCInstant) {
        switch postback {
        case .skan(let skan):
            self.init(
                windowed: Self.windowedVersions.contains(skan.version),
                sequenceIndex: skan.postbackSequenceIndex,
                didWin: skan.didWin,
                conversionValue: skan.conversionValue,
                sourceApp: skan.sourceAppID != nil,
                sourceDomain: skan.sourceDomain != nil,
                sourceIdentifier: skan.sourceIdentifier,
                receivedAt: receivedAt
            )
        case .aak(let aak):
            self.init(
                windowed: true,
                sequenceIndex: aak.postbackSequenceIndex,
                didWin: aak.didWin,
                conversionValue: aak.conversionValue,
                sourceApp: aak.publisherItemID != nil,
                sourceDomain: false,
                sourceIdentifier: aak.sourceIdentifier,
                receivedAt: receivedAt
            )
        }
    }

    /// The rules over the fields they read. `windowed`: SKAdNetwork 4.0 or AdAttributionKit.
    package init(
        windowed: Bool,
        sequenceIndex: Int,
        didWin: Bool?,
        conversionValue: ConversionValue?,
        sourceApp: Bool,
        sourceDomain: Bool,
        sourceIdentifier: String?,
        receivedAt: UTCInstant
    ) {
        self.windowed = windowed
        self.sequenceIndex = sequenceIndex
        installOffsetHours =
            windowed ? Self.windowedOffsetHours(sequenceIndex: sequenceIndex) : Self.singleWindowOffsetHours
        estimatedInstallAt = UTCInstant(milliseconds: receivedAt.milliseconds - Int64(installOffsetHours) * 3_600_000)
        sourceIdentifierDigits = sourceIdentifier.map { $0.utf8.count }
        if !windowed {
            crowdAnonymityTier = nil
            tierBasis = "no tier before SKAdNetwork 4.0"
        } else if sequenceIndex != 0 {
            crowdAnonymityTier = nil
            tierBasis = "no tier for postback \(sequenceIndex) (postback 0 only)"
        } else if didWin == false {
            crowdAnonymityTier = nil
            tierBasis = "no tier for a non-winning postback"
        } else {
            switch conversionValue {
            case .fine where sourceApp || sourceDomain:
                crowdAnonymityTier = 3
                tierBasis = "fine value with a source \(sourceApp ? "app" : "domain")"
            case .fine:
                crowdAnonymityTier = 2
                tierBasis = "fine value without a source app or domain"
            case .coarse:
                crowdAnonymityTier = 1
                tierBasis = "coarse value only"
            case nil:
                crowdAnonymityTier = 0
                tierBasis = "no conversion value"
            }
        }
    }

    /// `minus 84 h (postback 0, SKAdNetwork 4.0/AdAttributionKit windows)`.
    var installBasis: String {
        windowed
            ? "minus \(installOffsetHours) h (postback \(sequenceIndex), SKAdNetwork 4.0/AdAttributionKit windows)"
            : "minus \(installOffsetHours) h (one window, before SKAdNetwork 4.0)"
    }
}
