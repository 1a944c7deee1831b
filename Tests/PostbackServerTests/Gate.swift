import Synchronization

/// Lets a stand-in server's first requests through and holds the rest until ``open()``. A test
/// that kills a client part way holds the server after some requests: the client cannot finish,
/// however late the test's own poll runs (under CI's load a poll waited seconds for a thread of
/// the cooperative pool, and found the client had sent everything). A client whose held
/// requests time out records them as failed attempts, due again later; a test that must kill it
/// before that kills it from `onHold`, which runs as the first request is held.
final class Gate: Sendable {
    private struct State {
        var passed = 0
        var open = false
        var held = false
    }

    private let limit: Int
    private let onHold: @Sendable () -> Void
    private let state = Mutex(State())

    /// A gate that lets `limit` requests through before it holds, calling `onHold` once, as it
    /// holds the first.
    init(letting limit: Int, onHold: @escaping @Sendable () -> Void = {}) {
        self.limit = limit
        self.onHold = onHold
    }

    /// Whether to answer the request: true at once while fewer than the limit passed or once
    /// the gate is open; false, once it opens, for a request that was held (its client was
    /// killed meanwhile: answer nothing that a test would count).
    func pass() async -> Bool {
        let through = state.withLock { state in
            guard state.passed < limit || state.open else { return false }
            state.passed += 1
            return true
        }
        if through { return true }
        let first = state.withLock { state in
            defer { state.held = true }
            return !state.held
        }
        if first { onHold() }
        // Never longer than any test waits.
        let deadline = ContinuousClock.now + .seconds(300)
        while !state.withLock({ $0.open }) && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    /// Lets every later request through and answers the held ones.
    func open() {
        state.withLock { $0.open = true }
    }
}
