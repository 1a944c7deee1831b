import Foundation
import PostbackKit
import PostbackStore

/// A corpus that holds every class `postbackd reconcile` counts (issue 60): the devices' copies
/// and a network's forwards of the same postbacks, as planned, and the counts the plan says a
/// reconciliation finds. Each postback is planned as a class, and its expected counts are
/// written beside it here, not computed by the code under test.
package struct ReconcileCorpus: Sendable {
    /// What a planned postback is.
    package enum Class: String, Sendable, CaseIterable {
        /// Copied and forwarded with the same unsigned values.
        case identical
        case fineHigher, fineLower
        /// Postback 1, coarse low copied, forwarded high; postback 2, high copied, forwarded medium.
        case coarseHigher, coarseLower
        /// The copy's fine value left out of the forward; a forward with a value the copy lacks.
        case valueDropped, valueAdded
        case countryDiffers
        /// AdAttributionKit: `ad-interaction-type` click copied, view forwarded.
        case interactionDiffers
        /// Copied, never forwarded; forwarded, never copied.
        case copyAlone, forwardAlone
        /// A non-winning postback, forwarded (Apple never copies those).
        case nonWinningForward
        /// A winning postback 1 forwarded with a fine value: a shape Apple never sends.
        case fineOnLaterPostback
        /// A device's copy of a non-winning postback: impossible too.
        case nonWinningCopy
        /// A postback 1, copied and forwarded the same, within four days of its campaign's start.
        case early
    }

    /// One planned postback: its class, its copy's and forward's lines (nil: none), and
    /// whether it is received long before the reconciliation's cutoff (else after it).
    package struct Entry: Sendable {
        package var plannedClass: Class
        package var copy: String?
        package var forward: String?
        package var old: Bool
    }

    package static let network = "example123.skadnetwork"
    package static let channel = "network-x"
    package static let appID: Int64 = 525_463_029
    /// The source identifier of the `early` postbacks, mapped to a campaign (``mapping(validFrom:)``).
    package static let earlySource = "77"

    package private(set) var entries: [Entry] = []
    /// What the network forwarded that is quarantined: a line that is not a postback, and a
    /// postback whose signed `transaction-id` was changed (a broken signature). All old.
    package private(set) var quarantinedForwards: [String] = []
    /// A line of the device's that is not a postback: quarantined on `device`, in no count.
    package let junkCopy = "not a postback"

    /// `repeats` postbacks of each class, half old and half young where age matters.
    package init(repeats: Int = 2) throws {
        var serial = 0
        func nextID() -> String {
            serial += 1
            return "6e000000-0000-4000-8000-" + String(format: "%012d", serial)
        }
        for plannedClass in Class.allCases {
            for repeatIndex in 0..<repeats {
                let old = plannedClass == .copyAlone || plannedClass == .forwardAlone ? repeatIndex % 2 == 0 : true
                let (copy, forward) = try Self.lines(plannedClass, id: nextID())
                entries.append(Entry(plannedClass: plannedClass, copy: copy, forward: forward, old: old))
            }
        }
        quarantinedForwards = [
            "{}",
            try Self.skan(nextID(), fine: 20).replacingOccurrences(of: "6e000000-", with: "6f000000-"),
        ]
    }

    /// A 4.0 postback signed with the test keys, its unsigned values as given.
    static func skan(
        _ id: String,
        sequenceIndex: Int = 0,
        didWin: Bool = true,
        source: String? = nil,
        fine: Int? = nil,
        coarse: CoarseConversionValue? = nil,
        country: String? = nil
    ) throws -> String {
        var postback = SamplePostback.make(.v4_0, transactionID: id, conversionValue: nil, sequenceIndex: sequenceIndex)
        postback.didWin = didWin
        if let source { postback.sourceIdentifier = source }
        postback = try TestKeys.signer.signed(postback)
        // Unsigned: set after signing, as a network changing them would.
        postback.conversionValue = fine.map { .fine($0) } ?? coarse.map { .coarse($0) }
        postback.countryCode = country
        return postback.jsonText()
    }

    /// An AdAttributionKit postback 0 of the same app and network, signed with the test key.
    static func aak(_ id: String, fine: Int, interaction: String) throws -> String {
        let payload = """
            {"postback-identifier":"\(id)","impression-type":"app-impression",\
            "ad-network-identifier":"\(network)","did-win":true,"postback-sequence-index":0,\
            "conversion-type":"download","source-identifier":"5239","advertised-item-identifier":\(appID),\
            "marketplace-identifier":"com.apple.AppStore"}
            """
        let jws = try TestKeys.signer.jws(
            headerJSON: "{\"kid\":\"postbackd-test/0\",\"alg\":\"ES256\"}",
            payloadJSON: payload
        )
        return "{\"jws-string\":\"\(jws)\",\"conversion-value\":\(fine),\"ad-interaction-type\":\"\(interaction)\"}"
    }

    /// The copy's and the forward's lines of a postback of `plannedClass`.
    static func lines(_ plannedClass: Class, id: String) throws -> (copy: String?, forward: String?) {
        switch plannedClass {
        case .identical:
            let line = try skan(id, fine: 20)
            return (line, line)
        case .fineHigher: return (try skan(id, fine: 20), try skan(id, fine: 40))
        case .fineLower: return (try skan(id, fine: 20), try skan(id, fine: 7))
        case .coarseHigher:
            return (try skan(id, sequenceIndex: 1, coarse: .low), try skan(id, sequenceIndex: 1, coarse: .high))
        case .coarseLower:
            return (try skan(id, sequenceIndex: 2, coarse: .high), try skan(id, sequenceIndex: 2, coarse: .medium))
        case .valueDropped: return (try skan(id, fine: 20), try skan(id))
        case .valueAdded: return (try skan(id), try skan(id, fine: 20))
        case .countryDiffers: return (try skan(id, fine: 20, country: "US"), try skan(id, fine: 20, country: "GB"))
        case .interactionDiffers:
            return (try aak(id, fine: 20, interaction: "click"), try aak(id, fine: 20, interaction: "view"))
        case .copyAlone: return (try skan(id, fine: 20), nil)
        case .forwardAlone: return (nil, try skan(id, fine: 20))
        case .nonWinningForward: return (nil, try skan(id, didWin: false))
        case .fineOnLaterPostback: return (nil, try skan(id, sequenceIndex: 1, fine: 20))
        case .nonWinningCopy: return (try skan(id, didWin: false), nil)
        case .early:
            let line = try skan(id, sequenceIndex: 1, source: earlySource, coarse: .medium)
            return (line, line)
        }
    }

    /// The counts a postback of `plannedClass` adds, `old`: first received before the cutoff.
    package static func expected(_ plannedClass: Class, old: Bool) -> ReconcileCounts {
        var counts = ReconcileCounts()
        func matched() {
            counts.copies = 1
            counts.forwardedWon = 1
            counts.matched = 1
        }
        switch plannedClass {
        case .identical:
            matched()
            counts.matchedIdentical = 1
        case .fineHigher:
            matched()
            counts.fineHigher = 1
        case .fineLower:
            matched()
            counts.fineLower = 1
        case .coarseHigher:
            matched()
            counts.coarseHigher = 1
        case .coarseLower:
            matched()
            counts.coarseLower = 1
        case .valueDropped:
            matched()
            counts.valueDropped = 1
        case .valueAdded:
            matched()
            counts.valueAdded = 1
        case .countryDiffers:
            matched()
            counts.countryDiffers = 1
        case .interactionDiffers:
            matched()
            counts.interactionDiffers = 1
        case .copyAlone:
            counts.copies = 1
            if old { counts.copyOnly = 1 } else { counts.pending = 1 }
        case .forwardAlone:
            counts.forwardedWon = 1
            if old { counts.forwardOnly = 1 } else { counts.pending = 1 }
        case .nonWinningForward:
            counts.forwardedNonwon = 1
        case .fineOnLaterPostback:
            counts.forwardedWon = 1
            counts.forwardOnly = old ? 1 : 0
            counts.pending = old ? 0 : 1
            counts.impossible = 1
        case .nonWinningCopy:
            counts.copies = 1
            counts.impossible = 1
        case .early:
            matched()
            counts.matchedIdentical = 1
            counts.early = 1
        }
        return counts
    }

    /// The counts of the entries `including` keeps, and the quarantined forwards when
    /// `quarantined`; every entry judged old when `allOld` (all received long before the cutoff).
    package func expected(
        allOld: Bool = false,
        quarantined: Bool = true,
        including: (Entry) -> Bool = { _ in true }
    ) -> ReconcileCounts {
        var counts = ReconcileCounts()
        for entry in entries where including(entry) {
            counts.add(Self.expected(entry.plannedClass, old: allOld || entry.old))
        }
        if quarantined { counts.forwardQuarantined = quarantinedForwards.count }
        return counts
    }

    /// The device's copies received `old` or young, and the junk line with the old ones.
    package func copies(old: Bool) -> [String] {
        entries.filter { $0.old == old }.compactMap(\.copy) + (old ? [junkCopy] : [])
    }

    /// The network's forwards received `old` or young, and the quarantined ones with the old.
    package func forwards(old: Bool) -> [String] {
        entries.filter { $0.old == old }.compactMap(\.forward) + (old ? quarantinedForwards : [])
    }

    /// The campaign mapping that makes the `early` postbacks (postbacks 1) early when first
    /// received within four days after `validFrom`'s start.
    package static func mapping(validFrom: UTCDay) -> CampaignMapping {
        CampaignMapping(
            adNetworkID: network,
            prefix: earlySource,
            validFrom: validFrom,
            validTo: nil,
            campaign: "launch",
            adGroup: nil,
            creative: nil,
            source: "test",
            line: 1
        )
    }
}
