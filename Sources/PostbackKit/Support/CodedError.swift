/// An error with an opaque code, compared by code alone (the shape of swift-asn1's
/// `ASN1Error` and swift-certificates' `CertificateError`): callers match on what went wrong,
/// while the reason is for people.
public protocol CodedError: Error, Hashable, CustomStringConvertible {
    associatedtype Code: Hashable
    var code: Code { get }
    var reason: String { get }
}

extension CodedError {
    public var description: String { reason }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }

    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
