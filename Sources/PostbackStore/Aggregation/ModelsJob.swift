import PostbackKit

/// `postbackd models`: add, list and show conversion models in the database.
public enum ModelsJob {
    /// One model read from a file, and what adding it did.
    public struct Added: Sendable {
        public var file: String
        public var model: ConversionModel
        public var outcome: ModelAddOutcome
    }

    /// Reads every file (one model, an API-wrapped model, or an array of them), validates all
    /// of them, and stores them only if every one is valid.
    ///
    /// - Throws: ``ModelFilesError`` naming each file and JSON path at fault (nothing is
    ///   stored then); ``DatabaseOpenError``.
    public static func add(files: [String], location: StoreLocation) async throws -> [Added] {
        var read: [(model: ConversionModel, source: String)] = []
        var problems: [String] = []
        for file in files {
            guard let bytes = ConversionModelFile.readWholeFile(file) else {
                problems.append("\(file): cannot read the file")
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
        if !problems.isEmpty { throw ModelFilesError(problems: problems) }
        let outcomes = try await PostbackStores.with(location) { store in try await store.addModels(read) }
        return zip(read, outcomes).map { Added(file: $0.source, model: $0.model, outcome: $1) }
    }

    /// The current models.
    public static func list(location: StoreLocation) async throws -> [StoredModel] {
        try await PostbackStores.with(location) { store in try await store.currentModels() }
    }

    /// The current model of an app.
    public static func show(appID: Int64, location: StoreLocation) async throws -> StoredModel? {
        try await list(location: location).first { $0.model.appID == appID }
    }

    /// A one-line description of a model: what it maps.
    public static func describe(_ model: ConversionModel) -> String {
        let fine = model.fineValues.count
        let windows = model.coarseValues.keys.sorted().map(String.init).joined(separator: ",")
        let events = model.eventNames.sorted().joined(separator: ", ")
        let currencies = model.currencies.sorted().joined(separator: ", ")
        return
            "\(fine) fine value\(fine == 1 ? "" : "s"), coarse for postback\(model.coarseValues.count == 1 ? "" : "s") \(windows.isEmpty ? "none" : windows); events: \(events.isEmpty ? "none" : events); revenue in \(currencies.isEmpty ? "none" : currencies)"
    }
}

