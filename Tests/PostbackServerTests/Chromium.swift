import Foundation
import PostbackTestSupport

/// Headless Chromium (Debian's `chromium`), with every host but 127.0.0.1 unresolvable and a
/// network log of what it requested.
struct Chromium {
    let executable: String
    let profile: String
    let netLog: String
    /// Where screenshots are kept: `.build/test-artifacts`, a CI artifact.
    static let artifacts = Repository.path(".build/test-artifacts")

    /// The installed browser, or nil: the browser cases are then skipped (`.enabled(if:)`), and
    /// a notice test says so.
    static let installed: String? = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"]
        .first(where: { FileManager.default.isExecutableFile(atPath: $0) })

    static let skipNotice =
        "headless Chromium is not installed: the browser cases are skipped (apt-get install chromium; .ci/run installs it)"

    /// The browser cases, skipped without a browser.
    static let cases = SkippedCases(skipped: installed == nil, notice: skipNotice)

    init(directory: TemporaryDirectory) throws {
        guard let found = Self.installed else {
            throw ServerError(
                description: "headless Chromium is needed: apt-get install chromium (.ci/run installs it)"
            )
        }
        executable = found
        profile = directory.path + "/chromium-\(UInt32.random(in: 0...UInt32.max))"
        netLog = profile + "-net.json"
        try FileManager.default.createDirectory(atPath: Self.artifacts, withIntermediateDirectories: true)
    }

    private func run(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments =
            [
                "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                // Autofill asks Google about pages with forms: a browser feature, not the page.
                "--disable-features=AutofillServerCommunication",
                "--user-data-dir=" + profile,
                "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
                "--log-net-log=" + netLog,
            ] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw ServerError(description: "chromium exited \(process.terminationStatus)")
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// The page's DOM once loaded (no script runs on it: the server drew everything).
    func dumpDOM(_ url: String) throws -> String {
        try run(["--window-size=1280,800", "--dump-dom", url])
    }

    /// A PNG of the page at `width`×`height`, kept under ``artifacts``.
    func screenshot(_ url: String, width: Int, height: Int, name: String) throws -> [UInt8] {
        let path = Self.artifacts + "/" + name
        try? FileManager.default.removeItem(atPath: path)
        _ = try run(["--window-size=\(width),\(height)", "--screenshot=" + path, url])
        return Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// The URLs requested in the last run on behalf of a page of `site` (`http://127.0.0.1`),
    /// from the network log: each request job whose network isolation key's top frame is that
    /// site, the page itself included. The browser's own requests (updates, sign-in) have other
    /// keys; none can leave the machine anyway, as every host but 127.0.0.1 fails to resolve.
    func pageRequests(site: String) throws -> [String] {
        var text = try String(contentsOfFile: netLog, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        // A log cut short at exit lacks its end.
        if !text.hasSuffix("}") {
            if text.hasSuffix(",") { text.removeLast() }
            text += "]}"
        }
        guard let log = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
            let constants = log["constants"] as? [String: Any],
            let types = constants["logEventTypes"] as? [String: Int],
            let startJob = types["URL_REQUEST_START_JOB"],
            let events = log["events"] as? [[String: Any]]
        else {
            throw ServerError(description: "the network log is not the expected JSON")
        }
        return events.compactMap { event in
            guard event["type"] as? Int == startJob, let parameters = event["params"] as? [String: Any],
                let url = parameters["url"] as? String,
                (parameters["network_isolation_key"] as? String)?.hasPrefix(site + " ") == true
            else { return nil }
            return url
        }
    }

    /// A PNG's width and height, from its IHDR chunk.
    static func pngSize(_ bytes: [UInt8]) throws -> (Int, Int) {
        guard bytes.count > 24, bytes[0..<8] == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] else {
            throw ServerError(description: "not a PNG")
        }
        func big(_ at: Int) -> Int { bytes[at..<at + 4].reduce(0) { $0 << 8 | Int($1) } }
        return (big(16), big(20))
    }
}
