import ArgumentParser
import PostbackKit

#if canImport(Glibc)
import Glibc
#endif

@main
struct Postbackd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "postbackd",
        abstract: "Verify, deduplicate and count Apple's SKAdNetwork install postbacks.",
        discussion: """
            Examples:
              postbackd verify SamplePostbacks/apple
              postbackd verify --format json --explain postback.json
              cat postbacks.jsonl | postbackd verify -

            Exit status: \(ExitStatus.documentation)
            """,
        version: PostbackKit.version,
        subcommands: [Verify.self, Generate.self]
    )

    /// Like ArgumentParser's `main`, but usage errors exit with status 2 (as I/O errors do),
    /// keeping 1 for "some postback is not valid".
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var command = command as? AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch {
            if exitCode(for: error) == .validationFailure {
                let message = fullMessage(for: error)
                let errors = TextOutput.standardError()
                errors.write(message.hasSuffix("\n") ? message : message + "\n")
                errors.flush()
                Glibc.exit(ExitStatus.usageOrInputError.rawValue)
            }
            exit(withError: error)
        }
    }
}
