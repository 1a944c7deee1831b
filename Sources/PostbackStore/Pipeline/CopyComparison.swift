/// How a valid copy of a stored postback (one with its dedup key) compares with it: the same
/// postback again, or a conflict.
///
/// A copy whose unsigned values (conversion value, coarse value, country code) differ had them
/// changed on the way. A copy whose signed content differs (``SignedColumns``) is another
/// postback under the same key: Apple never signs two contents under one transaction and
/// window, so it is recorded as a conflict too, flagged `signed_differs`.
struct CopyComparison: Hashable {
    /// Its conversion value, coarse value or country code differs from the stored postback's.
    var unsignedDiffers: Bool
    /// Its signed content differs from the stored postback's.
    var signedDiffers: Bool

    /// Compares a copy's values with the stored postback's.
    init(
        stored: (fine: Int?, coarse: String?, country: String?, signed: SignedColumns),
        copy: (fine: Int?, coarse: String?, country: String?, signed: SignedColumns)
    ) {
        unsignedDiffers = stored.fine != copy.fine || stored.coarse != copy.coarse || stored.country != copy.country
        signedDiffers = stored.signed != copy.signed
    }

    /// A copy of a postback `prune` removed, its dedup key kept: nothing left to compare with,
    /// so the same postback again.
    static let ofPruned = CopyComparison(unsignedDiffers: false, signedDiffers: false)

    private init(unsignedDiffers: Bool, signedDiffers: Bool) {
        self.unsignedDiffers = unsignedDiffers
        self.signedDiffers = signedDiffers
    }

    /// Whether the copy is recorded as a conflict.
    var isConflict: Bool { unsignedDiffers || signedDiffers }

    /// What a received copy's sender is told.
    var outcome: ReceiptOutcome {
        signedDiffers ? .signedConflict : unsignedDiffers ? .conflict : .duplicate
    }
}

extension IngestSummary {
    /// Counts a valid copy of a stored postback.
    mutating func countCopy(_ comparison: CopyComparison) {
        duplicates += 1
        if comparison.isConflict { conflicts += 1 }
        if comparison.signedDiffers { signedConflicts += 1 }
    }

    /// Counts a valid copy of a postback `prune` removed (its dedup key kept).
    mutating func countCopyOfPruned() {
        countCopy(.ofPruned)
    }
}
