// swift-tools-version: 6.1
// PostbackKit's microbenchmarks on ordo-one/benchmark, a package of its own as swift-nio keeps
// them (its Benchmarks/), so the library's package resolves nothing of the benchmark's.
// Run through scripts/microbench.sh; thresholds under Thresholds/, per toolchain.
import PackageDescription

import struct Foundation.URL

// A path dependency's identity is its folder's name, which is the clone's name, not
// "postbackd": read it from where this manifest lies.
let parent = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .lastPathComponent.lowercased()

let package = Package(
    name: "postbackd-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: ".."),
        // Pinned: only the mirrored version resolves. The malloc interposer gives exact malloc
        // counts; the runtime interposer (another default trait) is not mirrored here.
        .package(url: "https://github.com/ordo-one/benchmark", exact: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "PostbackKitBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "PostbackKit", package: parent),
            ],
            path: "Benchmarks/PostbackKitBenchmarks",
            plugins: [
                .plugin(name: "BenchmarkPlugin", package: "benchmark")
            ]
        )
    ]
)
