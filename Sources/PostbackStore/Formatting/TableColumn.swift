import PostbackKit

/// One column of the table format.
struct TableColumn {
    var header: String
    var rightAligned: Bool
    var cells: [String]
    var total: String? = nil
    /// Lower priorities are hidden first when the table is too wide (90 and up never are).
    var priority: Int
    var truncatable = false
    /// A width to truncate text cells to.
    var limit: Int? = nil

    var width: Int {
        let natural = max(header.count, cells.map(\.count).max() ?? 0, total?.count ?? 0)
        return limit.map { min($0, natural) } ?? natural
    }

    /// A right-aligned column of whole counts, each row's `count`, and their total under a table
    /// of more than one row.
    static func counts<Row>(_ header: String, of rows: [Row], priority: Int, _ count: (Row) -> Int) -> TableColumn {
        TableColumn(
            header: header,
            rightAligned: true,
            cells: rows.map { formatCount(count($0)) },
            total: rows.count > 1 ? formatCount(rows.reduce(0) { $0 + count($1) }) : nil,
            priority: priority
        )
    }

    /// ``lines(_:rows:)`` and then `after`, as text: each line without trailing spaces, and
    /// ended.
    static func text(_ columns: [TableColumn], rows: Int, after: [String] = []) -> String {
        (lines(columns, rows: rows) + after).map(\.trailingSpacesRemoved).joined(separator: "\n") + "\n"
    }

    /// The header, a rule, `rows` rows, and (when a column has one) a rule and the totals.
    static func lines(_ columns: [TableColumn], rows: Int) -> [String] {
        // Cells may hold text from outside (campaign and app names): a terminal shows it, it
        // does not act on it.
        let columns = columns.map { column in
            var column = column
            column.header = column.header.escapedForTerminal
            column.cells = column.cells.map(\.escapedForTerminal)
            column.total = column.total?.escapedForTerminal
            return column
        }
        // Each column's width once: a cell's line would otherwise measure every cell of its
        // column again (a year by network, 2,920 rows, took 4 s).
        let widths = columns.map(\.width)
        func line(_ text: (TableColumn) -> String) -> String {
            Self.line(columns.indices.map { (text(columns[$0]), columns[$0], widths[$0]) })
        }
        let rule = widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ")
        var lines = [line { $0.header }, rule]
        for index in 0..<rows { lines.append(line { $0.cells[index] }) }
        if columns.contains(where: { $0.total != nil }) {
            lines.append(rule)
            lines.append(line { $0.total ?? "" })
        }
        return lines
    }

    static func width(of columns: [TableColumn]) -> Int {
        columns.reduce(0) { $0 + $1.width } + max(0, columns.count - 1) * 2
    }

    static func line(_ cells: [(String, TableColumn, Int)]) -> String {
        cells.map { text, column, width in
            let shown = text.count > width ? String(text.prefix(width - 1)) + "…" : text
            let padding = String(repeating: " ", count: width - shown.count)
            return column.rightAligned ? padding + shown : shown + padding
        }.joined(separator: "  ")
    }
}

/// `text` broken at spaces into lines of at most `width` characters.
func wrap(_ text: String, width: Int) -> [String] {
    var lines: [String] = []
    var line = ""
    for word in text.split(separator: " ") {
        if !line.isEmpty && line.count + 1 + word.count > width {
            lines.append(line)
            line = "  "
        }
        line += (line.isEmpty || line == "  " ? "" : " ") + word
    }
    if !line.isEmpty { lines.append(line) }
    return lines
}

/// Revenue per currency as `{"USD": {"min": …, "max": …, "estimate": …}}`.

extension TableColumn {
    /// A column that is never hidden: `header`, and each of `rows`' cells. (In an extension: in
    /// the type's body it would take the memberwise initializer's place.)
    init<Row>(_ header: String, right: Bool = false, of rows: [Row], _ cell: (Row) -> String) {
        self.init(header: header, rightAligned: right, cells: rows.map(cell), priority: 90)
    }
}
