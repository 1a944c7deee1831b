import PostbackKit

extension JSONObjectWriter {
    /// JSON Lines: one object a row, its members added by `add`, each object on its own line.
    static func lines<Row>(_ rows: some Sequence<Row>, _ add: (Row, inout JSONObjectWriter) -> Void) -> String {
        var text = ""
        for row in rows {
            var object = JSONObjectWriter()
            add(row, &object)
            text += object.text + "\n"
        }
        return text
    }
}
