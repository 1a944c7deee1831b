import PostgresNIO

/// `INSERT … SELECT * FROM unnest($1, $2, …) suffix`, each column one array parameter;
/// `columnsSuffix` adds constant columns after the arrays' (`, 0, ''`).
func unnestInsert(
    _ insert: String,
    _ columns: [PostgresArrayColumn],
    columnsSuffix: String = "",
    suffix: String = ""
) -> PostgresQuery {
    var binds = PostgresBindings(capacity: columns.count)
    for column in columns { binds.append(column) }
    let parameters = (1...columns.count).map { "$\($0)" }.joined(separator: ", ")
    let select = columnsSuffix.isEmpty ? "SELECT *" : "SELECT u.*\(columnsSuffix)"
    return PostgresQuery(unsafeSQL: "\(insert) \(select) FROM unnest(\(parameters)) AS u \(suffix)", binds: binds)
}
