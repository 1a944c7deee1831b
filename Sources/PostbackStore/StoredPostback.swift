/// A stored postback as a copy is compared with it: what the engines' lookup of the copy's
/// dedup key selects.
struct StoredPostback {
    var id: Int64
    var source: String
    var sourceIndex: Int64
    var rawDigest: [UInt8]
    var fine: Int?
    var coarse: String?
    var country: String?
    var adNetworkID: String
    var transactionID: String
    var sequenceIndex: Int
    var kind: String
    var keySpace: String
    var dedupKey: [UInt8]
    var signed: SignedColumns
    /// The id of the transaction that inserted it (PostgreSQL's `xmin`), where a commit can
    /// succeed unanswered and the transaction's retry meets its own rows.
    var insertedBy: String? = nil

    /// What a valid postback whose dedup key this postback holds is: the one decision both
    /// engines' writes feed (each finds the stored row its own way).
    func decide(
        copy columns: StoredColumns,
        kind: String,
        keySpace: KeySpace,
        values: (fine: Int?, coarse: String?, country: String?),
        digest: [UInt8],
        source: String,
        sourceIndex: Int
    ) -> CopyDecision {
        // The digest is 128 bits of SHA-256: two keys sharing one is beyond reach, but if it ever
        // happened the postback is quarantined, not counted as a duplicate.
        guard
            adNetworkID == columns.adNetworkID, transactionID == columns.transactionID,
            sequenceIndex == columns.sequenceIndex, self.kind == kind, self.keySpace == keySpace.rawValue
        else {
            return .digestCollision(storedID: id)
        }
        let comparison = CopyComparison(
            stored: (fine, coarse, country, signed),
            copy: (values.fine, values.coarse, values.country, columns.signed)
        )
        let sameBytes = rawDigest == digest
        // Re-reading the stored copy itself (same source, position and bytes) adds nothing.
        if sameBytes && self.source == source && self.sourceIndex == Int64(sourceIndex) {
            return .stored(comparison)
        }
        return .sighting(comparison, sameBytes: sameBytes)
    }
}

/// What ``StoredPostback/decide(copy:kind:keySpace:values:digest:source:sourceIndex:)`` found.
enum CopyDecision {
    /// Another key's postback holds the same dedup digest: the postback is quarantined.
    case digestCollision(storedID: Int64)
    /// The stored copy itself, read again: counted as a duplicate, nothing written.
    case stored(CopyComparison)
    /// A copy: counted as a duplicate and recorded as a sighting, with its bytes unless they
    /// are the stored postback's.
    case sighting(CopyComparison, sameBytes: Bool)
}
