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
    package func start() async throws -> String {
        try await script(["start"]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Stops the server (sessions are cut), waits, and starts it again on the same port.
    package func restart(pauseSeconds: Int) async throws {
        _ = try await script(["restart", String(pauseSeconds)])
    }

    /// Stops the server and keeps its data: ``start()`` resumes it on the same port.
    package func halt() async throws {
        _ = try await script(["halt"])
    }

    /// The running server's URL.
    package func url() async throws -> String {
        try await script(["url"]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Makes this folder's server a synchronous streaming standby of `primary` (which runs),
    /// starts it, and returns its URL.
    package func startStandby(of primary: PostgresDevServer) async throws -> String {
        try await script(["standby", Shell.quoted(primary.folder)]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Promotes this folder's standby to a primary.
    package func promote() async throws {
        _ = try await script(["promote"])
    }

    /// SIGKILLs the server and all its processes, as a machine that dies.
    package func kill() async throws {
        _ = try await script(["kill"])
    }

    /// Stops it, blocking the calling thread until it has: for a test's `defer`, which cannot
    /// suspend; a test stops it with ``halt()`` or ``kill()`` where it waits.
    package func stop() {
        _ = try? scriptBlocking(["stop"])
    }

    private func script(_ arguments: [String]) async throws -> String {
        try Self.checked(try await Shell.run(command(arguments), in: parentFolder, standardError: false), arguments)
    }

    private func scriptBlocking(_ arguments: [String]) throws -> String {
        try Self.checked(try Shell.runBlocking(command(arguments), in: parentFolder, standardError: false), arguments)
    }

    private func command(_ arguments: [String]) -> String {
        "POSTBACKD_PG_DIR=\(Shell.quoted(folder)) \(Shell.quoted(Repository.path("scripts/postgres-dev.sh"))) "
            + arguments.joined(separator: " ")
    }

    private var parentFolder: String { (folder as NSString).deletingLastPathComponent }

    private static func checked(_ run: Shell.Run, _ arguments: [String]) throws -> String {
        guard run.status == 0 else {
            throw TestStoreError(description: "scripts/postgres-dev.sh \(arguments.joined(separator: " ")) failed")
        }
        return run.output
    }
}
