// A child process for tests that need more than one process. The first argument names
// what it does:
//
//   write-loop <dir> <first-seq> [<account>]
//       Saves, in the FileTokenStore at <dir>, session "https://crash.example"/"writer"
//       (of <account>, default none) with sequence numbers first-seq, first-seq+1, …
//       forever, each document over 64 KB (the access token is a pattern that repeats the
//       number). Prints each number on its own line once its save has returned. Killed by
//       the test.
//   migrate-loop <dir> <first-seq> <account>
//       The same session of <account>, forever: writes it as a version-1 document (the
//       flat layout of 0.0.x, by an atomic rename, as that version did), then loads it
//       through the FileTokenStore at <dir>, which migrates it to version 2, then prints
//       the number. Killed by the test.
//   increment <dir> <times> <pause-ms>
//       <times> times, inside withExclusiveAccess for session "https://lock.example"/"counter":
//       loads the counter (additionalFields["count"]), waits <pause-ms>, saves it plus one.
//   hold-lock <dir> <ms>
//       Takes withExclusiveAccess for session "https://lock.example"/"counter", prints
//       "locked", holds it <ms> milliseconds (or until killed), prints "released".
//   session-refresh <dir> <account> <metadata-file> <barrier-file>
//       Restores the session of <account> from the FileTokenStore at <dir> with a client of
//       django-oauth-toolkit (metadata from the file), prints "ready", waits for <barrier-file>, calls
//       freshAccessToken() once, prints "refreshes <token requests it sent>" and
//       "token <the access token>" (SessionRefresh.swift).
//   fleet-refresh <schema> <account> <metadata-file> <go-dir> <rounds> <callers> [hold]
//       A replica of the PostgreSQL fleet tests (built with the Postgres trait): rounds of
//       <callers> concurrent freshAccessToken() calls on one session shared through a
//       PostgresTokenStore, against django-oauth-toolkit (FleetRefresh.swift).
//   keyring-availability [library]
//       Prints "available", or "unavailable <code>" and the reason.
//   keyring-save <issuer> <client-id> <account> <access-token>
//       Saves a session with that access token in the desktop keyring.
//   fault-server
//       Serves every FaultScenario (OAuth2TestSupport) on 127.0.0.1 for the CLI's fault
//       checks: prints "<scenario> <base URL> <the tool's exit status>" per scenario (the
//       DNS case excepted), then
//       "ready", and runs until killed. Plain HTTP cases share one server, by first path
//       segment (<base URL> ends with it); each TLS case has its own server.
//   full-disk <dir>
//       <dir> is a small, empty file system (scripts mount a tmpfs there). Saves a session
//       in a FileTokenStore at <dir>/tokens, fills the file system, saves a 64 KB session
//       over it, and prints "refused <code> errno <n>", "kept <access token>" and
//       "leftovers <temporary files left>".
//   bearer-check <name>=<issuer>...
//       The access-token check behind nginx's auth_request in Tests/CLI/tools.sh: GET
//       /check/<name> checks a Bearer token, or the password of a Basic credential, at the
//       issuer's introspection endpoint (BearerCheck.swift). Prints "LISTENING <url>", then a
//       line per check; runs until killed.
//   get <url>
//       Sends GET <url> with a new URLSessionTransport (so with the process environment's
//       proxy variables) and prints "status <code>".
//
// Exit status: 0 done, 1 failed (the error on stderr), 64 bad usage.
import Foundation
import HTTPTypes
import OAuth2
import OAuth2SecretService
import OAuth2TestSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

func say(_ line: String) {
    // Unbuffered: a line is out before the next step, even when killed right after.
    let bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
}

func fail(_ message: String, status: Int32 = 1) -> Never {
    FileHandle.standardError.write(Data("OAuth2TestWorker: \(message)\n".utf8))
    exit(status)
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard let command = arguments.first else {
    fail("usage: OAuth2TestWorker write-loop|increment|hold-lock|session-refresh|keyring-availability|keyring-save ...", status: 64)
}

/// The session of the crash test for sequence number `seq`: over 64 KB, every byte
/// predictable from `seq`, so a torn or mixed write cannot go unnoticed.
func crashTestSession(_ seq: Int64, account: String = "") -> StoredTokenSession {
    let unit = "seq=\(seq);"
    let token = String(repeating: unit, count: 65_536 / unit.utf8.count + 1)
    return StoredTokenSession(
        key: TokenSessionKey(issuer: "https://crash.example", clientID: "writer", account: account),
        tokens: TokenSet(
            accessToken: token, refreshToken: "refresh-\(seq)", expiresAt: Date(timeIntervalSince1970: 1_800_000_000 + Double(seq)),
            issuedAt: Date(timeIntervalSince1970: 1_700_000_000)),
        updatedAt: Date(timeIntervalSince1970: 1_700_000_000 + Double(seq)),
        additionalFields: ["seq": .integer(seq)])
}

do {
    switch command {
    case "write-loop":
        guard arguments.count == 3 || arguments.count == 4, var seq = Int64(arguments[2]) else {
            fail("usage: write-loop <dir> <first-seq> [<account>]", status: 64)
        }
        let account = arguments.count == 4 ? arguments[3] : ""
        let store = try FileTokenStore(directory: URL(fileURLWithPath: arguments[1]))
        while true {
            try await store.save(crashTestSession(seq, account: account))
            say(String(seq))
            seq += 1
        }

    case "migrate-loop":
        guard arguments.count == 4, var seq = Int64(arguments[2]) else {
            fail("usage: migrate-loop <dir> <first-seq> <account>", status: 64)
        }
        let store = try FileTokenStore(directory: URL(fileURLWithPath: arguments[1]))
        let key = TokenSessionKey(issuer: "https://crash.example", clientID: "writer", account: arguments[3])
        while true {
            let session = crashTestSession(seq, account: arguments[3])
            let version1: [String: Any] = [
                "issuer": key.issuer, "client_id": key.clientID, "account": key.account,
                "access_token": session.tokens.accessToken, "token_type": "bearer",
                "refresh_token": session.tokens.refreshToken ?? "", "expires_at": Int(session.tokens.expiresAt!.timeIntervalSince1970),
                "obtained_at": Int(session.updatedAt.timeIntervalSince1970),
            ]
            try JSONSerialization.data(withJSONObject: version1).write(to: store.fileURL(for: key), options: .atomic)
            guard try await store.load(key)?.tokens.accessToken == session.tokens.accessToken else { fail("the migrated document changed") }
            say(String(seq))
            seq += 1
        }

    case "increment":
        guard arguments.count == 4, let times = Int(arguments[2]), let pause = UInt64(arguments[3]) else {
            fail("usage: increment <dir> <times> <pause-ms>", status: 64)
        }
        let store = try FileTokenStore(directory: URL(fileURLWithPath: arguments[1]))
        let key = TokenSessionKey(issuer: "https://lock.example", clientID: "counter")
        for _ in 0..<times {
            try await store.withExclusiveAccess(to: key) {
                let current = try await store.load(key)
                let count = current?.additionalFields["count"]?.integerValue ?? 0
                try await Task.sleep(nanoseconds: pause * 1_000_000)
                try await store.save(
                    StoredTokenSession(key: key, tokens: TokenSet(accessToken: "counter"), additionalFields: ["count": .integer(count + 1)]))
            }
        }
        say("done")

    case "session-refresh":
        try await SessionRefreshWorker.run(Array(arguments.dropFirst()))
    #if Postgres
    case "fleet-refresh":
        try await FleetRefreshWorker.run(Array(arguments.dropFirst()))
    #endif

    case "hold-lock":
        guard arguments.count == 3, let milliseconds = UInt64(arguments[2]) else {
            fail("usage: hold-lock <dir> <ms>", status: 64)
        }
        let store = try FileTokenStore(directory: URL(fileURLWithPath: arguments[1]))
        try await store.withExclusiveAccess(to: TokenSessionKey(issuer: "https://lock.example", clientID: "counter")) {
            say("locked")
            try await Task.sleep(nanoseconds: milliseconds * 1_000_000)
        }
        say("released")

    case "keyring-availability":
        let store = arguments.count > 1 ? SecretServiceTokenStore(library: arguments[1]) : SecretServiceTokenStore()
        do {
            try await store.checkAvailability()
            say("available")
        } catch let error as TokenStoreError {
            say("unavailable \(error.code)")
            say(error.message)
        }

    case "keyring-save":
        guard arguments.count == 5 else { fail("usage: keyring-save <issuer> <client-id> <account> <access-token>", status: 64) }
        let key = TokenSessionKey(issuer: arguments[1], clientID: arguments[2], account: arguments[3])
        try await SecretServiceTokenStore().save(StoredTokenSession(key: key, tokens: TokenSet(accessToken: arguments[4])))
        say("saved")

    case "fault-server":
        var servers: [LocalHTTPServer] = []
        var listeners: [SilentListener] = []
        let shared = try await LocalHTTPServer { request in
            let name = request.path.split(separator: "/").first.map(String.init) ?? ""
            guard let scenario = FaultScenario(rawValue: name), case .http(let reply) = scenario.setup else { return .json(404, "{}") }
            return reply
        }
        servers.append(shared)
        for scenario in FaultScenario.allCases {
            switch scenario.setup {
            case .http:
                say("\(scenario.rawValue) \(shared.baseURL.absoluteString)/\(scenario.rawValue) \(scenario.outcome.exitStatus)")
            case .tls(let certificate):
                let server = try await LocalHTTPServer(tls: try TestTLS.context(certificate)) { _ in FaultScenario.tokenReply }
                servers.append(server)
                say("\(scenario.rawValue) \(server.baseURL.absoluteString) \(scenario.outcome.exitStatus)")
            case .refused:
                say("\(scenario.rawValue) http://127.0.0.1:\(try refusedPort()) \(scenario.outcome.exitStatus)")
            case .silentTLS:
                let listener = try await SilentListener()
                listeners.append(listener)
                say("\(scenario.rawValue) https://127.0.0.1:\(listener.port) \(scenario.outcome.exitStatus)")
            case .unresolvable:
                continue
            }
        }
        say("ready")
        withExtendedLifetime((servers, listeners)) {}
        while true { try await Task.sleep(for: .seconds(3600)) }

    case "full-disk":
        guard arguments.count == 2 else { fail("usage: full-disk <dir>", status: 64) }
        let directory = URL(fileURLWithPath: arguments[1]).appendingPathComponent("tokens")
        let store = try FileTokenStore(directory: directory)
        let key = TokenSessionKey(issuer: "https://disk.example", clientID: "writer")
        try await store.save(StoredTokenSession(key: key, tokens: TokenSet(accessToken: "before-the-disk-filled")))
        // Fill the file system: a filler file until the next write fails.
        let filler = open(arguments[1] + "/filler", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let chunk = [UInt8](repeating: 0x2e, count: 4096)
        while chunk.withUnsafeBytes({ write(filler, $0.baseAddress, $0.count) }) > 0 {}
        close(filler)
        do {
            try await store.save(StoredTokenSession(key: key, tokens: TokenSet(accessToken: String(repeating: "x", count: 65_536))))
            say("saved")
        } catch let error as TokenStoreError {
            say("refused \(error.code) errno \(error.systemError ?? 0)")
        }
        say("kept \(try await store.load(key)?.tokens.accessToken ?? "nothing")")
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        say("leftovers \(names.filter { $0.contains(".tmp-") }.count)")

    case "bearer-check":
        try await BearerCheck.run(Array(arguments.dropFirst()))

    case "get":
        guard arguments.count == 2, let url = URL(string: arguments[1]) else { fail("usage: get <url>", status: 64) }
        let (response, _) = try await URLSessionTransport().send(HTTPRequest(method: .get, url: url), body: nil)
        say("status \(response.status.code)")

    default:
        fail("unknown subcommand \(command)", status: 64)
    }
} catch {
    fail("\(error)")
}
