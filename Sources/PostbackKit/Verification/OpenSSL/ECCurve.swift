/// The elliptic curves Apple signs postbacks with.
package enum ECCurve: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// NIST P-192 (prime192v1): SKAdNetwork 1.0 and 2.0.
    case p192
    /// NIST P-256 (prime256v1): SKAdNetwork 2.1 and later, AdAttributionKit.
    case p256

    /// The largest DER ECDSA signature on this curve: SEQUENCE of two INTEGERs of at most
    /// (field size + 1) bytes each.
    var maximumDERSignatureLength: Int {
        switch self {
        case .p192: 56
        case .p256: 72
        }
    }

    /// The size in bytes of one coordinate (and of R or S in a raw signature).
    package var coordinateLength: Int {
        switch self {
        case .p192: 24
        case .p256: 32
        }
    }

    package var description: String {
        switch self {
        case .p192: "P-192"
        case .p256: "P-256"
        }
    }

    init?(openSSLGroupName name: String) {
        switch name {
        case "prime192v1", "P-192", "secp192r1": self = .p192
        case "prime256v1", "P-256", "secp256r1": self = .p256
        default: return nil
        }
    }
}
