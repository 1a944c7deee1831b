#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a file descriptor in chunks into a buffer that the reader consumes from the front.
///
/// Memory stays bounded by the chunk size plus the largest entry held (64 KiB, or 1 MiB
/// for a JSON Lines line being measured), whatever the file's size.
final class FileCursor {
    static let chunkSize = 1 << 20

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
    /// Bytes read from the descriptor so far.
    private(set) var bytesRead = 0

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
