// The resource server's checks of an access token, against the floor and jwt-kit.
//
// RFC 9068 JWT access tokens with the JWK set in hand: swift-oauth2's AccessTokenVerifier
// (`.fixed(keys)`), vapor/jwt-kit doing the same checks, and swift-crypto's signature check
// alone on the same tokens (the floor). Each iteration validates the next of 2,000 tokens
// (nothing can be cached by token string): the file of Compare/python/accesstokens.py named
// by OAUTH2_BENCH_ACCESS_TOKENS (its ALG replaced by ES256 or RS256), else tokens made here.
// And a cached introspection answer: TokenIntrospector on 1,000 opaque tokens, each
// introspected once through a transport answering from memory, then read from the cache.
// Goals (BENCHMARKS.md): ahead of jwt-kit; ≥ 0.9× the raw ES256 rate, ≥ 0.85× the raw
// RS256 rate; a cached introspection answer ≤ 1 µs.
import AccessTokenContenders
import Benchmark
import OAuth2

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(metrics: [.throughput, .wallClock, .mallocCountTotal], maxDuration: .seconds(3), maxIterations: 1_000_000)

    for algorithm in [JWSAlgorithm.es256, .rs256] {
        nonisolated(unsafe) var tokens: [String] = []
        nonisolated(unsafe) var ours: OursContender?
        nonisolated(unsafe) var jwtKit: JWTKitContender?
        nonisolated(unsafe) var raw: RawSignatureContender?

        Benchmark("Access token \(algorithm) (AccessTokenVerifier, keys in hand)",
            configuration: .init(
                setup: {
                    let fixture = try AccessTokenFixture.load(algorithm)
                    (tokens, ours) = (fixture.tokens, OursContender(fixture))
                }, teardown: { ours = nil })
        ) { benchmark in
            let contender = ours!
            for iteration in benchmark.scaledIterations {
                blackHole(try await contender.validate(tokens[iteration % tokens.count]))
            }
        }

        Benchmark("Access token \(algorithm) (jwt-kit 5.8.0, keys in hand)",
            configuration: .init(
                setup: {
                    let fixture = try AccessTokenFixture.load(algorithm)
                    (tokens, jwtKit) = (fixture.tokens, try await JWTKitContender(fixture))
                }, teardown: { jwtKit = nil })
        ) { benchmark in
            let contender = jwtKit!
            for iteration in benchmark.scaledIterations {
                blackHole(try await contender.validate(tokens[iteration % tokens.count]))
            }
        }

        Benchmark("Access token \(algorithm) raw signature verification (swift-crypto)",
            configuration: .init(setup: { raw = try RawSignatureContender(try AccessTokenFixture.load(algorithm)) }, teardown: { raw = nil })
        ) { benchmark in
            let contender = raw!
            for iteration in benchmark.scaledIterations {
                blackHole(contender.validate(iteration))
            }
        }
    }

    nonisolated(unsafe) var introspection: IntrospectionContender?
    Benchmark("Introspected token, cached answer (TokenIntrospector)",
        configuration: .init(
            timeUnits: .nanoseconds, scalingFactor: .kilo, setup: { introspection = try await IntrospectionContender() }, teardown: { introspection = nil })
    ) { benchmark in
        let contender = introspection!
        for iteration in benchmark.scaledIterations {
            blackHole(try await contender.validate(iteration))
        }
        precondition(contender.calls == contender.tokens.count, "an answer was not taken from the cache")
    }
}
