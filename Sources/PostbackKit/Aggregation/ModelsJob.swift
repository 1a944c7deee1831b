#if canImport(Glibc)
import Glibc
#endif

/// `postbackd models`: add, list and show conversion models in the database.
public enum ModelsJob {
    /// One model read from a file, and what adding it did.
    public struct Added: Sendable {
        public var file: String
        public var model: ConversionModel
        public var outcome: ModelAddOutcome
    }

    /// Reads the models in one file (for `verify --model`).
    public static func read(file: String) throws(ModelFilesError) -> [ConversionModel] {
        guard let bytes = readWholeFile(file) else {
            throw ModelFilesError(problems: ["\(file): cannot read the file"])
        }
        do {
            return try ConversionModelParser.parseAll(bytes)
        } catch {
            throw ModelFilesError(problems: error.problems.map { "\(file): \($0)" })
        }
    }

    /// Reads every file (one model, an API-wrapped model, or an array of them), validates all
    /// of them, and stores them only if every one is valid.
    ///
    /// - Throws: ``ModelFilesError`` naming each file and JSON path at fault (nothing is
    ///   stored then); ``DatabaseOpenError``.
    public static func add(files: [String], databasePath: String) throws -> [Added] {
        var read: [(model: ConversionModel, source: String)] = []
        var problems: [String] = []
        for file in files {
            guard let bytes = readWholeFile(file) else {
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
        let store = ModelStore(queue: try PostbackDatabase.open(databasePath))
        let outcomes = try store.add(read)
        return zip(read, outcomes).map { Added(file: $0.source, model: $0.model, outcome: $1.outcome) }
    }

    /// The current models.
    public static func list(databasePath: String) throws -> [StoredModel] {
        try ModelStore(queue: PostbackDatabase.open(databasePath)).current()
    }

    /// The current model of an app.
    public static func show(appID: Int64, databasePath: String) throws -> StoredModel? {
        try ModelStore(queue: PostbackDatabase.open(databasePath)).current(appID: appID)
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

/// Model files that cannot be added: every problem, each naming its file and JSON path.
public struct ModelFilesError: Error, CustomStringConvertible {
    public var problems: [String]
    public var description: String { problems.joined(separator: "\n") }
}

/// The bytes of a file (models are small; postbacks are never read this way).
func readWholeFile(_ path: String) -> [UInt8]? {
    guard let file = fopen(path, "rb") else { return nil }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65_536)
    while true {
        let count = fread(&chunk, 1, chunk.count, file)
        if count > 0 { bytes += chunk.prefix(count) }
        if count < chunk.count { break }
        if bytes.count > 16 << 20 { return nil }  // no model is 16 MiB
    }
    return bytes
}
