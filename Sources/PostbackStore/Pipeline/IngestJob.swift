import Logging
import PostbackKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// `postbackd ingest`: reads postback files, verifies them on every core, and stores each
/// postback exactly once in the store (SQLite or PostgreSQL), or quarantines it with its reason.
///
/// Postbacks are written by one writer, in input order, many batches per transaction; every
/// insert is idempotent (unique keys with `ON CONFLICT DO NOTHING`), so a run that is killed
/// and started again ends in the state of one uninterrupted run. Several runs, on one machine
/// or many, may write into one store at once.
package struct IngestJob: Sendable {
    package var paths: [String]
    package var location: StoreLocation
    package var keyRing: KeyRing
    /// `--received-at`: the time every postback of this run was received.
    package var receivedAt: UTCInstant?
    /// `--channel`: the channel every postback of this run came by.
    package var channel: PostbackChannel
    package var width: Int
    package var logger: Logger
    /// Quarantined entries described on standard error, at most; the rest are counted.
    var quarantineMessageLimit: Int
    /// Postbacks written per transaction, at most (it also commits after four seconds).
    package var entriesPerTransaction: Int
    /// Sessions writing at once (PostgreSQL; ``ShardedIngestSession``); nil: one. SQLite has one
    /// writer whatever this says. On 2 cores, where the server shares the client's cores, 2 and
    /// 4 writers ingested at 0.97–1.00× the rate of one (BENCHMARKS.md): more pay only where
    /// the server has cores to spare.
    package var writers: Int?

    /// The most sessions `--writers` may ask for (the PostgreSQL pool holds 8 connections).
    package static let maximumWriters = 8

    package init(
        paths: [String],
        location: StoreLocation,
        keyRing: KeyRing = .apple,
        receivedAt: UTCInstant? = nil,
        channel: PostbackChannel = .file,
        width: Int = ActiveProcessors.count,
        logger: Logger = Logger(label: "postbackd.ingest", factory: { _ in SwiftLogNoOpLogHandler() }),
        quarantineMessageLimit: Int = 20,
        entriesPerTransaction: Int = IngestJob.defaultEntriesPerTransaction,
        writers: Int? = nil
    ) {
        self.paths = paths
        self.location = location
        self.keyRing = keyRing
        self.receivedAt = receivedAt
        self.channel = channel
        self.width = width
        self.logger = logger
        self.quarantineMessageLimit = quarantineMessageLimit
        self.entriesPerTransaction = max(1, entriesPerTransaction)
        self.writers = writers
    }

    /// How many sessions write at once into `location`.
    package func writerCount(_ location: StoreLocation) -> Int {
        switch location {
        case .sqlite: 1
        case .postgres: min(Self.maximumWriters, max(1, writers ?? 1))
        }
    }

    /// The longest a transaction stays open: it blocks other writers meanwhile, and a kill
    /// loses at most this much work (which a re-run redoes).
    ///
    /// Four seconds, not one: each commit writes every page of the dedup index that its inserts
    /// touched, and they land at random, so in a large store a commit rewrites most of the
    /// index whatever its size. Measured on 2 cores, 300,000 postbacks into a store of 3 M:
    /// 0.68–0.73× the empty store's rate with one-second commits, 0.78× with two, 0.82× with
    /// four (BENCHMARKS.md).
    static let millisecondsPerTransaction: Int64 = 4_000
    /// Postbacks written per transaction, at most, unless told otherwise: more than four
    /// seconds' worth on 2 cores, so that time ends most transactions.
    package static let defaultEntriesPerTransaction = 262_144

    /// Runs the job. Diagnostics and progress go to `errors`; the caller prints the summary.
    ///
    /// - Throws: ``PostbackKitError`` (a path does not exist) and ``DatabaseOpenError`` before
    ///   anything is read; a database error while writing (what was committed stays, and a
    ///   re-run completes it).
    package func run(errors: TextOutput, showProgress: Bool) async throws -> IngestSummary {
        let started = UTCInstant.now()
        let (files, walkDiagnostics) = try InputPaths.expand(paths)
        return try await PostbackStores.with(location, access: .ingest, logger: logger) { store in
            for diagnostic in walkDiagnostics { errors.line(diagnostic.description) }
            return try await run(
                files: files,
                store: store,
                started: started,
                errors: errors,
                showProgress: showProgress
            )
        }
    }

    private func run(
        files: [InputFile],
        store: any PostbackStorage,
        started: UTCInstant,
        errors: TextOutput,
        showProgress: Bool
    ) async throws -> IngestSummary {
        var canonicalPaths: [String: String] = [:]
        for file in files {
            if let path = file.path { canonicalPaths[path] = canonicalPath(path) }
        }
        let canonical = canonicalPaths
        let runID = try await store.beginRun(
            inputs: paths.isEmpty ? ["-"] : paths,
            receivedAtOption: receivedAt,
            startedAt: started
        )
        var logger = self.logger
        logger[metadataKey: "ingest.run_id"] = "\(runID)"
        logger.info(
            "ingest started",
            metadata: [
                "ingest.inputs": "\(files.count)", "ingest.database": "\(location)", "ingest.channel": "\(channel)",
                "ingest.writers": "\(writerCount(location))",
            ]
        )

        let reader = EntryReader(files: files)
        let progress = IngestProgress(
            output: errors,
            enabled: showProgress,
            totalBytes: files.contains(.standardInput) ? nil : files.compactMap { fileSize($0.path) }.reduce(0, +),
            totalFiles: files.count
        )
        let context = BatchContext(
            runID: runID,
            rule: ReceivedTimeRule(fixed: receivedAt),
            channel: channel,
            storedSource: { canonical[$0] ?? $0 }
        )
        var summary = IngestSummary()
        summary.runID = runID
        var described = 0
        let limit = quarantineMessageLimit
        // Batches are written as they arrive into one transaction, committed every
        // `entriesPerTransaction` postbacks (whole batches) or `millisecondsPerTransaction`. Every write is
        // idempotent, so a crash between commits loses nothing a re-run does not restore.
        var transactionEntries = 0
        var transactionStarted = UTCInstant.now()
        do {
            try await store.withIngestSessions(writerCount(store.location)) { sessions in
                let session: any IngestSession = sessions.count == 1 ? sessions[0] : ShardedIngestSession(sessions)
                func commit() async throws {
                    summary.add(try await session.commit())
                    logger.trace("transaction committed", metadata: ["ingest.read": "\(summary.read)"])
                    transactionEntries = 0
                }
                do {
                    // Each batch is made into rows on its verifier's thread; the writer's thread
                    // only binds them and steps the statements.
                    try await VerificationPipeline(
                        keyRing: keyRing,
                        width: width,
                        hashingRaw: true,
                        handoffBatches: session.handoffBatches
                    ).run(
                        reader,
                        prepare: { PreparedBatch($0, context: context) }
                    ) { prepared in
                        let verified = prepared.verified
                        if transactionEntries == 0 { transactionStarted = UTCInstant.now() }
                        let quarantined = try await session.write(prepared, context: context)
                        transactionEntries += verified.batch.entries.count
                        for item in quarantined where described < limit {
                            progress.message(VerificationReport.textLine(item.location, item.result))
                            described += 1
                        }
                        for diagnostic in verified.batch.readerState.diagnostics {
                            progress.message(diagnostic.description)
                        }
                        if transactionEntries >= entriesPerTransaction
                            || UTCInstant.now().milliseconds - transactionStarted.milliseconds
                                >= Self.millisecondsPerTransaction
                        {
                            try await commit()
                        }
                        progress.update(
                            postbacks: summary.read,
                            bytesRead: verified.batch.readerState.bytesRead,
                            filesOpened: verified.batch.readerState.filesOpened
                        )
                    }
                    try await commit()
                } catch {
                    // What the engine committed on its own stays stored: count it.
                    summary.add(await session.rollback())
                    throw error
                }
            }
        } catch {
            // The session rolled back what it had not committed.
            progress.finish()
            summary.seconds = Double(UTCInstant.now().milliseconds - started.milliseconds) / 1000
            try? await store.finishRun(runID, summary: summary, status: "failed", finishedAt: .now())
            logger.error(
                "ingest failed",
                metadata: ["ingest.error": "\(StoreFault.classify(error, at: store.location).reason)"]
            )
            throw error
        }
        progress.finish()
        for diagnostic in reader.takeDiagnostics() { errors.line(diagnostic.description) }
        if summary.quarantined > described {
            errors.line(
                "… and \(formatCount(summary.quarantined - described)) more quarantined; all are in the quarantine table of \(location)"
            )
        }
        summary.files = reader.filesOpened
        summary.unreadableFiles = reader.unreadableFiles
        summary.seconds = Double(UTCInstant.now().milliseconds - started.milliseconds) / 1000
        try await store.finishRun(runID, summary: summary, status: "completed", finishedAt: .now())
        logger.info(
            "ingest completed",
            metadata: ["ingest.read": "\(summary.read)", "ingest.accepted": "\(summary.accepted)"]
        )
        errors.flush()
        return summary
    }
}

/// The absolute path with symbolic links resolved, so that one file read by two names is one
/// source; the path as given when it cannot be resolved.
package func canonicalPath(_ path: String) -> String {
    guard let resolved = realpath(path, nil) else { return path }
    defer { free(resolved) }
    return String(cString: resolved)
}

private func fileSize(_ path: String?) -> Int? {
    guard let path else { return nil }
    var info = stat()
    guard stat(path, &info) == 0 else { return nil }
    return Int(info.st_size)
}
