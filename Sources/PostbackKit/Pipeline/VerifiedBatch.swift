/// A batch of entries with the verdict of each, in input order.
public struct VerifiedBatch: Sendable {
    public var batch: EntryBatch
    /// One result per entry of ``batch``, in the same order.
    public var results: [VerificationResult]

    /// The entries with their results.
    public var items: Zip2Sequence<[RawEntry], [VerificationResult]> {
        zip(batch.entries, results)
    }
}

extension VerifierPool {
    /// Checks every entry of `batch`.
    public func verify(_ batch: EntryBatch) -> VerifiedBatch {
        withVerifier { verifier in
            let results = batch.bytes.withUnsafeBufferPointer { bytes in
                batch.entries.map { entry in
                    verifier.check(
                        UnsafeBufferPointer(rebasing: bytes[entry.range]),
                        problem: entry.problem,
                        line: entry.location.line
                    )
                }
            }
            return VerifiedBatch(batch: batch, results: results)
        }
    }
}
