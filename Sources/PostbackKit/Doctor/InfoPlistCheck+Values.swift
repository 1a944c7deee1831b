extension InfoPlistCheck {
    /// A whole number of `unit` in `range`; a whole real is taken as one.
    static func integer(
        _ value: PropertyListValue,
        at path: String,
        range: ClosedRange<Int64>,
        unit: String
    ) -> [DoctorFinding] {
        let number: Int64
        switch value {
        case .integer(let whole):
            number = whole
        case .real(let real) where real == real.rounded() && abs(real) < 1e15:
            // A whole real is read as a number; Apple's examples write <integer>.
            number = Int64(real)
        default:
            return [
                wrongType(
                    value,
                    at: path,
                    expected: "a number",
                    fix: "make it a Number (<integer>) from \(range.lowerBound) to \(range.upperBound) \(unit)"
                )
            ]
        }
        guard range.contains(number) else {
            return [
                DoctorFinding(
                    path,
                    .outOfRange,
                    problem: "\(number) \(unit) is outside \(range.lowerBound)–\(range.upperBound)",
                    fix: "write a number of \(unit) from \(range.lowerBound) to \(range.upperBound)"
                )
            ]
        }
        return []
    }

    /// A value of another type than `expected` (`a dictionary`), shown when `showsValue`.
    static func wrongType(
        _ value: PropertyListValue,
        at path: String,
        expected: String,
        showsValue: Bool = true,
        fix: String
    ) -> DoctorFinding {
        let found = showsValue ? "\(value.typeName) (\(value.shown))" : value.typeName
        return DoctorFinding(path, .wrongType, problem: "\(found), not \(expected)", fix: fix)
    }

    static func misplaced(_ path: String, _ key: String, belongs: String) -> DoctorFinding {
        DoctorFinding(
            path,
            .misplaced,
            problem: "iOS does not read \(key) here",
            fix: "move it to \(belongs)"
        )
    }

    /// A key iOS does not read, with the nearest known key when it looks like a misspelling
    /// (`reengagement-cooldown-hours` for `re-engagement-cooldown-hours`).
    static func unknown(_ path: String, _ key: String, known: [String]) -> DoctorFinding {
        let folded = key.lowercased().filter { $0.isLetter || $0.isNumber }
        let near = known.first { $0.lowercased().filter { $0.isLetter || $0.isNumber } == folded }
        return DoctorFinding(
            path,
            .unknownKey,
            problem: "iOS does not read \(key) here",
            fix: near.map { "rename it \($0)" }
                ?? "remove it, or use one of \(known.joined(separator: ", "))"
        )
    }
}
