import PostbackKit

/// A one-line progress display on standard error (files, postbacks, rate, ETA), redrawn at
/// most twice a second; shown only when standard error is a terminal.
final class IngestProgress {
    private let output: TextOutput
    private let enabled: Bool
    private let totalBytes: Int?
    private let totalFiles: Int
    private let started = UTCInstant.now()
    private var lastDrawn = UTCInstant(milliseconds: 0)
    private var drewSomething = false

    init(output: TextOutput, enabled: Bool, totalBytes: Int?, totalFiles: Int) {
        self.output = output
        self.enabled = enabled
        self.totalBytes = totalBytes
        self.totalFiles = totalFiles
    }

    func update(postbacks: Int, bytesRead: Int, filesOpened: Int) {
        guard enabled else { return }
        let now = UTCInstant.now()
        guard now.milliseconds - lastDrawn.milliseconds >= 500 else { return }
        lastDrawn = now
        let elapsed = Double(now.milliseconds - started.milliseconds) / 1000
        let rate = elapsed > 0 ? Double(postbacks) / elapsed : 0
        var line =
            "files \(filesOpened)/\(totalFiles), \(formatCount(postbacks)) postbacks, \(formatCount(Int(rate)))/s"
        if let totalBytes, totalBytes > 0, bytesRead > 0, elapsed > 1 {
            let remaining = elapsed * Double(max(0, totalBytes - bytesRead)) / Double(bytesRead)
            line += ", \(Int(100 * Double(bytesRead) / Double(totalBytes)))%, ETA \(formatSeconds(remaining))"
        }
        output.write("\r\u{1B}[K" + line)
        output.flush()
        drewSomething = true
    }

    /// Writes a message line, first clearing the progress line (redrawn at the next update).
    func message(_ line: String) {
        if enabled && drewSomething {
            output.write("\r\u{1B}[K")
            drewSomething = false
            lastDrawn = UTCInstant(milliseconds: 0)
        }
        output.line(line)
    }

    /// Clears the progress line.
    func finish() {
        guard enabled, drewSomething else { return }
        output.write("\r\u{1B}[K")
        output.flush()
        drewSomething = false
    }
}
