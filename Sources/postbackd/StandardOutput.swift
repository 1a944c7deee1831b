import ArgumentParser
import PostbackKit

/// Writes `text` to standard output and flushes it: a command's result, printed once it is whole.
func standardOutput(write text: String) {
    let output = TextOutput.standardOutput()
    output.write(text)
    output.flush()
}

/// Writes `text` and a line end to standard output and flushes them.
func standardOutput(line text: String) {
    let output = TextOutput.standardOutput()
    output.line(text)
    output.flush()
}

/// `--format` of the commands that list stored rows and write them back as the CSV they add
/// (`campaigns list`, `costs list`, `rates list`).
enum ListFormat: String, ExpressibleByArgument, CaseIterable {
    case table, csv, json

    /// `rows` on standard output, by the writer of this format.
    func write<Rows>(_ rows: Rows, table: (Rows) -> String, csv: (Rows) -> String, json: (Rows) -> String) {
        switch self {
        case .table: standardOutput(write: table(rows))
        case .csv: standardOutput(write: csv(rows))
        case .json: standardOutput(write: json(rows))
        }
    }
}
