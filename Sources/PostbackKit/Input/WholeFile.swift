#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Small files read whole (models, campaign mappings, configuration, key files), with a size
/// limit; postbacks are never read this way.
package enum WholeFile {
    /// The bytes of the file at `path` (`-`: standard input), at most `limit` of them.
    ///
    /// - Parameter what: what the file is, for the message (`a model file`).
    /// - Throws: ``PostbackKitError`` saying which: no such file, not permitted, a folder, over
    ///   the limit (named), or a read that failed.
    package static func read(_ path: String, limit: Int, what: String) throws(PostbackKitError) -> [UInt8] {
        let name = path == "-" ? "standard input" : path
        guard let file = path == "-" ? fdopen(dup(0), "rb") : fopen(path, "rb") else {
            let code = errno
            let detail = String(cString: strerror(code))
            switch code {
            case ENOENT, ENOTDIR:
                throw PostbackKitError(.notFound, "\(name): no such file (\(detail)); check the path")
            case EACCES, EPERM:
                throw PostbackKitError(
                    .notPermitted,
                    "\(name): not permitted to read it (\(detail)); check its permissions and its folders'"
                )
            default:
                throw PostbackKitError(.unreadable, "\(name): cannot open it (\(detail))")
            }
        }
        defer { fclose(file) }
        var info = stat()
        if fstat(fileno(file), &info) == 0 {
            if (info.st_mode & S_IFMT) == S_IFDIR {
                throw PostbackKitError(.unreadable, "\(name): a folder, not \(what)")
            }
            if (info.st_mode & S_IFMT) == S_IFREG && Int(info.st_size) > limit {
                throw tooLarge(name, size: Int(info.st_size), limit: limit, what: what)
            }
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = fread(&chunk, 1, chunk.count, file)
            if count > 0 { bytes += chunk.prefix(count) }
            if bytes.count > limit { throw tooLarge(name, size: nil, limit: limit, what: what) }
            if count < chunk.count {
                if ferror(file) != 0 {
                    throw PostbackKitError(.unreadable, "\(name): reading failed (\(String(cString: strerror(errno))))")
                }
                break
            }
        }
        return bytes
    }

    private static func tooLarge(_ name: String, size: Int?, limit: Int, what: String) -> PostbackKitError {
        let sizeText = size.map { " (\(megabytes($0)) MiB)" } ?? ""
        return PostbackKitError(
            .tooLarge,
            "\(name) is larger\(sizeText) than the \(megabytes(limit)) MiB limit for \(what); is it the right file?"
        )
    }

    private static func megabytes(_ bytes: Int) -> String {
        let tenths = (bytes * 10 + (1 << 19)) >> 20
        return tenths % 10 == 0 ? "\(tenths / 10)" : "\(tenths / 10).\(tenths % 10)"
    }
}
