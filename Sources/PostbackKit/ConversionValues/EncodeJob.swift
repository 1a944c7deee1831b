#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// `postbackd encode`: one answer per state line, from one model.
package enum EncodeJob {
    /// The longest state line read; a longer one is refused and skipped.
    package static let maximumLineBytes = 1 << 20

    /// What a run did.
    package struct Summary: Sendable, Hashable {
        package var answered = 0
        /// Lines refused, each reported with its line number and field.
        package var refused = 0
    }

    /// Reads states from `input` (a path, or `-` for standard input), one JSON object per line
    /// (blank lines skipped), and writes one JSON line per state to `output`: the answer, or
    /// `{"line": N, "error": "…"}` for a state that cannot be read, which is also reported to
    /// `errors`. The other lines are answered whatever one line holds.
    ///
    /// - Throws: ``PostbackKitError`` when the input cannot be opened or reading it fails part way.
    package static func run(
        model: ConversionModel,
        input: String,
        explain: Bool,
        output: TextOutput,
        errors: TextOutput
    ) throws(PostbackKitError) -> Summary {
        let lines = try TextLines(input, maximumBytes: maximumLineBytes)
        var summary = Summary()
        while let next = try lines.next() {
            let line = lines.number
            let state: UserState
            do throws(UserStateError) {
                guard case .text(let bytes) = next else {
                    throw UserStateError(.tooLarge, field: "", message: "longer than \(maximumLineBytes) bytes")
                }
                state = try UserStateParser.parse(bytes)
            } catch {
                summary.refused += 1
                errors.line("postbackd encode: \(lines.name):\(line): \(error)")
                var object = JSONObjectWriter()
                object.add("line", line)
                object.add("error", error.description)
                output.line(object.text)
                continue
            }
            output.line(model.encode(state, explain: explain).json)
            summary.answered += 1
        }
        return summary
    }
}
