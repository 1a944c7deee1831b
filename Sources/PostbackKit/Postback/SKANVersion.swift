/// A SKAdNetwork postback version postbackd knows how to verify.
///
/// A postback without a `version` field is 1.0. Any other version string is *unsupported*:
/// postbackd never guesses a signed layout it has not been told about.
public enum SKANVersion: String, Sendable, Hashable, CaseIterable, Comparable, CustomStringConvertible {
    case v1_0 = "1.0"
    case v2_0 = "2.0"
    case v2_1 = "2.1"
    case v2_2 = "2.2"
    case v3_0 = "3.0"
    case v4_0 = "4.0"

    /// The curve of Apple's key for this version: P-192 for 1.0 and 2.0, P-256 after.
    package var curve: ECCurve {
        switch self {
        case .v1_0, .v2_0: .p192
        default: .p256
        }
    }

    /// The fields Apple signs, in the order they are joined.
    ///
    /// Values are joined with U+2063 INVISIBLE SEPARATOR (UTF-8 `E2 81 A3`) and verified with
    /// ECDSA over SHA-256. A bracketed field is included only when present and leaves no empty
    /// slot when absent. Booleans are `true`/`false`, integers plain decimal, strings exactly as
    /// received (after JSON unescaping).
    ///
    /// | version | key   | fields in order |
    /// |---------|-------|-----------------|
    /// | 1.0     | P-192 | ad-network-id, campaign-id, app-id, transaction-id |
    /// | 2.0     | P-192 | version, ad-network-id, campaign-id, app-id, transaction-id, redownload, [source-app-id] |
    /// | 2.1     | P-256 | same as 2.0 |
    /// | 2.2     | P-256 | 2.1's fields, then fidelity-type |
    /// | 3.0     | P-256 | 2.2's fields, then did-win |
    /// | 4.0     | P-256 | version, ad-network-id, source-identifier, app-id, transaction-id, redownload, [source-app-id or source-domain], fidelity-type, did-win, postback-sequence-index |
    ///
    /// A 1.0 postback that carries `version` or `redownload` is still signed over the four 1.0
    /// fields.
    package var signedFields: [SignedField] {
        switch self {
        case .v1_0:
            [.adNetworkID, .campaignID, .appID, .transactionID]
        case .v2_0, .v2_1:
            [.version, .adNetworkID, .campaignID, .appID, .transactionID, .redownload, .sourceAppID]
        case .v2_2:
            [.version, .adNetworkID, .campaignID, .appID, .transactionID, .redownload, .sourceAppID, .fidelityType]
        case .v3_0:
            [
                .version, .adNetworkID, .campaignID, .appID, .transactionID, .redownload, .sourceAppID, .fidelityType,
                .didWin,
            ]
        case .v4_0:
            [
                .version, .adNetworkID, .sourceIdentifier, .appID, .transactionID, .redownload, .sourceAppOrDomain,
                .fidelityType, .didWin, .postbackSequenceIndex,
            ]
        }
    }

    public var description: String { rawValue }

    public static func < (lhs: SKANVersion, rhs: SKANVersion) -> Bool {
        allCases.firstIndex(of: lhs) ?? 0 < allCases.firstIndex(of: rhs) ?? 0
    }
}

/// One slot of a version's signed message.
package enum SignedField: Sendable, Hashable {
    case version, adNetworkID, campaignID, sourceIdentifier, appID, transactionID, redownload
    /// `[source-app-id]`: only when present.
    case sourceAppID
    /// `[source-app-id or source-domain]` (4.0): whichever is present, if either.
    case sourceAppOrDomain
    case fidelityType, didWin, postbackSequenceIndex
}
