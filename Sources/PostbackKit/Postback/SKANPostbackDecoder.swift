/// The top-level JSON keys postbackd reads from a postback object: SKAdNetwork's fields and
/// the AdAttributionKit envelope's. Apple's hyphenated names appear only here and in
/// ``AAKPayloadKey``.
enum PostbackKey: Int, JSONFieldKey {
    case version, adNetworkID, campaignID, sourceIdentifier, appID, transactionID, redownload, sourceAppID
    case sourceDomain, fidelityType, didWin, postbackSequenceIndex, conversionValue, coarseConversionValue
    case countryCode, attributionSignature, timestamp, jwsString, adInteractionType

    var name: String {
        switch self {
        case .version: "version"
        case .adNetworkID: "ad-network-id"
        case .campaignID: "campaign-id"
        case .sourceIdentifier: "source-identifier"
        case .appID: "app-id"
        case .transactionID: "transaction-id"
        case .redownload: "redownload"
        case .sourceAppID: "source-app-id"
        case .sourceDomain: "source-domain"
        case .fidelityType: "fidelity-type"
        case .didWin: "did-win"
        case .postbackSequenceIndex: "postback-sequence-index"
        case .conversionValue: "conversion-value"
        case .coarseConversionValue: "coarse-conversion-value"
        case .countryCode: "country-code"
        case .attributionSignature: "attribution-signature"
        case .timestamp: "timestamp"
        case .jwsString: "jws-string"
        case .adInteractionType: "ad-interaction-type"
        }
    }

    static let utf8Names: [[UInt8]] = allCases.map { Array($0.name.utf8) }
}

/// The identifying fields of a postback as far as they could be read, for reporting even a
/// malformed one.
package struct PostbackIdentity: Sendable, Hashable {
    /// The SKAdNetwork version; nil for AdAttributionKit.
    package var version: String?
    package var adNetworkID: String?
    /// `transaction-id`, or AdAttributionKit's `postback-identifier`.
    package var transactionID: String?

    package init(version: String? = nil, adNetworkID: String? = nil, transactionID: String? = nil) {
        self.version = version
        self.adNetworkID = adNetworkID
        self.transactionID = transactionID
    }
}

extension FieldReader where Key == PostbackKey {
    /// `conversion-value` (0–63) or `coarse-conversion-value`; `null` means not provided, and
    /// both at once is malformed. Read for every SKAdNetwork version and for
    /// AdAttributionKit: the fields are unsigned and mean the same everywhere.
    func conversionValue() throws(PostbackProblem) -> ConversionValue? {
        let fine = try optionalInteger(.conversionValue, in: 0...63)
        var coarse: CoarseConversionValue? = nil
        if let slice = present(.coarseConversionValue) {
            guard slice.kind == .string, let value = CoarseConversionValue(rawValue: JSONText.string(bytes, slice))
            else {
                throw problem(
                    .invalidValue,
                    .coarseConversionValue,
                    "expected \"low\", \"medium\" or \"high\", found \(found(slice))"
                )
            }
            coarse = value
        }
        if fine != nil && coarse != nil {
            throw problem(
                .conflictingFields,
                .coarseConversionValue,
                "present together with conversion-value; a postback carries a fine or a coarse value, never both"
            )
        }
        return fine.map { .fine(Int($0)) } ?? coarse.map { .coarse($0) }
    }

    /// AdAttributionKit's unsigned `ad-interaction-type`: `view` or `click`, or absent. Like an
    /// unknown coarse value, any other value is malformed: nothing but a changed envelope sends
    /// one.
    func adInteractionType() throws(PostbackProblem) -> String? {
        guard let slice = present(.adInteractionType) else { return nil }
        let value = slice.kind == .string ? JSONText.string(bytes, slice) : nil
        guard let value, value == "view" || value == "click" else {
            throw problem(.invalidValue, .adInteractionType, "expected \"view\" or \"click\", found \(found(slice))")
        }
        return value
    }

    /// `country-code`: two ASCII letters, kept as received.
    func countryCode() throws(PostbackProblem) -> String? {
        guard let value = try optionalString(.countryCode, maximumLength: 2) else { return nil }
        let isLetter = { (byte: UInt8) in (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z") }
        guard value.utf8.count == 2, value.utf8.allSatisfy(isLetter) else {
            throw problem(.invalidValue, .countryCode, "expected a two-letter ISO 3166 code, found \"\(value)\"")
        }
        return value
    }

    /// A forwarder's `timestamp` as a number, whether sent as a number or a numeric string.
    func forwarderTimestamp() -> Double? {
        guard let slice = fields[.timestamp] else { return nil }
        switch slice.kind {
        case .number:
            return Double(JSONText.excerpt(bytes, slice, limit: 32))
        case .string:
            let text = JSONText.string(bytes, slice)
            return text.utf8.count <= 32 ? Double(text) : nil
        default:
            return nil
        }
    }
}

/// Reads a SKAdNetwork postback out of a scanned JSON object, checking each field's type and
/// range for the postback's version.
struct SKANPostbackDecoder {
    private var reader: FieldReader<PostbackKey>

    init(_ reader: FieldReader<PostbackKey>) {
        self.reader = reader
    }

    /// The fields that identify the postback, read leniently (strings only).
    var identity: PostbackIdentity {
        PostbackIdentity(
            version: reader.lenientString(.version) ?? (reader.has(.version) ? nil : SKANVersion.v1_0.rawValue),
            adNetworkID: reader.lenientString(.adNetworkID),
            transactionID: reader.lenientString(.transactionID)
        )
    }

    /// Decodes the postback, or says which field is wrong and how.
    mutating func decode() throws(PostbackProblem) -> SKANPostback {
        let version = try readVersion()
        reader.requirement = "version \(version)"
        let isFour = version == .v4_0
        let atLeast2 = version >= .v2_0

        let adNetworkID = try reader.requiredString(.adNetworkID, maximumLength: 255)
        let campaignID = isFour ? nil : try reader.requiredInteger(.campaignID, in: Int64.min...Int64.max)
        let sourceIdentifier = isFour ? try reader.requiredSourceIdentifier(.sourceIdentifier) : nil
        let appID = try reader.requiredInteger(.appID, in: 0...Int64.max)
        let transactionID = try reader.requiredString(.transactionID, maximumLength: 255)
        let redownload = atLeast2 ? try reader.requiredBoolean(.redownload) : nil
        let sourceAppID = atLeast2 ? try reader.optionalInteger(.sourceAppID, in: 0...Int64.max) : nil
        let sourceDomain = isFour ? try reader.optionalString(.sourceDomain, maximumLength: 255) : nil
        if sourceAppID != nil && sourceDomain != nil {
            throw reader.problem(
                .conflictingFields,
                .sourceDomain,
                "present together with source-app-id; a postback names a source app or a source domain, never both"
            )
        }
        let fidelityType = version >= .v2_2 ? try reader.requiredInteger(.fidelityType, in: 0...1) : nil
        let didWin = version >= .v3_0 ? try reader.requiredBoolean(.didWin) : nil
        let sequenceIndex = isFour ? try reader.requiredInteger(.postbackSequenceIndex, in: 0...2) : 0
        let conversionValue = try reader.conversionValue()
        let countryCode = try reader.countryCode()
        let signature = try reader.requiredString(.attributionSignature, maximumLength: 1024)

        return SKANPostback(
            version: version,
            hasVersionField: reader.has(.version),
            adNetworkID: adNetworkID,
            campaignID: campaignID,
            sourceIdentifier: sourceIdentifier,
            appID: appID,
            transactionID: transactionID,
            redownload: redownload,
            sourceAppID: sourceAppID,
            sourceDomain: sourceDomain,
            fidelityType: fidelityType.map { Int($0) },
            didWin: didWin,
            postbackSequenceIndex: Int(sequenceIndex),
            conversionValue: conversionValue,
            countryCode: countryCode,
            attributionSignature: signature,
            forwarderTimestamp: reader.forwarderTimestamp()
        )
    }

    private func readVersion() throws(PostbackProblem) -> SKANVersion {
        guard let slice = reader.fields[.version] else { return .v1_0 }
        guard slice.kind == .string else {
            throw reader.problem(
                .wrongType,
                .version,
                "expected a string such as \"4.0\", found \(reader.found(slice))"
            )
        }
        let text = JSONText.string(reader.bytes, slice)
        guard let version = SKANVersion(rawValue: text) else {
            let shown = text.count > 16 ? String(text.prefix(16)) + "…" : text
            // Only a version number can be a version postbackd does not know yet; anything else
            // is no version at all.
            guard Self.isVersionNumber(text) else {
                throw reader.problem(
                    .invalidValue,
                    .version,
                    "expected a version number such as \"4.0\" (digits, a dot, digits), found \"\(visible(shown))\""
                )
            }
            throw PostbackProblem(
                .unsupportedVersion,
                field: PostbackKey.version.name,
                "\"\(visible(shown))\" is not a SKAdNetwork version postbackd can verify (1.0, 2.0, 2.1, 2.2, 3.0, 4.0)"
            )
        }
        return version
    }

    /// Whether `text` is ASCII digits, a dot, ASCII digits (`4.1`, `10.0`): the shape of every
    /// SKAdNetwork version, known or not.
    static func isVersionNumber(_ text: String) -> Bool {
        let parts = text.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        return parts.count == 2 && parts.allSatisfy { !$0.isEmpty && $0.allSatisfy(isDigit) }
    }
}
