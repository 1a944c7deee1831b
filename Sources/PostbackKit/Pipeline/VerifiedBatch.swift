/// A batch of entries with the verdict of each, in input order.
package struct VerifiedBatch: Sendable {
    package var batch: EntryBatch
    /// One result per entry of ``batch``, in the same order.
    package var results: [VerificationResult]
    /// The SHA-256 of each entry's raw bytes, when the pipeline was asked for them (the store
    /// keys sightings and quarantine by them); empty otherwise.
    package var rawDigests: [[UInt8]] = []

    package init(batch: EntryBatch, results: [VerificationResult], rawDigests: [[UInt8]] = []) {
        self.batch = batch
        self.results = results
        self.rawDigests = rawDigests
    }

    /// The entries with their results.
    package var items: Zip2Sequence<[RawEntry], [VerificationResult]> {
        zip(batch.entries, results)
    }
}

extension VerifierPool {
    /// Checks every entry of `batch`, and hashes its raw bytes when `hashingRaw`.
    package func verify(_ batch: EntryBatch, hashingRaw: Bool = false) -> VerifiedBatch {
        withVerifier { verifier in
            batch.bytes.withUnsafeBufferPointer { bytes in
                var verified = VerifiedBatch(batch: batch, results: verifier.check(batch.entries, in: bytes))
                if hashingRaw {
                    verified.rawDigests = batch.entries.map {
                        verifier.sha256(UnsafeBufferPointer(rebasing: bytes[$0.range]))
                    }
                }
                return verified
            }
        }
    }
}
