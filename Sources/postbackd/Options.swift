import ArgumentParser
import PostbackKit
import PostbackStore

#if canImport(Glibc)
import Glibc
#endif

/// `--keys DIR`: the public keys to verify with.
struct KeyOptions: ParsableArguments {
    @Option(
        name: .customLong("keys"),
        help: ArgumentHelp(
            "Verify with the keys in <dir> instead of Apple's built-in ones: p192.pem verifies 1.0 and 2.0, p256.pem 2.1 and later; either may be absent. Repeat to try several folders in order.",
            valueName: "dir"
        )
    )
    var directories: [String] = []

    /// The key ring these options select, or a usage error naming the bad folder or file.
    func keyRing() throws -> KeyRing {
        guard !directories.isEmpty else { return .apple }
        do {
            return try KeyRing(directories: directories)
        } catch {
            throw ValidationError(error.reason)
        }
    }
}

extension ResultFormat: ExpressibleByArgument {}

/// Reports a run that could not read its inputs, and exits with status 2.
func failInput(_ message: String) -> ExitCode {
    let errors = TextOutput.standardError()
    // Messages quote input (names, cells, reasons): a terminal shows it, it does not act on it.
    errors.line(
        "postbackd: "
            + message.split(separator: "\n", omittingEmptySubsequences: false).map(\.escapedForTerminal).joined(
                separator: "\n"
            )
    )
    errors.flush()
    return .usageOrInputError
}

/// The bytes of the small file an option names (a configuration, key or token file), at most
/// ``ConversionModelFile/maximumBytes``; otherwise an exit with status 2 and the option, the
/// file and which fault (``WholeFile``).
func readOptionFile(_ path: String, option: String, what: String) throws(ExitCode) -> [UInt8] {
    do {
        return try WholeFile.read(path, limit: ConversionModelFile.maximumBytes, what: what)
    } catch {
        throw failInput("\(option) " + error.reason)
    }
}

/// The environment variable `name`, unless unset or empty.
func environmentValue(_ name: String) -> String? {
    guard let value = getenv(name).flatMap({ String(validatingCString: $0) }), !value.isEmpty else { return nil }
    return value
}

/// `--db FILE|URL`: an SQLite file or a PostgreSQL URL, defaulting to `$POSTBACKD_DB`, then
/// `postbackd.sqlite`.
struct DatabaseOptions: ParsableArguments {
    @Option(
        name: .customLong("db"),
        help: ArgumentHelp(
            "The store: an SQLite file, or a PostgreSQL URL (postgres://USER[:PASSWORD]@HOST[:PORT][,HOST[:PORT]…]/DATABASE[?sslmode=…&target_session_attrs=…&connect_timeout=…]; see docs/postgresql.md). Default: $POSTBACKD_DB, or postbackd.sqlite in the working directory.",
            valueName: "file|url"
        )
    )
    var database: String?

    var text: String {
        database ?? environmentValue("POSTBACKD_DB") ?? PostbackDatabase.defaultFileName
    }

    /// Where the store is; validated before `run()`.
    var location: StoreLocation {
        (try? StoreLocation(text)) ?? .sqlite(path: text)
    }

    func validate() throws {
        do {
            _ = try StoreLocation(text)
        } catch {
            throw ValidationError(error.reason)
        }
    }

    /// A job's `body` on the store: any error it throws becomes the exit with status 2 and one
    /// sentence of ``failStore(_:_:whileWriting:)``. With `refusals`, a ``StoreError`` (the job
    /// refusing what it was given: an app that is not registered, a key's name already taken)
    /// is said as it is.
    func perform<Result>(
        whileWriting: Bool = false,
        refusals: Bool = false,
        _ body: (StoreLocation) async throws -> Result
    ) async throws -> Result {
        do {
            return try await body(location)
        } catch let error as StoreError where refusals {
            throw failInput(error.reason)
        } catch {
            throw failStore(error, location, whileWriting: whileWriting)
        }
    }
}

/// A store that cannot be used, or stopped working, as an exit with status 2 and one sentence
/// naming the store and saying what to do (``StoreFault``): never the driver's text alone,
/// never a password.
func failStore(_ error: any Error, _ location: StoreLocation, whileWriting: Bool = false) -> ExitCode {
    failInput(StoreFault.classify(error, at: location, whileWriting: whileWriting).reason)
}

extension RevenueEstimatePolicy: ExpressibleByArgument {}
extension ReportFormat: ExpressibleByArgument {}

/// Parses `YYYY-MM-DD` for an option.
/// Refuses a time option that is neither an ISO 8601 date nor a date-time (nor `literal`, a word
/// it also takes).
func checkTime(_ text: String?, option: String, orLiteral literal: String? = nil) throws {
    guard let text, UTCInstant(iso8601: text) == nil, text != literal else { return }
    throw ValidationError(
        "\(option) \(text) is not an ISO 8601 date or date-time (2026-11-21 or 2026-11-21T08:00:00Z)"
            + (literal.map { ", or \($0)" } ?? "")
    )
}

func day(_ text: String, option: String) throws -> UTCDay {
    guard let day = UTCDay(text) else { throw ValidationError("\(option) \(text) is not a date (YYYY-MM-DD)") }
    return day
}

/// `--from` and `--to`: a period of UTC days, either end open.
struct PeriodOptions: ParsableArguments {
    @Option(help: ArgumentHelp("First day (UTC) to include.", valueName: "YYYY-MM-DD"))
    var from: String?

    @Option(help: ArgumentHelp("Last day (UTC) to include.", valueName: "YYYY-MM-DD"))
    var to: String?

    func validate() throws {
        if let from { _ = try day(from, option: "--from") }
        if let to { _ = try day(to, option: "--to") }
    }

    /// The first day; validated before `run()`.
    var first: UTCDay? { from.flatMap(UTCDay.init) }
    /// The last day; validated before `run()`.
    var last: UTCDay? { to.flatMap(UTCDay.init) }
}

/// `--app-id` and `--ad-network-id`: the filters of `report` and `reconcile`.
struct FilterOptions: ParsableArguments {
    @Option(
        name: .customLong("app-id"),
        help: ArgumentHelp("Only this app (repeat, or separate by commas, for several).", valueName: "id")
    )
    var appIDs: [String] = []

    @Option(
        name: .customLong("ad-network-id"),
        help: ArgumentHelp("Only this ad network (repeat, or separate by commas, for several).", valueName: "id")
    )
    var adNetworkIDs: [String] = []
}

/// `--date-basis`: whether a period's days are days received or install dates.
struct DateBasisOption: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Whether --from and --to are days received (received_at; the default) or install dates (estimated: received_at minus 36, 84, 252 or 924 hours by version and postback).",
            valueName: "received|install"
        )
    )
    var dateBasis: DateBasis?
}

extension DateBasis: ExpressibleByArgument {}
