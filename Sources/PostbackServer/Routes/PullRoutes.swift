import HTTPTypes
import Hummingbird
import HummingbirdCore
import NIOCore
import PostbackKit
import PostbackStore

/// `GET /api/v1/postbacks?after=CURSOR&limit=N`: the pull API. The key's apps' stored
/// postbacks, each the line `postbackd export --format jsonl` writes for it (decoded by the
/// model in force when its value was set), in storing order, with the cursor to pass as the
/// next request's `after` in `X-Postbackd-Cursor`. The cursor follows `export`'s rules
/// (``ExportSource``): however transactions interleave, following the cursors returns every
/// stored postback once; a short page means nothing more is final now (on PostgreSQL a
/// transaction still running holds the bound back), not that nothing more was stored. A page
/// is read in one short read
/// transaction and then sent, so a slow client holds nothing in the store.
extension PostbackResponder {
    static let pullParameters = ["after", "limit"]
    static let defaultPullLimit = 1_000
    static let maximumPullLimit = 10_000

    func pullPostbacks(_ request: Request, context: Caller) async -> Answer {
        let admission = admitServer(request, context, scope: .export)
        if case .refused(let response) = admission { return response }
        var after: ExportCursor?
        var limit = Self.defaultPullLimit
        var seen = Set<Substring>()
        for (name, value) in request.formParameters {
            guard Self.pullParameters.contains(String(name)) else {
                return Self.json(
                    .badRequest,
                    Self.error(
                        "unknown parameter; known: " + Self.pullParameters.joined(separator: ", "),
                        field: String(name.prefix(64))
                    )
                )
            }
            guard seen.insert(name).inserted else {
                return Self.json(.badRequest, Self.error("given more than once", field: String(name)))
            }
            if name == "limit" {
                guard let number = Int(value), (1...Self.maximumPullLimit).contains(number) else {
                    return Self.json(
                        .badRequest,
                        Self.error(
                            "expected 1 to \(Self.maximumPullLimit), found \"\(value.prefix(32))\"",
                            field: "limit"
                        )
                    )
                }
                limit = number
            } else if !value.isEmpty {
                guard Self.isCursor(value, of: reader.location) else {
                    return Self.json(
                        .badRequest,
                        Self.error(
                            "not a cursor of this store: pass the X-Postbackd-Cursor of the last page, or none to start",
                            field: "after"
                        )
                    )
                }
                after = ExportCursor(String(value))
            }
        }
        let selection = ExportSelection(table: .postbacks, after: after, appIDs: admission.apps, limit: limit)
        do {
            let (body, cursor, rows) = try await reader.read { store in
                let writer = ExportWriter(options: ExportJob.Options(), models: try await store.models().timelines)
                var body = ByteBuffer()
                var rows = 0
                let cursor = try await store.export(selection) { row in
                    body.writeString(writer.jsonLine(row))
                    body.writeInteger(UInt8(ascii: "\n"))
                    rows += 1
                }
                return (body, cursor, rows)
            }
            return Answer(
                status: .ok,
                headers: [
                    .contentType: "application/x-ndjson", .cacheControl: "no-store",
                    .postbackdCursor: cursor.position, .postbackdRows: String(rows),
                ],
                body: body
            )
        } catch {
            return unreadable(error)
        }
    }

    /// `sqlite:ID`, `postgres:XID` or `postgres:XID:ID`, of the store's engine.
    static func isCursor(_ text: Substring, of location: StoreLocation) -> Bool {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        let engine: Substring
        switch location {
        case .sqlite: engine = "sqlite"
        case .postgres: engine = "postgres"
        }
        let count = engine == "sqlite" ? 2...2 : 2...3
        guard count.contains(parts.count), parts[0] == engine,
            parts.dropFirst().allSatisfy({ !$0.isEmpty && $0.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } })
        else { return false }
        // Numbers the store reads: row ids are bigint, transaction ids xid8.
        if engine == "sqlite" || parts.count == 3, Int64(parts[parts.count - 1]) == nil { return false }
        return engine == "sqlite" || UInt64(parts[1]) != nil
    }
}

extension HTTPField.Name {
    // Constant names, valid as written: HTTPTypes offers only a failable initializer.
    // swift-format-ignore: NeverForceUnwrap
    static let postbackdCursor = HTTPField.Name("X-Postbackd-Cursor")!
    // swift-format-ignore: NeverForceUnwrap
    static let postbackdRows = HTTPField.Name("X-Postbackd-Rows")!
}
