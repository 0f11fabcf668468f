import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Where the agent's socket is, and the checks that the agent (before it listens) and its
/// clients (before they connect) make of it: a socket that another user could have put
/// there, or could replace, is refused.
///
/// - The directory must be the user's own and writable by no one else (no group or other
///   write permission): whoever can write to it can replace the socket.
/// - The socket must be a socket (not a symbolic link), the user's own, with no permission
///   for group or others (the agent makes it 0600).
struct AgentSocketPath: Equatable, Sendable {
    /// The environment variable that names the socket for clients (and the agent's default).
    static let environmentVariable = "OAUTH2_AGENT_SOCK"

    /// The socket's path.
    let path: String

    init(_ path: String) { self.path = path }

    /// The directory holding it.
    var directory: String { (path as NSString).deletingLastPathComponent.isEmpty ? "." : (path as NSString).deletingLastPathComponent }

    /// The longest path a Unix socket address holds (`sun_path` less its final zero byte).
    static let maximumLength = 107

    /// The socket `oauth2 agent` listens on without `--socket`: `$OAUTH2_AGENT_SOCK` when set,
    /// else `$XDG_RUNTIME_DIR/oauth2/agent.sock`, else `/tmp/oauth2-UID/agent.sock`.
    static func agentDefault(environment: [String: String] = ProcessInfo.processInfo.environment, uid: uid_t = getuid()) -> AgentSocketPath {
        if let path = environment[environmentVariable], !path.isEmpty { return AgentSocketPath(path) }
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty { return AgentSocketPath(runtime + "/oauth2/agent.sock") }
        return AgentSocketPath("/tmp/oauth2-\(uid)/agent.sock")
    }

    /// Whether the directory is the one the agent makes itself when missing (the default's,
    /// not one the user named).
    static func isDefaultDirectory(_ path: AgentSocketPath, environment: [String: String] = ProcessInfo.processInfo.environment, uid: uid_t = getuid()) -> Bool {
        var defaults = ["/tmp/oauth2-\(uid)"]
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty { defaults.append(runtime + "/oauth2") }
        return defaults.contains(path.directory)
    }

    // MARK: - Checks

    /// Refuses a path too long for a socket address.
    func checkLength() throws(CLIError) {
        guard path.utf8.count <= Self.maximumLength else {
            throw CLIError.usage(
                "The agent socket path \(path) is longer than \(Self.maximumLength) bytes", hint: "choose a shorter path with --socket")
        }
    }

    /// Makes the directory (0700) when missing and `create` says so, then checks it.
    ///
    /// - Throws: ``CLIError`` (`usage`) when it cannot be made, (`refused`) when it is
    ///   another user's or others can write to it.
    func prepareDirectory(create: Bool, uid: uid_t = getuid()) throws(CLIError) {
        if create, mkdir(directory, 0o700) != 0, errno != EEXIST {
            let reason = String(cString: strerror(errno))
            throw CLIError.usage("Cannot make the agent's socket directory \(directory): \(reason)")
        }
        try checkDirectory(uid: uid)
    }

    /// Checks that the directory is a directory of `uid` that no one else can write to.
    ///
    /// - Throws: ``CLIError``: `refused` for a directory of another user or one others can
    ///   write to, `usage` for one that is missing.
    func checkDirectory(uid: uid_t = getuid()) throws(CLIError) {
        var info = stat()
        guard stat(directory, &info) == 0 else {
            let reason = String(cString: strerror(errno))
            throw CLIError.usage("The agent socket's directory \(directory) cannot be used: \(reason)")
        }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            throw CLIError.usage("The agent socket's directory \(directory) is not a directory")
        }
        guard info.st_uid == uid else {
            throw CLIError(
                .refused, "The agent socket's directory \(directory) belongs to another user (uid \(info.st_uid))",
                hint: "use a directory of your own (default: $XDG_RUNTIME_DIR/oauth2)")
        }
        guard info.st_mode & 0o022 == 0 else {
            throw CLIError(
                .refused,
                "The agent socket's directory \(directory) can be written by others (mode \(String(info.st_mode & 0o777, radix: 8)))",
                hint: "chmod 700 \(directory)")
        }
    }

    /// What is at the path now.
    enum Existing: Equatable {
        case nothing
        /// A socket of `uid` with no permission for others.
        case socket
    }

    /// Checks what is at the path: nothing, or a socket of `uid` that only `uid` can use.
    ///
    /// - Throws: ``CLIError`` (`refused`) for anything else: a file, a link, a socket of
    ///   another user, a socket others may use.
    @discardableResult
    func checkSocket(uid: uid_t = getuid()) throws(CLIError) -> Existing {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            if errno == ENOENT { return .nothing }
            let reason = String(cString: strerror(errno))
            throw CLIError(.refused, "The agent socket \(path) cannot be used: \(reason)")
        }
        guard info.st_mode & S_IFMT == S_IFSOCK else {
            throw CLIError(.refused, "\(path) is not a socket", hint: "point \(Self.environmentVariable) or --socket at the agent's socket")
        }
        guard info.st_uid == uid else {
            throw CLIError(
                .refused, "The agent socket \(path) belongs to another user (uid \(info.st_uid))",
                hint: "use an agent of your own (`oauth2 agent`)")
        }
        guard info.st_mode & 0o077 == 0 else {
            throw CLIError(
                .refused, "The agent socket \(path) can be used by others (mode \(String(info.st_mode & 0o777, radix: 8)))",
                hint: "restart the agent, which makes it 0600")
        }
        return .socket
    }

    /// What tells one socket file from another made at the same path later: its device,
    /// inode (which a file made after the first is removed may reuse) and change time.
    struct FileIdentity: Equatable, Sendable {
        var device: UInt64
        var inode: UInt64
        var changed: Int
        var changedNanoseconds: Int
    }

    /// The identity of the file at the path now, to remove the socket at exit only if it is
    /// still the one the agent made.
    func identity() -> FileIdentity? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        #if canImport(Darwin)
        let changed = info.st_ctimespec
        #else
        let changed = info.st_ctim
        #endif
        return FileIdentity(
            device: UInt64(info.st_dev), inode: UInt64(info.st_ino), changed: Int(changed.tv_sec), changedNanoseconds: Int(changed.tv_nsec))
    }

    // MARK: - Connecting

    /// Connects a blocking stream socket to the path.
    ///
    /// - Returns: the descriptor, or the `errno` of the failure.
    func connect() -> Result<Int32, Errno> {
        withAddress { fd, address, length in systemConnect(fd, address, length) }
    }

    /// Makes the socket file (bound and listening), with the process's umask.
    ///
    /// The agent binds it itself, then hands the descriptor to SwiftNIO: a server socket
    /// SwiftNIO binds is unlinked by path when it closes, even when the file at that path is
    /// by then another agent's.
    ///
    /// - Returns: the descriptor, or the `errno` of the failure.
    func bindListening(backlog: Int32) -> Result<Int32, Errno> {
        withAddress { fd, address, length in
            guard systemBind(fd, address, length) == 0 else { return -1 }
            return listen(fd, backlog)
        }
    }

    /// Runs `call` (connect or bind) on a new stream socket with the path's address; closes
    /// the socket when the call fails (returns non-zero).
    private func withAddress(_ call: (Int32, UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Result<Int32, Errno> {
        #if canImport(Darwin)
        let fd = socket(AF_UNIX, SOCK_STREAM, 0)
        #else
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        #endif
        guard fd >= 0 else { return .failure(Errno(errno)) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count <= Self.maximumLength else {
            close(fd)
            return .failure(Errno(ENAMETOOLONG))
        }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: bytes)
            buffer[bytes.count] = 0
        }
        let result = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { call(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard result == 0 else {
            let code = errno
            close(fd)
            return .failure(Errno(code))
        }
        return .success(fd)
    }

    /// Whether an agent answers on the socket now (a connection is accepted).
    func isLive() -> Bool {
        guard case .success(let fd) = connect() else { return false }
        close(fd)
        return true
    }

    /// An `errno` value.
    struct Errno: Error, Equatable {
        var code: Int32
        init(_ code: Int32) { self.code = code }
        var description: String { String(cString: strerror(code)) }
    }
}

/// The C library's `connect`, under a name that the method ``AgentSocketPath/connect()`` does not shadow.
private func systemConnect(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Int32 {
    #if canImport(Darwin)
    return Darwin.connect(fd, address, length)
    #elseif canImport(Musl)
    return Musl.connect(fd, address, length)
    #else
    return Glibc.connect(fd, address, length)
    #endif
}

/// The C library's `bind`.
private func systemBind(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Int32 {
    #if canImport(Darwin)
    return Darwin.bind(fd, address, length)
    #elseif canImport(Musl)
    return Musl.bind(fd, address, length)
    #else
    return Glibc.bind(fd, address, length)
    #endif
}
