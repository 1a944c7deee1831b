/// What one check of `postbackd doctor` saw: its target, what it observed, and its findings,
/// or why it could not run at all.
package struct DoctorSection: Sendable {
    /// The check: `plist`, `endpoint` (later `db`).
    package var check: String
    /// What it checked: a file, a URL, a store.
    package var target: String
    /// What it observed, one line each, shown in the text output whatever was found
    /// (`POST /.well-known/skadnetwork/report-attribution/: 200 in 12 ms`).
    package var notes: [String] = []
    package var findings: [DoctorFinding] = []
    /// Set when the check could not run at all (a file that cannot be read, an endpoint that
    /// cannot be reached): the run exits 2.
    package var failure: String?
    /// Members added to the check's JSON object, as JSON (`"probes": [...]`).
    package var details: [DoctorDetail] = []
    /// Samples for `--prometheus-textfile` beside the findings count.
    package var metrics: [DoctorMetric] = []

    package init(check: String, target: String) {
        self.check = check
        self.target = target
    }
}

/// One JSON member of a check's object: its key and its value as JSON text.
package struct DoctorDetail: Sendable {
    package var key: String
    package var json: String

    package init(_ key: String, json: String) {
        self.key = key
        self.json = json
    }
}

/// One sample in the node_exporter textfile collector's format.
package struct DoctorMetric: Sendable {
    package var name: String
    package var help: String
    package var labels: [(String, String)]
    package var value: Double

    package init(_ name: String, help: String, labels: [(String, String)], value: Double) {
        self.name = name
        self.help = help
        self.labels = labels
        self.value = value
    }
}

/// The outcome of `postbackd doctor`: every check's section, rendered as text, JSON, or
/// Prometheus samples; and the exit status it calls for.
package struct DoctorReport: Sendable {
    package var sections: [DoctorSection]

    package init(_ sections: [DoctorSection]) { self.sections = sections }

    package var findingCount: Int { sections.reduce(0) { $0 + $1.findings.count } }
    /// Whether some check could not run at all.
    package var failed: Bool { sections.contains { $0.failure != nil } }

    /// 0 nothing wrong, 1 findings, 2 a check that could not run.
    package var exitStatus: Int32 { failed ? 2 : (findingCount > 0 ? 1 : 0) }

    /// One block per check; one block per finding: where (and the kind), what, the fix.
    package var text: String {
        var out = ""
        for section in sections {
            let head = "\(section.check) \(section.target)".escapedForTerminal
            if let failure = section.failure {
                out += "\(head): could not check: \(failure.escapedForTerminal)\n"
            } else {
                let count = section.findings.count
                out +=
                    "\(head): " + (count == 0 ? "no findings" : count == 1 ? "1 finding" : "\(count) findings") + "\n"
            }
            for note in section.notes { out += "  \(note.escapedForTerminal)\n" }
            for finding in section.findings {
                out += "  \(finding.subject.escapedForTerminal) [\(finding.kind)]\n"
                out += "    problem: \(finding.problem.escapedForTerminal)\n"
                out += "    fix: \(finding.fix.escapedForTerminal)\n"
            }
        }
        let total = findingCount
        out += total == 0 && !failed ? "nothing wrong found\n" : "\(total) finding\(total == 1 ? "" : "s")\n"
        return out
    }

    /// `{"findings":N,"failed":false,"checks":[{"check":…,"target":…,"failure":…,"findings":[…],…}]}`.
    package var json: String {
        var checks: [String] = []
        for section in sections {
            var object = JSONObjectWriter()
            object.add("check", section.check)
            object.add("target", section.target)
            object.add("failure", section.failure)
            object.add("notes", strings: section.notes)
            let findings = section.findings.map { finding in
                var item = JSONObjectWriter()
                item.add("subject", finding.subject)
                item.add("kind", finding.kind.rawValue)
                item.add("problem", finding.problem)
                item.add("fix", finding.fix)
                return item.text
            }
            object.addRaw("findings", json: "[" + findings.joined(separator: ",") + "]")
            for detail in section.details { object.addRaw(detail.key, json: detail.json) }
            checks.append(object.text)
        }
        var object = JSONObjectWriter()
        object.add("findings", findingCount)
        object.add("failed", failed)
        object.addRaw("checks", json: "[" + checks.joined(separator: ",") + "]")
        return object.text + "\n"
    }

    /// The node_exporter textfile collector's format: `postbackd_doctor_findings` per check,
    /// each check's own samples, and `postbackd_doctor_last_run_timestamp_seconds`.
    ///
    /// - Parameter now: the run's time, in Unix seconds.
    package func prometheus(now: Double) -> String {
        var samples: [DoctorMetric] = []
        for section in sections {
            samples.append(
                DoctorMetric(
                    "postbackd_doctor_findings",
                    help:
                        "Findings of the last postbackd doctor run, per check and target (-1: the check could not run).",
                    labels: [("check", section.check), ("target", section.target)],
                    value: section.failure == nil ? Double(section.findings.count) : -1
                )
            )
            samples += section.metrics
        }
        samples.append(
            DoctorMetric(
                "postbackd_doctor_last_run_timestamp_seconds",
                help: "When postbackd doctor last ran, in Unix seconds.",
                labels: [],
                value: now
            )
        )
        // Samples of one name together, under one HELP and TYPE, in the order first seen.
        var order: [String] = []
        var byName: [String: [DoctorMetric]] = [:]
        for sample in samples {
            if byName[sample.name] == nil { order.append(sample.name) }
            byName[sample.name, default: []].append(sample)
        }
        var out = ""
        for name in order {
            guard let group = byName[name], let first = group.first else { continue }
            out += "# HELP \(name) \(first.help)\n# TYPE \(name) gauge\n"
            for sample in group {
                let labels = sample.labels.map { "\($0.0)=\"\(Self.escapedLabel($0.1))\"" }.joined(separator: ",")
                out += name + (labels.isEmpty ? "" : "{\(labels)}") + " " + Self.number(sample.value) + "\n"
            }
        }
        return out
    }

    private static func escapedLabel(_ value: String) -> String {
        value.replacingCharacters { character in
            switch character {
            case "\\": "\\\\"
            case "\"": "\\\""
            case "\n": "\\n"
            default: nil
            }
        }
    }

    private static func number(_ value: Double) -> String {
        guard value.isFinite else { return value.isNaN ? "NaN" : (value > 0 ? "+Inf" : "-Inf") }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }
}
