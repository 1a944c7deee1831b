import PostbackKit
import PostbackTestSupport
import Testing

/// Section 9 of the spec, each rule with an expectation computed by hand.
@Suite("Install dates, crowd-anonymity tiers and source identifier digits")
struct PostbackInferenceTests {
    /// 2026-11-21T12:00:00Z.
    let received: UTCInstant
    /// An AdAttributionKit postback, decoded from an envelope the test key signed.
    let signedAAK: AAKPostback

    private struct NotAAK: Error {}

    init() throws {
        received = try #require(UTCInstant(iso8601: "2026-11-21T12:00:00Z"))
        guard case .aak(let postback)? = try checkWithTestKeys(AAKVerificationTests.envelope()).postback else {
            throw NotAAK()
        }
        signedAAK = postback
    }

    private func skan(
        _ version: SKANVersion,
        sequenceIndex: Int = 0,
        value: ConversionValue? = .fine(20),
        didWin: Bool? = true,
        sourceApp: Int64? = nil,
        sourceDomain: String? = nil,
        sourceIdentifier: String? = nil
    ) -> Postback {
        var postback = SamplePostback.make(
            version,
            withOptional: false,
            conversionValue: value,
            sequenceIndex: sequenceIndex
        )
        if version >= .v3_0 { postback.didWin = didWin }
        postback.sourceAppID = sourceApp
        postback.sourceDomain = sourceDomain
        if let sourceIdentifier { postback.sourceIdentifier = sourceIdentifier }
        return .skan(postback)
    }

    private func aak(
        sequenceIndex: Int = 0,
        value: ConversionValue? = .fine(20),
        didWin: Bool = true,
        publisher: Int64? = nil,
        sourceIdentifier: String = "4321"
    ) -> Postback {
        var postback = signedAAK
        postback.keyID = "apple-development-identifier/1"
        postback.adNetworkID = "example.adattributionkit"
        postback.sourceIdentifier = sourceIdentifier
        postback.advertisedItemID = 525_463_029
        postback.conversionType = .download
        postback.didWin = didWin
        postback.postbackSequenceIndex = sequenceIndex
        postback.marketplaceID = "com.apple.AppStore"
        postback.publisherItemID = publisher
        postback.conversionValue = value
        postback.adInteractionType = nil
        postback.countryCode = nil
        return .aak(postback)
    }

    private func inference(_ postback: Postback, at instant: UTCInstant? = nil) -> PostbackInference {
        PostbackInference(postback, receivedAt: instant ?? received)
    }

    @Test("4.0 and AdAttributionKit: received minus 84, 252 and 924 hours for postbacks 0, 1 and 2")
    func windowedInstallTimes() {
        // 84 h = 3 d 12 h before 2026-11-21T12:00 is 2026-11-18T00:00.
        #expect(inference(skan(.v4_0)).estimatedInstallAt.iso8601 == "2026-11-18T00:00:00.000Z")
        #expect(inference(aak()).estimatedInstallAt.iso8601 == "2026-11-18T00:00:00.000Z")
        // 252 h = 10 d 12 h: 2026-11-11T00:00.
        #expect(
            inference(skan(.v4_0, sequenceIndex: 1, value: .coarse(.low))).estimatedInstallAt.iso8601
                == "2026-11-11T00:00:00.000Z"
        )
        #expect(inference(aak(sequenceIndex: 1)).installDate.description == "2026-11-11")
        // 924 h = 38 d 12 h: 2026-10-14T00:00 (October has 31 days).
        #expect(
            inference(skan(.v4_0, sequenceIndex: 2, value: nil)).estimatedInstallAt.iso8601
                == "2026-10-14T00:00:00.000Z"
        )
        #expect(inference(aak(sequenceIndex: 2)).installDate.description == "2026-10-14")
        #expect(inference(skan(.v4_0, sequenceIndex: 2)).installOffsetHours == 924)
    }

    @Test("before 4.0: received minus 36 hours, whatever the version")
    func singleWindowInstallTimes() {
        for version in [SKANVersion.v1_0, .v2_0, .v2_1, .v2_2, .v3_0] {
            let estimate = inference(skan(version))
            #expect(estimate.estimatedInstallAt.iso8601 == "2026-11-20T00:00:00.000Z", "\(version)")
            #expect(estimate.installOffsetHours == 36)
        }
    }

    @Test("the install date is the UTC day of the estimate, across midnight and month ends")
    func installDates() throws {
        // 2026-11-21T11:59:59.999Z minus 84 h is 2026-11-17T23:59:59.999Z.
        let justBefore = try #require(UTCInstant(iso8601: "2026-11-21T11:59:59.999Z"))
        #expect(inference(skan(.v4_0), at: justBefore).installDate.description == "2026-11-17")
        // 2026-12-02T06:00Z minus 36 h is 2026-11-30T18:00Z.
        let december = try #require(UTCInstant(iso8601: "2026-12-02T06:00:00Z"))
        #expect(inference(skan(.v3_0), at: december).installDate.description == "2026-11-30")
    }

    @Test("the received days that can hold an install day: one day after it to 39 days after")
    func receivedDaysForInstallDays() throws {
        let day = try #require(UTCDay("2026-11-16"))
        let days = PostbackInference.receivedDays(forInstallDays: day, day)
        // The earliest: 2026-11-16T00:00 + 36 h = 2026-11-17T12:00. The latest:
        // 2026-11-16T23:59:59.999 + 924 h = 2026-12-25T11:59:59.999.
        #expect(days.from.description == "2026-11-17")
        #expect(days.to.description == "2026-12-25")
    }

    @Test(
        "the install days a received day can hold: 39 days before it to the day before, the inverse of the received days"
    )
    func installDaysForReceivedDays() throws {
        let day = try #require(UTCDay("2026-12-25"))
        let days = PostbackInference.installDays(forReceivedDays: day, day)
        // The earliest: 2026-12-25T00:00 - 924 h = 2026-11-16T12:00. The latest:
        // 2026-12-25T23:59:59.999 - 36 h = 2026-12-24T11:59:59.999.
        #expect(days.from.description == "2026-11-16")
        #expect(days.to.description == "2026-12-24")
        // Every postback received that day, at any hour and of any version or window, has its
        // install date within them.
        let instants =
            [day.start.milliseconds, day.next.start.milliseconds - 1]
            + (0..<24).map { day.start.milliseconds + Int64($0) * 3_600_000 + 1_800_000 }
        for milliseconds in instants {
            let received = UTCInstant(milliseconds: milliseconds)
            for postback in [
                skan(.v3_0), skan(.v4_0), skan(.v4_0, sequenceIndex: 1), skan(.v4_0, sequenceIndex: 2), aak(),
            ] {
                let install = inference(postback, at: received).installDate
                #expect(days.from <= install && install <= days.to, "\(install) at \(received.iso8601)")
            }
        }
    }

    @Test("tier 3: a fine value with a source app or domain")
    func tierThree() {
        #expect(inference(skan(.v4_0, sourceApp: 1_234_567_891)).crowdAnonymityTier == 3)
        #expect(inference(skan(.v4_0, sourceDomain: "example.com")).crowdAnonymityTier == 3)
        #expect(inference(aak(publisher: 1_234_567_891)).crowdAnonymityTier == 3)
    }

    @Test("tier 2: a fine value alone; tier 1: only a coarse value; tier 0: no value")
    func lowerTiers() {
        #expect(inference(skan(.v4_0)).crowdAnonymityTier == 2)
        #expect(inference(aak()).crowdAnonymityTier == 2)
        #expect(inference(skan(.v4_0, value: .coarse(.high), sourceDomain: "example.com")).crowdAnonymityTier == 1)
        #expect(inference(aak(value: .coarse(.low))).crowdAnonymityTier == 1)
        #expect(inference(skan(.v4_0, value: nil)).crowdAnonymityTier == 0)
        #expect(inference(aak(value: nil, publisher: 7)).crowdAnonymityTier == 0)
    }

    @Test("no tier for non-winning postbacks, postbacks 1 and 2, or before 4.0")
    func noTier() {
        #expect(inference(skan(.v4_0, didWin: false, sourceApp: 1)).crowdAnonymityTier == nil)
        #expect(inference(aak(didWin: false)).crowdAnonymityTier == nil)
        #expect(inference(skan(.v4_0, sequenceIndex: 1, value: .coarse(.high))).crowdAnonymityTier == nil)
        #expect(inference(aak(sequenceIndex: 2, value: nil)).crowdAnonymityTier == nil)
        #expect(inference(skan(.v3_0, sourceApp: 1_234_567_891)).crowdAnonymityTier == nil)
        #expect(inference(skan(.v2_2)).crowdAnonymityTier == nil)
    }

    @Test("source identifier digits as observed; none before 4.0")
    func digits() {
        #expect(inference(skan(.v4_0, sourceIdentifier: "5239")).sourceIdentifierDigits == 4)
        #expect(inference(skan(.v4_0, sourceIdentifier: "523")).sourceIdentifierDigits == 3)
        #expect(inference(skan(.v4_0, sequenceIndex: 1, sourceIdentifier: "52")).sourceIdentifierDigits == 2)
        #expect(inference(aak(sourceIdentifier: "07")).sourceIdentifierDigits == 2)
        #expect(inference(skan(.v3_0)).sourceIdentifierDigits == nil)
    }
}
