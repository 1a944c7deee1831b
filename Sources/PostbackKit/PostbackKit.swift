/// postbackd's library: parsing, verifying, deduplicating, decoding and aggregating Apple's
/// install postbacks. The `postbackd` executable is a thin command line over it.
public enum PostbackKit {
    /// The version of postbackd.
    public static let version = "0.1.0"
}
