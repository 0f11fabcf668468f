// swift-oauth2's contender in scripts/bench-compare: the same work the peers do, timed
// in-process after a warm-up, printing "<count> <seconds>" (exit 1 on any failure).
//
//   bench-client grants TOKEN_URL CLIENT_ID CLIENT_SECRET SCOPE COUNT IN_FLIGHT ahc|ahc-nio|urlsession
//       client_credentials grants through OAuth2Client.clientCredentials(scopes:), one
//       client and one transport (one connection pool) for the whole run. ahc-nio is the
//       AsyncHTTPClient transport in a process that made NIO's event loops Swift
//       concurrency's global executor at start-up (an application's choice, never a
//       library's), so the caller's tasks run on the threads that do the I/O.
//   bench-client idtokens FILE COUNT
//       ID-token validation (signature, iss, aud, exp, iat, nonce, at_hash) with the JWK set
//       in hand, each iteration a different token, from a file written by
//       Compare/python/idtokens.py (the same tokens the Python contenders validate).
//   bench-client sizes
//       the inline sizes of the values a TokenSession holds.
//   bench-client raw-verify FILE COUNT
//       swift-crypto's signature check alone on the same tokens (the floor).
import Crypto
import CryptoExtras
import Foundation
import HTTPTypes
import NIOCore
import NIOPosix
import OAuth2
import OAuth2AsyncHTTPClient

@main
struct BenchClient {
    // Synchronous, so that `ahc-nio` can install NIO as the global executor before any
    // Swift concurrency runs; the async work then runs in a task the main thread waits for.
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        do {
            switch arguments.first {
            case "grants" where arguments.count == 8:
                if arguments[7] == "ahc-nio" {
                    guard NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor() else {
                        FileHandle.standardError.write(Data("bench-client: could not install NIO as the global executor\n".utf8))
                        exit(1)
                    }
                }
                try runBlocking { try await grants(Array(arguments.dropFirst())) }
            case "idtokens" where arguments.count == 3:
                try idTokens(file: arguments[1], count: Int(arguments[2]) ?? 0, raw: false)
            case "sizes":
                // Inline sizes of what a TokenSession holds (for BENCHMARKS.md's memory notes).
                print("OAuth2Client", MemoryLayout<OAuth2Client>.size, "ServerMetadata", MemoryLayout<ServerMetadata>.size,
                      "ClientConfiguration", MemoryLayout<ClientConfiguration>.size, "TokenSet", MemoryLayout<TokenSet>.size,
                      "TokenSession.Options", MemoryLayout<TokenSession.Options>.size, "TokenSessionKey", MemoryLayout<TokenSessionKey>.size,
                      "StoredTokenSession", MemoryLayout<StoredTokenSession>.size)
            case "raw-verify" where arguments.count == 3:
                try idTokens(file: arguments[1], count: Int(arguments[2]) ?? 0, raw: true)
            default:
                FileHandle.standardError.write(Data("usage: bench-client grants URL ID SECRET SCOPE COUNT IN_FLIGHT ahc|ahc-nio|urlsession | idtokens FILE COUNT | raw-verify FILE COUNT\n".utf8))
                exit(2)
            }
        } catch {
            FileHandle.standardError.write(Data("bench-client: \(error)\n".utf8))
            exit(1)
        }
    }

    /// Runs `work` in a task and blocks the calling (main) thread until it finishes.
    static func runBlocking(_ work: @escaping @Sendable () async throws -> Void) throws {
        let done = DispatchSemaphore(value: 0)
        let failure = Failure()
        Task.detached {
            do { try await work() } catch { failure.error = error }
            done.signal()
        }
        done.wait()  // (the semaphore orders the write above before this read)
        if let error = failure.error { throw error }
    }

    static func grants(_ arguments: [String]) async throws {
        let tokenURL = URL(string: arguments[0])!
        let scopes = arguments[3].isEmpty ? nil : arguments[3].split(separator: " ").map(String.init)
        let count = Int(arguments[4])!, inFlight = max(1, Int(arguments[5])!)
        let ahc = arguments[6] == "ahc" || arguments[6] == "ahc-nio"
        if arguments[6] == "ahc-nio" && MultiThreadedEventLoopGroup.currentEventLoop == nil {
            throw BenchError("ahc-nio: the task is not on an event loop although NIO was installed as the global executor")
        }
        let ahcTransport = ahc ? AsyncHTTPClientTransport() : nil
        let transport: any HTTPTransport = ahcTransport ?? URLSessionTransport()
        let client = try await OAuth2Client(
            server: .metadata(ServerMetadata(issuer: tokenURL, tokenEndpoint: tokenURL)),
            configuration: ClientConfiguration(clientID: arguments[1], clientSecret: arguments[2]),
            environment: HTTPEnvironment(transport: transport))

        func run(_ n: Int) async throws {
            if inFlight == 1 {
                for _ in 0..<n {
                    let tokens = try await client.clientCredentials(scopes: scopes)
                    precondition(!tokens.accessToken.isEmpty)
                }
                return
            }
            // `inFlight` workers taking the next grant until `n` are done.
            let next = Counter()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<inFlight {
                    group.addTask {
                        while next.take() < n {
                            let tokens = try await client.clientCredentials(scopes: scopes)
                            precondition(!tokens.accessToken.isEmpty)
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        try await run(50)
        let start = ContinuousClock.now
        try await run(count)
        let elapsed = ContinuousClock.now - start
        print(count, String(format: "%.6f", seconds(elapsed)))
        try await ahcTransport?.shutdown()
    }

    static func idTokens(file: String, count: Int, raw: Bool) throws {
        let fixture = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: file))) as! [String: Any]
        let issuer = fixture["issuer"] as! String, clientID = fixture["client_id"] as! String
        let algorithm = JWSAlgorithm(rawValue: fixture["alg"] as! String)
        let keys = try JSONWebKeySet(data: try JSONSerialization.data(withJSONObject: fixture["jwks"]!))
        let tokens = (fixture["tokens"] as! [[String: String]]).map { ($0["id_token"]!, $0["nonce"]!, $0["access_token"]!) }
        let validator = IDTokenValidator(issuer: issuer, clientID: clientID, allowedAlgorithms: [algorithm])
        var checks = 0
        if raw {
            let verify = try rawVerifier(fixture["public_pem"] as! String, algorithm)
            let split = tokens.map { token in
                let parts = token.0.split(separator: ".")
                return (Data((parts[0] + "." + parts[1]).utf8), base64URL(parts[2]))
            }
            for (input, signature) in split.prefix(100) where verify(input, signature) { checks += 1 }
            let start = ContinuousClock.now
            for index in 0..<count where verify(split[index % split.count].0, split[index % split.count].1) { checks += 1 }
            let elapsed = ContinuousClock.now - start
            precondition(checks == count + min(100, split.count), "a signature did not verify")
            print(count, String(format: "%.6f", seconds(elapsed)))
            return
        }
        let now = Date()
        for token in tokens.prefix(100) {
            _ = try validator.validate(token.0, keys: keys, expecting: .init(nonce: token.1, accessToken: token.2), now: now)
        }
        let start = ContinuousClock.now
        for index in 0..<count {
            let token = tokens[index % tokens.count]
            // The clock read is part of the work, as in a real callback.
            let claims = try validator.validate(token.0, keys: keys, expecting: .init(nonce: token.1, accessToken: token.2), now: Date())
            checks &+= claims.claims.subject.utf8.count
        }
        let elapsed = ContinuousClock.now - start
        precondition(checks > 0)
        print(count, String(format: "%.6f", seconds(elapsed)))
    }

    static func rawVerifier(_ pem: String, _ algorithm: JWSAlgorithm) throws -> (Data, Data) -> Bool {
        if algorithm == .es256 {
            let key = try P256.Signing.PublicKey(pemRepresentation: pem)
            return { input, signature in
                guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signature) else { return false }
                return key.isValidSignature(signature, for: SHA256.hash(data: input))
            }
        }
        let key = try _RSA.Signing.PublicKey(pemRepresentation: pem)
        return { input, signature in
            key.isValidSignature(_RSA.Signing.RSASignature(rawRepresentation: signature), for: SHA256.hash(data: input), padding: .insecurePKCS1v1_5)
        }
    }

    static func base64URL(_ text: Substring) -> Data {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)!
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

/// A failed precondition of a run, printed by `main`.
struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The error of `runBlocking`'s task, written before its semaphore is signalled.
final class Failure: @unchecked Sendable {
    var error: (any Error)?
}

/// The next job number, shared by the workers.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    func take() -> Int {
        lock.withLock {
            defer { value += 1 }
            return value
        }
    }
}
