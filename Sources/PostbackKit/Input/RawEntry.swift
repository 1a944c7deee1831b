/// Where one postback was read: the file (or `-` for standard input), its position there and
/// the line it starts on.
package struct EntryLocation: Sendable, Hashable, CustomStringConvertible {
    /// The path as given or found while walking a folder; `-` for standard input.
    package var source: String
    /// 0-based position in the file: the array index, or the line number minus one in JSON
    /// Lines; 0 for a file holding one object.
    package var index: Int
    /// 1-based line the entry starts on.
    package var line: Int
    /// How the file was read.
    package var form: InputForm

    package init(source: String, index: Int, line: Int, form: InputForm) {
        self.source = source
        self.index = index
        self.line = line
        self.form = form
    }

    /// `file`, `file[3]` (array index) or `file:4` (JSON Lines line), for messages.
    package var description: String {
        switch form {
        case .object: source
        case .array: "\(source)[\(index)]"
        case .lines: "\(source):\(line)"
        }
    }
}

/// The three shapes a postback file can have.
package enum InputForm: String, Sendable, Hashable {
    /// The file holds one JSON object.
    case object
    /// The file holds a JSON array of objects.
    case array
    /// JSON Lines: every non-blank line is one postback.
    case lines
}

/// Why an entry was refused before its JSON was read.
package enum EntryReadProblem: Sendable, Hashable, CustomStringConvertible {
    /// The entry is larger than ``InputLimits/maximumPostbackBytes``.
    case postbackTooLarge(size: Int)
    /// A JSON Lines line is longer than ``InputLimits/maximumLineBytes`` (`size` is a lower bound
    /// when reading stopped counting).
    case lineTooLong(size: Int)
    /// The file or array ended inside this entry.
    case truncated(String)
    /// The array is broken here (for example a missing comma); reading of the file stopped.
    case brokenArray(String)

    package var description: String {
        switch self {
        case .postbackTooLarge(let size):
            "postback is \(size) bytes; postbackd refuses postbacks over \(InputLimits.maximumPostbackBytes) bytes (64 KiB)"
        case .lineTooLong(let size):
            "line is over \(InputLimits.maximumLineBytes) bytes (1 MiB; at least \(size) read); postbackd refuses it"
        case .truncated(let detail): detail
        case .brokenArray(let detail): detail
        }
    }
}

/// Size limits on untrusted input.
package enum InputLimits {
    /// A postback larger than this is refused (Apple's are under 1 KiB).
    package static let maximumPostbackBytes = 64 * 1024
    /// A JSON Lines line longer than this is refused without being held in memory.
    package static let maximumLineBytes = 1024 * 1024
}

/// One postback's bytes and where they came from, inside a batch's shared storage.
package struct RawEntry: Sendable {
    package var location: EntryLocation
    /// The entry's bytes within ``EntryBatch/bytes`` (at most 64 KiB: an oversized entry keeps
    /// its first 64 KiB for quarantine).
    package var range: Range<Int>
    /// Set when the entry was refused while reading.
    package var problem: EntryReadProblem?

    package init(location: EntryLocation, range: Range<Int>, problem: EntryReadProblem? = nil) {
        self.location = location
        self.range = range
        self.problem = problem
    }
}

/// Consecutive entries read from the inputs, sharing one byte buffer.
package struct EntryBatch: Sendable {
    /// Position of this batch in the run, from 0.
    package var sequence: Int
    package var bytes: [UInt8]
    package var entries: [RawEntry]
    /// Where the reader stood once this batch was read: a consumer on another thread reports
    /// progress and problems from here, never from the reader itself.
    package var readerState = ReaderState()

    package init(sequence: Int, bytes: [UInt8], entries: [RawEntry]) {
        self.sequence = sequence
        self.bytes = bytes
        self.entries = entries
    }

    /// The bytes of one entry.
    package func bytes(of entry: RawEntry) -> ArraySlice<UInt8> {
        bytes[entry.range]
    }
}

/// Where an ``EntryReader`` stood after a batch: bytes read and files opened so far, and the
/// problems with whole inputs found while reading it.
package struct ReaderState: Sendable {
    package var bytesRead = 0
    package var filesOpened = 0
    package var diagnostics: [InputDiagnostic] = []

    package init() {}
}

/// A problem with an input as a whole (not one postback): an unreadable file, an empty one.
package struct InputDiagnostic: Error, Sendable, Hashable, CustomStringConvertible {
    package enum Severity: String, Sendable, Hashable {
        /// Something could not be read: the run's exit status says so.
        case error
        /// Worth knowing; nothing was lost.
        case warning
    }

    package var severity: Severity
    package var source: String
    package var message: String

    package var description: String { "\(source): \(severity.rawValue): \(message)" }
}
