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
