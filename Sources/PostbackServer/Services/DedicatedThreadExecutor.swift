import Dispatch

/// A task executor on a thread of its own (a serial dispatch queue), for what uses a store: the
/// writer of `serve`, the reading routes (``ReportReader``), `forward` and the Apple Ads
/// exchange, each on its own.
///
/// The SQLite engine's calls block their thread for a whole transaction and its flush to disk.
/// On Swift's cooperative pool (one thread per core) that would stall request handling; on
/// this thread it stalls nothing else. The PostgreSQL engine does not block, and loses nothing
/// by running here.
final class DedicatedThreadExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked: the queue is Sendable and the only state.
    private let queue: DispatchQueue

    /// `label` names the thread (in a debugger, in `perf`).
    init(label: String) {
        queue = DispatchQueue(label: label, qos: .userInitiated)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
