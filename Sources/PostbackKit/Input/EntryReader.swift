/// Reads postback entries from files and standard input, in order, in batches.
///
/// Each file is read in one of three forms (``InputForm``), decided as follows:
/// 1. a name ending in `.jsonl` or `.ndjson` (compressed too: `.jsonl.gz`) is JSON Lines;
/// 2. otherwise, a file whose first non-blank byte is `[` is a JSON array, read element by
///    element without holding the whole array;
/// 3. otherwise, a file of at most 64 KiB that holds exactly one JSON value is one postback
///    (as is a short file that is not JSON Lines at all, which is then reported malformed);
/// 4. anything else is JSON Lines: every non-blank line is one postback, and a line holding
///    anything but a JSON object is a malformed entry.
///
/// An input compressed with gzip or zstd is decompressed as it is read (``FileCursor``).
/// Memory is bounded by the chunk size and the size limits, however large the input.
package final class EntryReader {
    private let files: [InputFile]
    private var nextFile = 0
    private var current: FileReader?
    private var nextSequence = 0
    private var pendingDiagnostics: [InputDiagnostic] = []
    private let entriesPerBatch: Int
    private let bytesPerBatch: Int
    private var finishedBytes = 0

    /// Files opened so far.
    package private(set) var filesOpened = 0
    /// Files that could not be opened or failed while being read.
    package private(set) var unreadableFiles = 0

    package init(files: [InputFile], entriesPerBatch: Int = 256, bytesPerBatch: Int = 256 * 1024) {
        self.files = files
        self.entriesPerBatch = max(1, entriesPerBatch)
        self.bytesPerBatch = max(1, bytesPerBatch)
    }

    /// Bytes read from all inputs so far.
    package var bytesRead: Int { finishedBytes + (current?.cursor.bytesRead ?? 0) }

    /// The number of inputs in this run.
    var fileCount: Int { files.count }

    /// Problems with whole inputs found since the last call.
    package func takeDiagnostics() -> [InputDiagnostic] {
        defer { pendingDiagnostics.removeAll() }
        return pendingDiagnostics
    }

    /// The next batch of entries, or nil when every input is read.
    package func nextBatch() -> EntryBatch? {
        var batch = EntryBatch(sequence: nextSequence, bytes: [], entries: [])
        batch.bytes.reserveCapacity(bytesPerBatch + InputLimits.maximumPostbackBytes)
        batch.entries.reserveCapacity(entriesPerBatch)
        while batch.entries.count < entriesPerBatch && batch.bytes.count < bytesPerBatch {
            guard let reader = currentReader() else { break }
            if !reader.readEntry(into: &batch) {
                finish(reader)
            }
        }
        if batch.entries.isEmpty { return nil }
        nextSequence += 1
        batch.readerState.bytesRead = bytesRead
        batch.readerState.filesOpened = filesOpened
        batch.readerState.diagnostics = takeDiagnostics()
        return batch
    }

    private func currentReader() -> FileReader? {
        while current == nil {
            guard nextFile < files.count else { return nil }
            let file = files[nextFile]
            nextFile += 1
            switch FileCursor.opening(file) {
            case .success(let cursor):
                filesOpened += 1
                current = FileReader(
                    cursor: cursor,
                    jsonLinesByName: file.path.map(InputPaths.isJSONLinesName) ?? false
                )
            case .failure(let diagnostic):
                unreadableFiles += 1
                pendingDiagnostics.append(diagnostic)
            }
        }
        return current
    }

    private func finish(_ reader: FileReader) {
        if let error = reader.cursor.readError {
            unreadableFiles += 1
            pendingDiagnostics.append(
                InputDiagnostic(
                    severity: .error,
                    source: reader.cursor.name,
                    message: "read failed after \(reader.cursor.bytesRead) bytes: \(error)"
                )
            )
        } else if reader.entriesRead == 0 {
            pendingDiagnostics.append(
                InputDiagnostic(severity: .warning, source: reader.cursor.name, message: "empty: no postbacks in it")
            )
        }
        finishedBytes += reader.cursor.bytesRead
        current = nil
    }
}
