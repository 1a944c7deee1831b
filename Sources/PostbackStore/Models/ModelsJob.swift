import PostbackKit

/// `postbackd models`: add, list and show the apps' model timelines in the database.
package enum ModelsJob {
    /// One model read from a file, and what adding it did.
    package struct Added: Sendable {
        package var file: String
        package var model: ConversionModel
        package var result: ModelAddResult
        package var outcome: ModelAddOutcome { result.outcome }
    }

    /// Reads every file (one model, an API-wrapped model, or an array of them), validates all
    /// of them, and stores them only if every one is valid.
    ///
    /// With `bundleID`, the files must hold one model, and the bundle identifier is recorded for
    /// its app (the app-facing conversion value endpoint finds the app by it). Each model joins
    /// its app's timeline of `conversionType`, in force from `effectiveFrom` (nil: from now, or
    /// from the beginning for the app's first model of that type).
    ///
    /// - Throws: ``FileProblemsError`` naming each file and JSON path at fault (nothing is
    ///   stored then); ``BundleIDConflict``; ``DatabaseOpenError``.
    package static func add(
        files: [String],
        bundleID: String? = nil,
        effectiveFrom: ModelEffectiveTime? = nil,
        conversionType: ModelConversionType = .install,
        location: StoreLocation
    ) async throws -> [Added] {
        var read: [(model: ConversionModel, source: String)] = []
        var problems: [String] = []
        for file in files {
            let bytes: [UInt8]
            do {
                bytes = try ConversionModelFile.readWholeFile(file)
            } catch {
                problems.append(error.reason)
                continue
            }
            do {
                for model in try ConversionModelParser.parseAll(bytes) {
                    read.append((model, canonicalPath(file)))
                }
            } catch {
                problems += error.problems.map { "\(file): \($0)" }
            }
        }
        var seen: [Int64: String] = [:]
        for entry in read {
            if let other = seen[entry.model.appID] {
                problems.append(
                    "\(entry.source): a second model for app \(entry.model.appID) (the first is in \(other))"
                )
            }
            seen[entry.model.appID] = entry.source
        }
        var bundleIDs: [Int64: String] = [:]
        if let bundleID {
            if let problem = Self.bundleIDProblem(bundleID) {
                problems.append("--bundle-id \(bundleID): \(problem)")
            } else if read.count == 1, let only = read.first {
                bundleIDs[only.model.appID] = bundleID
            } else if problems.isEmpty {
                problems.append(
                    "--bundle-id names one app, and the files hold \(read.count) models: add that app's model alone"
                )
            }
        }
        if !problems.isEmpty { throw FileProblemsError(.invalid, problems: problems) }
        let outcomes = try await PostbackStores.with(location) { store in
            let outcomes = try await store.addModels(
                read,
                bundleIDs: bundleIDs,
                effectiveFrom: effectiveFrom,
                conversionType: conversionType
            )
            // The app the encode routes know by its bundle identifier is one of the network's:
            // registered (``AppsPolicy``), unless it is. Run again, `models add` registers it.
            for (appID, bundleID) in bundleIDs.sorted(by: { $0.key < $1.key }) {
                try await store.registerApp(appID, bundleID: bundleID)
            }
            return outcomes
        }
        return zip(read, outcomes).map { Added(file: $0.source, model: $0.model, result: $1) }
    }

    /// `models` (``list(location:)``'s order) with whether each is its timeline's first, in force
    /// from the beginning.
    package static func timelines(_ models: [StoredModel]) -> [(StoredModel, first: Bool)] {
        var previous: (Int64, ModelConversionType)?
        return models.map { stored in
            defer { previous = (stored.model.appID, stored.conversionType) }
            return (stored, previous.map { $0 != stored.model.appID || $1 != stored.conversionType } ?? true)
        }
    }

    /// Every app's timelines: by app, conversion type and effective time.
    package static func list(location: StoreLocation) async throws -> [StoredModel] {
        try await PostbackStores.with(location, access: .readOnly) { store in try await store.models() }
    }

    /// An app's model of `conversionType` in force at `instant`, by its App Store id or its
    /// bundle identifier.
    package static func show(
        app: String,
        at instant: UTCInstant = .now(),
        conversionType: ModelConversionType = .install,
        location: StoreLocation
    ) async throws -> StoredModel? {
        try await list(location: location).filter { $0.matches(app) }.inForce(at: instant, conversionType).first
    }

    /// When a model added at `result` is in force, and the days received it changes, for people:
    /// `in force from the beginning (every day received)`, `in force from 2026-03-01T00:00:00.000Z:
    /// changes the days received from 2026-03-02 on (postbackd aggregate --from 2026-03-02)`.
    package static func reach(_ result: ModelAddResult) -> String? {
        switch result.outcome {
        case .unchanged: return nil
        case .added, .scheduled, .replaced:
            if result.everyDay { return "in force from the beginning: changes every day received" }
            if result.from == nil, let last = result.to {
                return
                    "in force from the beginning: changes the days received up to \(last) (re-run postbackd aggregate --to \(last))"
            }
            guard let from = result.effectiveFrom, let first = result.from else { return nil }
            let days =
                result.to.map { "the days received \(first) to \($0)" } ?? "the days received from \(first) on"
            guard first <= UTCInstant.now().day else { return "in force from \(from.iso8601): decodes \(days)" }
            let rerun =
                "--from \(first) --to \(result.to.map { min($0, UTCInstant.now().day) } ?? UTCInstant.now().day)"
            return "in force from \(from.iso8601): changes \(days) (re-run postbackd aggregate \(rerun))"
        }
    }

    /// Why `text` cannot be a bundle identifier (letters, digits, `-` and `.`, at most 155
    /// characters, as App Store Connect allows), or nil.
    static func bundleIDProblem(_ text: String) -> String? {
        if text.isEmpty || text.utf8.count > 155 { return "a bundle identifier has 1 to 155 characters" }
        let allowed = text.utf8.allSatisfy { byte in
            (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "-")
                || byte == UInt8(ascii: ".")
        }
        return allowed ? nil : "a bundle identifier has only letters, digits, hyphens and periods (com.example.app)"
    }

    /// A one-line description of a model: what it maps.
    package static func describe(_ model: ConversionModel) -> String {
        let fine = model.fineValues.count
        let windows = model.coarseValues.keys.sorted().map(String.init).joined(separator: ",")
        let events = model.eventNames.sorted().joined(separator: ", ")
        let currencies = model.currencies.sorted().joined(separator: ", ")
        return
            "\(fine) fine value\(fine == 1 ? "" : "s"), coarse for postback\(model.coarseValues.count == 1 ? "" : "s") \(windows.isEmpty ? "none" : windows); events: \(events.isEmpty ? "none" : events); revenue in \(currencies.isEmpty ? "none" : currencies)"
    }
}
