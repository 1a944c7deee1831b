import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a command writes what it prints: a file descriptor (buffered) or, in tests, memory.
package final class TextOutput: Sendable {
    private enum Target {
        case descriptor(Int32, owned: Bool)
        case memory
    }

    private struct State {
        var buffer: [UInt8] = []
        var captured: [UInt8] = []
    }

    private let target: Target
    private let state = Mutex(State())
    private static let flushThreshold = 64 * 1024

    private init(target: Target) {
        self.target = target
    }

    /// Standard output.
    package static func standardOutput() -> TextOutput { TextOutput(target: .descriptor(STDOUT_FILENO, owned: false)) }
    /// Standard error.
    package static func standardError() -> TextOutput { TextOutput(target: .descriptor(STDERR_FILENO, owned: false)) }
    /// A file, created or truncated.
    package static func file(_ path: String) throws -> TextOutput {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw PostbackKitError(.unreadable, "\(path): cannot write: \(String(cString: strerror(errno)))")
        }
        return TextOutput(target: .descriptor(descriptor, owned: true))
    }

    deinit {
        flush()
        if case .descriptor(let descriptor, owned: true) = target { close(descriptor) }
    }
    /// Keeps everything written, for ``text``.
    package static func memory() -> TextOutput { TextOutput(target: .memory) }

    /// Writes `text` followed by a line feed.
    package func line(_ text: String) {
        write(text + "\n")
    }

    /// Writes `text` as it is.
    package func write(_ text: String) {
        let overflow: [UInt8]? = state.withLock { state in
            switch target {
            case .memory:
                state.captured.append(contentsOf: text.utf8)
                return nil
            case .descriptor:
                state.buffer.append(contentsOf: text.utf8)
                guard state.buffer.count >= Self.flushThreshold else { return nil }
                defer { state.buffer.removeAll(keepingCapacity: true) }
                return state.buffer
            }
        }
        if let overflow { emit(overflow) }
    }

    /// Writes out what is buffered.
    package func flush() {
        let pending = state.withLock { state -> [UInt8] in
            defer { state.buffer.removeAll(keepingCapacity: true) }
            return state.buffer
        }
        if !pending.isEmpty { emit(pending) }
    }

    /// Everything written to a ``memory()`` output.
    package var text: String {
        state.withLock { String(decoding: $0.captured, as: UTF8.self) }
    }

    /// Whether this output is a terminal (for progress display and colour).
    package var isTerminal: Bool {
        guard case .descriptor(let descriptor, _) = target else { return false }
        return isatty(descriptor) == 1
    }

    private func emit(_ bytes: [UInt8]) {
        guard case .descriptor(let descriptor, _) = target else { return }
        _ = writeWhole(bytes, to: descriptor)  // a closed pipe: nothing more can be shown
    }
}

/// Writes the whole of `bytes` to `descriptor`, again after a partial or interrupted write;
/// returns the `errno` of a write that failed (a closed pipe, a full disk), or nil.
package func writeWhole(_ bytes: [UInt8], to descriptor: Int32) -> Int32? {
    bytes.withUnsafeBytes { raw in
        var offset = 0
        while offset < raw.count {
            let written = Glibc.write(descriptor, raw.baseAddress.map { $0 + offset }, raw.count - offset)
            if written > 0 {
                offset += written
            } else if written < 0 && errno == EINTR {
                continue
            } else {
                return errno
            }
        }
        return nil
    }
}

extension StringProtocol {
    /// The text with every character that `replacement` gives text for replaced by that text
    /// (an escaping: HTML's `&amp;`, a URI's `%25`, a Prometheus label's `\"`).
    package func replacingCharacters(_ replacement: (Character) -> String?) -> String {
        var out = ""
        out.reserveCapacity(utf8.count)
        for character in self {
            if let replaced = replacement(character) { out += replaced } else { out.append(character) }
        }
        return out
    }

    /// Without leading and trailing spaces (only U+0020: option values and header lists).
    package var withoutSurroundingSpaces: String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}

extension StringProtocol {
    /// The text with what a terminal would act on escaped, for printing text that came from
    /// outside (campaign and app names, reasons quoting input): C0 and C1 control characters
    /// and DEL as `\x1b`, `\u{9b}`, and the bidirectional overrides and isolates (which reorder
    /// what is shown) as `\u{202e}`. A name cannot move the cursor, clear or retitle the
    /// screen, or hide text. Everything else is kept, so ordinary text prints as it is.
    package var escapedForTerminal: String {
        guard unicodeScalars.contains(where: \.needsTerminalEscape) else { return String(self) }
        var out = ""
        out.reserveCapacity(utf8.count + 8)
        for scalar in unicodeScalars {
            if scalar.needsTerminalEscape {
                let digits = String(scalar.value, radix: 16)
                out +=
                    scalar.value < 0x80
                    ? "\\x" + String(repeating: "0", count: 2 - digits.count) + digits : "\\u{\(digits)}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}

extension Unicode.Scalar {
    fileprivate var needsTerminalEscape: Bool {
        switch value {
        case 0x00...0x1F, 0x7F...0x9F, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }
}
