import PostbackKit

/// One thing `doctor --db` found wrong with what the store receives: what it is about, what is
/// wrong (with the counts, dates and rates that show it) and what to do.
package struct StoreFinding: Sendable, Equatable {
    /// `app 1234567890`, `network cstr6suwn9.skadnetwork, app 1234567890`, `model FILE (app
    /// 1234567890, install)`.
    package var subject: String
    package var problem: String
    package var fix: String

    package init(subject: String, problem: String, fix: String) {
        self.subject = subject
        self.problem = problem
        self.fix = fix
    }
}

/// `doctor --db`'s checks of what a store receives: the signs, in the stored postbacks, of an
/// app or network whose postbacks go astray. Each reads the postbacks received within a few
/// days before `now`, through `postbacks`' index on the day received (never the whole table),
/// and counts production postbacks only (test-mode and development-key postbacks are someone
/// testing, not traffic) of the claimed apps (``AppsPolicy``). docs/doctor-db.md says why each
/// threshold is what it is.
///
/// - ``Check/attributionCopies``: an app with at least ``Thresholds/copiesMinimum``
///   SKAdNetwork postbacks received in the ``Thresholds/copiesDays`` before `now` and no
///   AdAttributionKit postback in those days: iOS 17.4 and later send an AdAttributionKit copy
///   too, to the advertiser whose Info.plist names its domain under `AttributionCopyEndpoint`.
/// - ``Check/stoppedApps``: an app with no postback received in the ``Thresholds/quietDays``
///   before `now`, after a steady week: a postback in each of the ``Thresholds/steadyDays``
///   24-hour days before that, and at least ``Thresholds/steadyMinimum`` in all.
/// - ``Check/nullRates``: an ad network's first postbacks (sequence index 0, winning) of an
///   app whose share without a conversion value (neither fine nor coarse) rose, from the
///   ``Thresholds/baselineDays`` before the ``Thresholds/recentDays`` before `now` to those
///   recent days, by at least ``Thresholds/jumpPoints`` percentage points and to at least
///   ``Thresholds/jumpFactor`` times, with at least ``Thresholds/recentMinimum`` and
///   ``Thresholds/baselineMinimum`` postbacks.
/// - ``Check/unmatchedModels``: a model in force now that has decoded every postback of its
///   app and conversion type received in the ``Thresholds/modelDays`` before `now`, and mapped
///   the value of none (``unmatchedModels(_:now:thresholds:)``).
///
/// Every window is of `received_at`, `[now − days × 24 h, now)`: a postback received at
/// `now` or later is in none.
package enum StoreDoctor {
    /// One of the checks.
    package enum Check: String, Sendable, Hashable, CaseIterable {
        case attributionCopies = "attribution-copies"
        case stoppedApps = "stopped-apps"
        case nullRates = "null-rates"
        case unmatchedModels = "unmatched-models"
    }

    /// The windows and the least counts of the checks (docs/doctor-db.md says why each is what
    /// it is).
    package struct Thresholds: Sendable, Equatable {
        /// The days of SKAdNetwork postbacks whose AdAttributionKit copies are looked for.
        package var copiesDays = 14
        /// The fewest SKAdNetwork postbacks in those days for an app to be judged.
        package var copiesMinimum = 50
        /// The days without a postback that make an app stopped.
        package var quietDays = 2
        /// The days before the quiet ones that must each hold a postback.
        package var steadyDays = 7
        /// The fewest postbacks in those days.
        package var steadyMinimum = 28
        /// The recent days whose null rate is compared.
        package var recentDays = 3
        /// The days before those whose null rate it is compared with.
        package var baselineDays = 14
        /// The fewest postbacks in the recent days, and in the days before.
        package var recentMinimum = 50
        package var baselineMinimum = 100
        /// The least rise of the null rate, in percentage points, and as a factor.
        package var jumpPoints = 20
        package var jumpFactor = 2
        /// The days of postbacks a model in force must have decoded, of which it mapped none.
        package var modelDays = 7

        package init() {}
    }

    static let day: Int64 = 86_400_000

    /// Opens the store at `location` read-only and runs `checks` on it.
    ///
    /// - Throws: ``StoreFault`` when the store cannot be opened or read.
    package static func run(
        _ location: StoreLocation,
        now: UTCInstant,
        checks: [Check] = Check.allCases,
        thresholds: Thresholds = Thresholds()
    ) async throws -> [StoreFinding] {
        try await PostbackStores.with(location, access: .readOnly) { store in
            try await findings(store, now: now, checks: checks, thresholds: thresholds)
        }
    }

    /// The findings of `checks` on `store` as of `now` (`UTCInstant.now()` but in tests), check
    /// by check in ``Check``'s order, each's by subject.
    package static func findings(
        _ store: any PostbackStorage,
        now: UTCInstant,
        checks: [Check] = Check.allCases,
        thresholds: Thresholds = Thresholds()
    ) async throws -> [StoreFinding] {
        var findings: [StoreFinding] = []
        for check in Check.allCases where checks.contains(check) {
            switch check {
            case .attributionCopies: findings += try await attributionCopies(store, now: now, thresholds: thresholds)
            case .stoppedApps: findings += try await stoppedApps(store, now: now, thresholds: thresholds)
            case .nullRates: findings += try await nullRates(store, now: now, thresholds: thresholds)
            case .unmatchedModels: findings += try await unmatchedModels(store, now: now, thresholds: thresholds)
            }
        }
        return findings
    }

    // MARK: - AdAttributionKit copies

    static func attributionCopies(
        _ store: any PostbackStorage,
        now: UTCInstant,
        thresholds: Thresholds
    ) async throws -> [StoreFinding] {
        let from = now.minus(days: thresholds.copiesDays)
        let apps = try await store.withSQL("find the apps without AdAttributionKit copies", .statement) { sql in
            try await sql.rows(StoreDoctorSQL.withoutCopies(from: from, to: now, minimum: thresholds.copiesMinimum))
                .map { (app: try $0.int64(0), skan: try $0.int64(1)) }
        }
        return apps.map { app, skan in
            StoreFinding(
                subject: "app \(app)",
                problem:
                    "\(skan) SKAdNetwork postbacks received in the \(thresholds.copiesDays) days \(span(from, now)), and no AdAttributionKit copy: devices on iOS 17.4 and later send both to an advertiser whose Info.plist names an AdAttributionKit endpoint",
                fix:
                    "add AttributionCopyEndpoint, with this server's https://domain (the one under NSAdvertisingAttributionReportEndpoint), at the top level of the app's Info.plist (not inside a dictionary), and check the built plist with `postbackd doctor --plist`"
            )
        }
    }

    // MARK: - Apps that stopped

    static func stoppedApps(
        _ store: any PostbackStorage,
        now: UTCInstant,
        thresholds: Thresholds
    ) async throws -> [StoreFinding] {
        let quiet = now.minus(days: thresholds.quietDays)
        // The steady days' starts, oldest first: day i is [starts[i], starts[i] + 24 h).
        let starts = (0..<thresholds.steadyDays).reversed().map { quiet.minus(days: $0 + 1) }
        guard let first = starts.first else { return [] }
        let rows = try await store.withSQL("find the apps that stopped", .statement) { sql in
            try await sql.rows(
                StoreDoctorSQL.stopped(days: starts, quiet: quiet, to: now, minimum: thresholds.steadyMinimum)
            ).map { row in
                (
                    app: try row.int64(0), last: try row.optionalInstant(1),
                    days: try starts.indices.map { try row.int64(2 + $0) }
                )
            }
        }
        return rows.compactMap { app, last, days in
            guard days.allSatisfy({ $0 > 0 }), let last, let fewest = days.min(), let most = days.max() else {
                return nil
            }
            return StoreFinding(
                subject: "app \(app)",
                problem:
                    "no postback received in the \(thresholds.quietDays) days \(span(quiet, now)) (the last at \(minute(last))), after \(days.reduce(0, +)) in the \(thresholds.steadyDays) days \(span(first, quiet)), \(fewest == most ? "\(fewest)" : "\(fewest) to \(most)") a day",
                fix:
                    "find where this app's postbacks stopped: the app's current release still names this server's https://domain under NSAdvertisingAttributionReportEndpoint and AttributionCopyEndpoint in its Info.plist (`postbackd doctor --plist`), the domain's /.well-known/skadnetwork/report-attribution/ and /.well-known/appattribution/report-attribution/ reach `postbackd serve` (`postbackd doctor --endpoint`), and whatever forwards or ingests postbacks for it still runs"
            )
        }
    }

    // MARK: - Null rates

    static func nullRates(
        _ store: any PostbackStorage,
        now: UTCInstant,
        thresholds: Thresholds
    ) async throws -> [StoreFinding] {
        let recent = now.minus(days: thresholds.recentDays)
        let baseline = recent.minus(days: thresholds.baselineDays)
        let rows = try await store.withSQL("compare the null rates", .statement) { sql in
            try await sql.rows(
                StoreDoctorSQL.nullRates(
                    from: baseline,
                    recent: recent,
                    to: now,
                    minimum: (thresholds.recentMinimum, thresholds.baselineMinimum)
                )
            ).map { row in
                NullRates(
                    network: try row.string(0),
                    app: try row.int64(1),
                    recent: try row.int64(2),
                    recentNulls: try row.int64(3),
                    baseline: try row.int64(4),
                    baselineNulls: try row.int64(5)
                )
            }
        }
        return rows.sorted {
            $0.network != $1.network ? $0.network.utf8.lexicographicallyPrecedes($1.network.utf8) : $0.app < $1.app
        }
        .filter { $0.jumped(points: thresholds.jumpPoints, factor: thresholds.jumpFactor) }
        .map { rates in
            StoreFinding(
                subject: "network \(rates.network), app \(rates.app)",
                problem:
                    "\(rates.recentNulls) of \(rates.recent) first postbacks (\(percent(rates.recentNulls, rates.recent))) received in the \(thresholds.recentDays) days \(span(recent, now)) carry no conversion value, against \(rates.baselineNulls) of \(rates.baseline) (\(percent(rates.baselineNulls, rates.baseline))) in the \(thresholds.baselineDays) days \(span(baseline, recent)): \(rates.rise)",
                fix:
                    "Apple withholds a value below its privacy thresholds: ask the network whether its campaigns for this app changed (split into more source identifiers or smaller ones reach the thresholds less often); if other networks' rates rose too, check that the app's latest release still sets conversion values. `postbackd report --by date,ad_network_id --app-id \(rates.app)` shows null_rate by day"
            )
        }
    }

    /// One network's first postbacks of one app, recent and before, with and without a value.
    package struct NullRates {
        var network: String
        var app: Int64
        var recent: Int64
        var recentNulls: Int64
        var baseline: Int64
        var baselineNulls: Int64

        /// Whether the recent rate is at least `points` percentage points above the baseline's
        /// and at least `factor` times it, compared exactly (in integers wide enough for any
        /// count's products).
        package func jumped(points: Int, factor: Int) -> Bool {
            guard recent > 0, baseline > 0 else { return false }
            let (recent, recentNulls, baseline, baselineNulls) =
                (Int128(recent), Int128(recentNulls), Int128(baseline), Int128(baselineNulls))
            // recentNulls / recent − baselineNulls / baseline ≥ points / 100
            let rise = 100 * (recentNulls * baseline - baselineNulls * recent) >= Int128(points) * recent * baseline
            // recentNulls / recent ≥ factor × baselineNulls / baseline
            let times = recentNulls * baseline >= Int128(factor) * baselineNulls * recent
            return rise && times
        }

        /// `up 20.0 points, 2.0 times`: the rise, to one decimal.
        package var rise: String {
            let (recent, recentNulls, baseline, baselineNulls) =
                (Int128(recent), Int128(recentNulls), Int128(baseline), Int128(baselineNulls))
            let points = tenths(1000 * (recentNulls * baseline - baselineNulls * recent), recent * baseline)
            guard baselineNulls > 0 else { return "up \(points) points, from none" }
            return "up \(points) points, \(tenths(10 * recentNulls * baseline, baselineNulls * recent)) times"
        }
    }

    // MARK: - Models no postback matched

    /// A model in force at `now` (the one `models show` names: the last of its app's timeline of
    /// its conversion type in force from `now` or before, or the first) whose values none of
    /// the postbacks it decoded in the ``Thresholds/modelDays`` before `now` carried.
    ///
    /// A postback received at r is decoded by the model in force at r − 24 h
    /// (``ConversionModels``). The model is judged once it has decoded every postback of its
    /// app and conversion type received in those days: it is in force from the beginning (the
    /// first of its timeline), or from ``Thresholds/modelDays`` + 1 days before `now` or
    /// earlier. It *matched* a postback when it maps the postback's value (fine, or coarse of
    /// its sequence index): a postback without a value, or with one it does not map, is no
    /// match. Only production postbacks count.
    static func unmatchedModels(
        _ store: any PostbackStorage,
        now: UTCInstant,
        thresholds: Thresholds
    ) async throws -> [StoreFinding] {
        let from = now.minus(days: thresholds.modelDays)
        // The latest a model may start and have decoded every postback received from `from` on.
        let latestStart = from.milliseconds - ConversionModels.latestDelay
        var judged: [(stored: StoredModel, start: UTCInstant?)] = []
        let models = try await store.models()
        for type in ModelConversionType.allCases {
            var timelines: [Int64: [StoredModel]] = [:]
            for stored in models where stored.conversionType == type {
                timelines[stored.model.appID, default: []].append(stored)
            }
            for app in timelines.keys.sorted() {
                // In effective order, as ``ConversionModels/Timeline`` sorts them.
                let timeline = (timelines[app] ?? []).enumerated().sorted {
                    ($0.element.effectiveFrom?.milliseconds ?? .min, $0.offset)
                        < ($1.element.effectiveFrom?.milliseconds ?? .min, $1.offset)
                }.map(\.element)
                let index =
                    timeline.lastIndex { ($0.effectiveFrom?.milliseconds ?? .min) <= now.milliseconds } ?? 0
                let start = index == 0 ? nil : timeline[index].effectiveFrom
                if let start, start.milliseconds > latestStart { continue }
                judged.append((timeline[index], start))
            }
        }
        guard !judged.isEmpty else { return [] }
        let apps = Set(judged.map { $0.stored.model.appID }).sorted()
        let groups = try await store.withSQL("decode the recent postbacks", .statement) { sql in
            try await sql.rows(StoreDoctorSQL.values(apps: apps, from: from, to: now)).map { row in
                let fine = try row.optionalInt(4)
                let coarse = try row.optionalString(5).flatMap(CoarseConversionValue.init(rawValue:))
                let kind = try row.string(1)
                let conversionType = try row.optionalString(2)
                let reengagement = kind == "aak" && conversionType == AAKConversionType.reengagement.rawValue
                return ValueGroup(
                    app: try row.int64(0),
                    type: reengagement ? .reengagement : .install,
                    sequenceIndex: try row.int(3),
                    value: fine.map { .fine($0) } ?? coarse.map { .coarse($0) },
                    count: try row.int64(6)
                )
            }
        }
        var findings: [StoreFinding] = []
        for (stored, start) in judged {
            let app = stored.model.appID
            var total: Int64 = 0
            var withoutValue: Int64 = 0
            var unmapped: [String: Int64] = [:]
            var mapped = false
            for group in groups where group.app == app && group.type == stored.conversionType {
                total += group.count
                switch stored.model.decode(group.value, sequenceIndex: group.sequenceIndex) {
                case .mapped: mapped = true
                case .null: withoutValue += group.count
                case .unmapped, .unmodelled: unmapped[group.valueText, default: 0] += group.count
                }
            }
            if mapped { continue }
            let since = start.map { "in force since \(minute($0))" } ?? "in force from the beginning"
            let postbacks = stored.conversionType == .install ? "install postbacks" : "re-engagement postbacks"
            let problem: String
            let fix: String
            if total == 0 {
                problem =
                    "\(since): no \(postbacks) of app \(app) were received in the \(thresholds.modelDays) days \(span(from, now)), so it decoded none"
                fix =
                    "if the app still has users, its postbacks no longer arrive: see the app's other findings, and `postbackd doctor --plist` and `--endpoint`"
            } else {
                let often = unmapped.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.prefix(3)
                    .map { "\($0.key) ×\($0.value)" }.joined(separator: ", ")
                let parts = [
                    unmapped.isEmpty
                        ? nil : "\(unmapped.values.reduce(0, +)) with a value it does not map (most often \(often))",
                    withoutValue == 0 ? nil : "\(withoutValue) without a value",
                ].compactMap { $0 }
                problem =
                    "\(since): none of the \(total) \(postbacks) of app \(app) received in the \(thresholds.modelDays) days \(span(from, now)) carried a value it maps: \(parts.joined(separator: ", "))"
                fix =
                    "check that the model is the app's: the values its current release sets are not this model's; add the model it uses (`postbackd models add --effective-from DATE FILE`, the release's date), re-run `postbackd aggregate` over the days it names, and decode one postback with `postbackd verify --model FILE` to compare"
            }
            findings.append(
                StoreFinding(
                    subject: "model \(stored.source) (app \(app), \(stored.conversionType.rawValue))",
                    problem: problem,
                    fix: fix
                )
            )
        }
        return findings
    }

    /// The production postbacks of one app, conversion type, sequence index and value.
    struct ValueGroup {
        var app: Int64
        var type: ModelConversionType
        var sequenceIndex: Int
        var value: ConversionValue?
        var count: Int64

        /// `fine 41`, `coarse high (postback 1)`.
        var valueText: String {
            switch value {
            case .fine(let fine)?: "fine \(fine)"
            case .coarse(let coarse)?: "coarse \(coarse.rawValue) (postback \(sequenceIndex))"
            case nil: "none"
            }
        }
    }

    // MARK: - Text

    /// `from 2026-11-13T05:21Z to 2026-11-27T05:21Z`.
    static func span(_ from: UTCInstant, _ to: UTCInstant) -> String {
        "from \(minute(from)) to \(minute(to))"
    }

    /// `2026-11-27T05:21Z`: an instant to the minute, rounded down.
    static func minute(_ instant: UTCInstant) -> String {
        String(instant.iso8601.prefix(16)) + "Z"
    }

    /// `40.0%`: `part` of `whole`, to one decimal.
    package static func percent(_ part: Int64, _ whole: Int64) -> String {
        tenths(1000 * Int128(part), Int128(whole)) + "%"
    }

    /// `numerator / denominator` tenths, to one decimal, half rounded away from zero:
    /// `tenths(405, 10)` is `4.1`.
    package static func tenths(_ numerator: Int128, _ denominator: Int128) -> String {
        guard denominator > 0 else { return "0.0" }
        let negative = numerator < 0
        let value = (abs(numerator) * 2 + denominator) / (2 * denominator)
        return "\(negative ? "-" : "")\(value / 10).\(value % 10)"
    }
}

extension UTCInstant {
    /// The instant `days` × 24 hours before.
    func minus(days: Int) -> UTCInstant {
        UTCInstant(milliseconds: milliseconds - Int64(days) * StoreDoctor.day)
    }
}

extension StoreDoctor {
    /// `doctor --db`'s section of the report: every check's findings, each under its check's
    /// name as its kind (`stopped-apps`); a store that cannot be read is the section's failure,
    /// in words that name the store and never its password (``StoreFault``).
    package static func section(_ location: StoreLocation, now: UTCInstant) async -> DoctorSection {
        var section = DoctorSection(check: "db", target: location.description)
        do {
            let found = try await PostbackStores.with(location, access: .readOnly) { store in
                var found: [DoctorFinding] = []
                for check in Check.allCases {
                    for finding in try await findings(store, now: now, checks: [check]) {
                        found.append(
                            DoctorFinding(
                                finding.subject,
                                DoctorFinding.Kind(check.rawValue),
                                problem: finding.problem,
                                fix: finding.fix
                            )
                        )
                    }
                }
                return found
            }
            section.findings = found
            section.notes.append(
                "as of \(now.iso8601), by received time: \(Check.allCases.map(\.rawValue).joined(separator: ", "))"
            )
        } catch {
            section.failure = StoreFault.classify(error, at: location).reason
        }
        return section
    }
}

extension StoreDoctor.NullRates {
    /// `network`'s rates for `app` (the tests' cases).
    package init(
        _ network: String,
        app: Int64,
        recent: Int64,
        recentNulls: Int64,
        baseline: Int64,
        baselineNulls: Int64
    ) {
        self.init(
            network: network,
            app: app,
            recent: recent,
            recentNulls: recentNulls,
            baseline: baseline,
            baselineNulls: baselineNulls
        )
    }
}
