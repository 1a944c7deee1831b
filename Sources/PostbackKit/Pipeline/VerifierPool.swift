import Synchronization

/// Verifies postbacks from any number of tasks at once: hands out `PostbackVerifier`s so that
/// each task has its own OpenSSL state while all share one parsed key ring.
public final class VerifierPool: Sendable {
    private let keyRing: KeyRing
    private let idle: Mutex<[PostbackVerifier]>

    package init(keyRing: KeyRing) {
        self.keyRing = keyRing
        self.idle = Mutex([])
    }

    /// Runs `body` with a verifier no other task is using.
    package func withVerifier<Result>(_ body: (PostbackVerifier) throws -> Result) rethrows -> Result {
        let verifier = idle.withLock { $0.popLast() } ?? PostbackVerifier(keyRing: keyRing)
        defer { idle.withLock { $0.append(verifier) } }
        return try body(verifier)
    }
}
