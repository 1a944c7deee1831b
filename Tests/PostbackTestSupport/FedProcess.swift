import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `postbackd arguments…` reading its standard input (`-`) from the test, which feeds it
/// part by part. While the test holds that input open the run cannot end, so a test that
/// disturbs a run part way (restarts its database, kills its primary) lands part way however
/// late its own poll runs: under CI's load a poll waited seconds for a thread and found a run
/// of a file ended (twice, with a poll for a tenth and then for a fiftieth of the file).
package final class FedProcess: @unchecked Sendable {
    // @unchecked: both are set once; FileHandle's writes and Process's queries are thread-safe.
    package let process: Process
    private let input: FileHandle

    /// Starts `postbackd arguments…` with its standard input a pipe from this test.
    package init(_ arguments: [String], standardOutput: Any, standardError: Any) throws {
        // A child that stopped (as a restart may make it) closes its end: a write then fails
        // with EPIPE, which the caller is told of, rather than the signal ending the tests.
        signal(SIGPIPE, SIG_IGN)
        let pipe = Pipe()
        process = Process()
        process.executableURL = URL(fileURLWithPath: Postbackd.executable)
        process.arguments = arguments
        process.standardInput = pipe
        process.standardOutput = standardOutput
        process.standardError = standardError
        input = pipe.fileHandleForWriting
        try process.run()
        try pipe.fileHandleForReading.close()
    }

    /// Writes `lines` and a line feed after each, on a thread of its own: a pipe holds 64 KiB,
    /// so the write returns once the child has read all but that much.
    ///
    /// - Throws: when the child has closed its input (it stopped).
    package func feed<Lines: Sequence>(_ lines: Lines) async throws where Lines.Element: StringProtocol {
        let bytes = Data(lines.map { $0 + "\n" }.joined().utf8)
        let input = self.input
        try await onThreadOfItsOwn { try input.write(contentsOf: bytes) }
    }

    /// Ends the input: the child reads to its end and finishes.
    package func end() throws {
        try input.close()
    }
}
