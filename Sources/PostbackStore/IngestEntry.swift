import PostbackKit

/// One entry of a verified batch as both engines' writes take it: its bytes, the source it is
/// stored under and when it was received, and the valid postback to store, if it is one (else
/// it is quarantined). The store-or-quarantine decision both engines feed.
struct IngestEntry: Sendable {
    /// Its position in the batch (and in a receipt's requests).
    var index: Int
    var entry: RawEntry
    var result: VerificationResult
    var raw: ArraySlice<UInt8>
    var digest: [UInt8]
    var source: String
    /// The channel it came by (``PostbackChannel``).
    var channel: PostbackChannel
    var receivedAt: UTCInstant
    /// The postback to store, where its received time came from, and what its row is made of
    /// (worked out where the entry is made); nil: quarantined.
    var valid: (postback: Postback, receivedSource: ReceivedTimeSource, prepared: PreparedPostback)?
}

/// What a valid postback's row is made of besides the entry's own bytes: its columns, key
/// space, dedup digest and inferences. Worked out wherever the entry is made (for ingest, on
/// the verifier's thread), so that the one writer only binds them.
struct PreparedPostback: Sendable {
    var columns: StoredColumns
    var keySpace: KeySpace
    var dedupKey: [UInt8]
    var inference: PostbackInference
    /// `received_at` and `estimated_install_at` as stored.
    var receivedAtText: ISO8601Text
    var estimatedInstallText: ISO8601Text

    init(_ postback: Postback, _ result: VerificationResult, receivedAt: UTCInstant) {
        columns = StoredColumns(postback)
        keySpace = KeySpace(result)
        dedupKey = DedupKeyDigest.digest(
            kind: postback.kind.rawValue,
            keySpace: keySpace.rawValue,
            adNetworkID: columns.adNetworkID,
            transactionID: columns.transactionID,
            sequenceIndex: Int64(columns.sequenceIndex)
        )
        inference = PostbackInference(postback, receivedAt: receivedAt)
        receivedAtText = ISO8601Text(receivedAt)
        estimatedInstallText = ISO8601Text(inference.estimatedInstallAt)
    }
}

/// A verified batch made into ingest's entries, on the verifier's thread (``IngestJob``): the
/// writer takes them as they are.
package struct PreparedBatch: Sendable {
    package var verified: VerifiedBatch
    var entries: [IngestEntry]

    package init(_ verified: VerifiedBatch, context: BatchContext, now: UTCInstant = .now()) {
        self.verified = verified
        var entries: [IngestEntry] = []
        entries.reserveCapacity(verified.batch.entries.count)
        verified.forEachIngestEntry(context, now: now) { entries.append($0) }
        self.entries = entries
    }

    /// Some of a prepared batch's entries (a shard's: ``ShardedIngestSession``).
    init(_ verified: VerifiedBatch, entries: [IngestEntry]) {
        self.verified = verified
        self.entries = entries
    }
}

extension VerifiedBatch {
    /// Ingest's entries, in input order: stored under the context's source, received at the
    /// forwarder's timestamp or the context's rule.
    func forEachIngestEntry(
        _ context: BatchContext,
        now: UTCInstant,
        _ body: (IngestEntry) throws -> Void
    ) rethrows {
        try forEachEntry(
            source: { _, entry in context.storedSource(entry.location.source) },
            channel: { _ in context.channel },
            receivedTime: { _, timestamp in context.rule.receivedTime(forwarderTimestamp: timestamp, now: now) },
            body
        )
    }

    /// `serve`'s entries, one per request in the same order: received when the request was.
    func forEachReceivedEntry(_ requests: [ReceivedRequest], _ body: (IngestEntry) throws -> Void) rethrows {
        precondition(requests.count == batch.entries.count, "one request per entry")
        try forEachEntry(
            source: { index, _ in requests[index].source },
            channel: { requests[$0].channel },
            receivedTime: { index, _ in (requests[index].receivedAt, .http) },
            body
        )
    }

    private func forEachEntry(
        source: (Int, RawEntry) -> String,
        channel: (Int) -> PostbackChannel,
        receivedTime: (Int, Double?) -> (UTCInstant, ReceivedTimeSource),
        _ body: (IngestEntry) throws -> Void
    ) rethrows {
        // Indexed arrays rather than `items`: the `Zip2Sequence` PostbackKit makes, iterated in
        // this module, copied every result through its value witness (a profile of the ingest
        // showed the extra retains and releases).
        let entries = batch.entries
        let results = self.results
        for index in entries.indices {
            let entry = entries[index]
            let result = results[index]
            let valid = result.verdict == .valid ? result.postback : nil
            let (receivedAt, receivedSource) = receivedTime(index, valid?.forwarderTimestamp)
            try body(
                IngestEntry(
                    index: index,
                    entry: entry,
                    result: result,
                    raw: batch.bytes[entry.range],
                    digest: rawDigests[index],
                    source: source(index, entry),
                    channel: channel(index),
                    receivedAt: receivedAt,
                    valid: valid.map { ($0, receivedSource, PreparedPostback($0, result, receivedAt: receivedAt)) }
                )
            )
        }
    }
}
