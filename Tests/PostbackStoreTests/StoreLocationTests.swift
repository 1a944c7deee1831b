import PostbackStore
import Testing

@Suite("--db: an SQLite path or a PostgreSQL URL")
struct StoreLocationTests {
    @Test("anything that is not a postgres:// or postgresql:// URL is an SQLite path")
    func sqlitePaths() throws {
        for text in ["postbackd.sqlite", "/var/lib/postbackd/db.sqlite", "postgres.sqlite", "./postgres:/x", ""] {
            #expect(try StoreLocation(text) == .sqlite(path: text))
        }
    }

    @Test("the parts of a URL, with their defaults")
    func parts() throws {
        let plain = try PostgresURL("postgres://ingest@db.internal/postbacks")
        #expect(plain.user == "ingest")
        #expect(plain.password == nil)
        #expect(plain.host == "db.internal")
        #expect(plain.port == 5432)
        #expect(plain.database == "postbacks")
        #expect(plain.sslMode == .prefer)

        let full = try PostgresURL("postgresql://ingest:p%40ss%3Aword@10.0.0.7:6432/post%20backs?sslmode=require")
        #expect(full.password == "p@ss:word")
        #expect(full.host == "10.0.0.7")
        #expect(full.port == 6432)
        #expect(full.database == "post backs")
        #expect(full.sslMode == .require)

        let six = try PostgresURL("postgres://u@[::1]:5433/d?sslmode=disable")
        #expect(six.host == "::1")
        #expect(six.port == 5433)
        #expect(six.sslMode == .disable)
        #expect(try StoreLocation("POSTGRES://u@h/d") == .postgres(try PostgresURL("postgres://u@h/d")))
    }

    @Test("several servers, target_session_attrs and connect_timeout, as libpq reads them")
    func multiHost() throws {
        let url = try PostgresURL(
            "postgres://w:secret@db1.internal:5432,db2.internal,[::1]:6432/postbacks?target_session_attrs=read-write&connect_timeout=3"
        )
        #expect(
            url.servers == [
                .init(host: "db1.internal", port: 5432), .init(host: "db2.internal", port: 5432),
                .init(host: "::1", port: 6432),
            ]
        )
        #expect(url.host == "db1.internal")
        #expect(url.sessionAttributes == .readWrite)
        #expect(url.connectTimeout == 3)
        #expect(
            url.description
                == "postgres://w:***@db1.internal:5432,db2.internal:5432,[::1]:6432/postbacks?target_session_attrs=read-write&connect_timeout=3"
        )
        for value in ["any", "read-write", "read-only", "primary", "standby", "prefer-standby"] {
            #expect(
                try PostgresURL("postgres://u@h1,h2/d?target_session_attrs=\(value)").sessionAttributes?.rawValue
                    == value
            )
        }
        #expect(try PostgresURL("postgres://u@h/d").sessionAttributes == nil)
        #expect(try PostgresURL("postgres://u@h/d").connectTimeout == nil)
        #expect(try PostgresURL("postgres://u@h/d").keepalives)
        let bouncer = try PostgresURL("postgres://u@h:6432/d?keepalives=0")
        #expect(!bouncer.keepalives)
        #expect(bouncer.description == "postgres://u@h:6432/d?keepalives=0")
    }

    @Test("a URL as messages and logs name it: the password replaced by ***")
    func redacted() throws {
        #expect(try PostgresURL("postgres://u:hunter2@h/d").description == "postgres://u:***@h:5432/d")
        #expect(try PostgresURL("postgres://u@h:1/d").description == "postgres://u@h:1/d")
        #expect(
            try PostgresURL("postgres://u:x@[::1]/d?sslmode=require").description
                == "postgres://u:***@[::1]:5432/d?sslmode=require"
        )
        #expect(try StoreLocation("postgres://u:hunter2@h/d").description == "postgres://u:***@h:5432/d")
    }

    @Test("a malformed URL says what is wrong, and its error never holds the password")
    func malformed() {
        let cases: [(String, String)] = [
            ("postgres://u:hunter2@h/d?sslmode=verify-full", "sslmode verify-full is not disable, prefer or require"),
            ("postgres://u:hunter2@h/d?application_name=x", "unknown parameter application_name"),
            ("postgres://u:hunter2@h:0/d", "the port is not a number from 1 to 65535"),
            ("postgres://u:hunter2@h:port/d", "the port is not a number from 1 to 65535"),
            ("postgres://u:hunter2@h", "no database name after the host"),
            ("postgres://u:hunter2@h/", "no database name"),
            ("postgres://h/d", "no user before @"),
            ("postgres://:hunter2@h/d", "no user"),
            ("postgres://u:hunter2@/d", "no host"),
            ("postgres://u:hunter2@[::1/d", "an unclosed [ in the host"),
            ("postgres://u%zz:hunter2@h/d", "no user"),
            ("postgres://u:hunter2@h1,,h2/d", "no host"),
            ("postgres://u:hunter2@h1,h2:0/d", "the port is not a number from 1 to 65535"),
            (
                "postgres://u:hunter2@h1,h2/d?target_session_attrs=master",
                "target_session_attrs master is not any, read-write"
            ),
            (
                "postgres://u:hunter2@h/d?connect_timeout=0",
                "connect_timeout 0 is not a number of seconds from 1 to 3600"
            ),
            ("postgres://u:hunter2@h/d?connect_timeout=x", "connect_timeout x is not a number of seconds"),
        ]
        for (text, reason) in cases {
            #expect {
                try StoreLocation(text)
            } throws: { error in
                let message = "\(error)"
                return message.contains(reason) && !message.contains("hunter2") && message.contains("postgres://USER")
            }
        }
    }
}
