import Foundation
import OAuth2
import OAuth2Internals

/// What the device and backchannel sign-ins share once their instructions are shown: on a
/// terminal, a countdown to `expiresAt` on the status line; the poll's events (slow down,
/// retrying…) as messages; and `timeout`, measured on the wall clock (the user's patience
/// is not measured on the polling clock).
///
/// - Parameters:
///   - output: where the status line goes.
///   - expiresAt: when the request expires (the countdown's end).
///   - now: the wall clock the countdown reads.
///   - timeout: the longest wait; `nil` waits as long as the poll does.
///   - what: the sign-in's name in the timeout's message ("device", "backchannel").
///   - poll: polls the token endpoint, reporting each event to the handler it is given.
/// - Throws: what `poll` throws; `OAuth2Error.Code.timeout` when `timeout` passes first.
func pollWithCountdown(
    output: any TerminalOutput, expiresAt: Date, now: @escaping @Sendable () -> Date, timeout: Duration?, what: String,
    poll: @escaping @Sendable (_ progress: @escaping @Sendable (DevicePollEvent) async -> Void) async throws -> TokenSet
) async throws -> TokenSet {
    let status = StatusLine(output: output)
    let countdown: Task<Void, Never>? = output.isTerminal ? Task {
        while !Task.isCancelled {
            status.update(DeviceSignIn.countdownLine(remaining: expiresAt.timeIntervalSince(now())))
            try? await Task.sleep(for: .seconds(1))
        }
    } : nil
    defer {
        countdown?.cancel()
        status.finish()
    }
    let polling: @Sendable () async throws -> TokenSet = {
        try await poll { event in
            if let line = DeviceSignIn.describe(event) { status.message(line) }
        }
    }
    guard let timeout else { return try await polling() }
    return try await withDeadline(timeout, clock: .continuous, onTimeout: {
        throw OAuth2Error(.timeout, source: .client, message: "The \(what) sign-in was not approved within \(timeout.components.seconds) seconds.")
    }, operation: polling)
}
