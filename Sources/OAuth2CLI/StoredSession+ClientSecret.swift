import OAuth2

extension StoredTokenSession {
    /// The client secret the tool keeps with a profile's tokens — in the store (the keyring,
    /// a 0600 or encrypted file), never in the profile — as the record's `client_secret`
    /// member. The library has no field for it: it is the tool's own state, kept by every
    /// store like any member it does not know.
    var clientSecret: String? {
        get { additionalFields["client_secret"]?.stringValue }
        set { additionalFields["client_secret"] = newValue.map(JSONValue.string) }
    }
}
