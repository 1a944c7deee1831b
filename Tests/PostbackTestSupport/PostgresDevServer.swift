import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A throwaway PostgreSQL server of a test's own, through `scripts/postgres-dev.sh` (for tests
/// that stop or restart the server, which must not disturb the shared test server).
package final class PostgresDevServer: Sendable {
    package let folder: String

    /// - Parameter folder: the state folder; the postgres user must be able to reach it.
    package init(folder: String) throws {
        self.folder = folder
        // Temporary folders are 0700; when tests run as root the server runs as postgres.
        var parent = (folder as NSString).deletingLastPathComponent
        while parent.count > 1 {
            _ = chmod(parent, 0o755)
            if parent == NSTemporaryDirectory() || parent == "/tmp" { break }
            parent = (parent as NSString).deletingLastPathComponent
        }
    }

    /// Starts it and returns its URL.
    package func start() throws -> String {
        try script(["start"]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Stops the server (sessions are cut), waits, and starts it again on the same port.
    package func restart(pauseSeconds: Int) throws {
        _ = try script(["restart", String(pauseSeconds)])
    }

    /// Stops the server and keeps its data: ``start()`` resumes it on the same port.
    package func halt() throws {
        _ = try script(["halt"])
    }

    /// The running server's URL.
    package func url() throws -> String {
        try script(["url"]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Makes this folder's server a synchronous streaming standby of `primary` (which runs),
    /// starts it, and returns its URL.
    package func startStandby(of primary: PostgresDevServer) throws -> String {
        try script(["standby", Shell.quoted(primary.folder)]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Promotes this folder's standby to a primary.
    package func promote() throws {
        _ = try script(["promote"])
    }

    /// SIGKILLs the server and all its processes, as a machine that dies.
    package func kill() throws {
        _ = try script(["kill"])
    }

    package func stop() {
        _ = try? script(["stop"])
    }

    private func script(_ arguments: [String]) throws -> String {
        let run = try Shell.run(
            "POSTBACKD_PG_DIR=\(Shell.quoted(folder)) \(Shell.quoted(Repository.path("scripts/postgres-dev.sh"))) "
                + arguments.joined(separator: " "),
            in: (folder as NSString).deletingLastPathComponent,
            standardError: false
        )
        guard run.status == 0 else {
            throw TestStoreError(description: "scripts/postgres-dev.sh \(arguments.joined(separator: " ")) failed")
        }
        return run.output
    }
}
