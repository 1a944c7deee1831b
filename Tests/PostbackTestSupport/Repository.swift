import Foundation
import PostbackKit

/// Paths inside this repository, found from this file's location so tests run from anywhere.
public enum Repository {
    /// The package root.
    public static let root: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }  // Tests/PostbackTestSupport/Repository.swift
        return url.path
    }()

    public static func path(_ relative: String) -> String {
        root + "/" + relative
    }

    /// `SamplePostbacks/apple`: Apple's vectors, byte for byte.
    public static let vectors = path("SamplePostbacks/apple")

    /// `../shared/vectors` beside the repository, when present (it is in CI).
    public static var sharedVectors: String? {
        let candidate = URL(fileURLWithPath: root).deletingLastPathComponent().appendingPathComponent("shared/vectors")
            .path
        return FileManager.default.fileExists(atPath: candidate) ? candidate : nil
    }

    /// The bytes of a file.
    public static func bytes(_ path: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// The vector files, sorted.
    public static func vectorFiles() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: vectors).filter { $0.hasSuffix(".json") }.sorted()
    }
}

/// The test keys in `Keys/test` (not Apple's).
public enum TestKeys {
    public static let directory = Repository.path("Keys/test")

    public static var signer: PostbackSigner {
        get throws { try PostbackSigner(directory: directory) }
    }

    public static var ring: KeyRing {
        get throws { try KeyRing(directories: [directory]) }
    }
}

/// A folder under the system's temporary directory, removed when released.
public final class TemporaryDirectory {
    public let path: String

    public init(_ label: String = "postbackd") throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("\(label)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
        path = base.path
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }

    /// Writes `text` to `name` in this folder and returns its path.
    @discardableResult
    public func write(_ name: String, _ text: String) throws -> String {
        try write(name, bytes: Array(text.utf8))
    }

    /// Writes `bytes` to `name` (creating subfolders) and returns its path.
    @discardableResult
    public func write(_ name: String, bytes: [UInt8]) throws -> String {
        let url = URL(fileURLWithPath: path).appendingPathComponent(name)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(bytes).write(to: url)
        return url.path
    }
}
