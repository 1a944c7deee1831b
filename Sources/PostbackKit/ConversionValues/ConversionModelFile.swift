#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Conversion model files: reading and parsing them, naming the file in every problem.
package enum ConversionModelFile {
    /// The largest model file read: no real model comes near it.
    package static let maximumBytes = 16 << 20

    /// Reads the models in one file (for `verify --model`).
    package static func read(file: String) throws(ModelFilesError) -> [ConversionModel] {
        let bytes: [UInt8]
        do {
            bytes = try readWholeFile(file)
        } catch {
            throw ModelFilesError(.unreadable, problems: [error.reason])
        }
        do {
            return try ConversionModelParser.parseAll(bytes)
        } catch {
            throw ModelFilesError(.invalid, problems: error.problems.map { "\(file): \($0)" })
        }
    }

    /// The bytes of a model file, at most ``maximumBytes``.
    package static func readWholeFile(_ path: String) throws(WholeFileError) -> [UInt8] {
        try WholeFile.read(path, limit: maximumBytes, what: "a model file")
    }
}

/// Model files that cannot be used: every problem, each naming its file (and JSON path).
package struct ModelFilesError: CodedError {
    package struct Code: Hashable, Sendable {
        fileprivate enum Value: Hashable { case unreadable, invalid }
        fileprivate let value: Value
        /// A file cannot be read (see ``WholeFileError``).
        package static let unreadable = Code(value: .unreadable)
        /// The files hold no usable model: not JSON, not a valid model; or, added together, two
        /// models for one app or a bundle identifier that cannot be recorded. `models add` lists
        /// every problem of every file under this code, unreadable files among them.
        package static let invalid = Code(value: .invalid)
    }

    package let code: Code
    /// One line per problem, each naming its file.
    package let problems: [String]
    /// The problems, one per line.
    package var reason: String { problems.joined(separator: "\n") }

    package init(_ code: Code, problems: [String]) {
        self.code = code
        self.problems = problems
    }
}
