#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads the entries of one file.
final class FileReader {
    let cursor: FileCursor
    private let jsonLinesByName: Bool
    private var form: InputForm?
    private var nextIndex = 0
    private(set) var entriesRead = 0
    private var arrayPhase = ArrayPhase.opening

    private enum ArrayPhase {
        case opening
        case elementOrClose(first: Bool)
        case finished
        case done
    }

    init(cursor: FileCursor, jsonLinesByName: Bool) {
        self.cursor = cursor
        self.jsonLinesByName = jsonLinesByName
    }

    /// Appends the next entry to `batch`; returns false when the file has no more.
    func readEntry(into batch: inout EntryBatch) -> Bool {
        let form = self.form ?? detectForm()
        let appended: Bool
        switch form {
        case .object: appended = readWholeFile(into: &batch)
        case .array: appended = readArrayElement(into: &batch)
        case .lines: appended = readLine(into: &batch)
        }
        if appended { entriesRead += 1 }
        return appended
    }

    // MARK: - Deciding the form

    private func detectForm() -> InputForm {
        cursor.ensure(InputLimits.maximumPostbackBytes + 1)
        skipByteOrderMark()
        let decided = decideForm()
        form = decided
        return decided
    }

    private func skipByteOrderMark() {
        cursor.buffer.withUnsafeBufferPointer { pointer in
            if cursor.available >= 3, pointer[cursor.start] == 0xEF, pointer[cursor.start + 1] == 0xBB,
                pointer[cursor.start + 2] == 0xBF
            {
                cursor.start += 3
            }
        }
    }

    private func decideForm() -> InputForm {
        if jsonLinesByName { return .lines }
        let whole = cursor.reachedEnd && cursor.available <= InputLimits.maximumPostbackBytes
        return cursor.buffer.withUnsafeBufferPointer { pointer -> InputForm in
            let bytes = UnsafeBufferPointer(rebasing: pointer[cursor.start..<(cursor.start + cursor.available)])
            var first = 0
            while first < bytes.count, isJSONWhitespace(bytes[first]) { first += 1 }
            guard first < bytes.count else { return .lines }  // empty or blank
            if bytes[first] == UInt8(ascii: "[") { return .array }
            guard whole else { return .lines }
            if let end = valueEnd(in: bytes, from: first) {
                var rest = end
                while rest < bytes.count, isJSONWhitespace(bytes[rest]) { rest += 1 }
                return rest == bytes.count ? .object : .lines
            }
            // The first value never ends: one broken document, unless later lines look like
            // JSON Lines entries of their own.
            return hasLaterLineStartingWithBrace(bytes, after: first) ? .lines : .object
        }
    }

    // MARK: - One object

    private func readWholeFile(into batch: inout EntryBatch) -> Bool {
        // Cut off by a failed read: no entry, the input is reported as unreadable.
        guard nextIndex == 0, cursor.readError == nil else { return false }
        nextIndex = 1
        let range = cursor.start..<(cursor.start + cursor.available)
        let isBlank = cursor.buffer[range].allSatisfy(isJSONWhitespace)
        if isBlank { return false }
        append(range, index: 0, line: cursor.line, form: .object, problem: nil, to: &batch)
        cursor.advance(to: range.upperBound, newlines: 0)
        return true
    }

    // MARK: - JSON Lines

    private enum LineRead {
        case line(Range<Int>, endsWithNewline: Bool)
        /// A line over the limit: its first 64 KiB and its size; already consumed.
        case tooLong(head: [UInt8], size: Int, line: Int)
    }

    private func readLine(into batch: inout EntryBatch) -> Bool {
        while true {
            switch nextLine() {
            case nil:
                return false
            case .tooLong(let head, let size, let line):
                appendBytes(
                    head,
                    index: line - 1,
                    line: line,
                    form: .lines,
                    problem: .lineTooLong(size: size),
                    to: &batch
                )
                return true
            case .line(let lineRange, let endsWithNewline):
                let lineNumber = cursor.line
                let nextStart = lineRange.upperBound + (endsWithNewline ? 1 : 0)
                var content = lineRange
                if content.count > 0, cursor.buffer[content.upperBound - 1] == 0x0D {
                    content = content.lowerBound..<(content.upperBound - 1)
                }
                defer { cursor.advance(to: nextStart, newlines: endsWithNewline ? 1 : 0) }
                if cursor.buffer[content].allSatisfy(isJSONWhitespace) { continue }
                let problem: EntryReadProblem? =
                    content.count > InputLimits.maximumPostbackBytes ? .postbackTooLarge(size: content.count) : nil
                let kept =
                    content.lowerBound..<min(content.upperBound, content.lowerBound + InputLimits.maximumPostbackBytes)
                append(kept, index: lineNumber - 1, line: lineNumber, form: .lines, problem: problem, to: &batch)
                return true
            }
        }
    }

    /// The next line (without its line feed), reading more as needed.
    private func nextLine() -> LineRead? {
        var searched = 0  // bytes after cursor.start known to hold no line feed
        while true {
            if let newline = findNewline(from: cursor.start + searched) {
                return .line(cursor.start..<newline, endsWithNewline: true)
            }
            searched = cursor.available
            if cursor.available > InputLimits.maximumLineBytes { return skipLongLine() }
            if !cursor.fill() {
                // A line cut off by a failed read (a truncated or damaged archive) is no entry:
                // the input is reported as unreadable, and read again whole once it is fixed.
                return cursor.available > 0 && cursor.readError == nil
                    ? .line(cursor.start..<(cursor.start + cursor.available), endsWithNewline: false) : nil
            }
        }
    }

    /// Consumes a line over the limit without holding it, keeping its first 64 KiB.
    private func skipLongLine() -> LineRead {
        let line = cursor.line
        let head = Array(cursor.buffer[cursor.start..<(cursor.start + InputLimits.maximumPostbackBytes)])
        var size = 0
        while true {
            if let newline = findNewline(from: cursor.start) {
                size += newline - cursor.start
                cursor.advance(to: newline + 1, newlines: 1)
                return .tooLong(head: head, size: size, line: line)
            }
            size += cursor.available
            cursor.advance(to: cursor.start + cursor.available, newlines: 0)
            if !cursor.fill() { return .tooLong(head: head, size: size, line: line) }
        }
    }

    private func findNewline(from offset: Int) -> Int? {
        let end = cursor.start + cursor.available
        guard offset < end else { return nil }
        return cursor.buffer.withUnsafeBufferPointer { pointer -> Int? in
            guard let base = pointer.baseAddress, let hit = memchr(base + offset, 0x0A, end - offset) else {
                return nil
            }
            return base.distance(to: hit.assumingMemoryBound(to: UInt8.self))
        }
    }

    // MARK: - JSON arrays

    private func readArrayElement(into batch: inout EntryBatch) -> Bool {
        while true {
            switch arrayPhase {
            case .done:
                return false
            case .opening:
                guard skipWhitespace() else {
                    arrayPhase = .done
                    return false
                }
                // decideForm saw '[' here.
                cursor.advance(to: cursor.start + 1, newlines: 0)
                arrayPhase = .elementOrClose(first: true)
            case .elementOrClose(let first):
                guard skipWhitespace() else {
                    appendProblem(
                        .truncated("file ends before the array is closed (expected an element or ']')"),
                        to: &batch
                    )
                    arrayPhase = .done
                    return true
                }
                let byte = cursor.buffer[cursor.start]
                if byte == UInt8(ascii: "]") {
                    cursor.advance(to: cursor.start + 1, newlines: 0)
                    arrayPhase = .finished
                    if !first {
                        appendProblem(.brokenArray("a ',' right before ']' leaves an empty element"), to: &batch)
                        return true
                    }
                    continue
                }
                if byte == UInt8(ascii: ",") {
                    appendProblem(.brokenArray("an empty element (',' follows ',' or '[')"), to: &batch)
                    cursor.advance(to: cursor.start + 1, newlines: 0)
                    return true
                }
                readElement(into: &batch)
                return true
            case .finished:
                guard skipWhitespace() else {
                    arrayPhase = .done
                    return false
                }
                // Content after the closing bracket: keep it (bounded) so nothing read is lost.
                let line = cursor.line
                cursor.ensure(InputLimits.maximumPostbackBytes + 1)
                let kept = cursor.start..<(cursor.start + min(cursor.available, InputLimits.maximumPostbackBytes))
                append(
                    kept,
                    index: nextIndex,
                    line: line,
                    form: .array,
                    problem: .brokenArray("content after the array's closing ']'"),
                    to: &batch
                )
                nextIndex += 1
                arrayPhase = .done
                return true
            }
        }
    }

    /// Scans one element from `cursor.start` up to the ',' or ']' that ends it at depth 0.
    private func readElement(into batch: inout EntryBatch) {
        let line = cursor.line
        var scanner = BoundaryScanner()
        var scanned = 0  // bytes after cursor.start already scanned
        var newlines = 0  // line feeds among them
        var head: [UInt8]? = nil  // first 64 KiB of an oversized element
        var dropped = 0  // bytes of an oversized element already let go
        while true {
            let start = cursor.start
            let end = start + cursor.available
            var offset = start + scanned
            var terminator: UInt8? = nil
            cursor.buffer.withUnsafeBufferPointer { pointer in
                while offset < end {
                    let byte = pointer[offset]
                    if scanner.atTopLevel && !scanner.inString
                        && (byte == UInt8(ascii: ",") || byte == UInt8(ascii: "]"))
                    {
                        terminator = byte
                        return
                    }
                    if byte == 0x0A { newlines += 1 }
                    scanner.feed(byte)
                    offset += 1
                }
            }
            scanned = offset - start
            if head == nil && scanned > InputLimits.maximumPostbackBytes {
                head = Array(cursor.buffer[start..<(start + InputLimits.maximumPostbackBytes)])
            }
            if let terminator {
                let element = trimTrailingWhitespace(start..<offset)
                let size = dropped + element.count
                let problem: EntryReadProblem? =
                    size > InputLimits.maximumPostbackBytes ? .postbackTooLarge(size: size) : nil
                if let head {
                    appendBytes(head, index: nextIndex, line: line, form: .array, problem: problem, to: &batch)
                } else {
                    append(element, index: nextIndex, line: line, form: .array, problem: problem, to: &batch)
                }
                nextIndex += 1
                cursor.advance(to: offset + 1, newlines: newlines)
                arrayPhase = terminator == UInt8(ascii: "]") ? .finished : .elementOrClose(first: false)
                return
            }
            if head != nil {
                // Oversized: let go of what was scanned so memory stays bounded.
                dropped += scanned
                cursor.advance(to: offset, newlines: newlines)
                scanned = 0
                newlines = 0
            }
            if !cursor.fill() {
                let rest = cursor.start..<(cursor.start + cursor.available)
                let problem = EntryReadProblem.truncated(
                    "file ends inside array element \(nextIndex) (the array is not closed)"
                )
                if let head {
                    appendBytes(head, index: nextIndex, line: line, form: .array, problem: problem, to: &batch)
                } else {
                    let kept =
                        rest.lowerBound..<min(rest.upperBound, rest.lowerBound + InputLimits.maximumPostbackBytes)
                    append(kept, index: nextIndex, line: line, form: .array, problem: problem, to: &batch)
                }
                nextIndex += 1
                cursor.advance(to: rest.upperBound, newlines: newlines)
                arrayPhase = .done
                return
            }
        }
    }

    /// Skips JSON whitespace, reading more as needed; false at the end of the file.
    private func skipWhitespace() -> Bool {
        while true {
            let end = cursor.start + cursor.available
            var index = cursor.start
            var newlines = 0
            cursor.buffer.withUnsafeBufferPointer { pointer in
                while index < end, isJSONWhitespace(pointer[index]) {
                    if pointer[index] == 0x0A { newlines += 1 }
                    index += 1
                }
            }
            cursor.advance(to: index, newlines: newlines)
            if cursor.available > 0 { return true }
            if !cursor.fill() { return false }
        }
    }

    private func trimTrailingWhitespace(_ range: Range<Int>) -> Range<Int> {
        var upper = range.upperBound
        while upper > range.lowerBound, isJSONWhitespace(cursor.buffer[upper - 1]) { upper -= 1 }
        return range.lowerBound..<upper
    }

    // MARK: - Appending

    private func append(
        _ range: Range<Int>,
        index: Int,
        line: Int,
        form: InputForm,
        problem: EntryReadProblem?,
        to batch: inout EntryBatch
    ) {
        appendBytes(cursor.buffer[range], index: index, line: line, form: form, problem: problem, to: &batch)
    }

    private func appendBytes<Bytes: Collection<UInt8>>(
        _ bytes: Bytes,
        index: Int,
        line: Int,
        form: InputForm,
        problem: EntryReadProblem?,
        to batch: inout EntryBatch
    ) {
        let start = batch.bytes.count
        batch.bytes.append(contentsOf: bytes)
        batch.entries.append(
            RawEntry(
                location: EntryLocation(source: cursor.name, index: index, line: line, form: form),
                range: start..<batch.bytes.count,
                problem: problem
            )
        )
    }

    private func appendProblem(_ problem: EntryReadProblem, to batch: inout EntryBatch) {
        let start = batch.bytes.count
        batch.entries.append(
            RawEntry(
                location: EntryLocation(source: cursor.name, index: nextIndex, line: cursor.line, form: .array),
                range: start..<start,
                problem: problem
            )
        )
        nextIndex += 1
    }
}

/// Whether a line after the one holding `start` begins with `{`.
private func hasLaterLineStartingWithBrace(_ bytes: UnsafeBufferPointer<UInt8>, after start: Int) -> Bool {
    var index = start
    while index < bytes.count {
        if bytes[index] == 0x0A, index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "{") { return true }
        index += 1
    }
    return false
}
