/// One top-level key of Info.plist that `doctor --plist` checks: the form its value takes, what
/// it says when the key is absent or holds another type, and the check of a value of that form.
///
/// ``InfoPlistCheck/rules`` holds one per key, in the order findings are listed.
struct InfoPlistRule: Sendable {
    /// The type a key's value must have, and how a finding names it.
    enum Form: Sendable {
        case string, array, dictionary, boolean

        /// As a finding names it: `a string`, `an array`, `a dictionary`, `a Boolean`.
        var name: String {
            switch self {
            case .string: "a string"
            case .array: "an array"
            case .dictionary: "a dictionary"
            case .boolean: "a Boolean"
            }
        }
    }

    /// A finding of a key iOS needs and does not find.
    struct Missing: Sendable {
        let problem: String
        let fix: String
    }

    /// The key, at the top level of Info.plist.
    let key: String
    let form: Form
    /// What to say when the key is absent; nil when it may be.
    let missing: Missing?
    /// Whether a finding for a value of another type shows the value.
    let showsWrongValue: Bool
    /// The fix of a finding for a value of another type.
    let wrongTypeFix: String
    /// The findings of a value of the right form.
    let content: @Sendable (PropertyListValue) -> [DoctorFinding]

    init(
        key: String,
        form: Form,
        missing: Missing? = nil,
        showsWrongValue: Bool = false,
        wrongTypeFix: String,
        content: @escaping @Sendable (PropertyListValue) -> [DoctorFinding] = { _ in [] }
    ) {
        self.key = key
        self.form = form
        self.missing = missing
        self.showsWrongValue = showsWrongValue
        self.wrongTypeFix = wrongTypeFix
        self.content = content
    }

    /// An array, whose items `items` checks.
    static func array(
        _ key: String,
        wrongTypeFix: String,
        items: @escaping @Sendable ([PropertyListValue]) -> [DoctorFinding]
    ) -> Self {
        InfoPlistRule(key: key, form: .array, wrongTypeFix: wrongTypeFix) { value in
            guard case .array(let elements) = value else { return [] }
            return items(elements)
        }
    }

    /// A dictionary, whose members `members` checks.
    static func dictionary(
        _ key: String,
        wrongTypeFix: String,
        members: @escaping @Sendable ([String: PropertyListValue]) -> [DoctorFinding]
    ) -> Self {
        InfoPlistRule(key: key, form: .dictionary, wrongTypeFix: wrongTypeFix) { value in
            guard case .dictionary(let dictionary) = value else { return [] }
            return members(dictionary)
        }
    }

    /// An endpoint: a string https://example.com naming the domain that serves `path`, required
    /// for iOS to send the developer copies of winning `kind` postbacks.
    static func endpoint(_ key: String, path: String, kind: String) -> Self {
        InfoPlistRule(
            key: key,
            form: .string,
            missing: Missing(
                problem: "missing at the top level: iOS sends the developer no copies of winning \(kind) postbacks",
                fix:
                    "add \(key) at the top level of Info.plist, a string https://example.com naming the domain that serves \(path)"
            ),
            wrongTypeFix: "make it a string in the format https://example.com"
        ) { value in
            guard case .string(let text) = value else { return [] }
            return InfoPlistCheck.endpointURL(text, at: key, path: path)
        }
    }

    /// A Boolean that needs no more than its type.
    static func boolean(_ key: String) -> Self {
        InfoPlistRule(
            key: key,
            form: .boolean,
            showsWrongValue: true,
            wrongTypeFix: "make it a Boolean: <true/> (YES in Xcode's editor with the type Boolean)"
        )
    }

    /// The findings of this key in `root`, an Info.plist's top-level dictionary.
    func findings(_ root: [String: PropertyListValue]) -> [DoctorFinding] {
        guard let value = root[key] else {
            return missing.map { [DoctorFinding(key, .missing, problem: $0.problem, fix: $0.fix)] } ?? []
        }
        guard form.holds(value) else {
            return [
                InfoPlistCheck.wrongType(
                    value,
                    at: key,
                    expected: form.name,
                    showsValue: showsWrongValue,
                    fix: wrongTypeFix
                )
            ]
        }
        return content(value)
    }
}

extension InfoPlistRule.Form {
    /// Whether `value` has this form.
    func holds(_ value: PropertyListValue) -> Bool {
        switch (self, value) {
        case (.string, .string), (.array, .array), (.dictionary, .dictionary), (.boolean, .boolean): true
        default: false
        }
    }
}
