import PostbackKit

/// Where postbacks are stored: an SQLite file (the embedded default) or a PostgreSQL database.
///
/// `--db` and `POSTBACKD_DB` take either: `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE`
/// or `postgresql://…` (several `HOST[:PORT]` separated by commas, and the parameters
/// `sslmode`, `target_session_attrs` and `connect_timeout`, as libpq reads them) is
/// PostgreSQL; anything else is an SQLite path.
package enum StoreLocation: Sendable, Hashable, CustomStringConvertible {
    case sqlite(path: String)
    case postgres(PostgresURL)

    /// Parses `--db` (or the option named `option`, for its messages).
    package init(_ text: String, option: String = "--db") throws(StoreError) {
        let lowered = text.lowercased()
        if lowered.hasPrefix("postgres://") || lowered.hasPrefix("postgresql://") {
            self = .postgres(try PostgresURL(text, option: option))
        } else {
            self = .sqlite(path: text)
        }
    }

    /// The store as messages name it: the path, or the URL without its password.
    package var description: String {
        switch self {
        case .sqlite(let path): path
        case .postgres(let url): url.description
        }
    }

    /// The engine's name, for messages and logs.
    package var engine: String {
        switch self {
        case .sqlite: "SQLite"
        case .postgres: "PostgreSQL"
        }
    }
}

/// A parsed `postgres://` URL, as libpq reads one: one host or several (`h1:5432,h2:5432`),
/// tried in order for the one whose session matches `target_session_attrs`. Its
/// ``description`` never shows the password.
package struct PostgresURL: Sendable, Hashable, CustomStringConvertible {
    package enum SSLMode: String, Sendable, Hashable {
        case disable, prefer, require
    }

    /// libpq's `target_session_attrs`: which of the URL's servers a session may use.
    package enum SessionAttributes: String, Sendable, Hashable, CaseIterable {
        /// The first server that answers (libpq's default).
        case any
        /// A server whose sessions accept writes (`transaction_read_only` off).
        case readWrite = "read-write"
        /// A server whose sessions do not accept writes.
        case readOnly = "read-only"
        /// A server that is not in recovery.
        case primary
        /// A server in recovery: a standby.
        case standby
        /// A standby if one answers, else any server.
        case preferStandby = "prefer-standby"

        /// Whether a session on such a server accepts writes.
        package var writes: Bool { self == .readWrite || self == .primary }
    }

    /// One `host:port` of the URL.
    package struct Server: Sendable, Hashable, CustomStringConvertible {
        package var host: String
        package var port: Int

        package init(host: String, port: Int) {
            self.host = host
            self.port = port
        }

        /// `host:port`, an IPv6 host in brackets.
        package var description: String { (host.contains(":") ? "[\(host)]" : host) + ":\(port)" }
    }

    package var user: String
    package var password: String?
    /// The servers, in the URL's order (at least one).
    package var servers: [Server]
    package var database: String
    package var sslMode: SSLMode
    /// `target_session_attrs`, when the URL gives it.
    package var sessionAttributes: SessionAttributes?
    /// `connect_timeout` in seconds, when the URL gives it.
    package var connectTimeout: Int?
    /// How long a connection may take to open: `connect_timeout`, or 10 s.
    var connectWait: Duration { .seconds(connectTimeout ?? 10) }
    /// `keepalives=0`: the sessions do not ask the server for TCP keep-alives (a PgBouncer in
    /// between refuses startup parameters it does not know).
    package var keepalives = true

    /// The first server's host.
    package var host: String { servers[0].host }
    /// The first server's port.
    package var port: Int { servers[0].port }

    /// Parses `postgres://USER[:PASSWORD]@HOST[:PORT][,HOST[:PORT]…]/DATABASE[?PARAMETERS]`;
    /// user, password and database may be percent-encoded. The parameters are `sslmode`,
    /// `target_session_attrs` and `connect_timeout`, as libpq reads them.
    package init(_ text: String, option: String = "--db") throws(StoreError) {
        func fail(_ code: StoreError.Code, _ what: String) -> StoreError {
            StoreError(
                code,
                "\(option) \(Self.redacting(text)) is not a PostgreSQL URL: \(what); use postgres://USER[:PASSWORD]@HOST[:PORT][,HOST[:PORT]…]/DATABASE[?sslmode=disable|prefer|require&target_session_attrs=…&connect_timeout=SECONDS]"
            )
        }
        guard let schemeEnd = text.range(of: "://") else { throw fail(.incomplete, "no scheme") }
        var rest = Substring(text[schemeEnd.upperBound...])
        var query: Substring = ""
        if let mark = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: mark)...]
            rest = rest[..<mark]
        }
        guard let slash = rest.firstIndex(of: "/") else { throw fail(.incomplete, "no database name after the host") }
        let authority = rest[..<slash]
        let databasePart = rest[rest.index(after: slash)...]
        guard let at = authority.lastIndex(of: "@") else { throw fail(.incomplete, "no user before @") }
        let credentials = authority[..<at]
        let hostList = authority[authority.index(after: at)...]
        let userPart: Substring
        var passwordPart: Substring?
        if let colon = credentials.firstIndex(of: ":") {
            userPart = credentials[..<colon]
            passwordPart = credentials[credentials.index(after: colon)...]
        } else {
            userPart = credentials
        }
        guard let user = Self.percentDecoded(userPart), !user.isEmpty else { throw fail(.incomplete, "no user") }
        guard let database = Self.percentDecoded(databasePart), !database.isEmpty else {
            throw fail(.incomplete, "no database name")
        }
        var servers: [Server] = []
        for hostPort in hostList.split(separator: ",", omittingEmptySubsequences: false) {
            var host = String(hostPort)
            var port = 5432
            if hostPort.hasPrefix("[") {
                // [::1]:5432
                guard let close = hostPort.firstIndex(of: "]") else {
                    throw fail(.invalidHost, "an unclosed [ in the host")
                }
                host = String(hostPort[hostPort.index(after: hostPort.startIndex)..<close])
                let after = hostPort[hostPort.index(after: close)...]
                if after.hasPrefix(":") {
                    guard let number = Int(after.dropFirst()), (1...65535).contains(number) else {
                        throw fail(.invalidPort, "the port is not a number from 1 to 65535")
                    }
                    port = number
                }
            } else if let colon = hostPort.lastIndex(of: ":") {
                host = String(hostPort[..<colon])
                guard let number = Int(hostPort[hostPort.index(after: colon)...]), (1...65535).contains(number) else {
                    throw fail(.invalidPort, "the port is not a number from 1 to 65535")
                }
                port = number
            }
            guard !host.isEmpty else { throw fail(.incomplete, "no host") }
            servers.append(Server(host: host, port: port))
        }
        var sslMode = SSLMode.prefer
        var sessionAttributes: SessionAttributes?
        var connectTimeout: Int?
        var keepalives = true
        for parameter in query.split(separator: "&") where !parameter.isEmpty {
            let pair = parameter.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(pair[0])
            let value = pair.count > 1 ? String(pair[1]) : ""
            switch name {
            case "sslmode":
                guard let mode = SSLMode(rawValue: value) else {
                    throw fail(.invalidSSLMode, "sslmode \(value) is not disable, prefer or require")
                }
                sslMode = mode
            case "target_session_attrs":
                guard let attributes = SessionAttributes(rawValue: value) else {
                    throw fail(
                        .invalidSessionAttributes,
                        "target_session_attrs \(value) is not "
                            + SessionAttributes.allCases.map(\.rawValue).joined(separator: ", ")
                    )
                }
                sessionAttributes = attributes
            case "keepalives":
                guard value == "0" || value == "1" else {
                    throw fail(.unknownParameter, "keepalives \(value) is not 0 or 1")
                }
                keepalives = value == "1"
            case "connect_timeout":
                // libpq waits for ever on 0; postbackd bounds every wait.
                guard let seconds = Int(value), (1...3600).contains(seconds) else {
                    throw fail(
                        .invalidConnectTimeout,
                        "connect_timeout \(value) is not a number of seconds from 1 to 3600"
                    )
                }
                connectTimeout = seconds
            default:
                throw fail(
                    .unknownParameter,
                    "unknown parameter \(name) (sslmode, target_session_attrs, connect_timeout and keepalives are understood)"
                )
            }
        }
        self.user = user
        self.password = passwordPart.flatMap { Self.percentDecoded($0) }
        self.servers = servers
        self.database = database
        self.sslMode = sslMode
        self.sessionAttributes = sessionAttributes
        self.connectTimeout = connectTimeout
        self.keepalives = keepalives
    }

    /// `postgres://USER@HOST:PORT[,HOST:PORT…]/DATABASE`, with `:***` where a password was
    /// given, and the parameters the URL set.
    package var description: String {
        var parameters: [String] = []
        if sslMode != .prefer { parameters.append("sslmode=\(sslMode.rawValue)") }
        if let sessionAttributes { parameters.append("target_session_attrs=\(sessionAttributes.rawValue)") }
        if let connectTimeout { parameters.append("connect_timeout=\(connectTimeout)") }
        if !keepalives { parameters.append("keepalives=0") }
        return "postgres://\(user)\(password == nil ? "" : ":***")@"
            + servers.map(\.description).joined(separator: ",") + "/\(database)"
            + (parameters.isEmpty ? "" : "?" + parameters.joined(separator: "&"))
    }

    /// The text with any password between `://user:` and `@` replaced by `***`.
    static func redacting(_ text: String) -> String {
        guard let schemeEnd = text.range(of: "://"),
            let at = text[schemeEnd.upperBound...].lastIndex(of: "@")
        else { return text }
        let credentials = text[schemeEnd.upperBound..<at]
        guard let colon = credentials.firstIndex(of: ":") else { return text }
        return String(text[..<colon]) + ":***" + String(text[at...])
    }

    private static func percentDecoded(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next().flatMap(hexDigitValue),
                    let low = iterator.next().flatMap(hexDigitValue)
                else { return nil }
                bytes.append(high << 4 | low)
            } else {
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

}
