import Foundation
import GRDB
import PostbackKit
import PostbackTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension StoreFaultCommandTests {
    @Test("check: a sound store exits 0; rows edited by hand are findings naming the table, the row and what is wrong")
    func checkFindsEdits() async throws {
        let path = try await makeStore("edited.sqlite")
        let sound = try await run(["check", "--db", path])
        #expect(sound.status == 0, "\(sound.standardOutput)\(sound.standardError)")
        #expect(sound.standardOutput.contains("integrity_check: ok"))
        #expect(sound.standardOutput.contains("sound: no finding"))
        let quick = try await run(["check", "--db", path, "--quick"])
        #expect(quick.status == 0 && quick.standardOutput.contains("engine check: skipped (--quick"))
        #expect(quick.standardOutput.contains("sound: no finding"))
        let misused = try await run(["check", "--db", path, "--since", "2026-11-20"])
        #expect(misused.status == 2 && misused.standardError.contains("--since needs --quick"))
        let notADay = try await run(["check", "--db", path, "--quick", "--since", "yesterday"])
        #expect(notADay.status == 2 && notADay.standardError.contains("--since yesterday: not a day"))

        let (postback, quarantined, sighting, sightingPostback, day) = try await DatabaseQueue(path: path)
            .writeWithoutTransaction { db in
                // As someone editing by hand would: without the foreign keys GRDB turns on.
                try db.execute(sql: "PRAGMA foreign_keys = OFF")
                let postback =
                    try Int64.fetchOne(
                        db,
                        sql: "SELECT MIN(id) FROM postbacks WHERE id NOT IN (SELECT postback_id FROM sightings)"
                    ) ?? 0
                let quarantined = try Int64.fetchOne(db, sql: "SELECT MIN(id) FROM quarantine") ?? 0
                let sighting = try Int64.fetchOne(db, sql: "SELECT MIN(id) FROM sightings") ?? 0
                let sightingPostback =
                    try Int64.fetchOne(db, sql: "SELECT postback_id FROM sightings WHERE id = ?", arguments: [sighting])
                    ?? 0
                let day = try String.fetchOne(db, sql: "SELECT MIN(date) FROM aggregate_daily") ?? ""
                try db.execute(
                    sql: "UPDATE postbacks SET transaction_id = 'edited-by-hand' WHERE id = ?",
                    arguments: [postback]
                )
                try db.execute(
                    sql: "UPDATE quarantine SET raw = CAST('edited' AS BLOB) WHERE id = ?",
                    arguments: [quarantined]
                )
                try db.execute(sql: "DELETE FROM conflicts WHERE postback_id = ?", arguments: [sightingPostback])
                try db.execute(sql: "DELETE FROM deliveries WHERE postback_id = ?", arguments: [sightingPostback])
                try db.execute(sql: "DELETE FROM postbacks WHERE id = ?", arguments: [sightingPostback])
                try db.execute(
                    sql:
                        "UPDATE aggregate_daily_totals SET postbacks = postbacks + 5 WHERE rowid = (SELECT MIN(rowid) FROM aggregate_daily_totals WHERE date = ?)",
                    arguments: [day]
                )
                return (postback, quarantined, sighting, sightingPostback, day)
            }
        #expect(postback > 0 && quarantined > 0 && sighting > 0)
        let edited = try await run(["check", "--db", path])
        #expect(edited.status == 1, "\(edited.standardOutput)\(edited.standardError)")
        let lines = edited.outputLines
        #expect(
            lines.contains {
                $0.hasPrefix("finding: postbacks row \(postback): dedup_key ") && $0.contains("edited-by-hand")
            }
        )
        #expect(lines.contains { $0.hasPrefix("finding: quarantine row \(quarantined): raw_sha256 ") })
        #expect(
            lines.contains {
                $0 == "finding: sightings row \(sighting): postback_id \(sightingPostback) is not a stored postback"
            }
        )
        #expect(lines.contains { $0.hasPrefix("finding: aggregate_daily_totals: date \(day): its rows count ") })
        #expect(lines.contains { $0.hasPrefix("finding: aggregate_daily: date ") && $0.contains("the store holds") })
        #expect(lines.last?.hasPrefix("NOT SOUND") == true)

        let json = try await run(["check", "--db", path, "--format", "json"])
        #expect(json.status == 1)
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [String: Any]
        )
        let findings = try #require(object["findings"] as? [[String: Any]])
        let rows = Set(
            findings.compactMap { finding -> String? in
                guard let table = finding["table"] as? String else { return nil }
                return "\(table):\((finding["row_id"] as? Int).map(String.init) ?? "-")"
            }
        )
        #expect(
            rows.isSuperset(of: ["postbacks:\(postback)", "quarantine:\(quarantined)", "sightings:\(sighting)"]),
            "\(rows)"
        )
        #expect(object["sound"] as? Bool == false)
    }

    @Test("a backup taken while ingest writes (sqlite3 .backup and VACUUM INTO) passes check")
    func backupDuringIngest() async throws {
        let path = try await makeStore("live-backup.sqlite", count: 100)
        let input = try directory.write("stream.jsonl", try await Postbackd.generated(count: 6_000, seed: 31))
        let ingest = Process()
        ingest.executableURL = URL(fileURLWithPath: Postbackd.executable)
        ingest.arguments = ["ingest", "--db", path, "--keys", TestKeys.directory, "--format", "json", input]
        ingest.standardOutput = FileHandle.nullDevice
        ingest.standardError = FileHandle.nullDevice
        try ingest.run()
        var copies: [String] = []
        var taken = 0
        var whileRunning = 0
        while ingest.isRunning || taken < 2 {
            taken += 1
            if ingest.isRunning { whileRunning += 1 }
            let backup = directory.path + "/backup-\(taken).sqlite"
            let into = directory.path + "/vacuum-\(taken).sqlite"
            let sqlite = Process()
            sqlite.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
            // As docs/faults-and-backups.md says: wait for the writer's lock rather than fail at once.
            sqlite.arguments = ["-cmd", ".timeout 60000", path, ".backup '\(backup)'", "VACUUM INTO '\(into)'"]
            let errors = Pipe()
            sqlite.standardError = errors
            try sqlite.run()
            let said = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            sqlite.waitUntilExit()
            #expect(sqlite.terminationStatus == 0, "sqlite3: \(said)")
            copies += [backup, into]
            if taken >= 20 { break }
        }
        ingest.waitUntilExit()
        #expect(ingest.terminationStatus == 0)
        #expect(whileRunning >= 1, "no backup was taken while ingest ran")
        for copy in copies + [path] {
            let check = try await run(["check", "--db", copy])
            #expect(check.status == 0, "\(copy): \(check.standardOutput)\(check.standardError)")
        }
    }
}
