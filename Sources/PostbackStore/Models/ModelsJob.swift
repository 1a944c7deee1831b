import PostbackKit

/// `postbackd models`: add, list and show conversion models in the database.
package enum ModelsJob {
    /// One model read from a file, and what adding it did.
    package struct Added: Sendable {
        package var file: String
        package var model: ConversionModel
        package var outcome: ModelAddOutcome
    }

    /// Reads every file (one model, an API-wrapped model, or an array of them), validates all
    /// of them, and stores them only if every one is valid.
    ///
    /// With `bundleID`, the files must hold one model, and the bundle identifier is recorded for
    /// its app (the app-facing conversion value endpoint finds the app by it).
    ///
    /// - Throws: ``ModelFilesError`` naming each file and JSON path at fault (nothing is
    ///   stored then); ``BundleIDConflict``; ``DatabaseOpenError``.
    package static func add(files: [String], bundleID: String? = nil, location: StoreLocation) async throws -> [Added] {
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
        if !problems.isEmpty { throw ModelFilesError(.invalid, problems: problems) }
        let outcomes = try await PostbackStores.with(location) { store in
            try await store.addModels(read, bundleIDs: bundleIDs)
        }
        return zip(read, outcomes).map { Added(file: $0.source, model: $0.model, outcome: $1) }
    }

    /// The current models.
    package static func list(location: StoreLocation) async throws -> [StoredModel] {
        try await PostbackStores.with(location, access: .readOnly) { store in try await store.currentModels() }
    }

    /// The current model of an app, by its App Store id or its bundle identifier.
    package static func show(app: String, location: StoreLocation) async throws -> StoredModel? {
        try await list(location: location).first { $0.matches(app) }
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
