import PostbackKit

/// Signed 4.0 postbacks told apart by a number (their transaction id's), and the same read back
/// as verified batches: for tests that write into an ingest session batch by batch.
package enum NumberedPostbacks {
    /// JSON lines of the postbacks numbered `indices`, in that order (a number twice: a copy).
    package static func lines(_ indices: [Int]) throws -> String {
        try indices.map { index in
            let transactionID = String(format: "00000000-0000-4000-8000-%012d", index)
            return try TestKeys.signer.signed(SamplePostback.make(.v4_0, transactionID: transactionID)).jsonText()
        }.joined(separator: "\n")
    }

    /// The entries of the file at `path`, verified with the test keys, in batches of 64.
    package static func verified(_ path: String) async throws -> [VerifiedBatch] {
        let (files, _) = try InputPaths.expand([path])
        var batches: [VerifiedBatch] = []
        try await VerificationPipeline(keyRing: try TestKeys.ring, width: 2, hashingRaw: true)
            .run(EntryReader(files: files, entriesPerBatch: 64)) { batches.append($0) }
        return batches
    }
}
