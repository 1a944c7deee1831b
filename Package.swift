// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "postbackd",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "postbackd", targets: ["postbackd"]),
        .library(name: "PostbackKit", targets: ["PostbackKit"]),
    ],
    dependencies: [
        // Pinned: only the versions mirrored on the build machines resolve.
        .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", exact: "1.16.2"),
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CPostbackdOpenSSL",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        .target(
            name: "PostbackKit",
            dependencies: [
                "CPostbackdOpenSSL",
                .product(name: "GRDB", package: "GRDB.swift"),
                // SQLite's C API, for binding values on the ingest hot path (Storage/SQLiteBinder.swift).
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "postbackd",
            dependencies: [
                "PostbackKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Helpers shared by both test targets: repository paths, test keys, a postback
        // factory, temporary folders, running the built binary.
        .target(
            name: "PostbackTestSupport",
            dependencies: ["PostbackKit", .product(name: "GRDB", package: "GRDB.swift")],
            path: "Tests/PostbackTestSupport"
        ),
        .testTarget(
            name: "PostbackKitTests",
            dependencies: ["PostbackKit", "PostbackTestSupport", .product(name: "GRDB", package: "GRDB.swift")],
            resources: [.copy("Fixtures")]
        ),
        .testTarget(
            name: "postbackdTests",
            // Depending on the executable makes `swift test` build it; the tests run it.
            dependencies: ["postbackd", "PostbackKit", "PostbackTestSupport"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
