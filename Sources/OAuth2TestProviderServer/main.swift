// oauth2-test-provider: the test provider (OAuth2Testing) as a process, with the demo
// configuration, for tests written in any language. Prints the issuer on the first line of
// standard output, then serves until it gets SIGTERM or SIGINT (or, with
// --exit-on-stdin-close, until its standard input closes).

import Foundation
import OAuth2
import OAuth2Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

let usage = """
    usage: oauth2-test-provider [--port N] [--algorithm RS256|ES256|PS256|EdDSA|…] [--issuer-path /path]
                                [--no-iss] [--no-refresh-rotation] [--access-token-lifetime SECONDS]
                                [--exit-on-stdin-close]

    Starts the swift-oauth2 test provider on 127.0.0.1 with the demo configuration
    (TestProvider.Configuration.demo) and prints its issuer. Clients: \(TestProvider.Demo.publicClientID) (public)
    and \(TestProvider.Demo.confidentialClientID) (confidential; its secret is TestProvider.Demo.confidentialClientSecret);
    user \(TestProvider.Demo.username), signed in automatically; redirect URI http://127.0.0.1:<any port>/callback.

    """

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("oauth2-test-provider: \(message)\n".utf8))
    exit(2)
}

var configuration = TestProvider.Configuration.demo
var exitOnStdinClose = false
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    func value() -> String {
        guard let next = arguments.popFirst() else { fail("\(argument) needs a value") }
        return next
    }
    switch argument {
    case "--port":
        guard let port = Int(value()) else { fail("--port needs a number") }
        configuration.port = port
    case "--algorithm":
        let algorithm = JWSAlgorithm(rawValue: value())
        guard JWSAlgorithm.asymmetric.contains(algorithm) else { fail("unsupported algorithm \(algorithm)") }
        configuration.signingAlgorithm = algorithm
    case "--issuer-path": configuration.issuerPath = value()
    case "--no-iss": configuration.sendsIssuerParameter = false
    case "--no-refresh-rotation": configuration.rotatesRefreshTokens = false
    case "--access-token-lifetime":
        guard let seconds = Int(value()), seconds > 0 else { fail("--access-token-lifetime needs a positive number of seconds") }
        configuration.lifetimes.accessToken = .seconds(seconds)
    case "--exit-on-stdin-close": exitOnStdinClose = true
    case "-h", "--help":
        print(usage, terminator: "")
        exit(0)
    default: fail("unknown argument \(argument)\n\(usage)")
    }
}

let provider: TestProvider
do {
    provider = try await TestProvider.start(configuration: configuration)
} catch {
    fail("cannot start: \(error)")
}
// Unbuffered, so that a script reading the first line gets it at once.
FileHandle.standardOutput.write(Data((provider.issuer.absoluteString + "\n").utf8))

// Wait for a signal (or the end of standard input), then shut down cleanly.
let (stop, stopper) = AsyncStream<Void>.makeStream()
let signalSources = [SIGTERM, SIGINT].map { signalNumber in
    signal(signalNumber, SIG_IGN)
    let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
    source.setEventHandler { stopper.yield() }
    source.resume()
    return source
}
if exitOnStdinClose {
    Thread.detachNewThread {
        while !FileHandle.standardInput.availableData.isEmpty {}
        stopper.yield()
    }
}
for await _ in stop { break }
signalSources.forEach { $0.cancel() }
await provider.shutdown()
