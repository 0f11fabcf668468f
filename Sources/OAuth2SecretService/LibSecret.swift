import CSecretServiceShim
import Dispatch
import Foundation
import OAuth2
import OAuth2Internals
import OAuth2JOSE

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// libsecret, GLib and GObject, loaded at run time (`dlopen`), so that building needs no
/// headers and a machine without libsecret still runs the program. Every call goes through
/// ``call(_:)``: one serial queue, off Swift's cooperative pool (the `*_sync` functions
/// block on D-Bus).
final class LibSecret: @unchecked Sendable {
    // Every member is set once in init and never changes; the schemas are never freed.
    let storev: OAuth2SecretPasswordStorevSyncFn
    let lookupv: OAuth2SecretPasswordLookupvSyncFn
    let clearv: OAuth2SecretPasswordClearvSyncFn
    let searchv: OAuth2SecretPasswordSearchvSyncFn
    let retrievableAttributes: OAuth2SecretRetrievableGetAttributesFn
    let passwordFree: OAuth2SecretPasswordFreeFn
    private let hashTableNewFull: OAuth2GHashTableNewFullFn
    private let hashTableInsert: OAuth2GHashTableInsertFn
    private let hashTableLookup: OAuth2GHashTableLookupFn
    private let hashTableUnref: OAuth2GHashTableUnrefFn
    private let gStrdup: OAuth2GStrdupFn
    private let strHash: OAuth2GHashFunc
    private let strEqual: OAuth2GEqualFunc
    private let gFree: OAuth2GDestroyNotify
    private let errorFree: OAuth2GErrorFreeFn
    private let quarkToString: OAuth2GQuarkToStringFn
    private let listFreeFull: OAuth2GListFreeFullFn
    private let objectUnref: OAuth2GDestroyNotify

    /// Items holding sessions: attributes `issuer`, `client_id`, `account`.
    let sessionSchema: UnsafeMutablePointer<OAuth2SecretSchema>
    /// Items holding encryption keys: attribute `name`.
    let keySchema: UnsafeMutablePointer<OAuth2SecretSchema>
    /// Items holding client registrations: attributes `issuer`, `client_id` and `kind`
    /// (always `registration`).
    let registrationSchema: UnsafeMutablePointer<OAuth2SecretSchema>

    private let queue = DispatchQueue(label: "swift-oauth2.libsecret")

    static let defaultLibrary = "libsecret-1.so.0"
    static let sessionSchemaName = "io.github.swift-oauth2.Session"
    static let keySchemaName = "io.github.swift-oauth2.EncryptionKey"
    static let registrationSchemaName = "io.github.swift-oauth2.Registration"

    private static let cache = Locked<[String: LibSecret]>([:])

    /// The library `name` (and GLib and GObject), loaded once per process and kept loaded.
    ///
    /// - Throws: `TokenStoreError.Code.unavailable` when a library or a function is missing.
    static func load(_ name: String) throws -> LibSecret {
        try cache.withLock { cache in
            if let loaded = cache[name] { return loaded }
            let loaded = try LibSecret(name)
            cache[name] = loaded
            return loaded
        }
    }

    private init(_ name: String) throws {
        let secret = try Self.open(name)
        let glib = try Self.open("libglib-2.0.so.0")
        let gobject = try Self.open("libgobject-2.0.so.0")
        storev = try Self.symbol(secret, "secret_password_storev_sync")
        lookupv = try Self.symbol(secret, "secret_password_lookupv_sync")
        clearv = try Self.symbol(secret, "secret_password_clearv_sync")
        searchv = try Self.symbol(secret, "secret_password_searchv_sync")
        retrievableAttributes = try Self.symbol(secret, "secret_retrievable_get_attributes")
        passwordFree = try Self.symbol(secret, "secret_password_free")
        hashTableNewFull = try Self.symbol(glib, "g_hash_table_new_full")
        hashTableInsert = try Self.symbol(glib, "g_hash_table_insert")
        hashTableLookup = try Self.symbol(glib, "g_hash_table_lookup")
        hashTableUnref = try Self.symbol(glib, "g_hash_table_unref")
        gStrdup = try Self.symbol(glib, "g_strdup")
        strHash = try Self.symbol(glib, "g_str_hash")
        strEqual = try Self.symbol(glib, "g_str_equal")
        gFree = try Self.symbol(glib, "g_free")
        errorFree = try Self.symbol(glib, "g_error_free")
        quarkToString = try Self.symbol(glib, "g_quark_to_string")
        listFreeFull = try Self.symbol(glib, "g_list_free_full")
        objectUnref = try Self.symbol(gobject, "g_object_unref")
        sessionSchema = Self.makeSchema(Self.sessionSchemaName, attributes: ["issuer", "client_id", "account"])
        keySchema = Self.makeSchema(Self.keySchemaName, attributes: ["name"])
        registrationSchema = Self.makeSchema(Self.registrationSchemaName, attributes: ["issuer", "client_id", "kind"])
    }

    private static func open(_ name: String) throws -> UnsafeMutableRawPointer {
        guard let handle = dlopen(name, RTLD_NOW | RTLD_LOCAL) else {
            let reason = dlerror().map { String(cString: $0) } ?? "not found"
            throw TokenStoreError(.unavailable, "cannot load \(name): \(reason)")
        }
        return handle
    }

    private static func symbol<T>(_ handle: UnsafeMutableRawPointer, _ name: String) throws -> T {
        guard let address = dlsym(handle, name) else {
            throw TokenStoreError(.unavailable, "the loaded libsecret lacks \(name) (libsecret 0.19 or later is needed)")
        }
        return unsafeBitCast(address, to: T.self)
    }

    private static func makeSchema(_ name: String, attributes: [String]) -> UnsafeMutablePointer<OAuth2SecretSchema> {
        let schema = UnsafeMutablePointer<OAuth2SecretSchema>.allocate(capacity: 1)
        schema.initialize(to: OAuth2SecretSchema())  // zeroed: the attribute list ends with a NULL name
        schema.pointee.name = UnsafePointer(strdup(name))
        schema.pointee.flags = 0  // SECRET_SCHEMA_NONE: items are matched by schema name too
        for (index, attribute) in attributes.enumerated() {
            oauth2_secret_schema_set_attribute(schema, Int32(index), UnsafePointer(strdup(attribute)), 0)
        }
        return schema
    }

    // MARK: - Helpers for the calls

    /// Runs `body` on the library's queue.
    func call<T: Sendable>(_ body: @escaping @Sendable (LibSecret) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async {
                continuation.resume(with: Result { try body(self) })
            }
        }
    }

    /// A GHashTable of the string attributes; ``releaseAttributes(_:)`` frees it.
    func attributes(_ pairs: [(String, String)]) -> UnsafeMutableRawPointer {
        let table = hashTableNewFull(strHash, strEqual, gFree, gFree)!
        for (name, value) in pairs {
            _ = hashTableInsert(table, gStrdup(name), gStrdup(value))
        }
        return table
    }

    func releaseAttributes(_ table: UnsafeMutableRawPointer) {
        hashTableUnref(table)
    }

    /// The string value of `name` in a GHashTable of attributes.
    func attribute(_ table: UnsafeMutableRawPointer, _ name: String) -> String? {
        name.withCString { key in
            hashTableLookup(table, key).map { String(cString: $0.assumingMemoryBound(to: CChar.self)) }
        }
    }

    /// Frees a list that `secret_password_searchv_sync` returned, and its items.
    func freeList(_ list: UnsafeMutablePointer<OAuth2GList>) {
        listFreeFull(list, objectUnref)
    }

    /// Turns a GError into a `TokenStoreError` and frees it. Errors of D-Bus itself (no
    /// bus, no Secret Service on it) are `TokenStoreError.Code.unavailable`; the
    /// service's refusals are `TokenStoreError.Code.backend`.
    func takeError(_ error: UnsafeMutablePointer<OAuth2GError>?, _ operation: String) -> TokenStoreError {
        guard let error else { return TokenStoreError(.backend, "libsecret: \(operation) failed") }
        defer { errorFree(error) }
        let message = error.pointee.message.map { String(cString: $0) } ?? "no message"
        let domain = quarkToString(error.pointee.domain).map { String(cString: $0) } ?? ""
        // GDBus errors, and GIO's for a connection that could not be made (G_IO_ERROR_NOT_FOUND,
        // G_IO_ERROR_FAILED while connecting, G_IO_ERROR_DBUS_ERROR for a missing name…).
        let unavailable =
            domain == "g-dbus-error-quark"
            || (domain == "g-io-error-quark"
                && (message.contains("connect") || message.contains("autolaunch") || message.contains("was not provided")
                    || message.contains("ServiceUnknown") || message.contains("No such file")))
        return TokenStoreError(
            unavailable ? .unavailable : .backend, "libsecret: \(operation) failed: \(message)", systemError: Int32(error.pointee.code))
    }
}
