/// `postbackd verify`: reads postbacks, verifies each, and prints one result per postback.
package struct VerifyJob: Sendable {
    /// Files, folders, or `-` for standard input (nothing also means standard input).
    package var paths: [String]
    package var keyRing: KeyRing
    package var format: ResultFormat
    /// Print the signed message, its SHA-256 and the key outcome for each postback.
    package var explain: Bool
    /// Verification width; defaults to the active cores.
    package var width: Int
    /// `--model`: decode each valid postback's conversion value through these models.
    package var models: ConversionModels?
    /// When each postback counts as received, for its estimated install time (as `ingest`
    /// decides it: `--received-at`, a forwarder's `timestamp`, or now).
    package var receivedTime: ReceivedTimeRule

    package init(
        paths: [String],
        keyRing: KeyRing = .apple,
        format: ResultFormat = .text,
        explain: Bool = false,
        width: Int = ActiveProcessors.count,
        models: ConversionModels? = nil,
        receivedTime: ReceivedTimeRule = ReceivedTimeRule()
    ) {
        self.receivedTime = receivedTime
        self.paths = paths
        self.keyRing = keyRing
        self.format = format
        self.explain = explain
        self.width = width
        self.models = models
    }

    /// Runs the job, writing results to `output` and diagnostics to `errors`.
    ///
    /// The summary goes to `output` in text format and to `errors` in JSON format, so that
    /// JSON output stays pure JSON Lines.
    ///
    /// - Throws: ``PostbackKitError`` when a path does not exist (before anything is read).
    package func run(output: TextOutput, errors: TextOutput) async throws -> VerificationSummary {
        let (files, walkDiagnostics) = try InputPaths.expand(paths)
        for diagnostic in walkDiagnostics { errors.line(diagnostic.description) }
        let reader = EntryReader(files: files)
        var summary = VerificationSummary()
        let format = self.format
        let explain = self.explain
        let models = self.models
        let rule = receivedTime
        let now = UTCInstant.now()
        // The received time feeds only the JSON fields and the --explain block.
        let showsInferences = format == .json || explain
        // Each batch's results are counted and formatted on its verifier's thread; the output
        // thread only writes the text in order.
        try await VerificationPipeline(keyRing: keyRing, width: width, consumerName: "pbd-output").run(
            reader,
            prepare: { verified in
                var counts = VerificationSummary()
                var text = ""
                text.reserveCapacity(verified.batch.entries.count * (format == .json ? 320 : 96))
                for (entry, result) in verified.items {
                    counts.count(result)
                    let received =
                        showsInferences
                        ? result.postback.map { rule.receivedTime(forwarderTimestamp: $0.forwarderTimestamp, now: now) }
                        : nil
                    switch format {
                    case .text:
                        text += VerificationReport.textLine(entry.location, result)
                        text += "\n"
                        if let models,
                            let decoded = VerificationReport.decodedText(result, models, receivedAt: rule.fixed)
                        {
                            text += decoded
                            text += "\n"
                        }
                        if explain, let block = VerificationReport.explanationText(result, received: received) {
                            text += block
                            text += "\n"
                        }
                    case .json:
                        text += VerificationReport.jsonLine(
                            entry.location,
                            result,
                            explain: explain,
                            models: models,
                            received: received
                        )
                        text += "\n"
                    }
                }
                return (counts, text, verified.batch.readerState.diagnostics)
            },
            consume: { (counts: VerificationSummary, text: String, diagnostics: [InputDiagnostic]) in
                summary.add(counts)
                output.write(text)
                for diagnostic in diagnostics { errors.line(diagnostic.description) }
            }
        )
        for diagnostic in reader.takeDiagnostics() { errors.line(diagnostic.description) }
        summary.files = reader.filesOpened
        summary.unreadableFiles = reader.unreadableFiles
        switch format {
        case .text: output.line(summary.text)
        case .json: errors.line(summary.text)
        }
        output.flush()
        errors.flush()
        return summary
    }
}
