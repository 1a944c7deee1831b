/// Why a key could not be loaded.
package struct ECKeyError: CodedError {
    /// What kind of failure this is; errors compare equal by code.
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Value: Hashable { case unreadable, notECKey, unsupportedCurve, wrongCurve }
        fileprivate let value: Value
        /// The bytes are not a PEM or DER key OpenSSL can read.
        package static let unreadable = Code(value: .unreadable)
        /// The key is not an elliptic-curve key.
        static let notECKey = Code(value: .notECKey)
        /// The key is on a curve postbacks are never signed with.
        static let unsupportedCurve = Code(value: .unsupportedCurve)
        /// The key is on another curve than the one its file name promises.
        static let wrongCurve = Code(value: .wrongCurve)
        package var description: String { "\(value)" }
    }

    package let code: Code
    package let reason: String
    package let file: String
    package let line: UInt

    init(_ code: Code, _ reason: String, file: String = #fileID, line: UInt = #line) {
        self.code = code
        self.reason = reason
        self.file = file
        self.line = line
    }

}
