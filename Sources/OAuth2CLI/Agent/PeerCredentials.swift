import Foundation
import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Who is at the other end of a connection to the agent's Unix socket, as the kernel says
/// (`SO_PEERCRED`, read when the connection is accepted: the process that connected).
struct PeerCredentials: Equatable, Sendable {
    var uid: UInt32
    var pid: Int32

    /// The credentials of `channel`'s peer; `nil` when the system cannot tell (the agent
    /// then refuses the connection).
    static func of(_ channel: any Channel) async -> PeerCredentials? {
        #if os(Linux)
        guard let provider = channel as? any SocketOptionProvider else { return nil }
        let future: EventLoopFuture<CredentialsBox> = provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_PEERCRED))
        guard let box = try? await future.get() else { return nil }
        return PeerCredentials(uid: box.uid, pid: box.pid)
        #else
        // Other systems have other calls (LOCAL_PEERCRED, getpeereid); until the agent uses
        // them, it refuses every connection there.
        return nil
        #endif
    }
}

#if os(Linux)
/// `struct ucred` as the kernel fills it (`pid_t pid; uid_t uid; gid_t gid;`): Glibc's module
/// declares it only under `_GNU_SOURCE`.
private struct CredentialsBox: Sendable {
    var pid: Int32
    var uid: UInt32
    var gid: UInt32
}
#endif
