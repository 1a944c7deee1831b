#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A task executor of threads of its own, each with a name: the jobs of every task that
/// prefers it (`withTaskExecutorPreference`, `addTask(executorPreference:)`) run on them.
///
/// postbackd's serial paths (the reader, the writer, `serve`'s committer) and its verifiers run
/// here rather than on Swift's cooperative pool, whose threads are all alike: a thread's name
/// in `/proc/PID/task/*/comm`, `top -H` or a profile then says which work its CPU time was spent
/// on, and a blocking call (SQLite's transaction and its flush to disk) stalls nothing else.
///
/// Names are at most 15 bytes, Linux's limit (`TASK_COMM_LEN`): `pbd-reader`, `pbd-writer`,
/// `pbd-verify-N` (`postbackd-verify-12` would be cut to `postbackd-verif`). One thread takes
/// the name as given; several take it with `-N` appended, from 1.
package final class NamedThreads: TaskExecutor, @unchecked Sendable {
    // @unchecked: `jobs`, `head` and `stopping` are only touched with `mutex` held; the
    // threads' handles only by `init` and `shutdown()`, which one owner calls in turn.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let wakeup = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var jobs: [UnownedJob] = []
    private var head = 0
    private var stopping = false
    private var running = 0
    private var threads: [pthread_t] = []
    package let name: String

    /// Starts `count` threads named `name` (one) or `name-1` … `name-count`.
    package init(name: String, count: Int = 1) {
        self.name = name
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(wakeup, nil)
        let count = max(1, count)
        for index in 1...count {
            let threadName = count == 1 ? name : "\(name)-\(index)"
            let start = ThreadStart(executor: self, name: String(threadName.utf8.prefix(15)) ?? name)
            var thread = pthread_t()
            let context = Unmanaged.passRetained(start).toOpaque()
            if pthread_create(&thread, nil, namedThreadMain, context) == 0 {
                threads.append(thread)
                running += 1
            } else {
                Unmanaged<ThreadStart>.fromOpaque(context).release()
            }
        }
    }

    deinit {
        pthread_cond_destroy(wakeup)
        pthread_mutex_destroy(mutex)
        wakeup.deallocate()
        mutex.deallocate()
    }

    /// The threads started (fewer than asked only when the system refused one).
    package var count: Int { threads.count }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        pthread_mutex_lock(mutex)
        if running == 0 {
            // Every thread is gone (shut down, or none could start): the job still runs.
            pthread_mutex_unlock(mutex)
            globalConcurrentExecutor.enqueue(job)
            return
        }
        jobs.append(job)
        pthread_cond_signal(wakeup)
        pthread_mutex_unlock(mutex)
    }

    /// Lets the threads finish the jobs they hold and waits for them to end. Call it once no
    /// task prefers this executor any more; a job enqueued later runs on the global executor.
    package func shutdown() {
        pthread_mutex_lock(mutex)
        stopping = true
        pthread_cond_broadcast(wakeup)
        pthread_mutex_unlock(mutex)
        let me = pthread_self()
        for thread in threads {
            // Called from one of its own threads (a task that ran here goes on there for a while
            // after leaving its preference): that one ends once this job returns.
            if pthread_equal(thread, me) != 0 { pthread_detach(thread) } else { pthread_join(thread, nil) }
        }
        threads.removeAll()
    }

    /// Runs jobs until shut down with nothing left to run.
    fileprivate func work() {
        while true {
            pthread_mutex_lock(mutex)
            while head == jobs.count && !stopping {
                pthread_cond_wait(wakeup, mutex)
            }
            if head == jobs.count {
                running -= 1
                pthread_mutex_unlock(mutex)
                return
            }
            let job = jobs[head]
            head += 1
            if head == jobs.count {
                jobs.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= 1024 && head * 2 >= jobs.count {
                jobs.removeFirst(head)
                head = 0
            }
            pthread_mutex_unlock(mutex)
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }

    /// Runs `body` with its jobs (and its child tasks', unless they prefer another) on
    /// `threads`, then shuts them down.
    package static func run<Result: Sendable>(
        on threads: NamedThreads,
        _ body: () async throws -> Result
    ) async rethrows -> Result {
        defer { threads.shutdown() }
        return try await withTaskExecutorPreference(threads, operation: body)
    }
}

private final class ThreadStart {
    let executor: NamedThreads
    let name: String
    init(executor: NamedThreads, name: String) {
        self.executor = executor
        self.name = name
    }
}

#if canImport(Darwin)
private func namedThreadMain(_ context: UnsafeMutableRawPointer) -> UnsafeMutableRawPointer? {
    let start = Unmanaged<ThreadStart>.fromOpaque(context).takeRetainedValue()
    nameThisThread(start.name)
    start.executor.work()
    return nil
}
#else
private func namedThreadMain(_ context: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
    guard let context else { return nil }
    let start = Unmanaged<ThreadStart>.fromOpaque(context).takeRetainedValue()
    nameThisThread(start.name)
    start.executor.work()
    return nil
}
#endif

#if canImport(Darwin)
/// Names the calling thread (at most 15 bytes: ``NamedThreads``).
package func nameThisThread(_ name: String) {
    pthread_setname_np(name)
}
#else
/// Names the calling thread (at most 15 bytes: ``NamedThreads``): Glibc's `pthread_setname_np` is not visible to Swift (a GNU
/// extension) and `prctl` is variadic, so the name goes where both put it, the thread's `comm`.
package func nameThisThread(_ name: String) {
    let descriptor = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
    guard descriptor >= 0 else { return }  // no /proc: the thread keeps the process's name
    _ = writeWhole(Array(name.utf8), to: descriptor)
    close(descriptor)
}
#endif
