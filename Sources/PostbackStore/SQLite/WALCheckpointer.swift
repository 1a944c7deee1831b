import Foundation
import GRDB
import PostbackKit

/// Copies the write-ahead log into the database file from a connection and thread of its own,
/// for `serve`.
///
/// SQLite's automatic checkpoint runs inside the commit that crosses its threshold: that commit,
/// and every request waiting on it, waits while thousands of pages are copied and flushed (150
/// ms and more, measured with a 64 MiB threshold). A passive checkpoint needs no write lock, so
/// run here it goes on while the writer commits. The writer keeps a high automatic threshold
/// only as a backstop should this thread fall behind.
package final class WALCheckpointer: Sendable {
    /// The writer's automatic checkpoint threshold, in bytes of WAL, while this runs.
    static let backstopBytes = 256 << 20
    /// Ingest's: one commit writes up to 262,144 postbacks' pages (about 180 MB), the leaves of
    /// the recent level of dedup keys they touched and, when it settles (``DedupLevels``), a
    /// sixteenth of the settled level (about 50 MB at 28 M postbacks); past the threshold the
    /// writer would copy all of it into the file itself, inside its commit.
    static let ingestBackstopBytes = 2 << 30
    /// The log's length, in pages (16 MiB on 4 KiB pages, 64 MiB on 16), past which it is started again.
    package static let restartFrames = 4096
    /// How long a restart checkpoint waits for the writer and for readers, in milliseconds.
    /// A restart holds every new write transaction off while it waits: with the connection's
    /// busy timeout (a minute), a long read on another connection (the dashboard's year, an
    /// export, `reconcile --live`, the metrics' first read of a large store) held `serve`'s
    /// commits for as long as it ran.
    static let restartWaitMilliseconds = 20
    /// Turns (of `interval`) without a restart after one that could not have the log.
    static let restartBackoffTurns = 10
    private let queue: DatabaseQueue
    private let stopped = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    /// Opens a second connection to the database at `path` and starts checkpointing every
    /// `interval`.
    ///
    /// `restarting`: also start the log again past `restartFrames` pages (`serve`, whose commits
    /// never pause). Ingest's commits come a second apart, and the writer starts the log again
    /// itself once a checkpoint has caught up.
    package init(
        path: String,
        interval: Duration = .milliseconds(100),
        restarting: Bool = true,
        restartFrames: Int = WALCheckpointer.restartFrames
    ) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(PostbackDatabase.busyTimeoutSeconds)
        configuration.label = "postbackd.checkpointer"
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
        }
        queue = try DatabaseQueue(path: path, configuration: configuration)
        let queue = self.queue
        let stopped = self.stopped
        let finished = self.finished
        let (seconds, attoseconds) = interval.components
        let pause = Double(seconds) + Double(attoseconds) / 1e18
        let restartWait = Self.restartWaitMilliseconds
        let busyWait = Int(PostbackDatabase.busyTimeoutSeconds * 1000)
        let thread = Thread {
            nameThisThread("pbd-checkpoint")
            var backoff = 0
            while stopped.wait(timeout: .now() + pause) == .timedOut {
                // Busy (another checkpoint under way, or a reader holding an old snapshot) is
                // normal: the next turn catches up.
                let frames = try? queue.writeWithoutTransaction { db in try db.checkpoint(.passive) }
                // A passive checkpoint never ends the log while commits keep coming, so the
                // file would only grow. Past `restartFrames`, a restart checkpoint holds the
                // writer off while it copies the few frames since the last turn, after which
                // the writer starts the log again from its beginning. It waits briefly: while
                // a reader holds an older snapshot the log cannot start again anyway, and the
                // writer would wait with it.
                if backoff > 0 {
                    backoff -= 1
                } else if restarting, let frames, frames.walFrameCount >= restartFrames {
                    let restarted = try? queue.writeWithoutTransaction { db in
                        try db.execute(sql: "PRAGMA busy_timeout = \(restartWait)")
                        defer { try? db.execute(sql: "PRAGMA busy_timeout = \(busyWait)") }
                        return try db.checkpoint(.restart)
                    }
                    if restarted == nil { backoff = Self.restartBackoffTurns }
                }
            }
            finished.signal()
        }
        thread.start()
    }

    /// Stops the thread after a last checkpoint and waits for it.
    package func stop() {
        stopped.signal()
        finished.wait()
        _ = try? queue.writeWithoutTransaction { db in try db.checkpoint(.passive) }
    }
}
