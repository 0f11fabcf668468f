import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The few POSIX file operations the file stores need, with the guarantees spelled out:
/// atomic replacement, durable renames, private permissions. Foundation's file APIs do
/// not promise `fsync` or `O_EXCL`, so these are written against the system calls.
/// Every function blocks: call them through ``BlockingIO``.
enum PosixFile {
    /// Files larger than this are not token documents.
    static let maximumDocumentSize = 8 << 20

    /// The whole content of `path`, or `nil` when there is no such file.
    ///
    /// - Throws: ``TokenStoreError/Code/corrupt`` when the file is larger than `limit`.
    static func read(_ path: String, limit: Int = maximumDocumentSize) throws -> Data? {
        guard let (data, complete) = try readPrefix(path, limit: limit) else { return nil }
        guard complete else { throw TokenStoreError.corrupt("larger than \(limit) bytes").at(path) }
        return data
    }

    /// The content of `path` when it has at most `limit` bytes (`complete`), else its first
    /// `limit + 1` bytes; `nil` when there is no such file.
    static func readPrefix(_ path: String, limit: Int) throws -> (data: Data, complete: Bool)? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        if descriptor < 0 {
            if errno == ENOENT { return nil }
            throw TokenStoreError.io("open", path: path, errno: errno)
        }
        defer { close(descriptor) }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let wanted = min(buffer.count, limit + 1 - data.count)
            let count = buffer.withUnsafeMutableBytes { systemRead(descriptor, $0.baseAddress, wanted) }
            if count < 0 {
                if errno == EINTR { continue }
                throw TokenStoreError.io("read", path: path, errno: errno)
            }
            if count == 0 { return (data, true) }
            data.append(contentsOf: buffer[0..<count])
            if data.count > limit { return (data, false) }
        }
    }

    /// Replaces `path` with `data` atomically and durably: writes a temporary file (mode
    /// 0600) beside it, `fsync`s it, renames it over `path`, and `fsync`s the directory.
    /// A reader sees the old content or the new, never a mixture; after a crash the file
    /// holds one of the two.
    static func replace(_ path: String, with data: Data) throws {
        let directory = (path as NSString).deletingLastPathComponent
        let temporary = temporaryPath(for: path)
        try writeNew(temporary, data)
        if rename(temporary, path) != 0 {
            let code = errno
            unlink(temporary)
            throw TokenStoreError.io("rename", path: path, errno: code)
        }
        try syncDirectory(directory)
    }

    /// Creates `path` (which must not exist) with `data`, mode 0600, and `fsync`s it.
    static func writeNew(_ path: String, _ data: Data) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw TokenStoreError.io("create", path: path, errno: errno) }
        var failure: TokenStoreError?
        // The umask may have removed bits; a store must be able to read back what it wrote.
        if fchmod(descriptor, 0o600) != 0 { failure = .io("fchmod", path: path, errno: errno) }
        if failure == nil {
            failure = data.withUnsafeBytes { bytes -> TokenStoreError? in
                var offset = 0
                while offset < bytes.count {
                    let written = systemWrite(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                    if written < 0 {
                        if errno == EINTR { continue }
                        return .io("write", path: path, errno: errno)
                    }
                    offset += written
                }
                return nil
            }
        }
        if failure == nil, fullSync(descriptor) != 0 { failure = .io("fsync", path: path, errno: errno) }
        if close(descriptor) != 0, failure == nil { failure = .io("close", path: path, errno: errno) }
        if let failure {
            unlink(path)
            throw failure
        }
    }

    /// Renames `path` to `destination` and makes the rename durable.
    static func move(_ path: String, to destination: String) throws {
        guard rename(path, destination) == 0 else { throw TokenStoreError.io("rename", path: path, errno: errno) }
        try syncDirectory((path as NSString).deletingLastPathComponent)
    }

    /// Removes `path` durably; a missing file is not an error.
    static func remove(_ path: String) throws {
        if unlink(path) != 0 {
            if errno == ENOENT { return }
            throw TokenStoreError.io("unlink", path: path, errno: errno)
        }
        try syncDirectory((path as NSString).deletingLastPathComponent)
    }

    /// `fsync`s a directory, so that a rename or unlink in it survives a crash.
    static func syncDirectory(_ path: String) throws {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw TokenStoreError.io("open directory", path: path, errno: errno) }
        defer { close(descriptor) }
        if fsync(descriptor) != 0, errno != EINVAL {  // EINVAL: a file system that cannot sync directories
            throw TokenStoreError.io("fsync directory", path: path, errno: errno)
        }
    }

    /// Creates `path` with mode 0700 (its parents with the default mode) unless it exists;
    /// fails when it exists and is not a directory.
    static func makeDirectory(_ path: String) throws {
        if mkdir(path, 0o700) == 0 {
            _ = chmod(path, 0o700)  // undo the umask
            return
        }
        switch errno {
        case EEXIST:
            var info = stat()
            guard stat(path, &info) == 0 else { throw TokenStoreError.io("stat", path: path, errno: errno) }
            guard (info.st_mode & S_IFMT) == S_IFDIR else { throw TokenStoreError.io("mkdir", path: path, errno: ENOTDIR) }
        case ENOENT:
            let parent = (path as NSString).deletingLastPathComponent
            guard !parent.isEmpty, parent != path else { throw TokenStoreError.io("mkdir", path: path, errno: ENOENT) }
            try makeDirectory(parent, mode: 0o755)
            try makeDirectory(path)
        default:
            throw TokenStoreError.io("mkdir", path: path, errno: errno)
        }
    }

    private static func makeDirectory(_ path: String, mode: mode_t) throws {
        if mkdir(path, mode) == 0 || errno == EEXIST { return }
        if errno == ENOENT {
            let parent = (path as NSString).deletingLastPathComponent
            guard !parent.isEmpty, parent != path else { throw TokenStoreError.io("mkdir", path: path, errno: ENOENT) }
            try makeDirectory(parent, mode: mode)
            if mkdir(path, mode) == 0 || errno == EEXIST { return }
        }
        throw TokenStoreError.io("mkdir", path: path, errno: errno)
    }

    /// The names in directory `path`.
    static func list(_ path: String) throws -> [String] {
        guard let directory = opendir(path) else { throw TokenStoreError.io("opendir", path: path, errno: errno) }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: Int(NAME_MAX) + 1) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// The permission bits of `path`, or `nil` when it does not exist.
    static func permissions(_ path: String) throws -> mode_t? {
        var info = stat()
        if stat(path, &info) != 0 {
            if errno == ENOENT { return nil }
            throw TokenStoreError.io("stat", path: path, errno: errno)
        }
        return info.st_mode & 0o7777
    }

    /// Seconds since `path` was last modified, or `nil` when it does not exist.
    static func age(_ path: String) -> TimeInterval? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        #if canImport(Darwin)
        let modified = TimeInterval(info.st_mtimespec.tv_sec)
        #else
        let modified = TimeInterval(info.st_mtim.tv_sec)
        #endif
        return Date().timeIntervalSince1970 - modified
    }

    /// A fresh name beside `path` for a file being written: `.<name>.tmp-<pid>-<random>`.
    static func temporaryPath(for path: String) -> String {
        let directory = (path as NSString).deletingLastPathComponent
        let name = (path as NSString).lastPathComponent
        let random = String(UInt64.random(in: 0...UInt64.max), radix: 16)
        return directory + "/." + name + temporaryMarker + "\(getpid())-\(random)"
    }

    /// What every temporary file name holds after the target's name.
    static let temporaryMarker = ".tmp-"

    /// The pid recorded in a temporary file name.
    static func writerPID(ofTemporary name: String) -> pid_t? {
        guard let marker = name.range(of: temporaryMarker, options: .backwards) else { return nil }
        let rest = name[marker.upperBound...]
        guard let dash = rest.firstIndex(of: "-") else { return nil }
        return pid_t(rest[..<dash])
    }

    /// `true` unless process `pid` certainly does not exist.
    static func processMayExist(_ pid: pid_t) -> Bool {
        kill(pid, 0) == 0 || errno != ESRCH
    }

    /// `fsync`, or on Apple platforms `F_FULLFSYNC`, which also flushes the drive's cache.
    private static func fullSync(_ descriptor: Int32) -> Int32 {
        #if canImport(Darwin)
        if fcntl(descriptor, F_FULLFSYNC) == 0 { return 0 }
        #endif
        return fsync(descriptor)
    }
}

extension PosixFile {
    // The system calls by module name: `PosixFile.read` would hide a plain `read`.
    fileprivate static func systemRead(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
        #if canImport(Darwin)
        Darwin.read(descriptor, buffer, count)
        #elseif canImport(Musl)
        Musl.read(descriptor, buffer, count)
        #else
        Glibc.read(descriptor, buffer, count)
        #endif
    }

    fileprivate static func systemWrite(_ descriptor: Int32, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int {
        #if canImport(Darwin)
        Darwin.write(descriptor, buffer, count)
        #elseif canImport(Musl)
        Musl.write(descriptor, buffer, count)
        #else
        Glibc.write(descriptor, buffer, count)
        #endif
    }
}

/// Private files written the way the file stores write theirs, for the `oauth2` tool's
/// profiles and caches. Not part of the library's API (`@_spi(Tooling)`).
@_spi(Tooling)
public enum PrivateFile {
    /// Replaces the file at `url` with `data`, atomically and durably: a temporary file
    /// created with mode 0600 (never wider, whatever the umask), `fsync`ed and renamed over
    /// `url`. The file's directory is created with mode 0700 when it does not exist.
    ///
    /// - Throws: ``TokenStoreError/Code/io`` naming the failed call.
    public static func write(_ data: Data, to url: URL) throws {
        try PosixFile.makeDirectory(url.deletingLastPathComponent().path)
        try PosixFile.replace(url.path, with: data)
    }
}
