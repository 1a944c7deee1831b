#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// One input to read: a file, or standard input.
package struct InputFile: Sendable, Hashable {
    /// The path to open; nil for standard input.
    package var path: String?
    /// How the input is named in results.
    package var name: String { path ?? "-" }

    package static let standardInput = InputFile(path: nil)
}

/// Expands the paths of a command line into the files to read, in the order they are read.
package enum InputPaths {
    /// File name endings read when walking a folder (case-insensitive), each also compressed
    /// (`.json.gz`, `.jsonl.zst`, …). A file named directly is read whatever its name.
    static let postbackExtensions = ["json", "jsonl", "ndjson"]

    /// The files to read for `paths`, in order: paths in the order given, each folder's files
    /// (found recursively, hidden entries skipped) in byte order of their paths. `-` or no
    /// path at all means standard input.
    ///
    /// - Throws: ``PostbackKitError`` when a path does not exist or a folder cannot be listed:
    ///   checked for every path before anything is read.
    package static func expand(
        _ paths: [String]
    ) throws(PostbackKitError) -> (files: [InputFile], diagnostics: [InputDiagnostic]) {
        if paths.isEmpty { return ([.standardInput], []) }
        var files: [InputFile] = []
        var diagnostics: [InputDiagnostic] = []
        for path in paths {
            if path == "-" {
                files.append(.standardInput)
                continue
            }
            var info = stat()
            guard stat(path, &info) == 0 else {
                let detail = String(cString: strerror(errno))
                throw PostbackKitError(.noSuchPath, "\(path): \(detail); check the path (use - for standard input)")
            }
            if (info.st_mode & S_IFMT) == S_IFDIR {
                var found: [String] = []
                try walk(directory: trimmedDirectory(path), into: &found)
                found.sort { $0.utf8.lexicographicallyPrecedes($1.utf8) }
                if found.isEmpty {
                    diagnostics.append(
                        InputDiagnostic(
                            severity: .warning,
                            source: path,
                            message: "no .json, .jsonl or .ndjson files (or .gz or .zst of them) in this folder"
                        )
                    )
                }
                files.append(contentsOf: found.map { InputFile(path: $0) })
            } else {
                files.append(InputFile(path: path))
            }
        }
        return (files, diagnostics)
    }

    private static func trimmedDirectory(_ path: String) -> String {
        var path = path
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        return path
    }

    private static func walk(directory: String, into found: inout [String]) throws(PostbackKitError) {
        guard let handle = opendir(directory) else {
            let detail = String(cString: strerror(errno))
            throw PostbackKitError(.unreadable, "\(directory): cannot list the folder: \(detail)")
        }
        defer { closedir(handle) }
        var subdirectories: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name.hasPrefix(".") { continue }
            let path = directory == "/" ? "/" + name : directory + "/" + name
            var info = stat()
            // lstat: a symbolic link to a folder is not followed (no cycles); one to a file is read.
            guard lstat(path, &info) == 0 else { continue }
            switch info.st_mode & S_IFMT {
            case S_IFDIR:
                subdirectories.append(path)
            case S_IFREG, S_IFLNK:
                if (info.st_mode & S_IFMT) == S_IFLNK {
                    var target = stat()
                    guard stat(path, &target) == 0, (target.st_mode & S_IFMT) == S_IFREG else { continue }
                }
                if hasPostbackExtension(name) { found.append(path) }
            default:
                continue
            }
        }
        for subdirectory in subdirectories {
            try walk(directory: subdirectory, into: &found)
        }
    }

    static func hasPostbackExtension(_ name: String) -> Bool {
        let inner = CompressionFormat.innerName(name)
        guard let dot = inner.lastIndex(of: ".") else { return false }
        return postbackExtensions.contains(inner[inner.index(after: dot)...].lowercased())
    }

    /// A name ending in `.jsonl` or `.ndjson`, compressed or not (`.jsonl.gz`).
    static func isJSONLinesName(_ name: String) -> Bool {
        let lower = CompressionFormat.innerName(name).lowercased()
        return lower.hasSuffix(".jsonl") || lower.hasSuffix(".ndjson")
    }
}
