import ArgumentParser

/// postbackd's exit statuses, documented in `--help`.
extension ExitCode {
    /// Something could not be done: a usage error, a path that does not exist, an unreadable
    /// input or database.
    static let usageOrInputError = ExitCode(2)
    /// The run completed, but not every postback was valid.
    static let notAllValid = ExitCode(1)
}

enum ExitStatus {
    static let usageOrInputError = ExitCode.usageOrInputError

    static let documentation = """
        0 every postback is valid; 1 some postback is invalid, malformed or unsupported; \
        2 usage error, an input that could not be read, or a store that cannot be used \
        (one sentence names it and says what to do; docs/faults-and-backups.md has the table).
        """
}
