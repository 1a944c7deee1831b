import Foundation
import PostbackKit

/// Paths inside this repository, found from this file's location so tests run from anywhere.
package enum Repository {
    /// The package root.
    package static let root: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }  // Tests/PostbackTestSupport/Repository.swift
        return url.path
    }()

    package static func path(_ relative: String) -> String {
        root + "/" + relative
    }

    /// `SamplePostbacks/apple`: Apple's vectors, byte for byte.
    package static let vectors = path("SamplePostbacks/apple")

    /// `../shared/vectors` beside the repository, when present (it is in CI).
    package static var sharedVectors: String? {
        let candidate = URL(fileURLWithPath: root).deletingLastPathComponent().appendingPathComponent("shared/vectors")
            .path
        return FileManager.default.fileExists(atPath: candidate) ? candidate : nil
    }

    /// The bytes of a file.
    package static func bytes(_ path: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// The vector files, sorted.
    package static func vectorFiles() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: vectors).filter { $0.hasSuffix(".json") }.sorted()
    }
}

/// The test keys in `Keys/test` (not Apple's).
package enum TestKeys {
    package static let directory = Repository.path("Keys/test")

    package static var signer: PostbackSigner {
        get throws { try PostbackSigner(directory: directory) }
    }

    package static var ring: KeyRing {
        get throws { try KeyRing(directories: [directory]) }
    }
}

/// A folder under the system's temporary directory, removed when released.
package final class TemporaryDirectory {
    package let path: String

    package init(_ label: String = "postbackd") throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("\(label)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
        path = base.path
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }

    /// Writes `text` to `name` in this folder and returns its path.
    @discardableResult
    package func write(_ name: String, _ text: String) throws -> String {
        try write(name, bytes: Array(text.utf8))
    }

    /// Writes `bytes` to `name` (creating subfolders) and returns its path.
    @discardableResult
    package func write(_ name: String, bytes: [UInt8]) throws -> String {
        let url = URL(fileURLWithPath: path).appendingPathComponent(name)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(bytes).write(to: url)
        return url.path
    }
}
