import Foundation

/// Cases that are skipped on a machine that lacks what they need (a PostgreSQL server, a
/// browser): a notice test prints why where they are, and fails under CI (`CI` set), which
/// provides everything and must run them all.
package struct SkippedCases: Sendable {
    /// Whether the cases are skipped on this machine.
    package let skipped: Bool
    /// Why, and how to run them.
    package let notice: String

    package init(skipped: Bool, notice: String) {
        self.skipped = skipped
        self.notice = notice
    }

    /// Whether this is a CI run (`CI` set), where no case may be skipped.
    package static var underCI: Bool { ProcessInfo.processInfo.environment["CI"] != nil }

    /// Whether the notice test runs: where the cases are skipped, and always under CI.
    package var noticeRuns: Bool { skipped || Self.underCI }

    /// Prints the notice where the cases are skipped; false when they are skipped under CI.
    package func noticed() -> Bool {
        if skipped {
            print("notice: " + notice)
        }
        return !Self.underCI || !skipped
    }
}
