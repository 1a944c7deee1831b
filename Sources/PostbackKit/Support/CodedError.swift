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

/// The code of one coded error type: opaque to callers, compared by name, and declared in one
/// line each (`extension ErrorCode where Domain == StoreError { static let unknownApp = Self("unknownApp") }`)
/// instead of a private enum mirrored by static members in every error type.
///
/// `Domain` is the error type the code belongs to, so a code of one type cannot be passed to
/// another.
public struct ErrorCode<Domain>: Hashable, Sendable, CustomStringConvertible {
    /// The code's name, as declared (for logs and tests; callers compare codes, not names).
    public let name: String

    package init(_ name: String) {
        self.name = name
    }

    public var description: String { name }
}

/// Where in postbackd's source a coded error was made (`#fileID`, `#line`), as swift-asn1's
/// `ASN1Error` keeps it: for a person reading a log or a bug report, never compared.
public struct ErrorSource: Hashable, Sendable, CustomStringConvertible {
    public let fileID: String
    public let line: Int

    package init(fileID: String, line: Int) {
        self.fileID = fileID
        self.line = line
    }

    public var description: String { "\(fileID):\(line)" }
}

/// The one coded error of a target, for errors that carry only a message (swift-certificates'
/// `CertificateError`): a code, the reason a person reads, and where in postbackd it was made.
/// Each target names its own (`typealias StoreError = MessageError<StoreErrorDomain>`), so that
/// its codes (`extension ErrorCode where Domain == StoreError`) are its alone; errors whose
/// fields callers read keep types of their own.
public struct MessageError<Domain: Sendable>: CodedError, Sendable {
    public typealias Code = ErrorCode<Self>

    public let code: Code
    public let reason: String
    /// Where in postbackd's source it was made.
    public let source: ErrorSource

    package init(_ code: Code, _ reason: String, fileID: String = #fileID, line: Int = #line) {
        self.code = code
        self.reason = reason
        self.source = ErrorSource(fileID: fileID, line: line)
    }
}
