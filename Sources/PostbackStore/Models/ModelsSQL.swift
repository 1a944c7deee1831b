import PostbackKit

/// Reading the models' timelines, on both engines: `models list|show`, `serve`'s reloads,
/// export, forward, and aggregate (inside each engine's own transaction).
enum ModelsSQL {
    /// Every model of every app's timelines with its bundle identifier: by app, conversion type
    /// and effective time (from the beginning first).
    static let timeline: SQLQuery = """
        SELECT \(SQLQuery.jsonText("m.model")), m.model_sha256, m.source, \(SQLQuery.instantText("m.added_at")), b.bundle_id,
            \(SQLQuery.instantText("m.effective_from")), m.conversion_type
        FROM conversion_models m LEFT JOIN app_bundles b ON b.app_id = m.app_id
        WHERE m.replaced_at IS NULL
        ORDER BY m.app_id, m.conversion_type, m.effective_from\(sqlite: "", postgres: " NULLS FIRST"), m.id
        """

    static func stored(_ row: SQLRow) throws -> StoredModel {
        StoredModel(
            model: try ConversionModelParser.parse(Array(try row.string(0).utf8)),
            sha256: try row.string(1),
            source: try row.string(2),
            addedAt: try row.string(3),
            bundleID: try row.optionalString(4),
            effectiveFrom: try row.optionalInstant(5),
            conversionType: ModelConversionType(rawValue: try row.string(6)) ?? .install
        )
    }
}

extension [StoredModel] {
    /// The timelines, to decode with.
    package var timelines: ConversionModels { ConversionModels(timeline: map(\.timelineModel)) }

    /// Each app's model of `type` in force at `instant`, with its bundle identifier.
    package func inForce(at instant: UTCInstant, _ type: ModelConversionType = .install) -> [StoredModel] {
        var byApp: [Int64: [StoredModel]] = [:]
        for stored in self where stored.conversionType == type { byApp[stored.model.appID, default: []].append(stored) }
        return byApp.keys.sorted().compactMap { app in
            guard let entries = byApp[app] else { return nil }
            // In effective order (the timeline's); the first is in force from the beginning.
            let sorted = entries.sorted {
                ($0.effectiveFrom?.milliseconds ?? .min) < ($1.effectiveFrom?.milliseconds ?? .min)
            }
            return sorted.last { ($0.effectiveFrom?.milliseconds ?? .min) <= instant.milliseconds } ?? sorted.first
        }
    }
}

extension PostbackStorage {
    /// Adds each model to its app's timeline of `conversionType`, in force from
    /// `effectiveFrom` (nil: from now, or from the beginning for the app's first model). A
    /// model of the timeline in force from the same time is replaced (kept, out of the
    /// timeline).
    package func addModels(
        _ models: [(model: ConversionModel, source: String)],
        bundleIDs: [Int64: String],
        effectiveFrom: ModelEffectiveTime? = nil,
        conversionType: ModelConversionType = .install
    ) async throws -> [ModelAddResult] {
        let now = UTCInstant.now()
        return try await withSQL("store the models", .write) { sql in
            // Two `models add` at once would both find no model for an app.
            try await sql.lock(PostgresSchema.modelsLock)
            for (appID, bundleID) in bundleIDs.sorted(by: { $0.key < $1.key }) {
                if let other = try await sql.row(
                    "SELECT app_id FROM app_bundles WHERE bundle_id = \(bundleID) AND app_id <> \(appID)"
                ) {
                    throw BundleIDConflict(bundleID: bundleID, appID: appID, otherAppID: try other.int64(0))
                }
                try await sql.execute(
                    """
                    INSERT INTO app_bundles (app_id, bundle_id, added_at) VALUES (\(appID), \(bundleID), \(now))
                    ON CONFLICT (app_id) DO UPDATE SET bundle_id = excluded.bundle_id, added_at = excluded.added_at
                    WHERE app_bundles.bundle_id <> excluded.bundle_id
                    """
                )
            }
            var results: [ModelAddResult] = []
            for (model, source) in models {
                let sha = SHA256Digest(hashing: Array(model.json.utf8)).description
                // The app's timeline of this type: (row id, effective time, digest), in order.
                let timeline = try await sql.rows(
                    """
                    SELECT id, \(SQLQuery.instantText("effective_from")), model_sha256 FROM conversion_models
                    WHERE app_id = \(model.appID) AND conversion_type = \(conversionType.rawValue) AND replaced_at IS NULL
                    """
                ).map { (id: try $0.int64(0), from: try $0.optionalInstant(1), sha: try $0.string(2)) }
                    .sorted { ($0.from?.milliseconds ?? .min, $0.id) < ($1.from?.milliseconds ?? .min, $1.id) }
                // nil: from the beginning.
                let from: UTCInstant?
                switch effectiveFrom {
                case nil: from = timeline.isEmpty ? nil : now
                case .beginning: from = nil
                case .at(let instant): from = instant
                }
                if effectiveFrom == nil, let newest = timeline.last, newest.sha == sha {
                    results.append(
                        ModelAddResult(outcome: .unchanged, effectiveFrom: newest.from, conversionType: conversionType)
                    )
                    continue
                }
                let same = timeline.first { $0.from == from }
                // In force there already (the entry it would follow, or the one it would replace).
                let start = from?.milliseconds ?? .min
                let inForce = same ?? timeline.last { ($0.from?.milliseconds ?? .min) <= start } ?? timeline.first
                if let inForce, inForce.sha == sha {
                    results.append(
                        ModelAddResult(outcome: .unchanged, effectiveFrom: from, conversionType: conversionType)
                    )
                    continue
                }
                if let same {
                    try await sql.execute("UPDATE conversion_models SET replaced_at = \(now) WHERE id = \(same.id)")
                }
                let outcome: ModelAddOutcome = timeline.isEmpty ? .added : same == nil ? .scheduled : .replaced
                // The first model, or one before every other, is in force from the beginning.
                let first = timeline.allSatisfy { $0.id == same?.id || ($0.from?.milliseconds ?? .min) > start }
                let next = timeline.first { ($0.from?.milliseconds ?? .min) > start }?.from
                try await sql.execute(
                    """
                    INSERT INTO conversion_models (app_id, model, model_sha256, source, added_at, effective_from, conversion_type)
                    VALUES (\(model.appID), \(model.json)\(sqlite: "", postgres: "::json"), \(sha), \(source), \(now),
                        \(from), \(conversionType.rawValue))
                    """
                )
                results.append(
                    first
                        ? ModelAddResult(
                            outcome: outcome,
                            effectiveFrom: from,
                            conversionType: conversionType,
                            everyDay: next == nil,
                            to: next.map { Self.reachEnd(from: nil, next: $0) }
                        )
                        : Self.reach(outcome: outcome, from: from ?? now, next: next, conversionType: conversionType)
                )
            }
            return results
        }
    }

    /// The days received a model in force from `from` until `next` changes: the postbacks
    /// it decodes (set from `from`, received 24 hours after at the earliest, until 24 hours
    /// after `next`), and those whose span now holds a change at `from` (received up to 816
    /// hours after it).
    private static func reach(
        outcome: ModelAddOutcome,
        from: UTCInstant,
        next: UTCInstant?,
        conversionType: ModelConversionType
    ) -> ModelAddResult {
        ModelAddResult(
            outcome: outcome,
            effectiveFrom: from,
            conversionType: conversionType,
            from: UTCInstant(milliseconds: from.milliseconds + ConversionModels.latestDelay).day,
            to: next.map { reachEnd(from: from, next: $0) }
        )
    }

    /// The last day received a model in force from `from` (nil: the beginning) until `next`
    /// reaches: the last it decodes or whose span holds its start, and then the six days after,
    /// whose nulls may be modeled from that day's postbacks (``NullModel``, a week wide).
    private static func reachEnd(from: UTCInstant?, next: UTCInstant) -> UTCDay {
        let decodes = next.milliseconds + ConversionModels.latestDelay
        let spans = from.map { $0.milliseconds + ConversionModels.longestSpanOfAll } ?? .min
        let last = UTCInstant(milliseconds: max(decodes, spans) - 1).day
        return UTCDay(daysSinceEpoch: last.daysSinceEpoch + Int64(NullModel.weekDays - 1))
    }

    /// Every app's timelines.
    package func models() async throws -> [StoredModel] {
        try await withSQL("read the models", .statement, retry: .repeated) { sql in
            try await sql.rows(ModelsSQL.timeline).map(ModelsSQL.stored)
        }
    }
}
