import PostbackKit

/// What the writer needs to know about a batch beyond the verification results.
package struct BatchContext: Sendable {
    package var runID: Int64
    package var rule: ReceivedTimeRule
    /// The name stored for a source: the canonical path (so that re-reading a file by
    /// another path adds nothing), `-` for standard input.
    package var storedSource: @Sendable (String) -> String
    /// The channel every entry of the run came by (`ingest --channel`).
    package var channel: PostbackChannel

    package init(
        runID: Int64,
        rule: ReceivedTimeRule,
        channel: PostbackChannel = .file,
        storedSource: @escaping @Sendable (String) -> String
    ) {
        self.runID = runID
        self.rule = rule
        self.channel = channel
        self.storedSource = storedSource
    }
}
