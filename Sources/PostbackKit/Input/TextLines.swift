#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The lines of a file, or of standard input (`-`), one at a time: line ends removed, blank
/// lines skipped, each with its 1-based number. For the JSON Lines inputs of `encode` and
/// `apple-ads add`. A line longer than the limit is skipped as it is read, so no line takes
/// more memory than the limit.
package final class TextLines {
    /// A line read.
    package enum Line: Sendable, Hashable {
        case text([UInt8])
        /// Longer than the limit: its length, its bytes not kept.
        case tooLong(Int)
    }

    /// The input as messages name it: the path, or `standard input`.
    package let name: String
    /// The number of the line ``next()`` returned last.
    package private(set) var number = 0
    private let maximumBytes: Int
    private let file: UnsafeMutablePointer<FILE>
    private var chunk = [UInt8](repeating: 0, count: 65_536)
    private var chunkCount = 0
    private var position = 0

    /// Opens `path` (`-`: standard input, through a copy of its descriptor, so that closing
    /// this leaves standard input open), for lines of at most `maximumBytes`.
    ///
    /// - Throws: ``PostbackKitError`` naming the input when it cannot be opened.
    package init(_ path: String, maximumBytes: Int) throws(PostbackKitError) {
        self.maximumBytes = maximumBytes
        if path == "-" {
            guard let standardInput = fdopen(dup(STDIN_FILENO), "rb") else {
                throw PostbackKitError(.cannotOpen, "cannot read standard input")
            }
            file = standardInput
            name = "standard input"
        } else {
            guard let opened = fopen(path, "rb") else {
                throw PostbackKitError(.cannotOpen, "cannot read \(path): \(String(cString: strerror(errno)))")
            }
            file = opened
            name = path
        }
    }

    deinit {
        fclose(file)
    }

    /// The next line that is not blank, without its line end; nil at the end of the input.
    ///
    /// - Throws: ``PostbackKitError`` when reading fails part way.
    package func next() throws(PostbackKitError) -> Line? {
        while let line = try rawLine() {
            number += 1
            guard case .text(var bytes) = line else { return line }
            while bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
            if bytes.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }) { continue }
            return .text(bytes)
        }
        return nil
    }

    /// The bytes up to the next line feed (or the end), or nil when nothing is left.
    private func rawLine() throws(PostbackKitError) -> Line? {
        var line: [UInt8] = []
        var length = 0
        var started = false
        while true {
            if position == chunkCount {
                chunkCount = fread(&chunk, 1, chunk.count, file)
                position = 0
                if chunkCount == 0 {
                    if ferror(file) != 0 {
                        throw PostbackKitError(.readFailed, "cannot read \(name) after line \(number)")
                    }
                    guard started else { return nil }
                    break
                }
            }
            started = true
            let end = chunk[position..<chunkCount].firstIndex(of: UInt8(ascii: "\n")) ?? chunkCount
            length += end - position
            if length <= maximumBytes { line += chunk[position..<end] } else { line = [] }
            let foundEnd = end < chunkCount
            position = foundEnd ? end + 1 : end
            if foundEnd { break }
        }
        return length > maximumBytes ? .tooLong(length) : .text(line)
    }
}
