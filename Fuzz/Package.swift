// swift-tools-version: 6.1
// libFuzzer harness for the parsers that read what servers and browsers send.
//   cd Fuzz && swift build -c debug --sanitize=fuzzer --sanitize=address
//   SWIFT_BACKTRACE=enable=no .build/debug/FuzzParsers corpus -max_total_time=60
import PackageDescription

let package = Package(
    name: "swift-oauth2-fuzz",
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
    ],
    targets: [
        .executableTarget(
            name: "FuzzParsers",
            dependencies: [
                .product(name: "OAuth2", package: "swift-oauth2"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        )
    ],
    swiftLanguageModes: [.v6]
)
