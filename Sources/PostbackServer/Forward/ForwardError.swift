import PostbackKit

/// Why `forward` (or `serve`'s forwarder) cannot go on.
package struct ForwardError: CodedError {
    package struct Code: Hashable, Sendable {
        fileprivate enum Value: Hashable { case missingSecret, stopping }
        fileprivate let value: Value
        /// A destination's HMAC secret is not in the environment: nothing is delivered.
        package static let missingSecret = Code(value: .missingSecret)
        /// The forwarder is stopping and takes no more requests.
        package static let stopping = Code(value: .stopping)
    }

    package let code: Code
    package let reason: String

    init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }
}
