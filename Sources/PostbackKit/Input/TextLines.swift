#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The lines of a file, or of standard input (`-`), one at a time: line ends removed, blank
/// lines skipped, each with its 1-based number. For the JSON Lines inputs of `encode` and
/// `apple-ads add`.
public final class TextLines {
    /// The input as messages name it: the path, or `standard input`.
    public let name: String
    /// The number of the line ``next()`` returned last.
    public private(set) var number = 0
    private let file: UnsafeMutablePointer<FILE>
    private var buffer: UnsafeMutablePointer<CChar>? = nil
    private var capacity = 0

    /// Opens `path` (`-`: standard input, through a copy of its descriptor, so that closing
    /// this leaves standard input open).
    ///
    /// - Throws: ``TextLinesError`` naming the input when it cannot be opened.
    public init(_ path: String) throws(TextLinesError) {
        if path == "-" {
            guard let standardInput = fdopen(dup(STDIN_FILENO), "rb") else {
                throw TextLinesError(description: "cannot read standard input")
            }
            file = standardInput
            name = "standard input"
        } else {
            guard let opened = fopen(path, "rb") else {
                throw TextLinesError(description: "cannot read \(path): \(String(cString: strerror(errno)))")
            }
            file = opened
            name = path
        }
    }

    deinit {
        free(buffer)
        fclose(file)
    }

    /// The next line that is not blank, without its line end; nil at the end of the input.
    ///
    /// - Throws: ``TextLinesError`` when reading fails part way.
    public func next() throws(TextLinesError) -> [UInt8]? {
        while true {
            let length = getline(&buffer, &capacity, file)
            guard length >= 0, let buffer else {
                if ferror(file) != 0 { throw TextLinesError(description: "cannot read \(name) after line \(number)") }
                return nil
            }
            number += 1
            var bytes = UnsafeRawBufferPointer(start: buffer, count: length)
            while let last = bytes.last, last == UInt8(ascii: "\n") || last == UInt8(ascii: "\r") {
                bytes = UnsafeRawBufferPointer(rebasing: bytes.dropLast())
            }
            if bytes.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }) { continue }
            return Array(bytes)
        }
    }
}

/// An input that cannot be read.
public struct TextLinesError: Error, CustomStringConvertible {
    public var description: String
}
