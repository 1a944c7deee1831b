import Foundation
import Hummingbird
import PostbackKit

// The route of PostbackKit's getting-started article (Sources/PostbackKit/PostbackKit.docc),
// on the port $PORT names (8080 by default).
let port = ProcessInfo.processInfo.environment["PORT"].flatMap(Int.init) ?? 8080

let verifiers = VerifierPool()  // Apple's production and development keys

let router = Router()
for path in [
    "/.well-known/skadnetwork/report-attribution",
    "/.well-known/appattribution/report-attribution",
] {
    router.post(RouterPath(path)) { request, _ -> Response in
        // Postbacks are small: refuse anything larger than 64 KiB unread.
        let body = try await request.body.collect(upTo: 64 * 1024)
        let result = verifiers.verify(Array(buffer: body))
        guard result.verdict == .valid, let postback = result.postback else {
            // Invalid (the signature does not verify), malformed or unsupported: the reason,
            // which names the field at fault, for the sender.
            let reason = "\(result.verdict.rawValue): \(result.reason ?? "")"
            return Response(status: .badRequest, body: ResponseBody(byteBuffer: ByteBuffer(string: reason)))
        }
        // Store it under its dedup key before answering (Apple retries until it gets a 2xx).
        // A test-mode or development postback is real but never a production install.
        print(postback.dedupKey, result.testMode || result.development ? "(test)" : "")
        return Response(status: .ok)
    }
}

let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)))
try await app.runService()
