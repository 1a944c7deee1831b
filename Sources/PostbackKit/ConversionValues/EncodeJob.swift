#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// `postbackd encode`: one answer per state line, from one model.
public enum EncodeJob {
    /// The longest state line read; a longer one is refused and skipped.
    public static let maximumLineBytes = 1 << 20

    /// What a run did.
    public struct Summary: Sendable, Hashable {
        public var answered = 0
        /// Lines refused, each reported with its line number and field.
        public var refused = 0
    }

    /// Reads states from `input` (a path, or `-` for standard input), one JSON object per line
    /// (blank lines skipped), and writes one JSON line per state to `output`: the answer, or
    /// `{"line": N, "error": "…"}` for a state that cannot be read, which is also reported to
    /// `errors`. The other lines are answered whatever one line holds.
    public static func run(
        model: ConversionModel,
        input: String,
        explain: Bool,
        output: TextOutput,
        errors: TextOutput
    ) throws(EncodeInputError) -> Summary {
        let file: UnsafeMutablePointer<FILE>
        if input == "-" {
            // A stream of its own over a copy of the descriptor: closing it leaves stdin open.
            guard let standardInput = fdopen(dup(STDIN_FILENO), "rb") else {
                throw EncodeInputError(description: "cannot read standard input")
            }
            file = standardInput
        } else {
            guard let opened = fopen(input, "rb") else {
                throw EncodeInputError(description: "cannot read \(input): \(String(cString: strerror(errno)))")
            }
            file = opened
        }
        defer { fclose(file) }
        let name = input == "-" ? "standard input" : input

        var summary = Summary()
        var line = 0
        var buffer: UnsafeMutablePointer<CChar>? = nil
        var capacity = 0
        defer { free(buffer) }
        while true {
            let length = getline(&buffer, &capacity, file)
            guard length >= 0, let buffer else { break }
            line += 1
            var bytes = UnsafeRawBufferPointer(start: buffer, count: length)
            while let last = bytes.last, last == UInt8(ascii: "\n") || last == UInt8(ascii: "\r") {
                bytes = UnsafeRawBufferPointer(rebasing: bytes.dropLast())
            }
            if bytes.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }) { continue }
            let state: UserState
            do throws(UserStateError) {
                guard bytes.count <= maximumLineBytes else {
                    throw UserStateError(field: "", message: "longer than \(maximumLineBytes) bytes")
                }
                state = try UserStateParser.parse(Array(bytes))
            } catch {
                summary.refused += 1
                errors.line("postbackd encode: \(name):\(line): \(error)")
                var object = JSONObjectWriter()
                object.add("line", line)
                object.add("error", error.description)
                output.line(object.text)
                continue
            }
            output.line(model.encode(state, explain: explain).json)
            summary.answered += 1
        }
        if ferror(file) != 0 {
            throw EncodeInputError(description: "cannot read \(name) after line \(line)")
        }
        return summary
    }
}

/// The state input could not be read at all.
public struct EncodeInputError: Error, CustomStringConvertible {
    public var description: String
}
