import PostbackKit

/// A task executor on a thread of its own (``NamedThreads``), for what uses a store: the writer
/// of `serve` (`pbd-commit`), the reading routes (`pbd-reports`, ``ReportReader``), `forward`
/// (`pbd-forward`) and the Apple Ads exchange (`pbd-apple-ads`), each on its own.
///
/// The SQLite engine's calls block their thread for a whole transaction and its flush to disk.
/// On Swift's cooperative pool (one thread per core) that would stall request handling; on
/// this thread it stalls nothing else. The PostgreSQL engine does not block, and loses nothing
/// by running here. The thread's name says in `top -H` and a profile whose time it is.
final class DedicatedThreadExecutor: TaskExecutor, Sendable {
    private let thread: NamedThreads

    /// `name`: the thread's (at most 15 bytes).
    init(name: String) {
        thread = NamedThreads(name: name)
    }

    deinit {
        thread.shutdown()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        thread.enqueue(job)
    }

    /// Ends the thread once what it holds has run (the executor then runs nothing more here).
    func shutdown() {
        thread.shutdown()
    }

    /// Runs `body` on a thread named `name`, ended when `body` returns.
    static func run<Result: Sendable>(named name: String, _ body: () async throws -> Result) async rethrows -> Result {
        let executor = DedicatedThreadExecutor(name: name)
        defer { executor.shutdown() }
        return try await withTaskExecutorPreference(executor, operation: body)
    }
}
