// PostbackKit's hot paths through its public API, on the repository's sample postbacks and
// models: verifying a postback with Apple's keys, scanning a postback's JSON, and encoding a
// conversion value. Thresholds (Thresholds/) hold instructions and malloc counts: both are
// counts, so they hold on a shared machine where wall-clock time does not.

import Benchmark
import Foundation
import PostbackKit

/// The repository's root, from this file's place in it (Benchmarks/Benchmarks/NAME/this file).
private let root = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()

private func bytes(_ path: String) -> [UInt8] {
    guard let data = FileManager.default.contents(atPath: root.appendingPathComponent(path).path) else {
        fatalError("cannot read \(path) under \(root.path)")
    }
    return Array(data)
}

let benchmarks: @Sendable () -> Void = {
    // Counts, not time: instructions vary by a few percent with the cache and the branch
    // predictor; malloc counts are exact.
    Benchmark.defaultConfiguration = .init(
        metrics: [.instructions, .mallocCountTotal, .wallClock],
        timeUnits: .microseconds,
        warmupIterations: 100,
        scalingFactor: .kilo,
        maxDuration: .seconds(5),
        maxIterations: 1_000,
        thresholds: [
            .instructions: .init(relative: [.p90: 5.0]),
            .mallocCountTotal: .init(relative: [.p90: 1.0]),
            // A shared two-core machine: a check on time would only read the neighbours.
            .wallClock: .init(relative: [.p90: 1_000.0]),
        ]
    )

    // A version 4.0 postback (P-256), as Apple's device sent it.
    let postback = bytes("SamplePostbacks/apple/apple-4.0-web-fine-win.json")

    // Verify: parse, build the signed message, and check the signature with Apple's key.
    // One-off signatures, as `serve` checks them; after 1,024 signatures by one key the
    // verifier builds a fixed-base table for it, which the warm-up below leaves behind.
    let verifiers = VerifierPool()
    guard verifiers.verify(postback).verdict == .valid else {
        fatalError("the sample postback does not verify with Apple's keys")
    }
    Benchmark(
        "VerifyPostbackP256",
        configuration: .init(warmupIterations: 2)
    ) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(verifiers.verify(postback))
        }
    }

    // Scan: the same body through a pool with no keys, which reads and checks every field
    // (the strict JSON scan, duplicate keys, types, the version's layout) and stops before the
    // signature: "no P-256 key is loaded".
    let scanners = VerifierPool(keys: KeyRing())
    let scanned = scanners.verify(postback)
    guard scanned.postback != nil, scanned.reason?.contains("no P-256 key is loaded") == true else {
        fatalError("the scan did not read the postback whole: \(scanned.verdict) \(scanned.reason ?? "")")
    }
    Benchmark("ScanPostbackJSON") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(scanners.verify(postback))
        }
    }

    // Encode: the game sample model answers which conversion value to set next for a state of
    // a few events, as `POST /v1/conversion-value` does.
    let model: ConversionModel
    do {
        model = try ConversionModel(json: bytes("SamplePostbacks/models/app-1254734734-game.json"))
    } catch {
        fatalError("the game sample model does not read: \(error)")
    }
    let state: UserState
    do {
        state = try UserState(
            json: Array(
                #"""
                {"elapsed_hours": 30, "events": [{"name": "session", "hours": 1}, \#
                {"name": "level_complete", "hours": 2}, {"name": "purchase", "hours": 3, \#
                "revenue": 4.99, "currency": "USD"}]}
                """#.utf8
            )
        )
    } catch {
        fatalError("the state does not read: \(error)")
    }
    Benchmark("EncodeConversionValue") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(model.encode(state))
        }
    }
}
