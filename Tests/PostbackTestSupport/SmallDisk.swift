import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A small tmpfs, to fill a disk for real: where the tests may mount one (root with
/// CAP_SYS_ADMIN, as CI runs).
package enum SmallDisk {
    /// Whether a tmpfs can be mounted here.
    package static let available: Bool = {
        guard getuid() == 0 else { return false }
        let probe = FileManager.default.temporaryDirectory.appendingPathComponent("mount-probe-\(getpid())").path
        try? FileManager.default.createDirectory(atPath: probe, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: probe) }
        guard Glibc.mount("tmpfs", probe, "tmpfs", 0, "size=64k") == 0 else { return false }
        umount2(probe, Int32(MNT_DETACH))
        return true
    }()

    /// Mounts a tmpfs of `size` (e.g. `1m`) at `path` (created); ``unmount(_:)`` removes it.
    package static func mount(at path: String, size: String) throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        guard Glibc.mount("tmpfs", path, "tmpfs", 0, "size=\(size)") == 0 else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EPERM)
        }
    }

    package static func unmount(_ path: String) {
        umount2(path, Int32(MNT_DETACH))
    }

    /// Fills the disk holding `folder` with a file named `pad` until a write fails.
    package static func fill(_ folder: String) {
        let path = folder + "/pad"
        if !FileManager.default.fileExists(atPath: path) {
            _ = FileManager.default.createFile(atPath: path, contents: nil)
        }
        guard let pad = FileHandle(forWritingAtPath: path) else { return }
        _ = try? pad.seekToEnd()
        let chunk = Data(repeating: 0, count: 4096)
        while (try? pad.write(contentsOf: chunk)) != nil {}
        try? pad.close()
    }
}
