/// The keys of an AdAttributionKit JWS payload.
enum AAKPayloadKey: Int, JSONFieldKey {
    case impressionType, adNetworkIdentifier, sourceIdentifier, advertisedItemIdentifier, conversionType
    case postbackIdentifier, didWin, postbackSequenceIndex, marketplaceIdentifier, publisherItemIdentifier

    var name: String {
        switch self {
        case .impressionType: "impression-type"
        case .adNetworkIdentifier: "ad-network-identifier"
        case .sourceIdentifier: "source-identifier"
        case .advertisedItemIdentifier: "advertised-item-identifier"
        case .conversionType: "conversion-type"
        case .postbackIdentifier: "postback-identifier"
        case .didWin: "did-win"
        case .postbackSequenceIndex: "postback-sequence-index"
        case .marketplaceIdentifier: "marketplace-identifier"
        case .publisherItemIdentifier: "publisher-item-identifier"
        }
    }

    static let utf8Names: [[UInt8]] = allCases.map { Array($0.name.utf8) }
}

/// The keys of a JWS header that postbackd reads.
enum JWSHeaderKey: Int, JSONFieldKey {
    case kid, alg, crit

    var name: String {
        switch self {
        case .kid: "kid"
        case .alg: "alg"
        case .crit: "crit"
        }
    }

    static let utf8Names: [[UInt8]] = allCases.map { Array($0.name.utf8) }
}

/// Reads an AdAttributionKit envelope: the compact JWS (split and base64url-decoded, header
/// and payload parsed as strictly as any postback) and the unsigned fields beside it.
struct AAKPostbackDecoder {
    let envelope: FieldReader<PostbackKey>

    /// The fields that identify the postback, as far as they can be read.
    var identity: PostbackIdentity {
        guard let jws = envelope.lenientJWS(), let payload = try? Self.segmentJSON(jws, 1, "payload") else {
            return PostbackIdentity()
        }
        return payload.withUnsafeBufferPointer { bytes in
            var scanner = JSONScanner(bytes)
            guard case .object(let members)? = try? scanner.scanDocument() else { return PostbackIdentity() }
            let reader = FieldReader<AAKPayloadKey>(bytes, members, requirement: "AdAttributionKit")
            return PostbackIdentity(
                adNetworkID: reader.lenientString(.adNetworkIdentifier),
                transactionID: reader.lenientString(.postbackIdentifier)
            )
        }
    }

    func decode() throws(PostbackProblem) -> AAKPostback {
        let jws = try envelope.requiredString(.jwsString, maximumLength: InputLimits.maximumPostbackBytes)
        let segmentCount = jws.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false).count
        guard segmentCount == 3 else {
            throw envelope.problem(
                .invalidValue,
                .jwsString,
                "expected a compact JWS (three base64url segments separated by '.'), found \(segmentCount) segment\(segmentCount == 1 ? "" : "s")"
            )
        }
        let header = try Self.segmentJSON(jws, 0, "header")
        let payload = try Self.segmentJSON(jws, 1, "payload")
        let (keyID, algorithm, critical) = try header.withUnsafeBufferPointer { bytes throws(PostbackProblem) in
            let reader = try Self.reader(JWSHeaderKey.self, bytes, "JWS header", requirement: "a JWS header")
            return (
                try reader.requiredString(.kid, maximumLength: 255), try reader.requiredString(.alg, maximumLength: 32),
                reader.fields[.crit].map { JSONText.excerpt(bytes, $0) }
            )
        }
        let conversionValue = try envelope.conversionValue()
        let countryCode = try envelope.countryCode()
        let adInteractionType = try envelope.adInteractionType()
        return try payload.withUnsafeBufferPointer { bytes throws(PostbackProblem) in
            let reader = try Self.reader(AAKPayloadKey.self, bytes, "JWS payload", requirement: "AdAttributionKit")
            let conversionTypeText = try reader.requiredString(.conversionType, maximumLength: 64)
            guard let (conversionType, otherSpelling) = AAKConversionType.reading(conversionTypeText) else {
                let expected = AAKConversionType.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
                throw reader.problem(
                    .invalidValue,
                    .conversionType,
                    "expected \(expected), found string (\"\(conversionTypeText)\")"
                )
            }
            return AAKPostback(
                keyID: keyID,
                algorithm: algorithm,
                criticalHeader: critical,
                impressionType: try reader.requiredString(.impressionType, maximumLength: 64),
                adNetworkID: try reader.requiredString(.adNetworkIdentifier, maximumLength: 255),
                sourceIdentifier: try reader.requiredSourceIdentifier(.sourceIdentifier),
                advertisedItemID: try reader.requiredInteger(.advertisedItemIdentifier, in: 0...Int64.max),
                conversionType: conversionType,
                postbackID: try reader.requiredString(.postbackIdentifier, maximumLength: 255),
                didWin: try reader.requiredBoolean(.didWin),
                postbackSequenceIndex: Int(try reader.requiredInteger(.postbackSequenceIndex, in: 0...2)),
                marketplaceID: try reader.optionalString(.marketplaceIdentifier, maximumLength: 255),
                publisherItemID: try reader.optionalInteger(.publisherItemIdentifier, in: 0...Int64.max),
                conversionValue: conversionValue,
                adInteractionType: adInteractionType,
                countryCode: countryCode,
                forwarderTimestamp: envelope.forwarderTimestamp(),
                jws: jws,
                conversionTypeSpelling: otherSpelling ? conversionTypeText : nil
            )
        }
    }

    /// The decoded bytes of JWS segment `index` (0 header, 1 payload).
    static func segmentJSON(_ jws: String, _ index: Int, _ name: String) throws(PostbackProblem) -> [UInt8] {
        let segments = jws.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard index < segments.count, let bytes = Base64.decode(segments[index], alphabet: .url), !bytes.isEmpty else {
            throw PostbackProblem(
                .invalidValue,
                field: PostbackKey.jwsString.name,
                "the JWS \(name) segment is not canonical base64url"
            )
        }
        return bytes
    }

    private static func reader<Key: JSONFieldKey>(
        _: Key.Type,
        _ bytes: UnsafeBufferPointer<UInt8>,
        _ context: String,
        requirement: String
    ) throws(PostbackProblem) -> FieldReader<Key> {
        var scanner = JSONScanner(bytes)
        let document: JSONDocument
        do {
            document = try scanner.scanDocument()
        } catch {
            throw PostbackProblem(
                .notJSON,
                field: PostbackKey.jwsString.name,
                "the \(context) is not valid JSON: \(error.message)"
            )
        }
        guard case .object(let members) = document else {
            throw PostbackProblem(.wrongType, field: PostbackKey.jwsString.name, "the \(context) is not a JSON object")
        }
        return FieldReader(bytes, members, context: context, requirement: requirement)
    }
}

extension FieldReader where Key == PostbackKey {
    /// The `jws-string` if it is a string.
    func lenientJWS() -> String? {
        guard let slice = fields[.jwsString], slice.kind == .string else { return nil }
        return JSONText.string(bytes, slice)
    }
}
