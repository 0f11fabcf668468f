import Foundation
import OAuth2InteractiveSignIn
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A byte-exact HTTP/1.1 client over a plain socket, for requests a browser library would
/// not send (another `Host`, `HEAD`, a bare connection) and for reading the raw answer.
/// The blocking socket calls run on a thread of their own, never on the test's executor.
enum RawHTTP {
    struct Answer: Sendable {
        var status: Int
        var headers: [String: String]
        var body: String

        func header(_ name: String) -> String? { headers[name.lowercased()] }
    }

    /// Sends `request` (a complete HTTP message) to `address` (`127.0.0.1` or `::1`) on
    /// `port` and reads the answer until the server closes the connection.
    static func request(_ request: String, port: Int, address: String = "127.0.0.1") async throws -> Answer {
        let text = try await onThread { try exchange(request, port: port, address: address) }
        return try parse(text)
    }

    /// `GET target` with the usual headers (`Host: 127.0.0.1:<port>` unless given).
    static func get(_ target: String, port: Int, host: String? = nil, address: String = "127.0.0.1", method: String = "GET") async throws -> Answer {
        let hostHeader = host ?? (address.contains(":") ? "[\(address)]:\(port)" : "\(address):\(port)")
        return try await self.request(
            "\(method) \(target) HTTP/1.1\r\nHost: \(hostHeader)\r\nUser-Agent: test\r\nAccept: text/html\r\nConnection: close\r\n\r\n",
            port: port, address: address)
    }

    /// Opens a connection and keeps it idle until `body` returns.
    static func withIdleConnection<T>(port: Int, _ body: () async throws -> T) async throws -> T {
        let fd = try openSocket(port: port, address: "127.0.0.1")
        defer { close(fd) }
        return try await body()
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private static func onThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                do { continuation.resume(returning: try work()) } catch { continuation.resume(throwing: error) }
            }
            thread.start()
        }
    }

    private static func openSocket(port: Int, address: String) throws -> Int32 {
        let ipv6 = address.contains(":")
        let fd = socket(ipv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket() failed") }
        // A hang bound, never a speed requirement: while other tests keep every thread of the
        // cooperative pool busy, the listener's verdict (a task) can wait its turn for long.
        var timeout = timeval(tv_sec: 300, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let result: Int32
        if ipv6 {
            var addr = sockaddr_in6()
            addr.sin6_family = sa_family_t(AF_INET6)
            addr.sin6_port = in_port_t(UInt16(port).bigEndian)
            inet_pton(AF_INET6, address, &addr.sin6_addr)
            result = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        } else {
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_port = in_port_t(UInt16(port).bigEndian)
            inet_pton(AF_INET, address, &addr.sin_addr)
            result = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        guard result == 0 else {
            close(fd)
            throw Failure(description: "connect to \(address) port \(port) failed: errno \(errno)")
        }
        return fd
    }

    private static func exchange(_ request: String, port: Int, address: String) throws -> String {
        let fd = try openSocket(port: port, address: address)
        defer { close(fd) }
        let bytes = Array(request.utf8)
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBufferPointer { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw Failure(description: "send failed: errno \(errno)") }
            sent += n
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        // Until the answer is whole (its Content-Length), or the server closes: the test
        // does not hang on when the server gets round to closing its side.
        while !isComplete(received) {
            let n = buffer.withUnsafeMutableBufferPointer { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { break }
            guard n > 0 else { throw Failure(description: "recv failed: errno \(errno) after \(received.count) bytes") }
            received += buffer[0..<n]
        }
        return String(decoding: received, as: UTF8.self)
    }

    /// `true` when `bytes` hold a head with a Content-Length and that many bytes of body.
    private static func isComplete(_ bytes: [UInt8]) -> Bool {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let split = text.range(of: "\r\n\r\n") else { return false }
        let head = text[..<split.lowerBound].lowercased()
        guard let line = head.components(separatedBy: "\r\n").first(where: { $0.hasPrefix("content-length:") }),
            let length = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces))
        else { return false }
        return text[split.upperBound...].utf8.count >= length
    }

    private static func parse(_ text: String) throws -> Answer {
        guard let split = text.range(of: "\r\n\r\n") else { throw Failure(description: "no HTTP answer: \(text.prefix(200))") }
        let lines = text[..<split.lowerBound].components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { throw Failure(description: "bad status line \(lines[0])") }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return Answer(status: status, headers: headers, body: String(text[split.upperBound...]))
    }
}

/// A ``TerminalOutput`` that keeps what was written.
final class CapturedOutput: TerminalOutput, @unchecked Sendable {
    private let lock = NSLock()
    private var storage = ""
    let isTerminal: Bool

    init(isTerminal: Bool = false) { self.isTerminal = isTerminal }

    func write(_ text: String) { lock.withLock { storage += text } }
    var text: String { lock.withLock { storage } }
}
