import PostbackKit

extension RetentionKind {
    /// Parses `KIND=DAYS` (`KIND=off`: kept forever).
    package static func setting(_ text: String) throws(StoreError) -> (RetentionKind, Int?) {
        let parts = text.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        let kinds = RetentionKind.allCases.map(\.rawValue).joined(separator: ", ")
        guard parts.count == 2, let kind = RetentionKind(rawValue: String(parts[0])) else {
            throw StoreError(.invalidValue, "\(text.escapedForTerminal): expected KIND=DAYS, KIND one of \(kinds)")
        }
        if parts[1] == "off" { return (kind, nil) }
        guard let days = Int(parts[1]), (1...36_500).contains(days) else {
            throw StoreError(
                .invalidValue,
                "\(text.escapedForTerminal): DAYS is 1 to 36500, or off (kept forever)"
            )
        }
        return (kind, days)
    }
}
