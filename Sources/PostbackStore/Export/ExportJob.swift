import PostbackKit

#if canImport(Glibc)
import Glibc
#endif

/// `postbackd export`: every stored postback (or quarantined entry), with every stored column
/// and the postback decoded through its app's current model, as JSON Lines or CSV, for a
/// warehouse. With a consumer name, each run exports only what was stored since that
/// consumer's last complete export.
package enum ExportJob {
    package enum Format: String, Sendable, CaseIterable {
        case jsonl
        case csv
    }

    package struct Options: Sendable {
        package var table: ExportTable
        package var days: ClosedRange<UTCDay>?
        package var consumer: String?
        package var format: Format
        /// A file, written under a temporary name and renamed once complete; nil for
        /// standard output.
        package var output: String?
        package var policy: RevenueEstimatePolicy

        package init(
            table: ExportTable = .postbacks,
            days: ClosedRange<UTCDay>? = nil,
            consumer: String? = nil,
            format: Format = .jsonl,
            output: String? = nil,
            policy: RevenueEstimatePolicy = .midpoint
        ) {
            self.table = table
            self.days = days
            self.consumer = consumer
            self.format = format
            self.output = output
            self.policy = policy
        }
    }

    package struct Summary: Sendable {
        package var rows: Int
        /// Postbacks written without their raw bytes, which `prune` cleared (retention `raw`):
        /// `"raw": null, "raw_pruned": true` in JSON lines, an empty `raw` in CSV.
        package var rawPruned = 0
        /// Where the consumer's next export starts (saved only with a consumer).
        package var cursor: ExportCursor
    }

    /// Exports, then (with a consumer) moves its cursor, only once everything is written and
    /// flushed to disk: a run that fails at any point leaves the cursor where it was, and the
    /// next run exports the same rows again.
    ///
    /// - Throws: ``StoreError`` (the output cannot be written; nothing is recorded),
    ///   ``StoreError``, ``DatabaseOpenError``, store errors.
    package static func run(_ options: Options, location: StoreLocation) async throws -> Summary {
        try await PostbackStores.with(location) { store in
            let models = try await store.models().timelines
            let after =
                try await options.consumer.asyncMap { try await store.exportCursor(consumer: $0, table: options.table) }
                ?? nil
            let sink = try ExportSink(path: options.output)
            var writer = ExportWriter(options: options, models: models)
            var rows = 0
            var rawPruned = 0
            let cursor: ExportCursor
            do {
                try sink.write(writer.header())
                cursor = try await store.export(
                    ExportSelection(table: options.table, days: options.days, after: after)
                ) { row in
                    rows += 1
                    if options.table == .postbacks && row.raw.isEmpty { rawPruned += 1 }
                    try sink.write(writer.lines(row))
                }
                try sink.finish()
            } catch {
                sink.abandon()
                throw error
            }
            if let consumer = options.consumer {
                try await store.saveExportCursor(cursor, consumer: consumer, table: options.table)
            }
            return Summary(rows: rows, rawPruned: rawPruned, cursor: cursor)
        }
    }
}

extension Optional {
    fileprivate func asyncMap<Result>(_ transform: (Wrapped) async throws -> Result) async rethrows -> Result? {
        guard let self else { return nil }
        return try await transform(self)
    }
}

/// Writes a whole output at once: to a file under `NAME.partial`, synced and renamed into
/// place (a reader never sees half of it), or to standard output when there is no path.
package enum OutputFile {
    /// - Throws: ``StoreError`` naming the file and what failed.
    package static func write(_ text: String, to path: String?) throws {
        let sink = try ExportSink(path: path)
        do {
            try sink.write(text)
            try sink.finish()
        } catch {
            sink.abandon()
            throw error
        }
    }
}

/// Buffered writes that fail loudly, flushed and synced to disk at the end; a file is written
/// under `NAME.partial` and renamed when complete.
final class ExportSink {
    private let descriptor: Int32
    private let path: String?
    private let partial: String?
    private var buffer: [UInt8] = []

    init(path: String?) throws {
        self.path = path
        if let path {
            let partial = path + ".partial"
            let descriptor = open(partial, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard descriptor >= 0 else {
                throw StoreError(.cannotCreate, "\(partial): cannot write: \(String(cString: strerror(errno)))")
            }
            self.descriptor = descriptor
            self.partial = partial
        } else {
            descriptor = STDOUT_FILENO
            partial = nil
        }
        buffer.reserveCapacity(1 << 17)
    }

    func write(_ text: String) throws {
        buffer.append(contentsOf: text.utf8)
        if buffer.count >= 1 << 16 { try drain() }
    }

    private func drain() throws {
        if let failure = writeWhole(buffer, to: descriptor) {
            throw StoreError(
                .cannotWrite,
                "\(partial ?? "standard output"): cannot write: \(String(cString: strerror(failure)))"
            )
        }
        buffer.removeAll(keepingCapacity: true)
    }

    /// Writes what is buffered and syncs it to disk (a pipe or terminal cannot be synced, and
    /// need not be); renames a file into place.
    func finish() throws {
        try drain()
        if fsync(descriptor) != 0 && errno != EINVAL && errno != EROFS && errno != ENOTSUP {
            throw StoreError(
                .cannotFlush,
                "\(partial ?? "standard output"): cannot flush to disk: \(String(cString: strerror(errno)))"
            )
        }
        if let partial, let path {
            close(descriptor)
            guard rename(partial, path) == 0 else {
                throw StoreError(
                    .cannotRename,
                    "cannot rename \(partial) to \(path): \(String(cString: strerror(errno)))"
                )
            }
            // The rename itself, durable.
            let folder =
                (path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/"))
            let directory = open(folder.isEmpty ? "." : folder, O_RDONLY | O_CLOEXEC)
            if directory >= 0 {
                _ = fsync(directory)
                close(directory)
            }
        }
    }

    /// Removes the partial file after a failure.
    func abandon() {
        if let partial {
            close(descriptor)
            unlink(partial)
        }
    }
}

/// Export rows as JSON Lines or CSV lines.
package struct ExportWriter: Sendable {
    let options: ExportJob.Options
    let models: ConversionModels
    let columns: [ExportColumn]
    private let index: [String: Int]

    package init(options: ExportJob.Options, models: ConversionModels) {
        self.options = options
        self.models = models
        columns = options.table.columns
        var index: [String: Int] = [:]
        for (position, column) in columns.enumerated() { index[column.name] = position }
        self.index = index
    }

    static let eventColumns = [
        "event", "occurrences_min", "occurrences_max", "currency", "revenue_min", "revenue_max", "revenue_estimate",
    ]

    func header() -> String {
        guard options.format == .csv else { return "" }
        var names = columns.map(\.name)
        switch options.table {
        case .postbacks: names += ["conversion"] + Self.eventColumns
        case .quarantine: names += ["raw_base64"]
        }
        return names.map(csvField).joined(separator: ",") + "\n"
    }

    /// The decoding of a postback row through its app's model in force when its value was set
    /// (what its export line's `conversion` and `events` say).
    package func decode(_ row: ExportRow) -> DecodedConversionValue {
        func integer(_ name: String) -> Int64? {
            guard let position = index[name], case .integer(let value) = row.values[position] else { return nil }
            return value
        }
        func text(_ name: String) -> String? {
            guard let position = index[name], case .text(let value) = row.values[position] else { return nil }
            return value
        }
        let fine = integer("fine_value").map { Int($0) }
        let value: ConversionValue? =
            fine.map { .fine($0) }
            ?? text("coarse_value").flatMap(CoarseConversionValue.init(rawValue:)).map { .coarse($0) }
        let conversionType: ModelConversionType =
            text("conversion_type") == AAKConversionType.reengagement.rawValue ? .reengagement : .install
        let appID = integer("app_id") ?? 0
        let sequenceIndex = Int(integer("postback_sequence_index") ?? 0)
        guard let receivedAt = text("received_at").flatMap(UTCInstant.init(iso8601:)) else {
            return models.decode(
                appID: appID,
                value: value,
                sequenceIndex: sequenceIndex,
                conversionType: conversionType
            )
        }
        return models.decode(
            appID: appID,
            value: value,
            sequenceIndex: sequenceIndex,
            conversionType: conversionType,
            receivedAt: receivedAt,
            version: text("kind") == "aak" ? nil : text("version")
        ).decoded
    }

    mutating func lines(_ row: ExportRow) -> String {
        switch options.format {
        case .jsonl: return jsonLine(row) + "\n"
        case .csv: return csvLines(row)
        }
    }

    /// The row as one JSON object (an export line without its newline).
    package func jsonLine(_ row: ExportRow) -> String {
        var object = JSONObjectWriter()
        let rawPruned = options.table == .postbacks && row.raw.isEmpty
        for (column, value) in zip(columns, row.values) {
            if rawPruned && column.name == "raw" {
                object.addRaw("raw", json: "null")
                object.add("raw_pruned", true)
                continue
            }
            switch value {
            case .null: object.addRaw(column.name, json: "null")
            case .integer(let number): object.add(column.name, number)
            case .text(let text): object.add(column.name, text)
            case .bool(let flag): object.add(column.name, flag)
            }
        }
        switch options.table {
        case .postbacks:
            let decoded = decode(row)
            object.add("conversion", decoded.status)
            var events: [String] = []
            if case .mapped(let mapped) = decoded {
                for event in mapped {
                    var item = JSONObjectWriter()
                    item.add("name", event.name)
                    item.add("occurrences_min", event.occurrences.min)
                    item.add("occurrences_max", event.occurrences.max)
                    if let revenue = event.revenue {
                        item.add("currency", revenue.currency)
                        item.add("revenue_min", roundedMoney(units(Double(revenue.minMicros))))
                        item.add("revenue_max", roundedMoney(units(Double(revenue.maxMicros))))
                        item.add(
                            "revenue_estimate",
                            roundedMoney(
                                units(
                                    options.policy.estimate(minMicros: revenue.minMicros, maxMicros: revenue.maxMicros)
                                )
                            )
                        )
                    }
                    events.append(item.text)
                }
            }
            object.addRaw("events", json: "[" + events.joined(separator: ",") + "]")
        case .quarantine:
            object.add("raw_base64", Base64.encode(row.raw))
        }
        return object.text
    }

    private func csvLines(_ row: ExportRow) -> String {
        let fields = zip(columns, row.values).map { _, value -> String in
            switch value {
            case .null: ""
            case .integer(let number): String(number)
            case .text(let text): text
            case .bool(let flag): flag ? "true" : "false"
            }
        }.map(csvField).joined(separator: ",")
        switch options.table {
        case .quarantine:
            return fields + "," + csvField(Base64.encode(row.raw)) + "\n"
        case .postbacks:
            let decoded = decode(row)
            let prefix = fields + "," + csvField(decoded.status) + ","
            guard case .mapped(let mapped) = decoded, !mapped.isEmpty else {
                return prefix + ",,,,,," + "\n"
            }
            // One row per event, as `report --events`: the postback's columns repeated.
            var text = ""
            for event in mapped {
                var extra = [event.name, String(event.occurrences.min), String(event.occurrences.max)]
                if let revenue = event.revenue {
                    extra += [
                        revenue.currency,
                        formatJSONNumber(roundedMoney(units(Double(revenue.minMicros)))),
                        formatJSONNumber(roundedMoney(units(Double(revenue.maxMicros)))),
                        formatJSONNumber(
                            roundedMoney(
                                units(
                                    options.policy.estimate(minMicros: revenue.minMicros, maxMicros: revenue.maxMicros)
                                )
                            )
                        ),
                    ]
                } else {
                    extra += ["", "", "", ""]
                }
                text += prefix + extra.map(csvField).joined(separator: ",") + "\n"
            }
            return text
        }
    }
}
