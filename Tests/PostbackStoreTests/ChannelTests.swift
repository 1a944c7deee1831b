import Foundation
import PostbackKit
import PostbackStore
import PostbackTestSupport
import Testing

/// Channels (issue 60): every stored postback, sighting and quarantined entry records the
/// channel it came by, on both engines, whichever side is read first.
@Suite("Channels")
struct ChannelTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory("channels")
    }

    static let first = "60000000-0000-4000-8000-000000000001"
    static let second = "60000000-0000-4000-8000-000000000002"

    /// The two postbacks with these fine values, then `junk`, a line that is not a postback.
    func file(_ name: String, fines: (Int, Int), junk: String) throws -> String {
        try directory.write(
            name,
            [
                try SamplePostback.signedJSON(.v4_0, transactionID: Self.first, conversionValue: .fine(fines.0)),
                try SamplePostback.signedJSON(.v4_0, transactionID: Self.second, conversionValue: .fine(fines.1)),
                junk,
            ].joined(separator: "\n")
        )
    }

    /// The device's copies.
    func copies() throws -> String { try file("copies.jsonl", fines: (20, 7), junk: "not a postback") }

    /// A network's forwards: the first postback with its value raised, the second as the
    /// device sent it.
    func forwards() throws -> String { try file("forwards.jsonl", fines: (40, 7), junk: "{}") }

    /// `transaction_id channel` of each postback, `transaction_id channel conflict` of each
    /// sighting, `channel` of each quarantined entry, each sorted.
    func channels(_ store: TestStore) async throws -> [[String?]] {
        [
            try await store.strings("SELECT transaction_id || ' ' || channel FROM postbacks ORDER BY transaction_id"),
            try await store.strings(
                """
                SELECT p.transaction_id || ' ' || s.channel || ' ' || CASE WHEN s.conflict THEN 1 ELSE 0 END
                FROM sightings s JOIN postbacks p ON p.id = s.postback_id ORDER BY p.transaction_id
                """
            ),
            try await store.strings("SELECT channel FROM quarantine ORDER BY channel"),
        ]
    }

    @Test(
        "ingest --channel records each postback's, copy's and quarantined entry's channel, the copy or the forward read first",
        arguments: TestEngine.available,
        [true, false]
    )
    func ingestChannels(_ engine: TestEngine, copyFirst: Bool) async throws {
        let store = try await TestStore.make(engine, in: directory, name: "store-\(copyFirst)")
        let network = try #require(PostbackChannel("network-x"))
        let (copies, forwards) = (try copies(), try forwards())
        let runs =
            copyFirst
            ? [(copies, PostbackChannel.device), (forwards, network)] : [(forwards, network), (copies, .device)]
        for (path, channel) in runs {
            let summary = try await ingest([path], into: store.location, channel: channel)
            #expect(summary.read == 3 && summary.quarantined == 1)
        }
        let (stored, copied) = copyFirst ? ("device", "network-x") : ("network-x", "device")
        #expect(
            try await channels(store) == [
                ["\(Self.first) \(stored)", "\(Self.second) \(stored)"],
                ["\(Self.first) \(copied) 1", "\(Self.second) \(copied) 0"],
                ["device", "network-x"],
            ]
        )
        // Reading the same files again on the same channels adds nothing.
        for (path, channel) in runs {
            #expect(try await ingest([path], into: store.location, channel: channel).accepted == 0)
        }
        #expect(try await store.count("sightings") == 2)
        #expect(try await store.count("quarantine") == 2)
    }

    @Test("a file ingested without --channel is on the channel file")
    func defaultChannel() async throws {
        let store = try await TestStore.make(.sqlite, in: directory)
        try await ingest([try copies()], into: store.location)
        #expect(try await channels(store) == [["\(Self.first) file", "\(Self.second) file"], [], ["file"]])
    }

    @Test("channel names: lower-case letters, digits, '.', '_', '-', at most 64, starting with a letter or digit")
    func names() throws {
        for good in ["device", "file", "network-x", "mmp.feed_2", "0", String(repeating: "a", count: 64)] {
            #expect(PostbackChannel(good)?.name == good, "\(good)")
        }
        for bad in ["", "Network", "-x", ".x", "_x", "a b", "x/y", "é", String(repeating: "a", count: 65)] {
            #expect(PostbackChannel(bad) == nil, "\(bad)")
        }
        #expect(PostbackChannel.device.httpSource == "http")
        #expect(PostbackChannel("network-x")?.httpSource == "http:network-x")
        #expect(throws: StoreError.self) { try AccessKeySecret.parseChannels("network-x,device") }
        #expect(throws: StoreError.self) { try AccessKeySecret.parseChannels("network-x,") }
        #expect(try AccessKeySecret.parseChannels("b, a,b").map(\.name) == ["a", "b"])
    }

    @Test(
        "a store from before channels: what serve received is device, the rest file",
        arguments: TestEngine.available
    )
    func migration(_ engine: TestEngine) async throws {
        let store = try await TestStore.make(engine, in: directory, name: "before")
        try await ingest([try copies()], into: store.location)
        try await ingest([try forwards()], into: store.location)
        // As `serve` stored them before channels: source `http`.
        try await store.execute(
            "UPDATE postbacks SET source = 'http' WHERE transaction_id = '\(Self.first)'",
            "UPDATE sightings SET source = 'http' WHERE fine_value = 40",
            "UPDATE quarantine SET source = 'http' WHERE raw_size = 2"
        )
        // The schema before the migration, its rows kept.
        switch engine {
        case .sqlite:
            try await store.execute(
                "ALTER TABLE postbacks DROP COLUMN channel",
                "ALTER TABLE sightings DROP COLUMN channel",
                "ALTER TABLE quarantine DROP COLUMN channel",
                "ALTER TABLE access_keys DROP COLUMN channels",
                "ALTER TABLE sightings DROP COLUMN ad_interaction_type",
                "DROP TABLE reconcile_daily",
                "DROP TABLE reconcile_daily_totals",
                "DELETE FROM grdb_migrations WHERE identifier LIKE 'v24:%' OR identifier LIKE 'v25:%'"
            )
        case .postgres:
            try await store.execute(
                "ALTER TABLE postbacks DROP COLUMN channel",
                "ALTER TABLE sightings DROP COLUMN channel",
                "ALTER TABLE quarantine DROP COLUMN channel",
                "ALTER TABLE access_keys DROP COLUMN channels",
                "ALTER TABLE sightings DROP COLUMN ad_interaction_type",
                "DROP TABLE reconcile_daily, reconcile_daily_totals, claims",
                "DELETE FROM postbackd_migrations WHERE version >= 20"
            )
        }
        try await PostbackStores.with(store.location) { _ in }
        #expect(
            try await channels(store) == [
                ["\(Self.first) device", "\(Self.second) file"],
                ["\(Self.first) device 1", "\(Self.second) file 0"],
                ["device", "file"],
            ]
        )
        #expect(try await store.strings("SELECT COUNT(*) FROM access_keys WHERE channels IS NOT NULL") == ["0"])
    }
}
