// swift-tools-version: 6.1
// Benchmarks of swift-oauth2, apart from the tests (ordo-one/benchmark):
//   cd Benchmarks && swift package benchmark
// See scripts/benchmarks for the whole run (it starts the PostgreSQL that PostgresBenchmarks
// need), and BENCHMARKS.md for the figures. CI only builds this package (.ci/run).
import Foundation
import PackageDescription

// A path dependency is named after its folder, which differs between clones and work trees.
let root = URL(fileURLWithPath: Context.packageDirectory).deletingLastPathComponent().lastPathComponent

let package = Package(
    name: "swift-oauth2-benchmarks",
    platforms: [.macOS(.v13)],
    dependencies: [
        // The root package with its default trait (URLSession), Postgres for OAuth2Postgres
        // (PostgresBenchmarks) and Hummingbird for OAuth2Hummingbird (HummingbirdBenchmarks);
        // naming traits replaces the defaults.
        .package(path: "..", traits: ["URLSession", "Postgres", "Hummingbird"]),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        // The root package's pin (its Postgres trait): PostgresBenchmarks drops its schemas.
        .package(url: "https://github.com/vapor/postgres-nio", exact: "1.33.2"),
        // A contender of the resource server's access-token validation (ResourceServerBenchmarks,
        // bench-resource-server): the JWT library Vapor apps use. Here only, never in the root package.
        .package(url: "https://github.com/vapor/jwt-kit", exact: "5.8.0"),
        // The root package's pin (its Hummingbird trait), without default traits as there:
        // HummingbirdBenchmarks builds a router and calls its responder in-process.
        .package(url: "https://github.com/hummingbird-project/hummingbird", exact: "2.28.1", traits: []),
    ],
    targets: [
        // The tests' local HTTP server (a link to Tests/OAuth2TestSupport), for benchmarks
        // that need a peer on a socket.
        .target(
            name: "OAuth2TestSupport",
            dependencies: [
                .product(name: "OAuth2", package: root),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            path: "Support/OAuth2TestSupport",
            // They use the library's package-access parts (the legacy registration record,
            // OAuth2Internals' child processes), which another package cannot see.
            exclude: ["RegistrationStoreConformance.swift", "Worker.swift", "ClientCertificates.swift"]
        ),
        // glibc's allocation statistics, for the memory benchmark.
        .target(name: "CMallocInfo", path: "Support/CMallocInfo"),
        .executableTarget(
            name: "SessionBenchmarks",
            dependencies: [
                "CMallocInfo",
                .product(name: "OAuth2", package: root),
                "OAuth2TestSupport",
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            path: "Benchmarks/SessionBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // The PostgreSQL token store (OAuth2Postgres) on the PostgreSQL of
        // scripts/test-servers/postgres.sh (OAUTH2_TEST_POSTGRES_URL; fails without it).
        .executableTarget(
            name: "PostgresBenchmarks",
            dependencies: [
                .product(name: "OAuth2", package: root),
                .product(name: "OAuth2Postgres", package: root),
                "OAuth2TestSupport",
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            path: "Benchmarks/PostgresBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "IDTokenBenchmarks",
            dependencies: [
                .product(name: "OAuth2", package: root),
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            path: "Benchmarks/IDTokenBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // The resource server's access-token validation (RFC 9068 JWTs, the JWK set in hand):
        // the tokens of Compare/python/accesstokens.py and the contenders of this package that
        // check them (AccessTokenVerifier, jwt-kit, swift-crypto alone), shared by
        // ResourceServerBenchmarks and bench-resource-server.
        .target(
            name: "AccessTokenContenders",
            dependencies: [
                .product(name: "OAuth2", package: root),
                .product(name: "OAuth2Web", package: root),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "JWTKit", package: "jwt-kit"),
            ],
            path: "Support/AccessTokenContenders"
        ),
        .executableTarget(
            name: "ResourceServerBenchmarks",
            dependencies: [
                "AccessTokenContenders",
                .product(name: "OAuth2", package: root),
                .product(name: "OAuth2Web", package: root),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/ResourceServerBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // The added latency per request of OAuth2Hummingbird's middleware (HummingbirdResourceServerMiddleware
        // with RS256 and ES256 access tokens, HummingbirdWebSignInMiddleware on a signed-in session) on a
        // Hummingbird 2 route, against the same route without it: the router's responder called
        // in-process, no socket.
        // The Hummingbird route both Hummingbird measurements drive (a router's responder
        // called in-process, no socket), bare or behind a middleware.
        .target(
            name: "HummingbirdRoute",
            dependencies: [
                .product(name: "OAuth2Web", package: root),
                .product(name: "OAuth2Hummingbird", package: root),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "Hummingbird", package: "hummingbird"),
            ],
            path: "Support/HummingbirdRoute"
        ),
        .executableTarget(
            name: "HummingbirdBenchmarks",
            dependencies: [
                "AccessTokenContenders",
                "HummingbirdRoute",
                .product(name: "OAuth2", package: root),
                .product(name: "OAuth2Web", package: root),
                .product(name: "OAuth2Hummingbird", package: root),
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "Hummingbird", package: "hummingbird"),
            ],
            path: "Benchmarks/HummingbirdBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "ParsingBenchmarks",
            dependencies: [
                .product(name: "OAuth2", package: root),
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            path: "Benchmarks/ParsingBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // scripts/bench-compare's contenders of ours: the client (grants through both
        // transports, ID-token validation) and the fixed-answer token endpoint.
        .executableTarget(
            name: "bench-client",
            dependencies: [
                .product(name: "OAuth2", package: root),
                .product(name: "OAuth2AsyncHTTPClient", package: root),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                // ahc-nio: NIO's event loops as Swift concurrency's global executor.
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            path: "Compare/BenchClient"
        ),
        // scripts/bench-compare's Swift contenders of the resource server's access-token
        // validation (ours, jwt-kit, the raw signature) and the cached introspection answer.
        .executableTarget(
            name: "bench-resource-server",
            dependencies: ["AccessTokenContenders"],
            path: "Compare/BenchResourceServer"
        ),
        .executableTarget(
            name: "fixed-token-endpoint",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "Compare/FixedTokenEndpoint"
        ),
        // Fixed work on the main thread alone, for instruction counts under valgrind's
        // callgrind (which crashes when Swift concurrency starts its thread pool): the
        // access-token check beside the raw signature check, and the Hummingbird route bare
        // and behind the web sign-in. BENCHMARKS.md ("Where ours is behind") has the figures.
        .executableTarget(
            name: "bench-instructions",
            dependencies: [
                "AccessTokenContenders",
                "HummingbirdRoute",
                .product(name: "OAuth2", package: root),
                .product(name: "OAuth2Web", package: root),
                .product(name: "OAuth2Hummingbird", package: root),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "Hummingbird", package: "hummingbird"),
            ],
            path: "Compare/BenchInstructions"
        ),
    ],
    swiftLanguageModes: [.v6]
)
