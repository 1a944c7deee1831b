import PostbackKit

/// One entry a batch quarantined, for reporting.
package struct QuarantinedEntry: Sendable {
    package var location: EntryLocation
    package var result: VerificationResult
}
