import PostbackKit

/// A task executor on a thread of its own (``NamedThreads``) that lives as long as its owner, for
/// what uses a store for the whole of `serve`: the writer (`pbd-commit`) and the reading routes
/// (`pbd-reports`, ``ReportReader``). A job's own store work (`forward`'s `pbd-forward`, the Apple
/// Ads exchange's `pbd-apple-ads`) runs in `NamedThreads.run(on:_:)`, ended with the job.
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
}
