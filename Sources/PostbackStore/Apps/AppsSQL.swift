import PostbackKit

/// The statements of the app registry, the same on both engines.
enum AppsSQL {
    /// True for a `postbacks` row that counts: the policy is `all`, or its app is registered.
    /// Both engines evaluate the two subqueries once per statement.
    static let claimed =
        "(coalesce((SELECT value FROM settings WHERE name = 'apps_policy'), 'all') <> 'registered' OR app_id IN (SELECT app_id FROM apps))"

    static let policyName = "apps_policy"
}
