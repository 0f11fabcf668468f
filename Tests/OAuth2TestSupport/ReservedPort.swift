import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A port on 127.0.0.1 that no other test can get, for a server started on a fixed port.
///
/// A socket with `SO_REUSEADDR` holds the port, bound and never listening, for as long as this
/// value lives. The system then hands the port to no other socket — neither one that binds
/// port 0 nor an outgoing connection's local port — while a server that also sets
/// `SO_REUSEADDR`, as `LoopbackRedirectListener` and Vapor's server do, can still listen on
/// it (Linux lets one of the sockets sharing a port with `SO_REUSEADDR` listen). So a server
/// gets the port it was told, and whether the port is free again after the server closed
/// depends on nothing another test does.
public final class ReservedPort: Sendable {
    /// The reserved port.
    public let port: Int
    private let descriptor: Int32

    /// Reserves a port the system chooses.
    public init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        var reuse: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0 }
        }
        guard bound else {
            let code = errno
            close(descriptor)
            throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EADDRNOTAVAIL)
        }
        self.descriptor = descriptor
        self.port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(descriptor) }
}
