import Foundation
import GRDB
import PostbackKit
import Synchronization

/// The recent level's filters (``RecentKeys``), read for ingest's first write transaction on a
/// connection and thread of their own while the writer goes on without them, claiming each key
/// at once.
///
/// Why: the writer needs them before its first claim made in key order, and reading them means
/// reading every recent key. In a store of 43 M (2.49 M recent keys) that took 0.45 s with the
/// file's pages in memory and about 0.85 s without, while the verifiers, whose hand-off holds a
/// few batches, waited: on 2 cores one of them, or both, idle for that long.
package final class RecentKeysPreload: Sendable {
    private struct State {
        var outcome: Result<RecentKeys.Preloaded, any Error>?
        /// The connection while it reads, for ``cancel()`` to interrupt.
        var reading: DatabaseQueue?
        var cancelled = false
    }

    private let state = Mutex(State())
    private let ended = DispatchSemaphore(value: 0)

    /// Starts reading the store at `path`, on a thread that first runs `before` (tests hold the
    /// read there).
    package init(path: String, before: @escaping @Sendable () -> Void = {}) {
        let thread = Thread { [self] in
            nameThisThread("pbd-preload")
            before()
            let read = Result { () throws -> RecentKeys.Preloaded in
                var configuration = Configuration()
                configuration.readonly = true
                configuration.busyMode = .timeout(PostbackDatabase.busyTimeoutSeconds)
                configuration.label = "postbackd.preload"
                let queue = try DatabaseQueue(path: path, configuration: configuration)
                try state.withLock { state in
                    if state.cancelled { throw CancellationError() }
                    state.reading = queue
                }
                return try queue.read { db in
                    try RecentKeys.preload(db) {
                        // An interrupt between two statements is lost: the read looks here too.
                        if state.withLock({ $0.cancelled }) { throw CancellationError() }
                    }
                }
            }
            // The connection closes as the last reference to it goes, here.
            state.withLock { state in
                state.reading = nil
                state.outcome = read
            }
            ended.signal()
        }
        thread.start()
    }

    /// What the read found, or nil while it runs.
    package func ifEnded() -> Result<RecentKeys.Preloaded, any Error>? {
        state.withLock { $0.outcome }
    }

    /// What the read found, once it has ended. Blocks the calling thread meanwhile.
    package func wait() -> Result<RecentKeys.Preloaded, any Error> {
        if let outcome = ifEnded() { return outcome }
        ended.wait()
        // Whoever else waits wakes too.
        ended.signal()
        return ifEnded() ?? .failure(CancellationError())
    }

    /// Stops the read, if it runs (its statement is interrupted, and it stops before the next
    /// range), and waits for its connection to close: a session that ends without writing (no
    /// input) does not leave it open behind the store's, which would keep the log's file from
    /// being removed as the store closes.
    package func cancel() {
        state.withLock { state in
            state.cancelled = true
            state.reading?.interrupt()
        }
        _ = wait()
    }
}
