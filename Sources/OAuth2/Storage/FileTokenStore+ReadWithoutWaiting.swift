import Foundation

extension FileTokenStore {
    /// The session stored for `key` when its document reads as it is — current schema,
    /// plain or sealed with this store's key, holding `key` — read on the calling thread;
    /// `nil` otherwise, without a word: no such document, one that ``load(_:)`` would move
    /// aside, rewrite or refuse, or any error.
    ///
    /// For a caller that must not wait or start a thread (the `oauth2` tool answering a
    /// cached token before anything else): on `nil` it calls ``load(_:)``, which reports
    /// or repairs what this left alone. Readers take no lock (writers rename whole files).
    package func loadIfReadable(_ key: TokenSessionKey) -> StoredTokenSession? {
        guard let file = try? read(fileURL(for: key).path), case .document(let document, _) = file.content,
            !document.isLegacy, !file.isUnbound, document.session.key == key
        else { return nil }
        return document.session
    }
}
