// swift-tools-version: 6.1
// The getting-started article of PostbackKit's DocC catalog, as a package of its own that
// depends on postbackd by path as anyone's would: it compiles against the public API only.
// CI builds the same source as a target of postbackd's own package, without package access, and
// scripts/example-check.sh starts it and posts Apple's sample postbacks (`--package` builds this one).
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
