import Foundation
import PostbackKit

/// Reads an XML or binary property list (Foundation's `PropertyListSerialization` reads both,
/// on Linux too) into a ``PropertyListValue``.
package enum PropertyListReader {
    /// Info.plist files are a few kilobytes; this bounds what a wrong file costs.
    package static let maximumBytes = 8 << 20

    /// The property list in `bytes`, or a reason it is not one.
    package static func parse(_ bytes: [UInt8]) -> Result<PropertyListValue, ReadFailure> {
        switch BinaryPropertyListBound.check(bytes, maximumValues: maximumValues, maximumDepth: 64) {
        case .tooManyValues:
            return .failure(ReadFailure(reason: tooManyValues))
        case .tooDeep:
            return .failure(ReadFailure(reason: tooDeep))
        case .within, .unreadable:
            break
        }
        let root: Any
        do {
            var format = PropertyListSerialization.PropertyListFormat.xml
            root = try PropertyListSerialization.propertyList(from: Data(bytes), options: [], format: &format)
        } catch {
            let detail = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String
            return .failure(
                ReadFailure(
                    reason: "not a property list (XML or binary)" + (detail.map { ": \($0)" } ?? "")
                )
            )
        }
        var values = 0
        guard let value = convert(root, depth: 0, values: &values) else {
            return .failure(ReadFailure(reason: values > maximumValues ? tooManyValues : tooDeep))
        }
        return .success(value)
    }

    /// Why a file is not a property list the doctor can read.
    package struct ReadFailure: Error, Sendable {
        package var reason: String
    }

    /// The most values a property list may hold, counted as converted: a binary property list
    /// can refer to one container from many places (40 arrays each holding the next twice is a
    /// few hundred bytes and 2^40 values), so its size on disk bounds nothing.
    static let maximumValues = 100_000
    private static let tooManyValues =
        "a property list of more than \(maximumValues) values (an Info.plist has hundreds)"
    private static let tooDeep = "a property list nested more than 64 levels deep"

    private static func convert(_ value: Any, depth: Int, values: inout Int) -> PropertyListValue? {
        values += 1
        guard depth <= 64, values <= maximumValues else { return nil }
        // Foundation on Linux gives Bool for <true/> and <false/>, and NSNumber for numbers
        // (whose `as? Bool` would also succeed, so Bool is asked first, by its type).
        if type(of: value) == Bool.self, let flag = value as? Bool { return .boolean(flag) }
        if let text = value as? String { return .string(text) }
        if let number = value as? NSNumber {
            switch String(cString: number.objCType) {
            case "c", "B": return .boolean(number.boolValue)
            case "f", "d": return .real(number.doubleValue)
            default: return .integer(number.int64Value)
            }
        }
        if let date = value as? Date { return .date(date.timeIntervalSince1970) }
        if let data = value as? Data { return .data(data.count) }
        if let items = value as? [Any] {
            var converted: [PropertyListValue] = []
            for item in items {
                guard let element = convert(item, depth: depth + 1, values: &values) else { return nil }
                converted.append(element)
            }
            return .array(converted)
        }
        if let members = value as? [String: Any] {
            var converted: [String: PropertyListValue] = [:]
            for (key, member) in members {
                guard let element = convert(member, depth: depth + 1, values: &values) else { return nil }
                converted[key] = element
            }
            return .dictionary(converted)
        }
        return .string(String(describing: value))
    }
}

/// `postbackd doctor --plist FILE`: reads the file and runs ``InfoPlistCheck``.
package enum InfoPlistDoctor {
    package static func check(_ path: String) -> DoctorSection {
        var section = DoctorSection(check: "plist", target: path)
        let bytes: [UInt8]
        do {
            bytes = try WholeFile.read(path, limit: PropertyListReader.maximumBytes, what: "an Info.plist")
        } catch {
            section.failure = error.reason
            return section
        }
        switch PropertyListReader.parse(bytes) {
        case .failure(let failure):
            section.failure = "\(path): \(failure.reason)"
        case .success(.dictionary(let root)):
            section.findings = InfoPlistCheck.findings(root)
            let keys = root.keys.filter { InfoPlistCheck.topLevelKeys.contains($0) }.sorted()
            section.notes = [
                "read \(root.count) top-level keys" + (keys.isEmpty ? "" : ", of them \(keys.joined(separator: ", "))")
            ]
        case .success(let other):
            section.failure = "\(path): the property list is \(other.typeName), not a dictionary: not an Info.plist"
        }
        return section
    }
}
