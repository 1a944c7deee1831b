import PostbackKit

/// Why `serve` could not start, or `forward` (or `serve`'s forwarder) cannot go on: the target's
/// one coded error for errors that carry only a message. The command exits with status 2
/// saying so.
package typealias PostbackServerError = MessageError<PostbackServerErrorDomain>

/// The domain of ``PostbackServerError``'s codes.
package enum PostbackServerErrorDomain: Sendable {}

extension ErrorCode where Domain == PostbackServerError {
    /// A forwarding destination's HMAC secret is not in the environment: nothing is delivered.
    package static let missingSecret = Self("missingSecret")
    /// The forwarder is stopping and takes no more requests.
    package static let stopping = Self("stopping")
    /// The `--tls-cert` file cannot be read as PEM certificates.
    package static let certificateUnreadable = Self("certificateUnreadable")
    /// The `--tls-cert` file holds no certificate.
    package static let noCertificate = Self("noCertificate")
    /// The `--tls-key` file cannot be read as an unencrypted PEM private key.
    package static let keyUnreadable = Self("keyUnreadable")
    /// The server cannot listen on `--host` and `--port` (in use, not permitted, no such address).
    package static let cannotListen = Self("cannotListen")
    /// `doctor --endpoint`: the endpoint cannot be checked at all (no host, no TLS handshake).
    package static let endpointUnusable = Self("endpointUnusable")
}
