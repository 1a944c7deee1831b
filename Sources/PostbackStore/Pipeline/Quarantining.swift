import PostbackKit

/// A valid postback the store refused to count: its dedup-key digest equals that of a stored
/// postback with another key. Kept in quarantine so that nothing is lost.
func digestCollision(_ result: VerificationResult, storedID: Int64) -> VerificationResult {
    var refused = result
    refused.verdict = .unsupported
    refused.field = "dedup_key"
    refused.reason =
        "a valid postback whose dedup-key digest equals that of stored postback \(storedID) with another key; kept here so that nothing is lost (please report it)"
    return refused
}

/// How big a quarantined entry was: the whole line or postback even when only a part was kept.
func quarantinedSize(_ entry: RawEntry, rawCount: Int) -> Int {
    switch entry.problem {
    case .postbackTooLarge(let total)?, .lineTooLong(let total)?: total
    default: rawCount
    }
}
