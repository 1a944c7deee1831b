/// Which kinds of postback `postbackd generate` writes.
package enum GeneratedKind: String, Sendable, CaseIterable {
    /// SKAdNetwork postbacks of the chosen versions.
    case skan
    /// AdAttributionKit postbacks (a JWS signed with the P-256 key, kid `postbackd-test/0`, or
    /// `postbackd-development/0` for development-key postbacks).
    case aak
    /// Both: an attribution is AdAttributionKit's one time in four.
    case mixed
}

/// What `postbackd generate` makes.
package struct GeneratorOptions: Sendable {
    /// How many lines to write (duplicates and broken ones included).
    package var count: Int
    package var seed: UInt64
    /// The SKAdNetwork versions to mix, equally likely.
    package var versions: [SKANVersion]
    /// Share of lines that are exact byte-for-byte copies of an earlier line.
    package var duplicateRate: Double
    /// Share of lines whose signature is broken (a signed field changed after signing, or
    /// the signature itself damaged).
    package var invalidRate: Double
    /// Share of postbacks signed as a test-mode device (`source-app-id` 0).
    package var testModeRate: Double
    package var apps: Int
    package var networks: Int
    /// Forwarder `timestamp`s are spread over this many days ending at ``endTime``.
    package var days: Int
    /// Epoch seconds of the end of the period (default 2026-11-21T00:00:00Z).
    var endTime: Int64
    package var kind: GeneratedKind
    /// Share of AdAttributionKit postbacks signed under the development kid.
    package var developmentRate: Double

    package init(
        count: Int,
        seed: UInt64 = 1,
        versions: [SKANVersion] = [.v2_1, .v3_0, .v4_0],
        duplicateRate: Double = 0.02,
        invalidRate: Double = 0.01,
        testModeRate: Double = 0.002,
        apps: Int = 5,
        networks: Int = 4,
        days: Int = 7,
        endTime: Int64 = 1_795_219_200,
        kind: GeneratedKind = .skan,
        developmentRate: Double = 0.02
    ) {
        self.count = count
        self.seed = seed
        self.versions = versions
        self.duplicateRate = duplicateRate
        self.invalidRate = invalidRate
        self.testModeRate = testModeRate
        self.apps = apps
        self.networks = networks
        self.days = days
        self.endTime = endTime
        self.kind = kind
        self.developmentRate = developmentRate
    }
}

/// Writes realistic signed postbacks as JSON Lines: a mix of versions, networks, campaigns and
/// source identifiers, winning and non-winning, redownloads, fine, coarse and null values, 4.0
/// postbacks 1 and 2 sharing postback 0's transaction id, forwarder `timestamp`s over the
/// period, and chosen rates of exact duplicates and broken signatures. The same options and
/// seed always give the same bytes.
package struct PostbackGenerator {
    package let options: GeneratorOptions
    private let signer: PostbackSigner
    private var random: SeededRandom
    private let appIDs: [Int64]
    private let networkIDs: [String]
    /// AdAttributionKit ad networks: the SKAdNetwork ones under `.adattributionkit`.
    private var aakNetworkIDs: [String] {
        networkIDs.map {
            $0.hasSuffix(".skadnetwork") ? String($0.dropLast(".skadnetwork".count)) + ".adattributionkit" : $0
        }
    }
    /// Publishing apps: real traffic comes from a long tail of publishers, the first few much
    /// more often than the rest.
    private let publisherIDs: [Int64]
    private var recent: [String] = []
    private var pending: [String] = []
    private var produced = 0

    package init(options: GeneratorOptions, signer: PostbackSigner) throws {
        if options.kind != .aak {
            for version in options.versions where (version.curve == .p192 ? signer.p192 : signer.p256) == nil {
                throw PostbackKitError(.unreadable, "version \(version) needs a \(version.curve) private key")
            }
        }
        if options.kind != .skan && signer.p256 == nil {
            throw PostbackKitError(.unreadable, "AdAttributionKit postbacks need a P-256 private key")
        }
        self.options = options
        self.signer = signer
        var random = SeededRandom(seed: options.seed)
        appIDs = (0..<max(1, options.apps)).map { _ in Int64(300_000_000 + random.next() % 1_600_000_000) }
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789")
        networkIDs = (0..<max(1, options.networks)).map { _ in
            String((0..<10).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] }) + ".skadnetwork"
        }
        publisherIDs = (0..<200).map { _ in Int64(300_000_000 + random.next() % 1_600_000_000) }
        self.random = random
    }

    /// A publisher, the first ones far more often (roughly Zipf-distributed).
    private mutating func publisher() -> Int64 {
        let uniform = Double(random.next() >> 11) / Double(1 << 53)
        let index = Int(Double(publisherIDs.count) * uniform * uniform * uniform)
        return publisherIDs[min(index, publisherIDs.count - 1)]
    }

    /// The next JSON Lines line (without its line feed), or nil after `count` lines.
    package mutating func nextLine() throws -> String? {
        guard produced < options.count else { return nil }
        produced += 1
        if !recent.isEmpty && random.chance(options.duplicateRate) {
            return recent[Int(random.next() % UInt64(recent.count))]
        }
        while pending.isEmpty { try makeInstall() }
        let line = pending.removeFirst()
        recent.append(line)
        if recent.count > 64 { recent.removeFirst() }
        return line
    }

    /// Creates the postbacks of one attribution: one, or three for a winning 4.0 install.
    private mutating func makeInstall() throws {
        switch options.kind {
        case .skan: break
        case .aak: return try makeAAKAttribution()
        case .mixed: if random.chance(0.25) { return try makeAAKAttribution() }
        }
        let version = options.versions[Int(random.next() % UInt64(options.versions.count))]
        let appID = appIDs[Int(random.next() % UInt64(appIDs.count))]
        let network = networkIDs[Int(random.next() % UInt64(networkIDs.count))]
        let transactionID = random.uuid()
        let didWin = version >= .v3_0 ? random.chance(0.85) : nil
        let redownload = version >= .v2_0 ? random.chance(0.1) : nil
        let testMode = version >= .v2_0 && random.chance(options.testModeRate)
        let webAd = version == .v4_0 && !testMode && random.chance(0.1)
        let sourceAppID: Int64? =
            testMode
            ? 0
            : (version >= .v2_0 && !webAd && random.chance(0.7)
                ? Int64(300_000_000 + random.next() % 1_600_000_000) : nil)
        let fullSource = String(format4(Int(random.next() % 10_000)))
        // Postbacks arrive within the period; a 4.0 install may date from up to 35 days
        // before it, so that its postbacks 1 and 2 (sent days and weeks later) arrive too.
        let period = Int64(max(1, options.days) * 86_400)
        let start = options.endTime - period
        let span = version == .v4_0 ? period + 35 * 86_400 : period
        let baseTime = options.endTime - Int64(random.next() % UInt64(span))

        var base = SKANPostback(
            version: version,
            hasVersionField: version != .v1_0,
            adNetworkID: network,
            campaignID: version == .v4_0 ? nil : Int64(1 + random.next() % 100),
            sourceIdentifier: version == .v4_0 ? fullSource : nil,
            appID: appID,
            transactionID: transactionID,
            redownload: redownload,
            sourceAppID: sourceAppID,
            sourceDomain: webAd ? "news\(random.next() % 20).example.com" : nil,
            fidelityType: version >= .v2_2 ? (random.chance(0.8) ? 1 : 0) : nil,
            didWin: didWin,
            postbackSequenceIndex: 0,
            conversionValue: nil,
            countryCode: nil,
            attributionSignature: "",
            forwarderTimestamp: nil
        )
        base.conversionValue = conversionValue(for: base, testMode: testMode)
        if version == .v4_0 && random.chance(0.5) {
            base.countryCode = countries[Int(random.next() % UInt64(countries.count))]
        }
        if baseTime >= start { pending.append(try line(for: base, testMode: testMode, time: baseTime)) }

        // A winning 4.0 install later sends postbacks 1 and 2 with the same transaction id,
        // a 2-digit source identifier, at most a coarse value and no source app; those that
        // would arrive after the period have not arrived yet.
        if version == .v4_0 && didWin == true && !testMode {
            for (index, delay) in [(1, 3 * 86_400), (2, 20 * 86_400)] where random.chance(0.6) {
                let time = baseTime + Int64(delay)
                guard time >= start && time < options.endTime else { continue }
                var later = base
                later.postbackSequenceIndex = index
                later.sourceIdentifier = String(fullSource.prefix(2))
                later.sourceAppID = nil
                later.sourceDomain = nil
                later.conversionValue =
                    random.chance(0.6) ? .coarse(CoarseConversionValue.allCases[Int(random.next() % 3)]) : nil
                pending.append(try line(for: later, testMode: false, time: time))
            }
        }
    }

    /// Creates the AdAttributionKit postbacks of one attribution: postback 0, and for a winning
    /// one postbacks 1 and 2 when they arrive within the period. Each has its own
    /// `postback-identifier`.
    private mutating func makeAAKAttribution() throws {
        let appID = appIDs[Int(random.next() % UInt64(appIDs.count))]
        let network = aakNetworkIDs[Int(random.next() % UInt64(aakNetworkIDs.count))]
        let didWin = random.chance(0.85)
        let roll = random.next() % 10
        let conversionType: AAKConversionType = roll < 8 ? .download : roll < 9 ? .redownload : .reengagement
        let marketplace: String? =
            random.chance(0.1) ? nil : random.chance(0.85) ? "com.apple.AppStore" : "com.example.marketplace"
        let publisher: Int64? = random.chance(0.8) ? publisher() : nil
        let development = random.chance(options.developmentRate)
        let impression = random.chance(0.7) ? "app-impression" : "web-impression"
        let interaction = random.chance(0.8) ? "click" : "view"
        let fullSource = format4(Int(random.next() % 10_000))
        let period = Int64(max(1, options.days) * 86_400)
        let start = options.endTime - period
        let baseTime = options.endTime - Int64(random.next() % UInt64(period + 35 * 86_400))
        for (index, delay) in [(0, 0), (1, 3 * 86_400), (2, 20 * 86_400)] {
            if index > 0 && (!didWin || !random.chance(0.6)) { continue }
            let time = baseTime + Int64(delay)
            guard time >= start && time < options.endTime else { continue }
            var payload = JSONObjectWriter()
            payload.add("postback-identifier", random.uuid(uppercase: true))
            payload.add("impression-type", impression)
            payload.add("ad-network-identifier", network)
            payload.add("did-win", didWin)
            payload.add("postback-sequence-index", index)
            payload.add("conversion-type", conversionType.rawValue)
            payload.add("source-identifier", index == 0 ? fullSource : String(fullSource.prefix(2)))
            payload.add("advertised-item-identifier", appID)
            if let publisher { payload.add("publisher-item-identifier", publisher) }
            if let marketplace { payload.add("marketplace-identifier", marketplace) }
            let kid = development ? "postbackd-development/0" : "postbackd-test/0"
            var jws = try signer.jws(headerJSON: "{\"kid\":\"\(kid)\",\"alg\":\"ES256\"}", payloadJSON: payload.text)
            if random.chance(options.invalidRate), let dot = jws.lastIndex(of: ".") {
                // The signature segment changed: still 64 bytes of base64url, never valid.
                jws = String(jws[...dot]) + damaged(String(jws[jws.index(after: dot)...]))
            }
            var envelope = JSONObjectWriter()
            envelope.add("jws-string", jws)
            if didWin {
                if index == 0 && random.chance(0.75) {
                    envelope.add("conversion-value", Int(random.next() % 64))
                } else if random.chance(0.6) {
                    envelope.add(
                        "coarse-conversion-value",
                        CoarseConversionValue.allCases[Int(random.next() % 3)].rawValue
                    )
                }
            }
            envelope.add("ad-interaction-type", interaction)
            if random.chance(0.5) {
                envelope.add("country-code", countries[Int(random.next() % UInt64(countries.count))])
            }
            envelope.add("timestamp", "\(time)")
            pending.append(envelope.text)
        }
    }

    private mutating func conversionValue(for postback: SKANPostback, testMode: Bool) -> ConversionValue? {
        if testMode { return .fine(0) }
        if postback.version == .v1_0 || postback.didWin == false { return nil }
        if random.chance(0.25) { return nil }
        if postback.version == .v4_0 && random.chance(0.2) {
            return .coarse(CoarseConversionValue.allCases[Int(random.next() % 3)])
        }
        return .fine(Int(random.next() % 64))
    }

    private mutating func line(for postback: SKANPostback, testMode: Bool, time: Int64) throws -> String {
        var signed = try signer.signed(postback, asTestDevice: testMode)
        if random.chance(options.invalidRate) {
            if random.chance(0.5) {
                signed.appID += 1  // a signed field edited after signing
            } else {
                signed.attributionSignature = damaged(signed.attributionSignature)
            }
        }
        let timestamp = random.chance(0.5) ? "\(time)" : "\(time * 1000 + Int64(random.next() % 1000))"
        return signed.jsonText(extraFields: [("timestamp", timestamp)])
    }

    /// A signature with one base64 character changed in its middle (still base64, still DER-shaped
    /// often, never valid).
    private mutating func damaged(_ signature: String) -> String {
        var characters = Array(signature)
        let index = characters.count / 2
        characters[index] = characters[index] == "A" ? "B" : "A"
        return String(characters)
    }
}

private let countries = ["US", "GB", "DE", "FR", "JP", "BR", "IN", "CA"]

private func format4(_ value: Int) -> String {
    let text = String(value)
    return String(repeating: "0", count: max(0, 4 - text.count)) + text
}
