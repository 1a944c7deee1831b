import Foundation
import PostbackKit

/// What ingest has handed the PostgreSQL store and not yet committed.
struct PendingWrites {
    struct Candidate {
        var columns: StoredColumns
        var kind: String
        var keySpace: KeySpace
        var result: VerificationResult
        var fine: Int?
        var coarse: String?
        var country: String?
        var raw: ArraySlice<UInt8>
        var digest: [UInt8]
        var dedupKey: [UInt8]
        var source: String
        var channel: PostbackChannel
        var location: EntryLocation
        var receivedAt: UTCInstant
        var receivedSource: ReceivedTimeSource
        var runID: Int64
        /// Received over HTTP: the request, and the entry's position in its group.
        var request: ReceivedRequest? = nil
        var entry = 0
        /// Section 9's inferences from the postback and `receivedAt`.
        var inference: PostbackInference
    }

    struct Refused {
        var location: EntryLocation
        /// The whole entry's size, even when only a part of it was kept.
        var size: Int
        var result: VerificationResult
        var raw: ArraySlice<UInt8>
        var digest: [UInt8]
        var source: String
        var channel: PostbackChannel
        var receivedAt: UTCInstant
        var runID: Int64
        /// Received over HTTP: the request, and the entry's position in its group.
        var request: ReceivedRequest? = nil
        var entry = 0
    }

    var read = 0
    var candidates: [Candidate] = []
    var refused: [Refused] = []

    var isEmpty: Bool { read == 0 }
}

extension PendingWrites.Candidate {
    /// A valid entry to store; `request`: received over HTTP.
    init(
        _ item: IngestEntry,
        _ valid: (postback: Postback, receivedSource: ReceivedTimeSource, prepared: PreparedPostback),
        runID: Int64,
        request: ReceivedRequest? = nil
    ) {
        let (postback, prepared) = (valid.postback, valid.prepared)
        self.init(
            columns: prepared.columns,
            kind: postback.kind.rawValue,
            keySpace: prepared.keySpace,
            result: item.result,
            fine: postback.conversionValue?.fine,
            coarse: postback.conversionValue?.coarse?.rawValue,
            country: postback.countryCode,
            raw: item.raw,
            digest: item.digest,
            dedupKey: prepared.dedupKey,
            source: item.source,
            channel: item.channel,
            location: item.entry.location,
            receivedAt: item.receivedAt,
            receivedSource: valid.receivedSource,
            runID: runID,
            request: request,
            entry: request == nil ? 0 : item.index,
            inference: prepared.inference
        )
    }
}

extension PendingWrites.Refused {
    /// An entry to quarantine; `request`: received over HTTP.
    init(_ item: IngestEntry, runID: Int64, request: ReceivedRequest? = nil) {
        self.init(
            location: item.entry.location,
            size: quarantinedSize(item.entry, rawCount: item.raw.count),
            result: item.result,
            raw: item.raw,
            digest: item.digest,
            source: item.source,
            channel: item.channel,
            receivedAt: item.receivedAt,
            runID: runID,
            request: request,
            entry: request == nil ? 0 : item.index
        )
    }
}
