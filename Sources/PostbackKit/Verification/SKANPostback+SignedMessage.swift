/// One value of a signed message, typed so that it renders exactly as Apple signs it.
enum SignedValue: Sendable, Hashable, CustomStringConvertible {
    case text(String)
    case integer(Int64)
    case boolean(Bool)

    /// The value as it appears in the message: strings as received, integers in plain
    /// decimal, booleans as `true`/`false`.
    package var description: String {
        switch self {
        case .text(let text): text
        case .integer(let value): String(value)
        case .boolean(let value): value ? "true" : "false"
        }
    }

    @inline(__always)
    func append(to message: inout [UInt8]) {
        switch self {
        case .text(let text): message.append(contentsOf: text.utf8)
        case .integer(let value): appendDecimal(value, to: &message)
        case .boolean(let value): message.append(contentsOf: value ? trueBytes : falseBytes)
        }
    }
}

private let trueBytes: [UInt8] = Array("true".utf8)
private let falseBytes: [UInt8] = Array("false".utf8)

/// U+2063 INVISIBLE SEPARATOR in UTF-8: what Apple joins signed fields with.
let signedFieldSeparator: [UInt8] = [0xE2, 0x81, 0xA3]

extension SKANPostback {
    /// The fields of this postback's signed message, in order, by JSON name.
    ///
    /// - Parameter omittingSourceAppID: leave out a `source-app-id` of 0, which is how a real
    ///   device signs a test-mode postback (see ``PostbackVerifier``).
    func signedValues(omittingSourceAppID: Bool = false) -> [(field: String, value: SignedValue)] {
        var values: [(field: String, value: SignedValue)] = []
        values.reserveCapacity(10)
        for slot in version.signedFields {
            switch slot {
            case .version:
                // 1.0 has no version slot; every later layout starts with it.
                values.append(("version", .text(version.rawValue)))
            case .adNetworkID:
                values.append(("ad-network-id", .text(adNetworkID)))
            case .campaignID:
                if let campaignID { values.append(("campaign-id", .integer(campaignID))) }
            case .sourceIdentifier:
                if let sourceIdentifier { values.append(("source-identifier", .text(sourceIdentifier))) }
            case .appID:
                values.append(("app-id", .integer(appID)))
            case .transactionID:
                values.append(("transaction-id", .text(transactionID)))
            case .redownload:
                if let redownload { values.append(("redownload", .boolean(redownload))) }
            case .sourceAppID:
                if let sourceAppID, !omittingSourceAppID { values.append(("source-app-id", .integer(sourceAppID))) }
            case .sourceAppOrDomain:
                if let sourceAppID, !omittingSourceAppID {
                    values.append(("source-app-id", .integer(sourceAppID)))
                } else if let sourceDomain {
                    values.append(("source-domain", .text(sourceDomain)))
                }
            case .fidelityType:
                if let fidelityType { values.append(("fidelity-type", .integer(Int64(fidelityType)))) }
            case .didWin:
                if let didWin { values.append(("did-win", .boolean(didWin))) }
            case .postbackSequenceIndex:
                values.append(("postback-sequence-index", .integer(Int64(postbackSequenceIndex))))
            }
        }
        return values
    }

    /// The exact bytes Apple signs for this postback: the signed values joined by U+2063.
    package func signedMessage(omittingSourceAppID: Bool = false) -> [UInt8] {
        var message: [UInt8] = []
        message.reserveCapacity(192)
        for (index, entry) in signedValues(omittingSourceAppID: omittingSourceAppID).enumerated() {
            if index > 0 { message.append(contentsOf: signedFieldSeparator) }
            entry.value.append(to: &message)
        }
        return message
    }

    /// Things worth a warning in a postback whose signature verifies: Apple would not send
    /// them, but they are not reasons to reject a signed postback.
    package var warnings: [String] {
        var warnings: [String] = []
        if let campaignID, !(1...100).contains(campaignID) {
            warnings.append("campaign-id \(campaignID) is outside Apple's range 1–100")
        }
        if !isCanonicalUUID(transactionID) {
            warnings.append("transaction-id is not a UUID")
        }
        if version == .v4_0 {
            if postbackSequenceIndex > 0 {
                if let sourceIdentifier, sourceIdentifier.utf8.count != 2 {
                    warnings.append(
                        "postback \(postbackSequenceIndex) carries a \(sourceIdentifier.utf8.count)-digit source-identifier; Apple sends only 2 digits after postback 0"
                    )
                }
                if conversionValue?.fine != nil {
                    warnings.append(
                        "postback \(postbackSequenceIndex) carries a fine conversion-value; Apple sends at most a coarse value after postback 0"
                    )
                }
                if sourceAppID != nil || sourceDomain != nil {
                    warnings.append(
                        "postback \(postbackSequenceIndex) names a source app or domain; Apple sends them only in postback 0"
                    )
                }
                if didWin == false {
                    warnings.append(
                        "a non-winning attribution with postback-sequence-index \(postbackSequenceIndex); Apple sends non-winners only postback 0"
                    )
                }
            }
        }
        return warnings
    }
}

/// Appends the plain decimal form of `value`, never going through floating point.
@inline(__always)
func appendDecimal(_ value: Int64, to out: inout [UInt8]) {
    if value < 0 { out.append(UInt8(ascii: "-")) }
    var magnitude = value.magnitude
    // 24 bytes of scratch on the stack: UInt64.max has 20 digits.
    var scratch: (UInt64, UInt64, UInt64) = (0, 0, 0)
    withUnsafeMutableBytes(of: &scratch) { digits in
        var index = digits.count
        repeat {
            index -= 1
            digits[index] = UInt8(ascii: "0") + UInt8(magnitude % 10)
            magnitude /= 10
        } while magnitude > 0
        out.append(contentsOf: digits[index...])
    }
}

/// Whether `text` is a UUID in the 8-4-4-4-12 hexadecimal form.
func isCanonicalUUID(_ text: String) -> Bool {
    let utf8 = text.utf8
    guard utf8.count == 36 else { return false }
    for (index, byte) in utf8.enumerated() {
        switch index {
        case 8, 13, 18, 23:
            if byte != UInt8(ascii: "-") { return false }
        default:
            if hexDigitValue(byte) == nil { return false }
        }
    }
    return true
}
