import Dispatch

/// A task executor on a thread of its own (a serial dispatch queue), for the task that writes
/// to the store (and, apart, for the reading routes: ``ReportReader``).
///
/// The SQLite engine's calls block their thread for a whole transaction and its flush to disk.
/// On Swift's cooperative pool (one thread per core) that would stall request handling; on
/// this thread it stalls nothing else. The PostgreSQL engine does not block, and loses nothing
/// by running here.
final class WriterExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked: the queue is Sendable and the only state.
    private let queue: DispatchQueue

    init(label: String = "postbackd.serve.writer") {
        queue = DispatchQueue(label: label, qos: .userInitiated)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
