import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Writes a file for node_exporter's textfile collector atomically: into a temporary file
/// beside it (named `.NAME.PID.tmp`, which the collector skips: it reads `*.prom`), then
/// renamed over it, so the collector never reads half a file.
package enum PrometheusTextfile {
    package static func write(_ text: String, to path: String) throws(TextfileError) {
        let url = URL(fileURLWithPath: path)
        let temporary = url.deletingLastPathComponent()
            .appendingPathComponent(".\(url.lastPathComponent).\(getpid()).tmp").path
        do {
            try Data(text.utf8).write(to: URL(fileURLWithPath: temporary))
        } catch {
            unlink(temporary)
            throw TextfileError(
                reason: "\(path): cannot write its temporary file \(temporary): \(error.localizedDescription)"
            )
        }
        if rename(temporary, path) != 0 {
            let detail = String(cString: strerror(errno))
            unlink(temporary)
            throw TextfileError(reason: "\(path): cannot rename \(temporary) over it (\(detail))")
        }
    }

    package struct TextfileError: Error, Sendable {
        package var reason: String
    }
}
