import PostbackKit

/// `postbackd apple-ads add FILE|-`: token submissions as JSON Lines (the objects `serve`'s
/// `POST /v1/apple-ads/token` takes), stored in batches. A line that cannot be used is named
/// (file, line, field) and the rest goes on; storing is idempotent, so a run killed part way
/// and run again ends as one clean run would.
package enum AppleAdsAddJob {
    package struct Summary: Sendable, Hashable {
        package var read = 0
        package var added = 0
        package var known = 0
        package var expired = 0
        package var refused = 0
    }

    /// The longest line read.
    package static let maximumLineBytes = 65_536
    static let batchSize = 1_000

    /// Reads `input` (a path, or `-` for standard input) into the store at `location`;
    /// `problem` gets one line per refused line.
    ///
    /// - Throws: ``PostbackKitError`` when the input cannot be opened (before the store is) or
    ///   reading it fails part way.
    package static func run(
        location: StoreLocation,
        input: String,
        problem: (String) -> Void
    ) async throws -> Summary {
        let lines = try TextLines(input, maximumBytes: maximumLineBytes)
        return try await PostbackStores.with(location) { store in
            var summary = Summary()
            var batch: [AppleAdsToken] = []
            func flush() async throws {
                guard !batch.isEmpty else { return }
                let now = UTCInstant.now().milliseconds
                for outcome in try await store.addAppleAdsTokens(
                    batch,
                    receivedAtMs: [Int64](repeating: now, count: batch.count)
                ) {
                    switch outcome {
                    case .added: summary.added += 1
                    case .known: summary.known += 1
                    case .expired: summary.expired += 1
                    }
                }
                batch.removeAll(keepingCapacity: true)
            }
            while let next = try lines.next() {
                summary.read += 1
                do throws(AppleAdsTokenError) {
                    guard case .text(let bytes) = next else {
                        throw AppleAdsTokenError(
                            .tooLarge,
                            field: nil,
                            message: "longer than \(maximumLineBytes) bytes"
                        )
                    }
                    let token = try AppleAdsToken.parse(json: bytes, now: .now())
                    // A file may be days old: without the time the app obtained the token, it
                    // would be taken as fresh and sent after its 24 hours.
                    guard token.obtainedAtGiven else {
                        throw AppleAdsTokenError(
                            .missing,
                            field: "obtained_at",
                            message: "missing: a batch file must say when the app obtained each token (ISO 8601)"
                        )
                    }
                    batch.append(token)
                } catch {
                    summary.refused += 1
                    problem("\(lines.name):\(lines.number): \(error)")
                    continue
                }
                if batch.count >= batchSize { try await flush() }
            }
            try await flush()
            return summary
        }
    }
}
