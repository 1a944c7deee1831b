// SQLite's settings that Swift cannot set itself: sqlite3_config and sqlite3_db_config are
// variadic. (PostbackStore/SQLite/PostbackDatabase.swift, PostbackSchema.swift)
#include <sqlite3.h>

// Turns off SQLite's memory statistics: every allocation and free then skips a process-wide
// mutex. postbackd reads none of them (no soft heap limit, no sqlite3_memory_used). Takes
// effect only before SQLite initializes; returns SQLITE_MISUSE after.
static inline int postbackd_sqlite3_disable_memory_statistics(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

// Sets `db`'s defensive mode (SQLITE_DBCONFIG_DEFENSIVE: 1 on, 0 off) and returns what it was.
// A migration that edits a table's SQL in sqlite_master under `PRAGMA writable_schema` (SQLite's
// documented way to change a CHECK constraint without rebuilding the table) turns it off, since a
// build of SQLite whose connections start defensive would refuse the edit, and puts it back.
static inline int postbackd_sqlite3_set_defensive(sqlite3 *db, int on) {
    int was = 0;
    sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, -1, &was);
    sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, on, (int *)0);
    return was;
}
