#if os(Linux) || os(macOS)
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A child process started with `posix_spawn`, every descriptor but its standard ones
/// closed in the child. Not part of the library's API (`package`): the browser
/// launcher and the project's tests start processes with it.
///
/// Why not Foundation's `Process`: on Linux, `Process.run()` lists `/proc/self/fd` to
/// close inherited descriptors and copies each directory entry's full 256-byte name
/// buffer, reading past the end of the entry; when `readdir`'s buffer ends a thread's
/// malloc arena, that read crosses into a protected page and the process dies with
/// SIGSEGV (seen in this project's test runs: a crash in `memcpy` under `Process.run()`
/// at a page-aligned address). Here the closing is `posix_spawn_file_actions_addclosefrom_np`
/// (glibc 2.34 and later) or `POSIX_SPAWN_CLOEXEC_DEFAULT` (Darwin), done by the C library.
package final class ChildProcess: Sendable {
    /// What a standard descriptor of the child is connected to.
    package enum Stream: Sendable {
        /// `/dev/null`.
        case null
        /// This process's own descriptor of the same number.
        case inherit
        /// A new pipe; this process reads (or, for standard input, writes) its other end.
        case pipe
        /// Wherever the child's standard output goes (for standard error only: `2>&1`).
        case output
    }

    /// How the child ended.
    package enum Termination: Sendable, Equatable {
        /// It exited with this status.
        case exited(Int32)
        /// A signal ended it.
        case signalled(Int32)
    }

    /// Why a child could not be started.
    package struct SpawnError: Error, CustomStringConvertible {
        /// The `errno` value.
        package var code: Int32
        /// The executable.
        package var executable: String
        /// A sentence naming the executable and the system's reason.
        package var description: String { "cannot start \(executable): \(String(cString: strerror(code)))" }
    }

    /// The child's process identifier.
    package let processIdentifier: pid_t
    /// The reading end of the child's standard output, when it is a `.pipe`.
    package let standardOutput: FileHandle?
    /// The reading end of the child's standard error, when it is a `.pipe`.
    package let standardError: FileHandle?
    /// The writing end of the child's standard input, when it is a `.pipe`.
    package let standardInput: FileHandle?

    /// How the child ended, once reaped.
    private let ended = Locked<Termination?>(nil)
    /// Held for the whole wait: one `waitpid` at a time.
    private let reaping = Locked(())

    private init(pid: pid_t, input: FileHandle?, output: FileHandle?, error: FileHandle?) {
        processIdentifier = pid
        standardInput = input
        standardOutput = output
        standardError = error
    }

    /// Starts `executable` (a path) with `arguments` (not counting the program's name) and
    /// `environment` (this process's own when `nil`).
    ///
    /// - Throws: ``SpawnError`` when the executable cannot be started.
    package static func spawn(
        _ executable: String, arguments: [String], environment: [String: String]? = nil,
        standardInput: Stream = .null, standardOutput: Stream = .inherit, standardError: Stream = .inherit
    ) throws -> ChildProcess {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }

        // Our ends of the pipes, and the child's ends (closed here once it runs).
        var ours: [FileHandle?] = [nil, nil, nil]
        var theirs: [Int32] = []
        defer { for descriptor in theirs { close(descriptor) } }
        for (number, stream) in [standardInput, standardOutput, standardError].enumerated() {
            let target = Int32(number)
            switch stream {
            case .inherit:
                break
            case .output:
                precondition(number == 2, "only standard error can join standard output")
                posix_spawn_file_actions_adddup2(&actions, 1, 2)
            case .null:
                posix_spawn_file_actions_addopen(&actions, target, "/dev/null", number == 0 ? O_RDONLY : O_WRONLY, 0)
            case .pipe:
                var ends: [Int32] = [-1, -1]
                guard pipe(&ends) == 0 else { throw SpawnError(code: errno, executable: executable) }
                let (childEnd, ourEnd) = number == 0 ? (ends[0], ends[1]) : (ends[1], ends[0])
                _ = fcntl(ourEnd, F_SETFD, FD_CLOEXEC)
                theirs.append(childEnd)
                ours[number] = FileHandle(fileDescriptor: ourEnd, closeOnDealloc: true)
                posix_spawn_file_actions_adddup2(&actions, childEnd, target)
            }
        }
        try closeInheritedDescriptors(&actions, &attributes, executable: executable)

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let variables = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } + [nil] }
        defer { variables?.forEach { free($0) } }

        var pid = pid_t()
        let status: Int32
        if let variables {
            status = posix_spawn(&pid, executable, &actions, &attributes, argv, variables)
        } else {
            status = posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
        }
        guard status == 0 else { throw SpawnError(code: status, executable: executable) }
        return ChildProcess(pid: pid, input: ours[0], output: ours[1], error: ours[2])
    }

    #if os(Linux)
    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    /// `posix_spawn_file_actions_addclosefrom_np`, looked up at run time: glibc declares it
    /// only for `_GNU_SOURCE` builds, and before 2.34 it does not exist.
    private static let addCloseFrom: AddCloseFrom? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else {
            return nil
        }
        return unsafeBitCast(symbol, to: AddCloseFrom.self)
    }()
    #endif

    private static func closeInheritedDescriptors(
        _ actions: inout posix_spawn_file_actions_t, _ attributes: inout posix_spawnattr_t, executable: String
    ) throws {
        #if os(Linux)
        guard let addCloseFrom else { throw SpawnError(code: ENOSYS, executable: executable) }
        let status = addCloseFrom(&actions, 3)
        guard status == 0 else { throw SpawnError(code: status, executable: executable) }
        #else
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_CLOEXEC_DEFAULT))
        #endif
    }

    /// Sends `signal` to the child (nothing once it has been reaped).
    package func send(_ signal: Int32) {
        ended.withLock { ended in
            if ended == nil { _ = kill(processIdentifier, signal) }
        }
    }

    /// Blocks until the child ends; returns how (every call, the same answer).
    @discardableResult
    package func waitUntilExit() -> Termination {
        reaping.withLock { _ in
            if let ended = ended.withLock({ $0 }) { return ended }
            var status: Int32 = 0
            var result: pid_t
            repeat { result = waitpid(processIdentifier, &status, 0) } while result == -1 && errno == EINTR
            let low = status & 0x7f
            let termination: Termination = low == 0 ? .exited((status >> 8) & 0xff) : .signalled(low)
            ended.withLock { $0 = termination }
            return termination
        }
    }

    /// Waits, on a thread of its own, until the child ends; returns how.
    package func termination() async -> Termination {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: self.waitUntilExit()) }.start()
        }
    }

    /// What a child that ran to its end wrote, and how it ended.
    package struct Output: Sendable {
        /// How the child ended.
        package var termination: Termination
        /// Everything it wrote to its standard output.
        package var standardOutput: Data
        /// Everything it wrote to its standard error (empty when it was joined to standard output).
        package var standardError: Data

        /// `true` when the child exited with status 0.
        package var succeeded: Bool { termination == .exited(0) }
        /// Standard output as UTF-8 text.
        package var text: String { String(decoding: standardOutput, as: UTF8.self) }
        /// Standard error as UTF-8 text.
        package var errorText: String { String(decoding: standardError, as: UTF8.self) }
    }

    /// Runs `executable` to its end and collects what it writes: `input` (when given) goes
    /// to its standard input, which is then closed. Everything blocking (the writes, the
    /// reads, the wait) happens on threads of its own, never on the caller's executor: a
    /// test that waits for a child must not hold a thread of the cooperative pool, which
    /// other tests' servers need to answer.
    ///
    /// - Parameters:
    ///   - joinStandardError: sends standard error to standard output (`2>&1`).
    ///   - hangBound: the child is killed (SIGKILL) when it runs longer; a bound on a hang,
    ///     never a speed requirement.
    /// - Throws: ``SpawnError`` when the executable cannot be started.
    package static func run(
        _ executable: String, arguments: [String], environment: [String: String]? = nil, input: Data? = nil,
        joinStandardError: Bool = false, hangBound: Duration = .seconds(300)
    ) async throws -> Output {
        let child = try spawn(
            executable, arguments: arguments, environment: environment, standardInput: input == nil ? .null : .pipe,
            standardOutput: .pipe, standardError: joinStandardError ? .output : .pipe)
        let watchdog = Task {
            try await Task.sleep(for: hangBound)
            child.send(SIGKILL)
        }
        defer { watchdog.cancel() }
        return await withCheckedContinuation { continuation in
            Thread {
                // The input is written, and standard error read, each on a thread of its own while
                // this one reads standard output: a child blocked on one pipe never stalls the others.
                let helpers = DispatchGroup()
                let errors = Locked(Data())
                if let input, let pipe = child.standardInput {
                    helpers.enter()
                    Thread {
                        // A child that exits without reading closes the pipe: with SIGPIPE
                        // blocked on this thread the write fails with EPIPE rather than the
                        // signal ending the process, and there is nothing to report.
                        var pipeSignal = sigset_t()
                        sigemptyset(&pipeSignal)
                        sigaddset(&pipeSignal, SIGPIPE)
                        pthread_sigmask(SIG_BLOCK, &pipeSignal, nil)
                        try? pipe.write(contentsOf: input)
                        try? pipe.close()
                        helpers.leave()
                    }.start()
                }
                if let pipe = child.standardError {
                    helpers.enter()
                    Thread {
                        let data = pipe.readDataToEndOfFile()
                        errors.withLock { $0 = data }
                        helpers.leave()
                    }.start()
                }
                let output = child.standardOutput?.readDataToEndOfFile() ?? Data()
                let termination = child.waitUntilExit()
                helpers.wait()
                continuation.resume(returning: Output(termination: termination, standardOutput: output, standardError: errors.withLock { $0 }))
            }.start()
        }
    }
}
#endif
