import PostbackKit

/// What `postbackd export` reads: the stored postbacks, or the quarantine.
package enum ExportTable: String, Sendable, CaseIterable {
    case postbacks
    case quarantine
}

/// One exported value, the same whichever engine stored it.
package enum ExportValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case text(String)
    case bool(Bool)
}

/// How a column is read from each engine and written out.
enum ExportColumnType {
    case integer
    case text
    case bool
    /// ISO 8601 text (`2026-11-21T08:00:00.000Z`).
    case time
    /// A UTC day as text (`2026-11-21`).
    case day
    /// The stored bytes as text (the postback's JSON); quarantined bytes that are not UTF-8 are
    /// written with U+FFFD where they break, and `raw_base64` holds them exactly.
    case rawText
    /// Lower-case hex.
    case hex
}

package struct ExportColumn {
    package var name: String
    var type: ExportColumnType

    init(_ name: String, _ type: ExportColumnType) {
        self.name = name
        self.type = type
    }
}

extension ExportTable {
    /// Every stored column, in the order written.
    package var columns: [ExportColumn] {
        switch self {
        case .postbacks:
            [
                .init("id", .integer), .init("kind", .text), .init("key_space", .text), .init("ad_network_id", .text),
                .init("transaction_id", .text), .init("postback_sequence_index", .integer), .init("version", .text),
                .init("app_id", .integer), .init("campaign_id", .integer), .init("source_identifier", .text),
                .init("source_app_id", .integer), .init("source_domain", .text), .init("fidelity_type", .integer),
                .init("did_win", .bool), .init("redownload", .bool), .init("conversion_type", .text),
                .init("marketplace_id", .text), .init("impression_type", .text), .init("ad_interaction_type", .text),
                .init("fine_value", .integer), .init("coarse_value", .text), .init("country_code", .text),
                .init("test_mode", .bool), .init("development", .bool), .init("key_name", .text),
                .init("received_at", .time), .init("received_at_source", .text), .init("raw", .rawText),
                .init("raw_sha256", .hex), .init("dedup_key", .hex), .init("source", .text),
                .init("source_index", .integer),
                .init("source_line", .integer), .init("run_id", .integer), .init("client_address", .text),
                .init("request_id", .text), .init("estimated_install_at", .time), .init("install_date", .day),
                .init("crowd_anonymity_tier", .integer), .init("source_identifier_digits", .integer),
                .init("channel", .text),
            ]
        case .quarantine:
            [
                .init("id", .integer), .init("verdict", .text), .init("field", .text), .init("reason", .text),
                .init("kind", .text), .init("version", .text), .init("ad_network_id", .text),
                .init("transaction_id", .text), .init("raw", .rawText), .init("raw_size", .integer),
                .init("raw_sha256", .hex), .init("source", .text), .init("source_index", .integer),
                .init("source_line", .integer), .init("received_at", .time), .init("run_id", .integer),
                .init("client_address", .text), .init("request_id", .text), .init("received_count", .integer),
                .init("channel", .text),
            ]
        }
    }
}

/// One exported row: its values in ``ExportTable/columns`` order, and the raw bytes.
package struct ExportRow: Sendable {
    package var values: [ExportValue]
    package var raw: [UInt8]
}

/// Where a consumer's last export ended; engine-specific and opaque to the job.
package struct ExportCursor: Sendable, Hashable, CustomStringConvertible {
    package var position: String
    package init(_ position: String) { self.position = position }
    package var description: String { position }
}

/// The part of the stored rows an export reads.
package struct ExportSelection: Sendable {
    package var table: ExportTable
    /// Days received (UTC), inclusive; nil for all.
    package var days: ClosedRange<UTCDay>?
    /// Rows stored after this cursor only; nil for all.
    package var after: ExportCursor?
    /// Only these apps' rows (postbacks); nil for every app.
    package var appIDs: Set<Int64>?
    /// At most this many rows (the pull API's page); the cursor returned is then the last
    /// row's when the page is full, so that the next page goes on from it.
    package var limit: Int?

    package init(
        table: ExportTable,
        days: ClosedRange<UTCDay>? = nil,
        after: ExportCursor? = nil,
        appIDs: Set<Int64>? = nil,
        limit: Int? = nil
    ) {
        self.table = table
        self.days = days
        self.after = after
        self.appIDs = appIDs
        self.limit = limit
    }

    /// ` AND app_id IN (…)` for ``appIDs`` (numbers, so written into the statement), or nothing.
    /// and, of postbacks, only those that count (``AppsPolicy``).
    var appCondition: String {
        let claimed = table == .postbacks ? " AND " + AppsSQL.claimed : ""
        guard let appIDs else { return claimed }
        return claimed + " AND app_id IN ("
            + (appIDs.isEmpty ? "NULL" : appIDs.sorted().map(String.init).joined(separator: ","))
            + ")"
    }
}
