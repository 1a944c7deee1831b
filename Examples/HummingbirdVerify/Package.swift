// swift-tools-version: 6.1
// The getting-started article of PostbackKit's DocC catalog, as a package of its own that
// depends on postbackd by path as anyone's would: it compiles against the public API only.
// scripts/example-check.sh (run by CI) builds it, starts it and posts Apple's sample postbacks.
import PackageDescription

let package = Package(
    name: "HummingbirdVerify",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "postbackd", path: "../.."),
        .package(url: "https://github.com/hummingbird-project/hummingbird", exact: "2.28.1"),
    ],
    targets: [
        .executableTarget(
            name: "HummingbirdVerify",
            dependencies: [
                .product(name: "PostbackKit", package: "postbackd"),
                .product(name: "Hummingbird", package: "hummingbird"),
            ]
        )
    ],
    swiftLanguageModes: [.v6]
)
