import PostbackKit

extension IngestSummary {
    /// Counts one quarantined entry by its verdict.
    mutating func countQuarantined(_ result: VerificationResult) {
        quarantined += 1
        switch result.verdict {
        case .invalid: invalid += 1
        case .malformed: malformed += 1
        case .unsupported: unsupported += 1
        case .valid: malformed += 1  // a valid verdict always carries a postback
        }
    }

    /// Counts one newly stored postback.
    mutating func countAccepted(_ result: VerificationResult) {
        accepted += 1
        if result.testMode { testMode += 1 }
        if result.development { development += 1 }
    }
}
