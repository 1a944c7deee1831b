import Foundation
import GRDB
import PostbackStore
import PostbackTestSupport
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
        // or an export does, while the writer commits behind it.
        let clock = ContinuousClock()
        let reader = try DatabaseQueue(path: path)
        let readStarted = clock.now
        let reading = Task.detached {
            try reader.read { db in
                _ = try Int.fetchOne(db, sql: "SELECT count(*) FROM filler")
                Thread.sleep(forTimeInterval: 6)
            }
            return clock.now
        }
        var committed: [ContinuousClock.Instant] = []
        while committed.count < 2_000 {
            try await writer.write { db in try db.execute(sql: "INSERT INTO filler VALUES (randomblob(20000))") }
            committed.append(clock.now)
            if readStarted.duration(to: clock.now) > .seconds(6) { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        let readEnded = try await reading.value
        // A restart that waited for the reader held every commit after the first until the read
        // ended: none would end in the read's middle seconds (a loaded machine makes them fewer,
        // not none).
        let during = committed.filter {
            readStarted.duration(to: $0) > .seconds(1) && $0.duration(to: readEnded) > .milliseconds(500)
        }
        #expect(during.count >= 2, "\(during.count) of \(committed.count) commits while the reader held its snapshot")
        #expect(
            try await writer.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM filler") } == committed.count
        )
    }
}
