import Foundation
import GRDB
import PostbackStore
import PostbackTestSupport
import Synchronization
import Testing

/// `serve`'s checkpointer (``WALCheckpointer``) beside a long read on another connection.
@Suite("SQLite's checkpointer")
struct WALCheckpointerTests {
    @Test("a restart of the log does not hold the writer off while a reader keeps an older snapshot")
    func restartDoesNotWaitForReaders() async throws {
        let directory = try TemporaryDirectory("checkpointer")
        let path = directory.path + "/store.sqlite"
        // A log of its own, without flushes: what is measured is whether the writer may commit
        // at all, which a loaded machine's slow flushes would blur.
        var configuration = Configuration()
        configuration.journalMode = .wal
        configuration.busyMode = .timeout(60)
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = OFF") }
        let writer = try DatabaseQueue(path: path, configuration: configuration)
        try await writer.write { db in try db.execute(sql: "CREATE TABLE filler (bytes BLOB)") }
        // Every turn past one page of log tries to start it again.
        let checkpointer = try WALCheckpointer(path: path, restartFrames: 1)
        defer { checkpointer.stop() }

        // A reader holds the snapshot of its first read for six seconds, as a dashboard's year
        // or an export does, while the writer commits behind it every 20 ms.
        let reader = try DatabaseQueue(path: path)
        let (commits, readBegan, readEnded) = try await Self.commit(into: writer, beside: reader)
        // A restart that waited for the reader held every commit after the first until the read
        // ended: none would end in the read's middle seconds (a loaded machine makes them fewer,
        // not none).
        let during = commits.filter {
            readBegan.duration(to: $0) > .seconds(1) && $0.duration(to: readEnded) > .milliseconds(500)
        }
        #expect(during.count >= 2, "\(during.count) of \(commits.count) commits while the reader held its snapshot")
        #expect(
            try await writer.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM filler") } == commits.count
        )
    }

    /// Holds a read of `reader` open for six seconds, and commits into `writer` every 20 ms
    /// meanwhile, each on a thread of its own (a blocked thread of the cooperative pool, of
    /// which a 2-core machine has two, would stall other tests and this one's commits); returns
    /// when each commit ended, and when the read began and ended.
    private static func commit(
        into writer: DatabaseQueue,
        beside reader: DatabaseQueue
    ) async throws -> (
        commits: [ContinuousClock.Instant], began: ContinuousClock.Instant, ended: ContinuousClock.Instant
    ) {
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                let clock = ContinuousClock()
                let reading = DispatchSemaphore(value: 0)
                let readDone = DispatchSemaphore(value: 0)
                let ended = ReadEnd()
                Thread {
                    // Signalled once the read has its snapshot, or once it failed.
                    var signalled = false
                    let outcome = Result {
                        try reader.read { db in
                            _ = try Int.fetchOne(db, sql: "SELECT count(*) FROM filler")
                            reading.signal()
                            signalled = true
                            Thread.sleep(forTimeInterval: 6)
                        }
                    }
                    ended.set(outcome.map { clock.now })
                    if !signalled { reading.signal() }
                    readDone.signal()
                }.start()
                reading.wait()
                let began = clock.now
                var commits: [ContinuousClock.Instant] = []
                do {
                    while began.duration(to: clock.now) < .seconds(6) {
                        try writer.write { db in try db.execute(sql: "INSERT INTO filler VALUES (randomblob(20000))") }
                        commits.append(clock.now)
                        Thread.sleep(forTimeInterval: 0.02)
                    }
                } catch {
                    readDone.wait()
                    continuation.resume(throwing: error)
                    return
                }
                readDone.wait()
                continuation.resume(with: ended.get().map { (commits, began, $0) })
            }.start()
        }
    }
}

/// When the read ended, or why it failed: set by the reader's thread, read by the writer's.
private final class ReadEnd: Sendable {
    private let lock = Mutex<Result<ContinuousClock.Instant, any Error>?>(nil)

    func set(_ outcome: Result<ContinuousClock.Instant, any Error>) {
        lock.withLock { $0 = outcome }
    }

    func get() -> Result<ContinuousClock.Instant, any Error> {
        lock.withLock { $0 } ?? .failure(CancellationError())
    }
}
