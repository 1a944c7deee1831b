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
    package static func read(file: String) throws(FileProblemsError) -> [ConversionModel] {
        let bytes: [UInt8]
        do {
            bytes = try readWholeFile(file)
        } catch {
            throw FileProblemsError(.unreadable, problems: [error.reason])
        }
        do {
            return try ConversionModelParser.parseAll(bytes)
        } catch {
            throw FileProblemsError(.invalid, problems: error.problems.map { "\(file): \($0)" })
        }
    }

    /// The bytes of a model file, at most ``maximumBytes``.
    package static func readWholeFile(_ path: String) throws(PostbackKitError) -> [UInt8] {
        try WholeFile.read(path, limit: maximumBytes, what: "a model file")
    }
}
