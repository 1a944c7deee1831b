/// What one attempt of a transaction of ``PostgresStore/write(_:_:logger:outcomes:attempt:)``
/// leaves to the next.
struct WriteAttempt {
    /// The server's ids of the attempts' transactions (their rows' `xmin`) that inserted
    /// postbacks.
    var transactionIDs: Set<String> = []
}
