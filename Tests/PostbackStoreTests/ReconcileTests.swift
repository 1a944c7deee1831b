import Foundation
import PostbackKit
import PostbackStore
import PostbackTestSupport
import Testing

/// `reconcile` (issue 60): the devices' copies against a network's forwards, on both engines,
/// whichever side is read first, counted as the corpus's plan says.
@Suite("Reconcile")
struct ReconcileTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory("reconcile")
    }

    /// Old: long before the cutoff; young: after it.
    static let oldTime = UTCInstant(milliseconds: 1_793_512_800_000)  // 2026-11-01T06:00:00Z
    static let youngTime = UTCInstant(milliseconds: 1_795_154_400_000)  // 2026-11-20T06:00:00Z
    static let asOf = UTCInstant(milliseconds: 1_795_564_800_000)  // 2026-11-25T00:00:00Z

    /// A store holding `corpus`, its files ingested copies first or forwards first.
    func store(_ engine: TestEngine, _ corpus: ReconcileCorpus, copyFirst: Bool) async throws -> TestStore {
        let store = try await TestStore.make(engine, in: directory, name: "store-\(copyFirst)")
        try await PostbackStores.with(store.location) { store in
            _ = try await store.replaceCampaignMappings([ReconcileCorpus.mapping(validFrom: Self.oldTime.day)])
        }
        let network = try #require(PostbackChannel(ReconcileCorpus.channel))
        var runs: [(String, PostbackChannel, UTCInstant)] = []
        for old in [true, false] {
            let time = old ? Self.oldTime : Self.youngTime
            let copies = try directory.write("copies-\(old).jsonl", corpus.copies(old: old).joined(separator: "\n"))
            let forwards = try directory.write(
                "forwards-\(old).jsonl",
                corpus.forwards(old: old).joined(separator: "\n")
            )
            let pair = [(copies, PostbackChannel.device, time), (forwards, network, time)]
            runs += copyFirst ? pair : pair.reversed()
        }
        for (path, channel, time) in runs {
            try await ingest([path], into: store.location, receivedAt: time, channel: channel)
        }
        return store
    }

    /// The reconciliation from `aggregate`'s rows, after checking that the stored postbacks
    /// themselves (`--live`) give the same.
    func reconcile(_ store: TestStore, _ request: ReconcileRequest) async throws -> Reconciliation {
        var live = request
        live.live = true
        let (fromRows, fromPostbacks) = try await PostbackStores.with(store.location, access: .readOnly) {
            (try await request.read($0), try await live.read($0))
        }
        #expect(fromRows.rows.map(\.key) == fromPostbacks.rows.map(\.key), "\(request)")
        #expect(fromRows.rows.map(\.counts) == fromPostbacks.rows.map(\.counts), "\(request)")
        return fromRows
    }

    func warning(_ store: TestStore) async throws -> String? {
        try await PostbackStores.with(store.location, access: .readOnly) { try await $0.stalenessWarning() }
    }

    func aggregate(_ store: TestStore, _ selection: DaySelection = .all) async throws {
        _ = try await AggregateJob.run(store.location, selection, policy: .midpoint)
    }

    @Test(
        "every class of the corpus counted as planned, copies or forwards read first, and a re-read changes nothing",
        arguments: TestEngine.available,
        [true, false]
    )
    func corpus(_ engine: TestEngine, copyFirst: Bool) async throws {
        let corpus = try ReconcileCorpus()
        let store = try await store(engine, corpus, copyFirst: copyFirst)
        try await aggregate(store)
        let totals = ReconcileRequest(dimensions: [], asOf: Self.asOf)
        let expected = corpus.expected()
        #expect(try await reconcile(store, totals).total == expected)
        #expect(try await reconcile(store, totals).rows.count == 1)

        // By day first received: the old day holds the old entries and the quarantined forwards.
        let byDate = try await reconcile(store, ReconcileRequest(dimensions: [.date], asOf: Self.asOf))
        #expect(byDate.rows.map(\.key.date) == [Self.oldTime.day, Self.youngTime.day])
        #expect(byDate.rows.first?.counts == corpus.expected { $0.old })
        #expect(byDate.rows.last?.counts == corpus.expected(quarantined: false) { !$0.old })

        // By channel: a copy alone has none; everything forwarded is network-x's.
        let byChannel = try await reconcile(store, ReconcileRequest(dimensions: [.channel], asOf: Self.asOf))
        #expect(byChannel.rows.map(\.key.channel) == [nil, ReconcileCorpus.channel])
        #expect(byChannel.rows.first?.counts == corpus.expected(quarantined: false) { $0.forward == nil })
        #expect(byChannel.rows.last?.counts == corpus.expected { $0.forward != nil })

        // Judged later, every unmatched postback is missing its other side; with a grace of
        // 30 days on the same date, even the old ones are pending.
        let later = UTCInstant(milliseconds: Self.asOf.milliseconds + 30 * 86_400_000)
        #expect(
            try await reconcile(store, ReconcileRequest(dimensions: [], asOf: later)).total
                == corpus.expected(allOld: true)
        )
        let patient = try await reconcile(store, ReconcileRequest(dimensions: [], asOf: Self.asOf, graceDays: 30)).total
        #expect(patient.copyOnly == 0 && patient.forwardOnly == 0)
        #expect(patient.pending == expected.pending + expected.copyOnly + expected.forwardOnly)

        // A period, a network, an app: only what they hold; a key of some apps leaves the
        // quarantined forwards out (they have no app).
        var young = ReconcileRequest(from: Self.youngTime.day, dimensions: [], asOf: Self.asOf)
        #expect(try await reconcile(store, young).total == corpus.expected(quarantined: false) { !$0.old })
        young.adNetworkIDs = ["another.skadnetwork"]
        #expect(try await reconcile(store, young).rows.isEmpty)
        var app = totals
        app.appIDs = [ReconcileCorpus.appID]
        #expect(try await reconcile(store, app).total == corpus.expected(quarantined: false))

        // Reading every file again on its channel adds nothing and changes no count.
        for old in [true, false] {
            let time = old ? Self.oldTime : Self.youngTime
            try await ingest(
                [directory.path + "/forwards-\(old).jsonl"],
                into: store.location,
                receivedAt: time,
                channel: try #require(PostbackChannel(ReconcileCorpus.channel))
            )
            try await ingest(
                [directory.path + "/copies-\(old).jsonl"],
                into: store.location,
                receivedAt: time,
                channel: .device
            )
        }
        try await aggregate(store)
        #expect(try await reconcile(store, totals).total == expected)
    }

    @Test(
        "aggregate of the day the other side arrived recounts its postbacks' day; the day the grace ends on is split by the hour",
        arguments: TestEngine.available
    )
    func recountAndCutoff(_ engine: TestEngine) async throws {
        let corpus = try ReconcileCorpus()
        let store = try await TestStore.make(engine, in: directory, name: "recount")
        try await PostbackStores.with(store.location) { store in
            _ = try await store.replaceCampaignMappings([ReconcileCorpus.mapping(validFrom: Self.oldTime.day)])
        }
        // The copies on one day, aggregated; the forwards three days later, and only their day
        // aggregated: the copies' day is recounted too.
        let later = UTCInstant(milliseconds: Self.oldTime.milliseconds + 3 * 86_400_000)
        let copies = try directory.write(
            "copies.jsonl",
            (corpus.copies(old: true) + corpus.copies(old: false)).joined(separator: "\n")
        )
        let forwards = try directory.write(
            "forwards.jsonl",
            (corpus.forwards(old: true) + corpus.forwards(old: false)).joined(separator: "\n")
        )
        try await ingest([copies], into: store.location, receivedAt: Self.oldTime, channel: .device)
        try await aggregate(store, .range(from: Self.oldTime.day, to: Self.oldTime.day))
        let byDate = ReconcileRequest(dimensions: [.date, .channel], asOf: Self.asOf)
        let before = try await reconcile(store, byDate)
        #expect(before.total.matched == 0 && before.total.copies > 0)
        try await ingest(
            [forwards],
            into: store.location,
            receivedAt: later,
            channel: try #require(PostbackChannel(ReconcileCorpus.channel))
        )
        #expect(try await warning(store) != nil)
        try await aggregate(store, .range(from: later.day, to: later.day))
        #expect(try await warning(store)?.contains("ingested after") != true)
        let after = try await reconcile(store, byDate)
        #expect(after.total == corpus.expected(allOld: true), "\(after.total)")
        #expect(after.rows.map(\.key.date) == [Self.oldTime.day, Self.oldTime.day, later.day])

        // Judged so that the grace ends on the copies' day: before their hour, after it, and
        // on the forwards' day (every count from aggregate's rows and the day's postbacks
        // alike: `reconcile` checks both).
        for hours in [-1, 1, 72, 75] {
            let asOf = UTCInstant(milliseconds: Self.oldTime.milliseconds + (240 + Int64(hours)) * 3_600_000)
            let judged = try await reconcile(store, ReconcileRequest(dimensions: [.date, .adNetworkID], asOf: asOf))
            let unmatched = judged.total.copyOnly + judged.total.forwardOnly + judged.total.pending
            #expect(unmatched == corpus.expected(allOld: true).copyOnly + corpus.expected(allOld: true).forwardOnly)
            #expect((judged.total.pending == 0) == (hours > 72), "\(hours): \(judged.total)")
        }
    }

    @Test("the corpus's plan holds every class, and each class counts something")
    func plan() throws {
        let corpus = try ReconcileCorpus()
        #expect(Set(corpus.entries.map(\.plannedClass)) == Set(ReconcileCorpus.Class.allCases))
        for plannedClass in ReconcileCorpus.Class.allCases {
            #expect(ReconcileCorpus.expected(plannedClass, old: true) != ReconcileCounts(), "\(plannedClass)")
        }
        // Every metric is non-zero in the whole corpus: no count goes untested.
        let expected = corpus.expected()
        for metric in ReconcileCounts.metrics {
            #expect(expected[keyPath: metric.value] > 0, "\(metric.name)")
        }
    }

    @Test("options: a grace that is not a number, an unknown dimension, a time that is not one; the defaults")
    func options() throws {
        func parse(_ change: (inout ReportRequest.Options) -> Void) throws(ReportRequestError) -> ReconcileRequest {
            var options = ReportRequest.Options()
            change(&options)
            return try ReconcileRequest.parse(options, now: Self.asOf)
        }
        let defaults = try parse { _ in }
        #expect(defaults.dimensions == [.date, .adNetworkID])
        #expect(defaults.graceDays == 10 && defaults.asOf == Self.asOf)
        #expect(defaults.cutoff == UTCInstant(iso8601: "2026-11-15T00:00:00Z"))
        #expect(try parse { $0.by = "" }.dimensions.isEmpty)
        let refusals: [(String, (inout ReportRequest.Options) -> Void)] = [
            ("grace-days", { $0.graceDays = "ten" }),
            ("grace-days", { $0.graceDays = "-1" }),
            ("by", { $0.by = "date,country_code" }),
            ("by", { $0.by = "date,date" }),
            ("as-of", { $0.asOf = "yesterday" }),
            ("from", { $0.from = "2026-13-01" }),
            ("app-id", { $0.appIDs = ["x"] }),
        ]
        for (option, change) in refusals {
            #expect(throws: ReportRequestError.self) { try parse(change) }
            do {
                _ = try parse(change)
            } catch {
                #expect(error.option == option)
            }
        }
    }
}
