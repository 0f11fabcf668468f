// swift-oauth2's and jwt-kit's contenders for the resource server's part of
// scripts/bench-compare: the same work the Go and Python contenders do, timed in-process
// after a warm-up of 100, printing "<count> <seconds> <CPU seconds>" (exit 1 on any failure).
//
//   bench-resource-server ours FILE COUNT         AccessTokenVerifier with `.fixed(keys)`
//   bench-resource-server jwt-kit FILE COUNT      vapor/jwt-kit 5.8.0, the same checks
//   bench-resource-server raw FILE COUNT          swift-crypto's signature check alone (the floor)
//   bench-resource-server introspection COUNT     TokenIntrospector on cached answers
//
// FILE is written by Compare/python/accesstokens.py make (the same tokens for every
// contender); each iteration takes the next token. See AccessTokenContenders for the checks.
import AccessTokenContenders
import Foundation

@main
struct BenchResourceServer {
    static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        do {
            switch (arguments.first ?? "", arguments.count) {
            case ("ours", 3):
                let fixture = try AccessTokenFixture(file: arguments[1])
                let contender = OursContender(fixture)
                try await time(Int(arguments[2]) ?? 0) { index in try await contender.validate(fixture.tokens[index % fixture.tokens.count]).utf8.count }
            case ("jwt-kit", 3):
                let fixture = try AccessTokenFixture(file: arguments[1])
                let contender = try await JWTKitContender(fixture)
                try await time(Int(arguments[2]) ?? 0) { index in try await contender.validate(fixture.tokens[index % fixture.tokens.count]).utf8.count }
            case ("raw", 3):
                let contender = try RawSignatureContender(try AccessTokenFixture(file: arguments[1]))
                try await time(Int(arguments[2]) ?? 0) { index in
                    guard contender.validate(index) else { throw ContenderError("a signature did not verify") }
                    return 1
                }
            case ("introspection", 2):
                let contender = try await IntrospectionContender()
                try await time(Int(arguments[1]) ?? 0) { index in try await contender.validate(index)?.utf8.count ?? 0 }
                guard contender.calls == contender.tokens.count else { throw ContenderError("an answer was not taken from the cache") }
            default:
                FileHandle.standardError.write(Data("usage: bench-resource-server ours|jwt-kit|raw FILE COUNT | introspection COUNT\n".utf8))
                exit(2)
            }
        } catch {
            FileHandle.standardError.write(Data("bench-resource-server: \(error)\n".utf8))
            exit(1)
        }
    }

    /// 100 checks to warm up, then `count` timed; prints "<count> <seconds> <CPU seconds>"
    /// (the process's user and system time: on a busy machine, what the work itself cost).
    static func time(_ count: Int, _ check: @Sendable (Int) async throws -> Int) async throws {
        var sink = 0
        for index in 0..<100 { sink &+= try await check(index) }
        let start = ContinuousClock.now, cpuStart = cpuSeconds()
        for index in 0..<count { sink &+= try await check(index) }
        let elapsed = ContinuousClock.now - start, cpu = cpuSeconds() - cpuStart
        guard sink > 0 else { throw ContenderError("nothing checked") }
        print(count, String(format: "%.6f", Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18), String(format: "%.6f", cpu))
    }

    static func cpuSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}
