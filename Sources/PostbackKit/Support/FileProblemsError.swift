/// Files that cannot be used as they are (spend and exchange-rate files, campaign mappings,
/// conversion models): every problem found, one line each, each naming its file and where in it
/// (a line and column, a JSON path).
///
/// Errors compare equal by ``code``; ``reason`` lists the problems, one per line.
package struct FileProblemsError: CodedError {
    package typealias Code = ErrorCode<Self>

    package let code: Code
    /// The file as messages name it, when every problem is of that one file.
    package let file: String?
    /// One line per problem, each naming its file (`FILE:LINE: column: what`, `FILE: $.path: what`).
    package let problems: [String]
    /// The problems, one per line.
    package var reason: String { problems.joined(separator: "\n") }
    package let source: ErrorSource

    package init(
        _ code: Code,
        file: String? = nil,
        problems: [String],
        fileID: String = #fileID,
        line: Int = #line
    ) {
        self.code = code
        self.file = file
        self.problems = problems
        self.source = ErrorSource(fileID: fileID, line: line)
    }
}

extension ErrorCode where Domain == FileProblemsError {
    /// The files cannot be used as they are: unreadable, a header without a required column or
    /// with an unknown one, rows that cannot be read, not JSON or not a valid model, or (added
    /// together) rows or models that contradict each other. Every problem is listed.
    package static let invalid = Self("invalid")
    /// The files hold a header and no row.
    package static let empty = Self("empty")
    /// A file cannot be read at all (see ``PostbackKitError``).
    package static let unreadable = Self("unreadable")
}
