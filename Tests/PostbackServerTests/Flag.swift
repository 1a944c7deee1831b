import Synchronization

/// A shared once-only switch.
final class Flag: Sendable {
    let value = Atomic<Bool>(false)
}
