// swift-tools-version: 6.1
import PackageDescription

let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "swift-oauth2",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9)],
    products: [
        .library(name: "OAuth2", targets: ["OAuth2"]),
        .library(name: "OAuth2JOSE", targets: ["OAuth2JOSE"]),
        .library(name: "OAuth2AsyncHTTPClient", targets: ["OAuth2AsyncHTTPClient"]),
        .library(name: "OAuth2SecretService", targets: ["OAuth2SecretService"]),
        .library(name: "OAuth2InteractiveSignIn", targets: ["OAuth2InteractiveSignIn"]),
        .library(name: "OAuth2Testing", targets: ["OAuth2Testing"]),
        .library(name: "OAuth2Postgres", targets: ["OAuth2Postgres"]),
        .library(name: "OAuth2Web", targets: ["OAuth2Web"]),
        .library(name: "OAuth2Vapor", targets: ["OAuth2Vapor"]),
        .library(name: "OAuth2Hummingbird", targets: ["OAuth2Hummingbird"]),
        .library(name: "OAuth2MCP", targets: ["OAuth2MCP"]),
        .executable(name: "oauth2", targets: ["OAuth2CLI"]),
        .executable(name: "oauth2-test-provider", targets: ["OAuth2TestProviderServer"]),
        .executable(name: "oauth2-example", targets: ["OAuth2Example"]),
        .executable(name: "oauth2-web-example-vapor", targets: ["VaporWebApp"]),
        .executable(name: "oauth2-web-example-hummingbird", targets: ["HummingbirdWebApp"]),
        .executable(name: "oauth2-mcp-server-example", targets: ["MCPServerExample"]),
    ],
    // `URLSession` (on by default) puts `URLSessionTransport` in `OAuth2` and makes it the
    // default transport. Without it (`traits: []` in a dependent package, or
    // `--disable-default-traits` here) `OAuth2` does not link FoundationNetworking, which on
    // Linux loads libcurl and about 30 shared libraries at every process start (~15 ms):
    // every client then takes its transport explicitly, e.g. `AsyncHTTPClientTransport`.
    // The `oauth2` tool uses AsyncHTTPClient either way and is released built without it.
    traits: [
        .trait(name: "URLSession", description: "URLSessionTransport, the default transport (links FoundationNetworking on Linux)"),
        // `Postgres` (off by default) builds `OAuth2Postgres`, the token store a fleet of
        // replicas shares; only under it does SwiftPM resolve postgres-nio and its packages.
        .trait(name: "Postgres", description: "OAuth2Postgres: a PostgreSQL token store with single-flight refresh across replicas (postgres-nio)"),
        // `Vapor` (off by default) builds `OAuth2Vapor`, the Vapor 4 adapter of OAuth2Web, and
        // its example app; only under it does SwiftPM resolve Vapor and its packages.
        .trait(name: "Vapor", description: "OAuth2Vapor: web sign-in and bearer-token middleware for Vapor 4"),
        // `Hummingbird` (off by default) builds `OAuth2Hummingbird`, the adapter of OAuth2Web's
        // sign-in and bearer checks to Hummingbird 2, and its example app; only under it does
        // SwiftPM resolve Hummingbird and its packages.
        .trait(name: "Hummingbird", description: "OAuth2Hummingbird: OAuth2Web's sign-in and bearer-token middleware for Hummingbird 2"),
        // `MCP` (off by default) builds `OAuth2MCP`, the MCP Swift SDK's client fed by a
        // TokenSession, and the example MCP server (Examples/MCPServer) on the SDK behind
        // OAuth2Hummingbird (which needs `Hummingbird` too); only under it does SwiftPM resolve
        // the SDK and its packages.
        .trait(name: "MCP", description: "OAuth2MCP: the MCP Swift SDK's client with a TokenSession's tokens; with Hummingbird, the example MCP server"),
        .default(enabledTraits: ["URLSession"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        // X509 for OAuth2Vapor: Vapor hands a request's client certificate as X509's.
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/vapor/postgres-nio", exact: "1.33.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", exact: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics", exact: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        .package(url: "https://github.com/vapor/vapor", exact: "4.122.3"),
        // Without its default traits: no swift-configuration (the adapter reads no configuration).
        .package(url: "https://github.com/hummingbird-project/hummingbird", exact: "2.28.1", traits: []),
        // The MCP Swift SDK, for the example MCP server (trait `MCP`).
        .package(url: "https://github.com/modelcontextprotocol/swift-sdk", exact: "0.12.1"),
        // DocC: `swift package --disable-sandbox generate-documentation --target OAuth2`.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // What several modules share and no user sees (`package` access, not a product): the
        // lock box, the async lock, the one deadline helper and its clock, HTML escaping,
        // secure random bytes, form encoding, constant-time comparison, child processes, the
        // blocking-I/O queue. Foundation only.
        .target(
            name: "OAuth2Internals",
            swiftSettings: strictSettings
        ),
        // The bottom layer: JOSE only (JWS, JWK and JWK sets, signing keys, base64url), the
        // strict JSON reader, the JSON value. Depends on nothing of ours but the internals: an
        // import of `OAuth2` here is a compile error.
        .target(
            name: "OAuth2JOSE",
            dependencies: [
                "OAuth2Internals",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            swiftSettings: strictSettings
        ),
        .target(
            name: "OAuth2",
            dependencies: [
                "OAuth2Internals",
                "OAuth2JOSE",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "HTTPTypesFoundation", package: "swift-http-types", condition: .when(traits: ["URLSession"])),
                .product(name: "Logging", package: "swift-log"),
                // Counters and timers of exchanges and renewals, and a span per exchange: no-ops
                // until the application bootstraps a backend.
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: strictSettings
        ),
        .target(
            name: "OAuth2AsyncHTTPClient",
            dependencies: [
                "OAuth2", "OAuth2Web",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        // The desktop keyring: libsecret is loaded at run time (dlopen), so building needs no
        // libsecret headers; the C target holds only the data layouts, and links nothing.
        .target(
            name: "OAuth2SecretService",
            dependencies: ["OAuth2", "OAuth2JOSE", "OAuth2Internals", "CSecretServiceShim"],
            swiftSettings: strictSettings
        ),
        .target(name: "CSecretServiceShim"),
        // Interactive sign-in for terminals: the loopback redirect listener (SwiftNIO), the
        // browser launcher, device sign-in with a terminal QR code (libqrencode, loaded at run time).
        .target(
            name: "OAuth2InteractiveSignIn",
            dependencies: [
                "OAuth2Internals",
                "OAuth2", "OAuth2JOSE",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            swiftSettings: strictSettings
        ),
        // The token store a fleet shares (PostgreSQL): single-flight refresh across replicas.
        // Its sources are inside `#if Postgres`; without the trait the module is empty and
        // nothing of postgres-nio is built.
        .target(
            name: "OAuth2Postgres",
            dependencies: [
                "OAuth2Internals",
                "OAuth2",
                // `PostgresReplayStore` and `PostgresWebSessionStore`: OAuth2Web's replay records and
                // web sessions, shared by a fleet of replicas.
                .target(name: "OAuth2Web", condition: .when(traits: ["Postgres"])),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["Postgres"])),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .when(traits: ["Postgres"])),
                .product(name: "Metrics", package: "swift-metrics", condition: .when(traits: ["Postgres"])),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["Postgres"])),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: .when(traits: ["Postgres"])),
            ],
            swiftSettings: strictSettings
        ),
        // For web services, framework-neutral: the resource server's bearer-token checks (RFC
        // 9068 access tokens, cached introspection, DPoP proofs). No NIO and no web framework:
        // the framework adapters only translate requests and responses.
        .target(
            name: "OAuth2Web",
            dependencies: [
                "OAuth2Internals",
                "OAuth2", "OAuth2JOSE",
                .product(name: "Crypto", package: "swift-crypto"),
                // PEM of client certificates forwarded by a TLS-terminating proxy (RFC 8705).
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        // The Vapor 4 adapter of OAuth2Web: it only translates requests, responses and
        // middleware. Its sources are inside `#if Vapor`; without the trait the module is empty.
        .target(
            name: "OAuth2Vapor",
            dependencies: [
                "OAuth2", "OAuth2Web",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Vapor", package: "vapor", condition: .when(traits: ["Vapor"])),
                // The client certificate of a TLS connection (mutual TLS, RFC 8705), as DER.
                .product(name: "X509", package: "swift-certificates", condition: .when(traits: ["Vapor"])),
                .product(name: "SwiftASN1", package: "swift-asn1", condition: .when(traits: ["Vapor"])),
            ],
            swiftSettings: strictSettings
        ),
        // The example web app on Vapor (Examples/VaporWebApp): sign-in, a profile page, an API
        // route calling the provider with the user's token; the embedded provider by default.
        .executableTarget(
            name: "VaporWebApp",
            dependencies: [
                "OAuth2", "OAuth2Web", "OAuth2Vapor", "OAuth2Testing",
                .product(name: "Vapor", package: "vapor", condition: .when(traits: ["Vapor"])),
                .product(name: "NIOPosix", package: "swift-nio", condition: .when(traits: ["Vapor"])),
            ],
            path: "Examples/VaporWebApp",
            swiftSettings: strictSettings
        ),
        // OAuth2Web for Hummingbird 2: middleware that only translates requests and responses.
        // Its sources are inside `#if Hummingbird`; without the trait the module is empty and
        // nothing of Hummingbird is built.
        .target(
            name: "OAuth2Hummingbird",
            dependencies: [
                "OAuth2", "OAuth2Web",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird", condition: .when(traits: ["Hummingbird"])),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["Hummingbird"])),
                // The client certificate of a TLS connection (mutual TLS, RFC 8705).
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: .when(traits: ["Hummingbird"])),
            ],
            swiftSettings: strictSettings
        ),
        // The MCP Swift SDK's client fed by a TokenSession: an `HTTPClientAuthorizer` for its
        // `HTTPClientTransport` (persistent stores, one refresh across processes, step-up,
        // DPoP). Its sources are inside `#if MCP`; without the trait the module is empty and
        // nothing of the SDK is built.
        .target(
            name: "OAuth2MCP",
            dependencies: [
                "OAuth2", "OAuth2Internals",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "MCP", package: "swift-sdk", condition: .when(traits: ["MCP"])),
            ],
            swiftSettings: strictSettings
        ),
        // An embedded OpenID provider on loopback for users' own tests and the CLI's demo. It
        // uses OAuth2 for JOSE signing only: its protocol decisions are its own.
        .target(
            name: "OAuth2Testing",
            dependencies: [
                "OAuth2Internals",
                "OAuth2JOSE",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                // HTTPS fetches of Client ID Metadata Documents.
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: strictSettings
        ),
        // `oauth2-test-provider`: the test provider as a process (demo configuration), for
        // tests written in other languages; prints its issuer and serves until killed.
        .executableTarget(
            name: "OAuth2TestProviderServer",
            dependencies: ["OAuth2Testing", "OAuth2"],
            swiftSettings: strictSettings
        ),
        // The `oauth2` command-line tool. It sends with AsyncHTTPClient, so that a build
        // without the URLSession trait links no libcurl (see `traits` above).
        .executableTarget(
            name: "OAuth2CLI",
            dependencies: [
                "OAuth2", "OAuth2JOSE", "OAuth2Internals", "OAuth2AsyncHTTPClient", "OAuth2SecretService", "OAuth2InteractiveSignIn", "OAuth2Testing",
                // `--store postgres`, in a build with the Postgres trait.
                .target(name: "OAuth2Postgres", condition: .when(traits: ["Postgres"])),
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["Postgres"])),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                // Only to read the transport's errors (ErrorReport): "connection refused",
                // "DNS lookup failed", "certificate not trusted". Linked already, through
                // OAuth2AsyncHTTPClient and OAuth2InteractiveSignIn.
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            path: "Sources/OAuth2CLI",
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "OAuth2Example",
            dependencies: ["OAuth2", .product(name: "Logging", package: "swift-log")],
            path: "Sources/OAuth2Example",
            swiftSettings: strictSettings
        ),
        // `oauth2-web-example-hummingbird`: a web app that signs users in with OAuth2Hummingbird
        // (README; the browser journeys drive it). Without the trait it is an empty program.
        .executableTarget(
            name: "HummingbirdWebApp",
            dependencies: [
                "OAuth2", "OAuth2JOSE", "OAuth2Web", "OAuth2Hummingbird", "OAuth2Testing", "OAuth2AsyncHTTPClient",
                .target(name: "OAuth2Postgres", condition: .when(traits: ["Postgres"])),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Hummingbird", package: "hummingbird", condition: .when(traits: ["Hummingbird"])),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["Hummingbird"])),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .when(traits: ["Hummingbird"])),
            ],
            path: "Examples/HummingbirdWebApp",
            swiftSettings: strictSettings
        ),
        // `oauth2-mcp-server-example`: an MCP server (the MCP Swift SDK's Streamable HTTP server
        // transport behind Hummingbird) whose tools need different scopes, an RFC 9728 protected
        // resource through OAuth2Hummingbird; the embedded provider by default. Without the
        // traits `MCP` and `Hummingbird` it is an empty program.
        .executableTarget(
            name: "MCPServerExample",
            dependencies: [
                "OAuth2", "OAuth2Web", "OAuth2Hummingbird", "OAuth2Testing",
                // Its own client to the embedded provider on HTTPS with a CA of the run's own.
                "OAuth2AsyncHTTPClient",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Hummingbird", package: "hummingbird", condition: .when(traits: ["Hummingbird"])),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["Hummingbird"])),
                .product(name: "MCP", package: "swift-sdk", condition: .when(traits: ["MCP"])),
            ],
            path: "Examples/MCPServer",
            swiftSettings: strictSettings
        ),
        // libFuzzer harnesses; see README ("Fuzz/") and scripts/fuzz. Built normally they are empty programs.
        .executableTarget(
            name: "FuzzParsers",
            dependencies: ["OAuth2", .product(name: "HTTPTypes", package: "swift-http-types")],
            path: "Fuzz/FuzzParsers"
        ),
        .executableTarget(name: "FuzzJWS", dependencies: ["OAuth2"], path: "Fuzz/FuzzJWS"),
        .executableTarget(name: "FuzzJWKS", dependencies: ["OAuth2"], path: "Fuzz/FuzzJWKS"),
        .executableTarget(name: "FuzzClaims", dependencies: ["OAuth2"], path: "Fuzz/FuzzClaims"),
        .executableTarget(
            name: "FuzzResourceServer",
            dependencies: ["OAuth2", "OAuth2Web", .product(name: "HTTPTypes", package: "swift-http-types")],
            path: "Fuzz/FuzzResourceServer"
        ),
        .executableTarget(
            name: "FuzzFormats",
            dependencies: ["OAuth2", .product(name: "HTTPTypes", package: "swift-http-types")],
            path: "Fuzz/FuzzFormats"
        ),
        .target(
            name: "OAuth2TestSupport",
            dependencies: [
                "OAuth2", "OAuth2Internals",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            path: "Tests/OAuth2TestSupport",
            swiftSettings: strictSettings
        ),
        // What the web-framework adapters' tests share: the DPoP and mutual-TLS checks of an API route.
        .target(
            name: "OAuth2WebTestSupport",
            dependencies: [
                "OAuth2", "OAuth2JOSE", "OAuth2Web",
                // Client certificates made with openssl, for the mutual-TLS checks.
                "OAuth2TestSupport",
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            path: "Tests/OAuth2WebTestSupport",
            swiftSettings: strictSettings
        ),
        // A child process for the tests that need several processes: crash safety (killed
        // while writing), cross-process locks, sessions sharing a store, PostgreSQL fleet
        // replicas. `OAuth2TestWorker <subcommand> ...`.
        .executableTarget(
            name: "OAuth2TestWorker",
            dependencies: [
                "OAuth2", "OAuth2SecretService", "OAuth2TestSupport", .product(name: "HTTPTypes", package: "swift-http-types"),
                // `bearer-check`: the token check behind nginx in Tests/CLI/tools.sh.
                "OAuth2Web",
                // `fleet-refresh`: a replica of the PostgreSQL fleet tests.
                .target(name: "OAuth2Postgres", condition: .when(traits: ["Postgres"])),
                .product(name: "Crypto", package: "swift-crypto", condition: .when(traits: ["Postgres"])),
                .product(name: "Logging", package: "swift-log", condition: .when(traits: ["Postgres"])),
            ],
            path: "Tests/OAuth2TestWorker",
            swiftSettings: strictSettings
        ),
        // The shared internals: the deadline helper on an injected clock, the locks, the encodings.
        .testTarget(
            name: "OAuth2InternalsTests",
            dependencies: ["OAuth2Internals", "OAuth2TestSupport"],
            swiftSettings: strictSettings
        ),
        // The bottom layer's rules (JOSE, strict JSON, encodings), with nothing of `OAuth2` in scope.
        .testTarget(
            name: "OAuth2JOSETests",
            dependencies: ["OAuth2JOSE", "OAuth2Internals", .product(name: "Crypto", package: "swift-crypto"), .product(name: "CryptoExtras", package: "swift-crypto")],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "OAuth2Tests",
            dependencies: [
                "OAuth2", "OAuth2Internals", "OAuth2TestSupport",
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: strictSettings
        ),
        // One test target per library module: the transport over AsyncHTTPClient (its proxy
        // rules; the transport itself runs in every integration and fault-suite test)…
        .testTarget(
            name: "OAuth2AsyncHTTPClientTests",
            dependencies: ["OAuth2", "OAuth2AsyncHTTPClient", "OAuth2TestSupport"],
            swiftSettings: strictSettings
        ),
        // …and the keyring store without a keyring (the keyring itself: OAuth2IntegrationTests).
        .testTarget(
            name: "OAuth2SecretServiceTests",
            dependencies: ["OAuth2", "OAuth2SecretService", "OAuth2TestSupport"],
            swiftSettings: strictSettings
        ),
        // Tests against local servers started in-process (a misbehaving provider, counting
        // servers): real sockets, no outside server.
        .testTarget(
            name: "OAuth2ConformanceTests",
            dependencies: ["OAuth2", "OAuth2AsyncHTTPClient", "OAuth2TestSupport"],
            swiftSettings: strictSettings
        ),
        // The loopback listener, browser launcher, QR code and device presenter: real sockets,
        // real child processes, no outside server; web-authentication sign-in against the
        // embedded test provider.
        .testTarget(
            name: "OAuth2InteractiveSignInTests",
            dependencies: [
                "OAuth2", "OAuth2JOSE", "OAuth2Internals", "OAuth2InteractiveSignIn", "OAuth2TestSupport", "OAuth2Testing",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strictSettings
        ),
        // The web core's rules (resource server: access tokens, introspection cache, DPoP
        // proofs; back-channel logout tokens), with real keys and the library's transport
        // seam; web sign-in against the embedded provider on loopback.
        .testTarget(
            name: "OAuth2WebTests",
            dependencies: [
                "OAuth2Web", "OAuth2", "OAuth2JOSE", "OAuth2Internals", "OAuth2TestSupport", "OAuth2Testing",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        // The test provider's own tests, driven by the library's client (and, for
        // back-channel logout, by OAuth2Web's endpoint on a loopback listener).
        .testTarget(
            name: "OAuth2TestingTests",
            dependencies: ["OAuth2Testing", "OAuth2", "OAuth2AsyncHTTPClient", "OAuth2InteractiveSignIn", "OAuth2TestSupport", "OAuth2Web", "OAuth2Internals"],
            swiftSettings: strictSettings
        ),
        // The `oauth2` tool's own logic (option parsing, profiles, how a profile configures
        // its client): no socket. Its behaviour against servers is Tests/CLI/e2e.sh.
        .testTarget(
            name: "OAuth2CLITests",
            dependencies: [
                "OAuth2CLI", "OAuth2", "OAuth2Internals", "OAuth2Testing", "OAuth2TestSupport", "OAuth2AsyncHTTPClient",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "HTTPTypes", package: "swift-http-types"), .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"), .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"), .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: strictSettings
        ),
        // The PostgreSQL store against the PostgreSQL that scripts/test-servers/postgres.sh
        // starts (OAUTH2_TEST_POSTGRES_URL): no stand-in; without the `Postgres` trait it is empty.
        .testTarget(
            name: "OAuth2PostgresTests",
            dependencies: [
                "OAuth2", "OAuth2Internals", "OAuth2Postgres", "OAuth2Testing", "OAuth2TestSupport", "OAuth2Web",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["Postgres"])),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .when(traits: ["Postgres"])),
                .product(name: "MetricsTestKit", package: "swift-metrics", condition: .when(traits: ["Postgres"])),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: .when(traits: ["Postgres"])),
            ],
            exclude: ["Fixtures"],
            swiftSettings: strictSettings
        ),
        // The Vapor adapter on a real Vapor server on loopback, with the embedded provider;
        // without the `Vapor` trait it is empty.
        .testTarget(
            name: "OAuth2VaporTests",
            dependencies: [
                "OAuth2", "OAuth2Web", "OAuth2Vapor", "OAuth2Testing", "OAuth2TestSupport", "OAuth2WebTestSupport",
                // The single-page app backend's proxy transport, under Vapor.
                "OAuth2AsyncHTTPClient",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Vapor", package: "vapor", condition: .when(traits: ["Vapor"])),
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: .when(traits: ["Vapor"])),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["Vapor"])),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: .when(traits: ["Vapor"])),
                .product(name: "NIOPosix", package: "swift-nio", condition: .when(traits: ["Vapor"])),
                // The API serving TLS itself, asking for client certificates (mutual TLS).
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: .when(traits: ["Vapor"])),
            ],
            swiftSettings: strictSettings
        ),
        // The Hummingbird adapter on a real server on loopback, with the embedded test provider
        // as the provider; without the `Hummingbird` trait it is empty.
        .testTarget(
            name: "OAuth2HummingbirdTests",
            dependencies: [
                "OAuth2", "OAuth2Web", "OAuth2Hummingbird", "OAuth2Testing", "OAuth2TestSupport", "OAuth2WebTestSupport", "OAuth2JOSE",
                "OAuth2AsyncHTTPClient",
                // The example app, run in-process on port 0: the adapter's journeys are the app's.
                "HummingbirdWebApp",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "HTTPTypesFoundation", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Hummingbird", package: "hummingbird", condition: .when(traits: ["Hummingbird"])),
                .product(name: "HummingbirdTesting", package: "hummingbird", condition: .when(traits: ["Hummingbird"])),
                // The API serving TLS itself, asking for client certificates (mutual TLS).
                .product(name: "HummingbirdTLS", package: "hummingbird", condition: .when(traits: ["Hummingbird"])),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: .when(traits: ["Hummingbird"])),
                // The example as a fleet on PostgreSQL (FleetOnPostgresTests).
                .target(name: "OAuth2Postgres", condition: .when(traits: ["Postgres"])),
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["Postgres"])),
            ],
            swiftSettings: strictSettings
        ),
        // The MCP adapter: its challenge and header rules without a socket, and the MCP Swift
        // SDK's client (its own OAuthAuthorizer, and the adapter) against the example MCP server
        // ($OAUTH2_MCP_SERVER_EXAMPLE); without the `MCP` trait it is empty.
        .testTarget(
            name: "OAuth2MCPTests",
            dependencies: [
                "OAuth2", "OAuth2MCP", "OAuth2JOSE", "OAuth2Web", "OAuth2TestSupport", "OAuth2Internals",
                // The SDK's own OAuth against the example's provider on HTTPS (a CA of the run's own).
                "OAuth2AsyncHTTPClient",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "HTTPTypesFoundation", package: "swift-http-types"),
                .product(name: "MCP", package: "swift-sdk", condition: .when(traits: ["MCP"])),
            ],
            swiftSettings: strictSettings
        ),
        // One meaning per name: a file that imports Foundation, Vapor, Hummingbird and every
        // library module, and names each public type of the listing (api/*.txt) unqualified;
        // empty unless the `Vapor`, `Hummingbird`, `Postgres` and `MCP` traits are all on.
        .testTarget(
            name: "OAuth2NamesTests",
            dependencies: [
                "OAuth2", "OAuth2JOSE", "OAuth2AsyncHTTPClient", "OAuth2SecretService", "OAuth2InteractiveSignIn", "OAuth2Testing",
                "OAuth2Web", "OAuth2Postgres", "OAuth2Hummingbird", "OAuth2Vapor", "OAuth2MCP",
                .product(name: "Hummingbird", package: "hummingbird", condition: .when(traits: ["Hummingbird"])),
                .product(name: "Vapor", package: "vapor", condition: .when(traits: ["Vapor"])),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "OAuth2IntegrationTests",
            dependencies: [
                "OAuth2", "OAuth2AsyncHTTPClient", "OAuth2SecretService", "OAuth2InteractiveSignIn", "OAuth2TestSupport",
                // The web sign-in and the resource server's checks, against real providers.
                "OAuth2Web", "OAuth2JOSE", "OAuth2Internals",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: strictSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)
