import OAuth2Internals

/// What a ``LazyJSONObject`` holds.
package struct LazyJSONObjectState {
    /// The document's bytes; empty once decoded or when made from a dictionary.
    package var bytes: [UInt8]
    /// The decoded object, once asked for.
    package var object: [String: JSONValue]?
}

/// A JSON object kept as the bytes the strict parser already accepted, decoded into a
/// dictionary the first time someone asks (then kept): the ID-token hot path reads the
/// few members it checks in one pass over the bytes, and the raw set costs nothing until
/// it is used.
///
/// One allocation: the state and its lock share one ``Locked`` storage. Sendable because
/// every access to the state holds the lock.
package struct LazyJSONObject: Sendable {
    private let state: Locked<LazyJSONObjectState>

    /// Bytes that ``StrictJSON/parseObject(_:)`` accepts (the caller checked them).
    package static func make(checkedBytes bytes: [UInt8]) -> LazyJSONObject {
        LazyJSONObject(state: Locked(LazyJSONObjectState(bytes: bytes, object: nil)))
    }

    /// An object already decoded.
    package static func make(_ object: [String: JSONValue]) -> LazyJSONObject {
        LazyJSONObject(state: Locked(LazyJSONObjectState(bytes: [], object: object)))
    }

    /// The object, decoded on first use.
    package var object: [String: JSONValue] {
        state.withLock { state in
            if let object = state.object { return object }
            // The bytes passed the same parser when the token was read, so this cannot fail;
            // an empty object would only hide a bug, never accept a token.
            let parsed = try? StrictJSON.parseObject(state.bytes)
            assert(parsed != nil, "bytes the strict parser refuses reached LazyJSONObject")
            let object = parsed ?? [:]
            state.object = object
            state.bytes = []
            return object
        }
    }

    /// Whether both hold the same storage (then they are equal without decoding).
    package func isIdentical(to other: LazyJSONObject) -> Bool { state.storage === other.state.storage }
}
