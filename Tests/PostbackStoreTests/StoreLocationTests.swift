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
