import Foundation
import GRDB
import PostbackKit

/// `check`'s engine check on SQLite, its own: `PRAGMA integrity_check`.
extension SQLiteStore {
    package func checkEngine() throws -> EngineCheck {
        let name = "integrity_check"
        let messages = try queue.read { db in try String.fetchAll(db, sql: "PRAGMA \(name)(100)") }
        if messages == ["ok"] { return EngineCheck(name: name, outcome: .sound, messages: []) }
        return EngineCheck(name: name, outcome: .problems, messages: messages)
    }

}
