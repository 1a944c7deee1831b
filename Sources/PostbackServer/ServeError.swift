import PostbackKit

/// Why `serve` could not start: the command exits with status 2 saying so.
package struct ServeError: CodedError {
    package struct Code: Hashable, Sendable {
        fileprivate enum Value: Hashable {
            case missingSecret, certificateUnreadable, noCertificate, keyUnreadable, cannotListen
        }
        fileprivate let value: Value
        /// A forwarding destination's HMAC secret is not in the environment.
        package static let missingSecret = Code(value: .missingSecret)
        /// The `--tls-cert` file cannot be read as PEM certificates.
        package static let certificateUnreadable = Code(value: .certificateUnreadable)
        /// The `--tls-cert` file holds no certificate.
        package static let noCertificate = Code(value: .noCertificate)
        /// The `--tls-key` file cannot be read as an unencrypted PEM private key.
        package static let keyUnreadable = Code(value: .keyUnreadable)
        /// The server cannot listen on `--host` and `--port` (in use, not permitted, no such
        /// address).
        package static let cannotListen = Code(value: .cannotListen)
    }

    package let code: Code
    package let reason: String

    init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }
}
