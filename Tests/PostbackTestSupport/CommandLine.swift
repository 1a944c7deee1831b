import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Runs the `postbackd` binary that `swift test` built.
package enum Postbackd {
    /// What a run printed and how it ended.
    package struct Run: Sendable {
        package var status: Int32
        package var standardOutput: String
        package var standardError: String

        package var outputLines: [String] {
            standardOutput.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
        }
    }

    /// The built binary: beside the test bundle in the build products folder.
    package static let executable: String = {
        let testBinary = URL(
            fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
                ?? CommandLine.arguments[0]
        )
        var folder = testBinary.deletingLastPathComponent()
        // On Linux the test binary is `<products>/postbackdPackageTests.xctest`.
        if folder.lastPathComponent.hasSuffix(".xctest") { folder.deleteLastPathComponent() }
        return folder.appendingPathComponent("postbackd").path
    }()

    /// Whether runs `asUnprivilegedUser` change user (the tests run as root): file permissions
    /// bind them then, as they bind any user but root.
    package static var changesUser: Bool { getuid() == 0 }

    /// Runs `postbackd arguments…` in `directory`, feeding `input` to standard input, and
    /// suspends until it exits. The wait is on a thread of its own: a test waiting for a child
    /// on one of the few threads of Swift's cooperative pool (as many as cores) holds it from
    /// every other test meanwhile, and with both held, the awaits of all the others (an HTTP
    /// answer, a PostgreSQL reply under serve's 7 s deadline) waited tens of seconds.
    ///
    /// - Parameter asUnprivilegedUser: when the tests run as root, run as `nobody` (uid and
    ///   gid 65534, no groups, through `setpriv`), whom permissions bind.
    package static func run(
        _ arguments: [String],
        input: [UInt8]? = nil,
        directory: String? = nil,
        environment: [String: String] = [:],
        asUnprivilegedUser: Bool = false
    ) async throws -> Run {
        try await onThreadOfItsOwn {
            try runBlocking(
                arguments,
                input: input,
                directory: directory,
                environment: environment,
                asUnprivilegedUser: asUnprivilegedUser
            )
        }
    }

    /// ``run(_:input:directory:environment:asUnprivilegedUser:)``, blocking the calling thread
    /// until the child exits: for threads of a test's own, never a task's.
    package static func runBlocking(
        _ arguments: [String],
        input: [UInt8]? = nil,
        directory: String? = nil,
        environment: [String: String] = [:],
        asUnprivilegedUser: Bool = false
    ) throws -> Run {
        let process = Process()
        if asUnprivilegedUser && changesUser {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            process.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", executable] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
        }
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        var env = ProcessInfo.processInfo.environment
        for (key, value) in environment { env[key] = value }
        process.environment = env
        let outPipe = Pipe()
        let errPipe = Pipe()
        let inPipe = Pipe()
        process.standardOutput = outPipe
        process.standardError = errPipe
        process.standardInput = inPipe
        try process.run()
        // Read both pipes while the process runs, so a large output cannot block it: on threads
        // of their own, not Dispatch's global queue, whose few threads (as many as cores) other
        // tests' blocking waits can all hold: a child writing more than a pipe holds then never
        // exits (seen: an ingest logging at trace level, blocked on its standard error).
        let group = DispatchGroup()
        nonisolated(unsafe) var out = Data()
        nonisolated(unsafe) var err = Data()
        group.enter()
        Thread {
            out = outPipe.fileHandleForReading.readDataToEndOfFile()
            group.leave()
        }.start()
        group.enter()
        Thread {
            err = errPipe.fileHandleForReading.readDataToEndOfFile()
            group.leave()
        }.start()
        if let input { inPipe.fileHandleForWriting.write(Data(input)) }
        try inPipe.fileHandleForWriting.close()
        process.waitUntilExit()
        group.wait()
        return Run(
            status: process.terminationStatus,
            standardOutput: String(decoding: out, as: UTF8.self),
            standardError: String(decoding: err, as: UTF8.self)
        )
    }
}

extension Postbackd {
    /// Generated postbacks of every version, signed with the test keys, as JSON Lines text
    /// (`postbackd generate`; the same arguments always give the same text).
    package static func generated(
        count: Int,
        seed: Int,
        duplicates: Double = 0.05,
        invalid: Double = 0.02
    ) async throws -> String {
        let run = try await run([
            "generate", "--key", TestKeys.directory + "/p192-private.pem", "--key",
            TestKeys.directory + "/p256-private.pem",
            "--versions", "1.0,2.0,2.1,2.2,3.0,4.0", "--count", "\(count)", "--seed", "\(seed)",
            "--duplicates", "\(duplicates)", "--invalid", "\(invalid)", "--test-mode", "0.01",
        ])
        guard run.status == 0 else {
            throw GenerateError(description: "postbackd generate exited \(run.status): \(run.standardError)")
        }
        return run.standardOutput
    }

    struct GenerateError: Error, CustomStringConvertible {
        var description: String
    }
}

/// Runs `work`, which blocks (a wait for a child process), on a thread of its own and suspends
/// until it returns: not on one of the cooperative pool's few threads, which every other test
/// needs meanwhile.
package func onThreadOfItsOwn<Result: Sendable>(_ work: @escaping @Sendable () throws -> Result) async throws -> Result
{
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Swift.Result { try work() }) }.start()
    }
}
