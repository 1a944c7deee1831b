#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a file descriptor in chunks into a buffer that the reader consumes from the front;
/// an input that begins as a gzip or zstd archive (``CompressionFormat``), a file or standard
/// input, is decompressed as it is read.
///
/// Memory stays bounded by the chunk size plus the largest entry held (64 KiB, or 1 MiB
/// for a JSON Lines line being measured), whatever the file's size; a compressed one adds its
/// compressed chunk and the decompressor's window.
final class FileCursor {
    static let chunkSize = 1 << 20
    /// Compressed bytes read at a time.
    static let compressedChunkSize = 256 << 10

    let name: String
    private let descriptor: Int32
    private let ownsDescriptor: Bool
    /// Valid bytes are `buffer[start..<end]`.
    private(set) var buffer: [UInt8]
    var start = 0
    private(set) var end = 0
    private(set) var reachedEnd = false
    /// Set when a read failed; the file is then treated as ending there.
    private(set) var readError: String?
    /// 1-based line number of `buffer[start]`.
    var line = 1
    /// Bytes read from the descriptor so far (compressed ones, of a compressed input).
    private(set) var bytesRead = 0
    /// A compressed input's decompressor, and its compressed bytes read and not yet used
    /// (`compressed[compressedStart..<compressedEnd]`).
    private(set) var decompressor: Decompressor?
    private var compressed: [UInt8] = []
    private var compressedStart = 0
    private var compressedEnd = 0
    private var compressedEnded = false

    init(name: String, descriptor: Int32, ownsDescriptor: Bool) {
        self.name = name
        self.descriptor = descriptor
        self.ownsDescriptor = ownsDescriptor
        self.buffer = [UInt8](repeating: 0, count: Self.chunkSize)
    }

    /// Opens `file`, or returns why it cannot be read.
    static func opening(_ file: InputFile) -> Result<FileCursor, InputDiagnostic> {
        guard let path = file.path else {
            return .success(FileCursor(name: "-", descriptor: STDIN_FILENO, ownsDescriptor: false))
        }
        let descriptor = path.withCString { open($0, O_RDONLY | O_CLOEXEC) }
        guard descriptor >= 0 else {
            let detail = String(cString: strerror(errno))
            return .failure(InputDiagnostic(severity: .error, source: path, message: "cannot open: \(detail)"))
        }
        var info = stat()
        if fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR {
            close(descriptor)
            return .failure(InputDiagnostic(severity: .error, source: path, message: "is a folder"))
        }
        return .success(FileCursor(name: path, descriptor: descriptor, ownsDescriptor: true))
    }

    deinit {
        if ownsDescriptor { close(descriptor) }
    }

    var available: Int { end - start }

    /// Reads more bytes after `end`, first moving unconsumed bytes to the front when that
    /// frees room. Returns false once the file has ended (or failed).
    @discardableResult
    func fill() -> Bool {
        if reachedEnd { return false }
        if start > 0 && (start >= buffer.count / 2 || end == buffer.count) {
            let count = end - start
            buffer.withUnsafeMutableBufferPointer { pointer in
                guard let base = pointer.baseAddress else { return }
                memmove(base, base + start, count)
            }
            start = 0
            end = count
        }
        if end == buffer.count {
            buffer.append(contentsOf: repeatElement(0, count: Self.chunkSize))
        }
        if let decompressor { return decompress(decompressor) }
        let first = bytesRead == 0
        guard readPlain() else { return false }
        if first && bytesRead < CompressionFormat.magicLength { ensureMagic() }
        if first, let format = detectedFormat() { return startDecompressing(format) }
        return true
    }

    /// Reads plain bytes after `end`; false once the descriptor has ended (or failed).
    private func readPlain() -> Bool {
        while true {
            let count = buffer.withUnsafeMutableBufferPointer { pointer in
                read(descriptor, pointer.baseAddress.map { $0 + end }, pointer.count - end)
            }
            if count > 0 {
                end += count
                bytesRead += count
                return true
            }
            if count == 0 {
                reachedEnd = true
                return false
            }
            if errno == EINTR { continue }
            readError = String(cString: strerror(errno))
            reachedEnd = true
            return false
        }
    }

    /// After a first read shorter than a format's magic (a pipe's first write): reads on until
    /// there are enough bytes to tell, or the input ends.
    private func ensureMagic() {
        while bytesRead < CompressionFormat.magicLength && !reachedEnd {
            let before = end
            guard readPlain() else { break }
            if end == before { break }
        }
    }

    private func detectedFormat() -> CompressionFormat? {
        buffer.withUnsafeBytes { CompressionFormat.detect(UnsafeRawBufferPointer(rebasing: $0[start..<end])) }
    }

    /// The bytes read so far are the start of an archive: they become its first compressed
    /// bytes, and what is read from here on is decompressed.
    private func startDecompressing(_ format: CompressionFormat) -> Bool {
        let decompressor: Decompressor
        do {
            decompressor = try Decompressor(format)
        } catch {
            return fail(error.message)
        }
        compressed = [UInt8](repeating: 0, count: max(Self.compressedChunkSize, end - start))
        compressed.replaceSubrange(0..<(end - start), with: buffer[start..<end])
        (compressedStart, compressedEnd) = (0, end - start)
        compressedEnded = reachedEnd
        reachedEnd = false
        end = start
        self.decompressor = decompressor
        return decompress(decompressor)
    }

    /// Decompresses into the room after `end`, reading compressed bytes as needed; false once
    /// the archive has ended, or on a truncated or damaged one (``readError`` says which).
    private func decompress(_ decompressor: Decompressor) -> Bool {
        while true {
            if compressedStart == compressedEnd && !compressedEnded {
                let count = compressed.withUnsafeMutableBufferPointer { pointer in
                    read(descriptor, pointer.baseAddress, pointer.count)
                }
                if count > 0 {
                    (compressedStart, compressedEnd) = (0, count)
                    bytesRead += count
                } else if count == 0 {
                    compressedEnded = true
                } else if errno != EINTR {
                    return fail(String(cString: strerror(errno)))
                }
                continue
            }
            if compressedStart == compressedEnd {
                guard decompressor.atEnd else {
                    return fail(
                        "the \(decompressor.format.rawValue) archive is truncated: it ends inside its compressed data"
                    )
                }
                reachedEnd = true
                return false
            }
            let step: (consumed: Int, produced: Int)
            do {
                step = try compressed.withUnsafeBytes { input in
                    try buffer.withUnsafeMutableBytes { output in
                        try decompressor.decode(
                            UnsafeRawBufferPointer(rebasing: input[compressedStart..<compressedEnd]),
                            into: UnsafeMutableRawBufferPointer(rebasing: output[end...])
                        )
                    }
                }
            } catch let failure as Decompressor.Failure {
                return fail(failure.message)
            } catch {
                return fail("\(error)")
            }
            compressedStart += step.consumed
            end += step.produced
            if step.produced > 0 { return true }
            if step.consumed == 0 { return fail("the \(decompressor.format.rawValue) archive cannot be read on") }
        }
    }

    /// Ends the input here: a read failed, or an archive is damaged.
    private func fail(_ message: String) -> Bool {
        readError = message
        reachedEnd = true
        return false
    }

    /// Fills until at least `count` bytes are available or the file ends.
    func ensure(_ count: Int) {
        while available < count && fill() {}
    }

    /// Drops bytes the reader no longer needs; `newlines` is how many line feeds they held.
    func advance(to offset: Int, newlines: Int) {
        line += newlines
        start = offset
    }
}
