// SQLite's process-wide settings, which Swift cannot set itself: sqlite3_config is variadic.
// (PostbackStore/SQLite/PostbackDatabase.swift)
#include <sqlite3.h>

// Turns off SQLite's memory statistics: every allocation and free then skips a process-wide
// mutex. postbackd reads none of them (no soft heap limit, no sqlite3_memory_used). Takes
// effect only before SQLite initializes; returns SQLITE_MISUSE after.
static inline int postbackd_sqlite3_disable_memory_statistics(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
