// swift-tools-version: 6.1
import PackageDescription

/// The tests' modules are compiled without optimization in every configuration: the one build
/// (scripts/build.sh) is a release build, and optimized, the 18,000 lines of tests held its last
/// 400 s on 2 cores (190 s without), for no faster test: the code under test is optimized.
let testSettings: [SwiftSetting] = [.unsafeFlags(["-Onone"])]

let package = Package(
    name: "postbackd",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "postbackd", targets: ["postbackd"]),
        // The one library: parse, verify, explain, decode, encode and generate postbacks in a
        // server of one's own. Storage and the HTTP receiver are postbackd's own (`package`).
        .library(name: "PostbackKit", targets: ["PostbackKit"]),
    ],
    dependencies: [
        // Pinned: only the versions mirrored on the build machines resolve.
        .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", exact: "1.16.2"),
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
        .package(url: "https://github.com/vapor/postgres-nio", exact: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio", exact: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-ssl", exact: "2.37.6"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", exact: "2.28.1", traits: ["FullFoundation"]),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", exact: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics", exact: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", exact: "2.4.1"),
        .package(url: "https://github.com/swift-server/async-http-client", exact: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio-extras", exact: "1.35.2"),
        .package(url: "https://github.com/apple/swift-http-types", exact: "1.8.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CPostbackdOpenSSL",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        // zlib and zstd: inputs compressed as gzip (.gz) or Zstandard (.zst), read as a stream.
        .systemLibrary(
            name: "CPostbackdCompression",
            providers: [.apt(["zlib1g-dev", "libzstd-dev"])]
        ),
        // SQLite's process-wide settings (sqlite3_config is variadic: Swift cannot call it).
        .systemLibrary(
            name: "CPostbackdSQLite",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        // The core: postbacks, parsing, verification, conversion models, generation. No storage,
        // no network: `verify` links neither a database driver nor a server.
        .target(
            name: "PostbackKit",
            dependencies: [
                "CPostbackdOpenSSL",
                "CPostbackdCompression",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The storage interface, its SQLite and PostgreSQL engines, and the jobs over it
        // (ingest, models, aggregate, report). GRDB and PostgresNIO live here and nowhere else.
        .target(
            name: "PostbackStore",
            dependencies: [
                "PostbackKit",
                "CPostbackdSQLite",
                .product(name: "GRDB", package: "GRDB.swift"),
                // SQLite's C API, for binding values on the ingest hot path (SQLite/SQLiteBinder.swift).
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                // PostgresNIO's pool's error (its circuit breaker), which it passes on as it is.
                .product(name: "_ConnectionPoolModule", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // `serve`: the HTTP receiver over the same jobs and store. Hummingbird, its TLS and the
        // metrics live here and nowhere else: the other commands link none of them.
        .target(
            name: "PostbackServer",
            dependencies: [
                "PostbackKit",
                "PostbackStore",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                // `forward`'s HTTP client.
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "postbackd",
            dependencies: [
                "PostbackKit",
                "PostbackStore",
                "PostbackServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // scripts/bench.sh: how fast a storage engine absorbs already-verified batches.
        .executableTarget(
            name: "postbackd-store-bench",
            dependencies: ["PostbackKit", "PostbackStore"]
        ),
        // scripts/forward-bench.sh: a fast local receiver to forward to.
        .executableTarget(
            name: "postbackd-bench-receiver",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // PostbackKit's getting-started article (Examples/HummingbirdVerify, a package of its own
        // for readers), built here too so that CI compiles it in the one build: without package
        // access it sees PostbackKit's public API alone, as the example package does.
        // A name of its own: the example's package depends on this one, and module names are unique.
        // scripts/example-check.sh starts it and posts to it.
        .executableTarget(
            name: "HummingbirdVerifyExample",
            dependencies: [
                "PostbackKit",
                .product(name: "Hummingbird", package: "hummingbird"),
            ],
            path: "Examples/HummingbirdVerify/Sources/HummingbirdVerify",
            packageAccess: false
        ),
        // Helpers shared by both test targets: repository paths, test keys, a postback
        // factory, temporary folders, running the built binary.
        .target(
            name: "PostbackTestSupport",
            dependencies: [
                "PostbackKit", "PostbackStore",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/PostbackTestSupport",
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "PostbackKitTests",
            dependencies: ["PostbackKit", "PostbackTestSupport"],
            resources: [.copy("Fixtures")],
            swiftSettings: testSettings
        ),
        // The storage conformance suite runs against SQLite always and against PostgreSQL when
        // POSTBACKD_TEST_POSTGRES_URL names a server (scripts/postgres-dev.sh starts one).
        .testTarget(
            name: "PostbackStoreTests",
            dependencies: [
                "PostbackKit", "PostbackStore", "PostbackTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "postbackdTests",
            // The tests run the built executable (`swift test` builds every product) and import none
            // of its code: a dependency on it would hold the test modules' compilation until its
            // own, last in the build.
            dependencies: ["PostbackKit", "PostbackStore", "PostbackTestSupport"],
            swiftSettings: testSettings
        ),
        // `serve` under test: the built binary or the library on a loopback port, a real HTTP
        // client (AsyncHTTPClient), both engines.
        .testTarget(
            name: "PostbackServerTests",
            dependencies: [
                "PostbackKit", "PostbackStore", "PostbackServer", "PostbackTestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            resources: [.copy("Fixtures")],
            swiftSettings: testSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)
