import PostbackKit

/// What one `postbackd ingest` run did. `read = accepted + duplicates + quarantined`.
package struct IngestSummary: Sendable, Hashable {
    /// Entries read.
    package var read = 0
    /// Postbacks stored by this run.
    package var accepted = 0
    /// Valid postbacks whose dedup key was already taken (conflicts included).
    package var duplicates = 0
    /// Duplicates whose conversion value, coarse value or country code differ from the stored
    /// postback's, or whose signed content does (``signedConflicts``).
    package var conflicts = 0
    /// Conflicts whose signed content differs from the stored postback's: another validly
    /// signed postback under the same dedup key (included in ``conflicts``).
    package var signedConflicts = 0
    /// Entries quarantined: invalid + malformed + unsupported.
    package var quarantined = 0
    package var invalid = 0
    package var malformed = 0
    package var unsupported = 0
    /// Test-mode postbacks stored by this run (included in ``accepted``).
    package var testMode = 0
    /// AdAttributionKit development-key postbacks stored by this run (included in ``accepted``).
    package var development = 0
    /// Inputs read, and inputs that could not be read.
    package var files = 0
    package var unreadableFiles = 0
    /// The `ingest_runs` row of this run.
    package var runID: Int64 = 0
    package var seconds: Double = 0

    package init() {}

    package mutating func add(_ other: IngestSummary) {
        read += other.read
        accepted += other.accepted
        duplicates += other.duplicates
        conflicts += other.conflicts
        signedConflicts += other.signedConflicts
        quarantined += other.quarantined
        invalid += other.invalid
        malformed += other.malformed
        unsupported += other.unsupported
        testMode += other.testMode
        development += other.development
    }

    /// Postbacks per second over the run.
    package var rate: Double { seconds > 0 ? Double(read) / seconds : 0 }

    /// The summary for people.
    package var text: String {
        var lines = [
            "read \(formatCount(read)) postback\(read == 1 ? "" : "s") from \(files) input\(files == 1 ? "" : "s") in \(formatSeconds(seconds)) (\(formatCount(Int(rate.rounded())))/s)",
            "  accepted     \(formatCount(accepted))"
                + (testMode + development > 0 ? " (\(testMode) test mode, \(development) development)" : ""),
            "  duplicates   \(formatCount(duplicates))"
                + (conflicts > 0 ? " (\(conflicts) with conflicting values" : "")
                + (signedConflicts > 0 ? ", \(signedConflicts) of them with other signed content" : "")
                + (conflicts > 0 ? ")" : ""),
            "  quarantined  \(formatCount(quarantined)) (\(invalid) invalid, \(malformed) malformed, \(unsupported) unsupported)",
        ]
        if unreadableFiles > 0 {
            lines.append("  \(unreadableFiles) input\(unreadableFiles == 1 ? "" : "s") could not be read")
        }
        return lines.joined(separator: "\n")
    }

    /// The summary as one JSON object on one line.
    package var json: String {
        var object = JSONObjectWriter()
        object.add("read", read)
        object.add("accepted", accepted)
        object.add("duplicates", duplicates)
        object.add("conflicts", conflicts)
        object.add("signed_conflicts", signedConflicts)
        object.add("quarantined", quarantined)
        object.add("invalid", invalid)
        object.add("malformed", malformed)
        object.add("unsupported", unsupported)
        object.add("test_mode", testMode)
        object.add("development", development)
        object.add("files", files)
        object.add("unreadable_files", unreadableFiles)
        object.add("run_id", Int(runID))
        object.add("seconds", (seconds * 1000).rounded() / 1000)
        return object.text
    }
}
