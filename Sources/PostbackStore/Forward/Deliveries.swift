import PostbackKit

/// `postbackd forward`: the durable state of each postback's delivery to each destination,
/// kept in the `deliveries` table of either engine.
///
/// A delivery is discovered (a row per destination and admitted postback, found through the
/// export cursor `forward:NAME`, so that on PostgreSQL rows committed out of id order are
/// never skipped), then claimed under a lease by one forward process at a time, attempted, and
/// its outcome recorded only while that lease is still held. A process killed mid-request
/// leaves a lease that expires, and the delivery is attempted again: at-least-once.
package enum DeliveryState: String, Sendable, CaseIterable {
    /// Not yet delivered: waiting for its first attempt, or for a retry.
    case pending
    /// A 2xx answer.
    case delivered
    /// A 4xx answer other than 408 and 429 (or a 1xx or 3xx): not retried.
    case rejected
    /// Still failing `give_up_hours` after the first attempt.
    case failed
}

/// Which postbacks a destination takes, as the store selects them.
package struct DeliveryRoute: Sendable {
    package var destination: String
    package var appIDs: [Int64]?
    package var adNetworkIDs: [String]?
    package var kinds: [String]?
    package var keySpaces: [String]

    package init(destination: String, appIDs: [Int64]?, adNetworkIDs: [String]?, kinds: [String]?, keySpaces: [String])
    {
        self.destination = destination
        self.appIDs = appIDs
        self.adNetworkIDs = adNetworkIDs
        self.kinds = kinds
        self.keySpaces = keySpaces
    }

    /// The export consumer whose cursor records how far discovery has read.
    var consumer: String { "forward:" + destination }
}

/// A delivery claimed for an attempt: its history and the stored postback (nil when the
/// postback is no longer stored).
package struct ClaimedDelivery: Sendable {
    package var postbackID: Int64
    /// Attempts made before this one.
    package var attempts: Int
    package var firstAttemptMs: Int64?
    /// The postback's columns, in ``ExportTable/postbacks`` order.
    package var row: ExportRow?
}

/// What an attempt ended with, to record.
package struct DeliveryOutcome: Sendable {
    package var destination: String
    package var postbackID: Int64
    package var state: DeliveryState
    /// Attempts made, this one included.
    package var attempts: Int
    package var firstAttemptMs: Int64
    package var lastAttemptMs: Int64
    /// When a pending delivery is next due.
    package var nextAttemptMs: Int64
    /// The HTTP status, or nil (a timeout, a connection error).
    package var status: Int?
    /// The first 1 KiB of the answer, or what went wrong.
    package var answer: String?

    package init(
        destination: String,
        postbackID: Int64,
        state: DeliveryState,
        attempts: Int,
        firstAttemptMs: Int64,
        lastAttemptMs: Int64,
        nextAttemptMs: Int64,
        status: Int?,
        answer: String?
    ) {
        self.destination = destination
        self.postbackID = postbackID
        self.state = state
        self.attempts = attempts
        self.firstAttemptMs = firstAttemptMs
        self.lastAttemptMs = lastAttemptMs
        self.nextAttemptMs = nextAttemptMs
        self.status = status
        self.answer = answer
    }
}

/// One destination's deliveries by state (`forward --status`).
package struct DeliveryStatus: Sendable, Hashable {
    package var destination: String
    package var delivered = 0
    /// Pending, never attempted.
    package var pending = 0
    /// Pending after at least one failed attempt.
    package var retrying = 0
    package var rejected = 0
    package var failed = 0
    /// When the oldest delivery still pending was discovered.
    package var oldestPendingMs: Int64?

    package init(destination: String) { self.destination = destination }
}

extension DeliveryStatus {
    /// Adds one group of the status query: `count` deliveries in `state`.
    mutating func add(state: String, attempted: Bool, count: Int, oldestDiscoveredMs: Int64?) {
        switch DeliveryState(rawValue: state) {
        case .pending?:
            if attempted { retrying += count } else { pending += count }
            if let oldest = oldestDiscoveredMs { oldestPendingMs = min(oldestPendingMs ?? oldest, oldest) }
        case .delivered?: delivered += count
        case .rejected?: rejected += count
        case .failed?: failed += count
        case nil: break
        }
    }
}

extension DeliveryQueue {
    /// ``discoverDeliveries(_:nowMs:)`` for every route, pass after pass until none has more;
    /// returns how many deliveries were added.
    package func discoverAllDeliveries(_ routes: [DeliveryRoute], nowMs: Int64) async throws -> Int {
        var added = 0
        for route in routes {
            while true {
                let pass = try await discoverDeliveries(route, nowMs: nowMs)
                added += pass.added
                if !pass.more { break }
            }
        }
        return added
    }
}

extension ExportRow {
    /// The value of a ``ExportTable/postbacks`` column.
    package func postbackValue(_ name: String) -> ExportValue? {
        guard let position = ExportTable.postbackColumnIndex[name], position < values.count else { return nil }
        return values[position]
    }
}

extension ExportTable {
    /// The names of the ``postbacks`` columns, in export's order.
    package static let postbackColumnNames = ExportTable.postbacks.columns.map(\.name)

    static let postbackColumnIndex: [String: Int] = {
        var index: [String: Int] = [:]
        for (position, column) in ExportTable.postbacks.columns.enumerated() { index[column.name] = position }
        return index
    }()
}
