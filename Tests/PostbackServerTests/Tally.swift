import Synchronization

/// A shared counter for concurrent clients.
final class Tally: Sendable {
    let value = Atomic<Int>(0)
}
