import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import NIOCore
import NIOSSL
import PostbackKit
import PostbackStore
import ServiceLifecycle
import Synchronization

/// Runs the writer on its own thread until graceful shutdown, then lets it commit what waits.
final class CommitterService: Service, Sendable {
    let committer: GroupCommitter
    let store: any PostbackStorage
    let runID: Int64
    let executor: DedicatedThreadExecutor
    private let result = Mutex(IngestSummary())

    init(committer: GroupCommitter, store: any PostbackStorage, runID: Int64, executor: DedicatedThreadExecutor) {
        self.committer = committer
        self.store = store
        self.runID = runID
        self.executor = executor
    }

    /// What the writer stored, once it has returned.
    var summary: IngestSummary { result.withLock { $0 } }

    func run() async throws {
        let committer = self.committer
        // Models added meanwhile (by `models add`, anywhere) are read every few seconds.
        let reloader = Task {
            while !Task.isCancelled {
                try await Task.sleep(for: ModelDirectory.reloadInterval)
                committer.reloadModels()
            }
        }
        defer { reloader.cancel() }
        let summary = await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                await withTaskExecutorPreference(executor) {
                    await committer.run(store: store, runID: runID)
                }
            } onGracefulShutdown: {
                committer.close()
            }
        } onCancel: {
            committer.close()
        }
        result.withLock { $0 = summary }
    }
}
