import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A command line run through `/bin/sh -c`, for the client tools a test uses as a person would
/// (`psql`, `pg_dump`).
package enum Shell {
    package struct Run: Sendable {
        package var status: Int32
        /// Standard output and standard error, together.
        package var output: String
    }

    /// Runs `command` with its output into a file of its own in `folder`, read and removed
    /// after, and suspends until it exits: the wait is on a thread of its own, not one of the
    /// cooperative pool's few (see ``Postbackd/run(_:input:directory:environment:asUnprivilegedUser:)``).
    ///
    /// - Parameter standardError: keep standard error in ``Run/output`` (else it is dropped).
    package static func run(_ command: String, in folder: String, standardError: Bool = true) async throws -> Run {
        try await onThreadOfItsOwn { try runBlocking(command, in: folder, standardError: standardError) }
    }

    /// ``run(_:in:standardError:)``, blocking the calling thread until `command` exits (with
    /// `posix_spawn` and `waitpid`: Foundation's `Process.waitUntilExit` was seen never to
    /// return here once a script had left a server running): for a `defer`, or a thread of a
    /// test's own.
    package static func runBlocking(_ command: String, in folder: String, standardError: Bool = true) throws -> Run {
        let outputPath = folder + "/shell-\(UUID().uuidString).out"
        let line = "(" + command + ") >'\(outputPath)' " + (standardError ? "2>&1" : "2>/dev/null") + " </dev/null"
        var pid: pid_t = 0
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/sh"), strdup("-c"), strdup(line), nil]
        defer { for pointer in argv { free(pointer) } }
        // Only standard input, output and error: a server the command starts (`pg_ctl`) must
        // not hold a pipe the test process has open, as it otherwise would for its whole life
        // (seen: a restarted PostgreSQL held the write end of a child's standard input, which
        // then never read to its end).
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        _ = closeFrom?(&actions, 3)
        guard posix_spawn(&pid, "/bin/sh", &actions, nil, argv, environ) == 0 else {
            throw TestStoreError(description: "cannot run /bin/sh -c \(command)")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        try? FileManager.default.removeItem(atPath: outputPath)
        return Run(status: (status >> 8) & 0xff, output: output)
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which its module
    /// map does not show Swift.
    private static let closeFrom:
        (
            @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        )? = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np").map {
            unsafeBitCast(
                $0,
                to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self
            )
        }

    /// `text` quoted for the shell.
    package static func quoted(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
