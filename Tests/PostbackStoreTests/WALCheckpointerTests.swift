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
        let writer = try PostbackDatabase.open(path)
        try await writer.write { db in try db.execute(sql: "CREATE TABLE filler (bytes BLOB)") }
        // Every turn past one page of log tries to start it again.
        let checkpointer = try WALCheckpointer(path: path, interval: .milliseconds(5), restartFrames: 1)
        defer { checkpointer.stop() }

        // A reader holds the snapshot of its first read for three seconds, as a dashboard's year
        // or an export does, while the writer commits behind it.
        let reader = try DatabaseQueue(path: path)
        let reading = Task.detached {
            try reader.read { db in
                _ = try Int.fetchOne(db, sql: "SELECT count(*) FROM filler")
                Thread.sleep(forTimeInterval: 3)
            }
        }
        try await Task.sleep(for: .milliseconds(200))
        var longest = Duration.zero
        let clock = ContinuousClock()
        for _ in 0..<40 {
            let took = try await clock.measure {
                try await writer.write { db in try db.execute(sql: "INSERT INTO filler VALUES (randomblob(20000))") }
            }
            longest = max(longest, took)
            try await Task.sleep(for: .milliseconds(20))
        }
        try await reading.value
        // A restart that waited for the reader held each commit for the rest of its read.
        #expect(longest < .seconds(1), "a commit waited \(longest)")
        #expect(try await writer.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM filler") } == 40)
    }
}
