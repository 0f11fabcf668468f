import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Replaces this process with another program (`execve`), for `oauth2 exec`: nothing of
/// the tool stays, in `ps` or anywhere else, and the program's exit status is the one its
/// caller sees.
///
/// What the tool changed in its own process must not leak into the program: the
/// signal mask (a Swift concurrency thread, where the command runs unless it was
/// answered from the store, blocks every signal) and the dispositions of SIGINT (ignored
/// while the Ctrl-C handler runs) and SIGPIPE (ignored by SwiftNIO once it has made a
/// socket) are put back as the process found them, which main.swift records first
/// (``recordInheritedSignals()``). Descriptors the tool opened are close-on-exec (Foundation,
/// SwiftNIO and the stores open them so); those it inherited pass on, as with any `exec`.
enum ProcessReplacement {
    /// The signals whose dispositions the tool may change.
    private static let restoredSignals: [Int32] = [SIGINT, SIGPIPE]

    /// The signal state the process started with. Written once, by main.swift, before any
    /// other thread exists; read only just before `execve`.
    nonisolated(unsafe) private static var inherited: (mask: sigset_t, actions: [Int32: sigaction])?

    /// Records the signal mask and dispositions the process started with. main.swift calls
    /// this first.
    static func recordInheritedSignals() {
        var mask = sigset_t()
        sigemptyset(&mask)
        pthread_sigmask(SIG_SETMASK, nil, &mask)
        var actions: [Int32: sigaction] = [:]
        for number in restoredSignals {
            var action = sigaction()
            if sigaction(number, nil, &action) == 0 { actions[number] = action }
        }
        inherited = (mask, actions)
    }

    /// Puts the inherited signal state back, on the calling thread (the one that calls
    /// `execve`: the new program inherits its mask).
    private static func restoreInheritedSignals() {
        guard var inherited else { return }
        for (number, var action) in inherited.actions { sigaction(number, &action, nil) }
        pthread_sigmask(SIG_SETMASK, &inherited.mask, nil)
    }

    /// Why a program could not be started: the message, and the status to exit with —
    /// 127 when it was not found, 126 when it was found but could not be run (the shell's
    /// and `env`'s convention).
    struct Failure: Error {
        var status: Int32
        var message: String
    }

    /// Replaces the process with `arguments[0]` — looked up in `PATH` when it holds no `/`,
    /// as `execvp` does — with `arguments` as its argument vector and this process's
    /// environment in which `variable` is set to `value` (replaced if it was set). Returns
    /// only when no program could be started.
    static func exec(_ arguments: [String], setting variable: String, to value: String) -> Failure {
        let name = arguments[0]
        // This process's environment as it is (byte for byte, in its order), less `variable`.
        let prefix = variable + "="
        var envp: [UnsafeMutablePointer<CChar>?] = []
        var entry: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = environ
        while let pointer = entry?.pointee {
            if strncmp(pointer, prefix, prefix.utf8.count) != 0 { envp.append(pointer) }
            entry = entry?.successor()
        }
        // Never freed: on success the process is gone; on failure it exits.
        envp += [strdup("\(variable)=\(value)"), nil]
        let argv = arguments.map { strdup($0) } + [nil]
        let path = getenv("PATH").map { String(cString: $0) }
        restoreInheritedSignals()
        var denied = false
        var lastError = ENOENT
        for candidate in candidates(for: name, path: path) {
            execve(candidate, argv, envp)
            lastError = errno
            switch lastError {
            case ENOEXEC:
                // A script without `#!`: the shell runs it, as execvp does.
                let shell = [strdup("/bin/sh"), strdup(candidate)] + argv.dropFirst()
                execve("/bin/sh", shell, envp)
                return Failure(status: 126, message: "cannot run \(name): \(String(cString: strerror(errno)))")
            case EACCES:
                denied = true
            case ENOENT, ENOTDIR, ELOOP, ENAMETOOLONG:
                continue
            default:
                return Failure(status: 126, message: "cannot run \(name): \(String(cString: strerror(lastError)))")
            }
        }
        if denied { return Failure(status: 126, message: "cannot run \(name): permission denied") }
        if name.contains("/") { return Failure(status: 127, message: "cannot run \(name): \(String(cString: strerror(lastError)))") }
        return Failure(status: 127, message: "command not found: \(name)")
    }

    /// The paths `execvp` would try for `name`: `name` itself when it holds a `/`, else
    /// `name` in each directory of `path` (an empty entry is the current directory; no
    /// `PATH` at all is `/usr/local/bin:/usr/bin:/bin`).
    static func candidates(for name: String, path: String?) -> [String] {
        if name.contains("/") { return [name] }
        guard !name.isEmpty else { return [] }
        let directories = (path ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":", omittingEmptySubsequences: false)
        return directories.map { $0.isEmpty ? name : "\($0)/\(name)" }
    }
}
