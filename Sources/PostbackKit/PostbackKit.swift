/// postbackd's version, as `postbackd --version` prints it and the database's run logs record.
public enum PostbackdVersion {
    public static let current = "0.1.0"
}
