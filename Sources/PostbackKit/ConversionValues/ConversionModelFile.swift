#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Conversion model files: reading and parsing them, naming the file in every problem.
public enum ConversionModelFile {
    /// The largest model file read: no real model comes near it.
    public static let maximumBytes = 16 << 20

    /// Reads the models in one file (for `verify --model`).
    public static func read(file: String) throws(ModelFilesError) -> [ConversionModel] {
        guard let bytes = readWholeFile(file) else {
            throw ModelFilesError(problems: ["\(file): cannot read the file"])
        }
        do {
            return try ConversionModelParser.parseAll(bytes)
        } catch {
            throw ModelFilesError(problems: error.problems.map { "\(file): \($0)" })
        }
    }

    /// The bytes of a file (models are small; postbacks are never read this way); nil when it
    /// cannot be read or is larger than ``maximumBytes``.
    public static func readWholeFile(_ path: String) -> [UInt8]? {
        guard let file = fopen(path, "rb") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = fread(&chunk, 1, chunk.count, file)
            if count > 0 { bytes += chunk.prefix(count) }
            if count < chunk.count { break }
            if bytes.count > maximumBytes { return nil }
        }
        return bytes
    }
}

/// Model files that cannot be added: every problem, each naming its file and JSON path.
public struct ModelFilesError: Error, CustomStringConvertible {
    public var problems: [String]
    public var description: String { problems.joined(separator: "\n") }

    public init(problems: [String]) {
        self.problems = problems
    }
}
