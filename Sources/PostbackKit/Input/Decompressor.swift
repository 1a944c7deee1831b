import CPostbackdCompression

/// A compressed input's format, known by its first bytes (not its name): gzip (`.gz`, what
/// `gzip` and most exports write, several members one after another included) or Zstandard
/// (`.zst`, several frames included).
enum CompressionFormat: String {
    case gzip
    case zstd

    /// The format `bytes` (a file's first bytes) begin with; nil for anything else.
    static func detect(_ bytes: UnsafeRawBufferPointer) -> CompressionFormat? {
        if bytes.count >= 2 && bytes[0] == 0x1F && bytes[1] == 0x8B { return .gzip }
        if bytes.count >= 4 && bytes[0] == 0x28 && bytes[1] == 0xB5 && bytes[2] == 0x2F && bytes[3] == 0xFD {
            return .zstd
        }
        return nil
    }

    /// How many first bytes ``detect(_:)`` needs to tell.
    static let magicLength = 4

    /// `archive.jsonl.gz` without its compression ending (`archive.jsonl`): what the name says
    /// of the form inside.
    static func innerName(_ name: String) -> Substring {
        let lower = name.lowercased()
        for ending in [".gz", ".zst"] where lower.hasSuffix(ending) {
            return name.dropLast(ending.count)
        }
        return Substring(name)
    }
}

/// Decompresses one input as it is read: compressed bytes in, plain bytes out, each call into
/// the room it is given, so memory stays bounded whatever the sizes (zlib's window, zstd's
/// window of at most 128 MiB, as zstd's own default limit allows).
final class Decompressor {
    let format: CompressionFormat
    private var zlib = z_stream()
    private var zstd: OpaquePointer?
    /// Whether the last member or frame ended where the bytes fed so far end: false inside one.
    private(set) var atEnd = true

    /// What went wrong, in words that follow the file's name.
    struct Failure: Error {
        var message: String
    }

    init(_ format: CompressionFormat) throws(Failure) {
        self.format = format
        switch format {
        case .gzip:
            // 15 + 16: a gzip header and trailer (its CRC and length are checked), the largest window.
            let status = inflateInit2_(&zlib, 15 + 16, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
            guard status == Z_OK else { throw Failure(message: "zlib cannot start (\(status))") }
        case .zstd:
            guard let stream = ZSTD_createDStream() else { throw Failure(message: "zstd cannot start") }
            zstd = stream
        }
    }

    deinit {
        switch format {
        case .gzip: inflateEnd(&zlib)
        case .zstd: ZSTD_freeDStream(zstd)
        }
    }

    /// Decompresses from `input` into `output`: how many bytes of each it used and wrote.
    /// Both may be 0 only when `input` is empty.
    func decode(
        _ input: UnsafeRawBufferPointer,
        into output: UnsafeMutableRawBufferPointer
    ) throws(Failure) -> (consumed: Int, produced: Int) {
        guard let source = input.baseAddress, !input.isEmpty, let target = output.baseAddress, !output.isEmpty
        else { return (0, 0) }
        switch format {
        case .gzip:
            if atEnd {
                // A member ended: more bytes are another member (`cat a.gz b.gz`).
                inflateReset(&zlib)
            }
            zlib.next_in = UnsafeMutablePointer(mutating: source.assumingMemoryBound(to: Bytef.self))
            zlib.avail_in = uInt(input.count)
            zlib.next_out = target.assumingMemoryBound(to: Bytef.self)
            zlib.avail_out = uInt(output.count)
            let status = inflate(&zlib, Z_NO_FLUSH)
            let consumed = input.count - Int(zlib.avail_in)
            let produced = output.count - Int(zlib.avail_out)
            switch status {
            case Z_STREAM_END:
                atEnd = true
            case Z_OK, Z_BUF_ERROR:
                atEnd = false
            default:
                let detail = zlib.msg.map { String(cString: $0) } ?? "error \(status)"
                throw Failure(message: "not a valid gzip archive: \(detail)")
            }
            return (consumed, produced)
        case .zstd:
            var inBuffer = ZSTD_inBuffer(src: source, size: input.count, pos: 0)
            var outBuffer = ZSTD_outBuffer(dst: target, size: output.count, pos: 0)
            let hint = ZSTD_decompressStream(zstd, &outBuffer, &inBuffer)
            if ZSTD_isError(hint) != 0 {
                throw Failure(message: "not a valid zstd archive: \(String(cString: ZSTD_getErrorName(hint)))")
            }
            atEnd = hint == 0
            return (inBuffer.pos, outBuffer.pos)
        }
    }
}
