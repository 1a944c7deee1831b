/// postbackd's version, as `postbackd --version` prints it and the database's run logs record.
package enum PostbackdVersion {
    package static let current = "0.1.0"
}
