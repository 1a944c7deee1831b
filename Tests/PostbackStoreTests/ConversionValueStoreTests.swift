import Foundation
import PostbackKit
import PostbackStore
import PostbackTestSupport
import Testing

/// What the conversion value endpoints store: bundle identifiers and device histories, the same
/// on every engine. The stores are opened as a job opens them, not as `serve` does: what is
/// recorded is the same, without serve's answer deadline, which a test process sharing two
/// threads with hundreds of tests cannot keep (ConversionValueServeTests test serve's, over HTTP).
@Suite("Conversion value storage, on every engine")
struct ConversionValueStoreTests {
    let directory: TemporaryDirectory
    let start = UTCInstant(seconds: 1_795_000_000)

    init() throws {
        directory = try TemporaryDirectory("conversion-value-store")
    }

    private func call(
        _ device: UInt8,
        _ event: String,
        hours: Double,
        revenue: [String: Int64]? = nil,
        request: UInt8 = 0
    )
        -> DeviceCall
    {
        DeviceCall(
            appID: 1_254_734_734,
            device: Array(repeating: device, count: 32),
            at: UTCInstant(milliseconds: start.milliseconds + Int64(hours * 3_600_000)),
            event: event,
            firstCallAt: start,
            revenueTotals: revenue,
            adRevenueTotals: nil,
            request: [request == 0 ? UInt8(truncatingIfNeeded: Int(hours * 10)) : request, device]
        )
    }

    @Test(
        "device calls: recorded in order, a device twice in one group, retries, kept across opens",
        arguments: TestEngine.available
    )
    func deviceCalls(_ engine: TestEngine) async throws {
        let store = try await TestStore.make(engine, in: directory)
        let calls = [
            call(1, "__SESSION__", hours: 0),
            call(2, "__SESSION__", hours: 0.5),
            call(1, "purchase", hours: 1, revenue: ["USD": 4_990_000]),
            call(1, "purchase", hours: 1, revenue: ["USD": 4_990_000]),  // the same request again: a retry
        ]
        let histories = try await PostbackStores.with(store.location) { storage in
            try await storage.recordDeviceCalls(calls)
        }
        // The same as replaying the calls one by one.
        var expected: [UInt8: DeviceHistory] = [:]
        var expectedAnswers: [DeviceHistory?] = []
        for call in calls {
            let next = DeviceHistory.recording(call, after: expected[call.device[0]])
            expected[call.device[0]] = next
            expectedAnswers.append(next)
        }
        #expect(histories == expectedAnswers)
        #expect(histories[3]?.events.count == 2)

        // A later group reads what the first stored.
        let later = try await PostbackStores.with(store.location) { storage in
            try await storage.recordDeviceCalls([call(1, "level", hours: 30, revenue: ["USD": 5_990_000])])
        }
        let history = try #require(later.first ?? nil)
        #expect(history.events.map(\.name) == ["__SESSION__", "purchase", "level"])
        #expect(history.events.last?.revenue == [.init(micros: 1_000_000, currency: "USD")])
        #expect(try await store.count("conversion_value_devices") == 2)
        // Only the digest of the device is stored.
        #expect(
            try await store.strings("SELECT count(*) FROM conversion_value_devices WHERE length(device) = 32") == ["2"]
        )
    }

    @Test("device histories 35 days past their first call are deleted", arguments: TestEngine.available)
    func pruning(_ engine: TestEngine) async throws {
        let store = try await TestStore.make(engine, in: directory)
        _ = try await PostbackStores.with(store.location) { storage in
            try await storage.recordDeviceCalls([call(1, "a", hours: 0), call(2, "a", hours: 10)])
        }
        #expect(try await store.count("conversion_value_devices") == 2)
        // 840 hours on, a new device calls (device 1, silent, is deleted), and device 2 calls
        // past its last window (nothing is kept for it).
        let answers = try await PostbackStores.with(store.location) { storage in
            var third = call(3, "a", hours: 840.5)
            third.firstCallAt = UTCInstant(milliseconds: start.milliseconds + 800 * 3_600_000)
            return try await storage.recordDeviceCalls([third, call(2, "b", hours: 841)])
        }
        #expect(answers[0] != nil)
        #expect(answers[1] == nil, "device 2 calls past its 840 hours: nothing kept")
        #expect(try await store.count("conversion_value_devices") == 1)
    }

    @Test(
        "bundle identifiers: recorded with a model, listed, and never shared by two apps",
        arguments: TestEngine.available
    )
    func bundleIDs(_ engine: TestEngine) async throws {
        let store = try await TestStore.make(engine, in: directory)
        let models = Repository.path("SamplePostbacks/models")
        let game = models + "/app-1254734734-game.json"
        let examples = models + "/app-525463029-apple-examples.json"
        _ = try await ModelsJob.add(files: [game], bundleID: "com.example.game", location: store.location)
        _ = try await ModelsJob.add(files: [examples], location: store.location)
        var listed = try await ModelsJob.list(location: store.location)
        #expect(listed.map(\.bundleID) == [nil, "com.example.game"])  // by app id
        #expect(
            try await ModelsJob.show(app: "com.example.game", location: store.location)?.model.appID == 1_254_734_734
        )

        await #expect(throws: BundleIDConflict.self) {
            _ = try await ModelsJob.add(files: [examples], bundleID: "com.example.game", location: store.location)
        }
        // A new bundle identifier for the same app replaces the old one.
        _ = try await ModelsJob.add(files: [game], bundleID: "com.example.game2", location: store.location)
        listed = try await ModelsJob.list(location: store.location)
        #expect(listed.map(\.bundleID) == [nil, "com.example.game2"])
        #expect(try await store.count("app_bundles") == 1)

        await #expect(throws: FileProblemsError.self) {
            _ = try await ModelsJob.add(files: [game], bundleID: "com example", location: store.location)
        }
        await #expect(throws: FileProblemsError.self) {
            _ = try await ModelsJob.add(
                files: [game, examples],
                bundleID: "com.example.both",
                location: store.location
            )
        }
    }
}
