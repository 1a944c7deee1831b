/// Why a key could not be loaded.
public struct ECKeyError: CodedError {
    /// What kind of failure this is; errors compare equal by code.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Value: Hashable { case unreadable, notECKey, unsupportedCurve, wrongCurve }
        fileprivate let value: Value
        /// The bytes are not a PEM or DER key OpenSSL can read.
        public static let unreadable = Code(value: .unreadable)
        /// The key is not an elliptic-curve key.
        public static let notECKey = Code(value: .notECKey)
        /// The key is on a curve postbacks are never signed with.
        public static let unsupportedCurve = Code(value: .unsupportedCurve)
        /// The key is on another curve than the one its file name promises.
        public static let wrongCurve = Code(value: .wrongCurve)
        public var description: String { "\(value)" }
    }

    public let code: Code
    public let reason: String
    public let file: String
    public let line: UInt

    init(_ code: Code, _ reason: String, file: String = #fileID, line: UInt = #line) {
        self.code = code
        self.reason = reason
        self.file = file
        self.line = line
    }

}
