import PostbackKit

/// One postback received over HTTP, as the store keeps it beside its bytes.
package struct ReceivedRequest: Sendable {
    /// When the request arrived (server clock, UTC): the postback's `received_at`.
    package var receivedAt: UTCInstant
    /// The client's address: the peer, or the header a trusted proxy sets.
    package var clientAddress: String?
    /// The request's id, as answered in `X-Request-Id`.
    package var requestID: String
    /// Whether a refused body may add a quarantine row; false once the hour's quarantine budget
    /// is spent (the body is then counted, not stored).
    package var mayQuarantine: Bool
    /// The channel it came by: ``PostbackChannel/device`` at Apple's well-known paths, a network's
    /// channel at its forwards route.
    package var channel: PostbackChannel

    package init(
        receivedAt: UTCInstant,
        clientAddress: String?,
        requestID: String,
        mayQuarantine: Bool = true,
        channel: PostbackChannel = .device
    ) {
        self.receivedAt = receivedAt
        self.clientAddress = clientAddress
        self.requestID = requestID
        self.mayQuarantine = mayQuarantine
        self.channel = channel
    }

    /// The `source` stored for it: `http` for devices, `http:NAME` for a network's forwards
    /// (``PostbackChannel/httpSource``).
    package var source: String { channel.httpSource }
    /// Where an HTTP postback was "read": one object, position 0, line 1. With the source and
    /// the body's SHA-256 it keys sightings and quarantine, so a repeated body adds one row.
    package static let location = EntryLocation(
        source: PostbackChannel.device.httpSource,
        index: 0,
        line: 1,
        form: .object
    )
}

/// What the store did with one received postback, once durable.
package enum ReceiptOutcome: Sendable, Hashable {
    /// The first copy of its key: stored.
    case stored
    /// A copy of a stored postback with the same values.
    case duplicate
    /// A copy of a stored postback whose unsigned values differ: recorded as a conflict.
    case conflict
    /// A validly signed copy whose signed content differs from the stored postback's under the
    /// same dedup key: recorded as a conflict, flagged `signed_differs`.
    case signedConflict
    /// Quarantined; `newRow` is false when the same body was already there (its
    /// `received_count` went up).
    case quarantined(newRow: Bool)
    /// Refused, and not stored because the hour's quarantine budget was spent.
    case dropped
}

extension IngestSummary {
    /// Counts one received postback's outcome.
    package mutating func count(_ outcome: ReceiptOutcome, _ result: VerificationResult) {
        read += 1
        switch outcome {
        case .stored: countAccepted(result)
        case .duplicate: duplicates += 1
        case .conflict:
            duplicates += 1
            conflicts += 1
        case .signedConflict:
            duplicates += 1
            conflicts += 1
            signedConflicts += 1
        case .quarantined: countQuarantined(result)
        case .dropped: break
        }
    }
}
