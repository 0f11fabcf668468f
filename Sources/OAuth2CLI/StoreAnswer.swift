import ArgumentParser
import Foundation

/// A command that can sometimes be answered from the store alone — a cached token —
/// synchronously, before anything asynchronous begins.
protocol AnswersFromStore {
    /// The exit status when the command was answered (its output written), else `nil`:
    /// then the command runs as usual. Must not await, start a thread or send a request,
    /// and must decide "answered" only where `run()` would have done the same.
    func answerFromStore() -> ExitStatus?
}

/// The fast path of main.swift: a cached `oauth2 token` (or `exec`) answered without
/// entering async code.
///
/// On Linux, the first hop of a task to the global executor starts the Swift concurrency
/// pool's threads (and the Ctrl-C handler a dispatch thread), which cost more than the
/// whole answer; async `main` itself starts none until it awaits. So main.swift asks this
/// first, on the main thread, and goes to ``CLI/run(_:)`` only when it gets `nil`.
/// BENCHMARKS.md ("`oauth2 token` as a whole process") has the figures.
enum StoreAnswer {
    /// The exit status of the command `arguments` name when it could be answered from the
    /// store; `nil` for every other command line (a parse error included: ``CLI/run(_:)``
    /// reports it).
    static func answer(_ arguments: [String]) -> ExitStatus? {
        // With OAUTH2_AGENT_SOCK set the agent answers, not the store: the command's run().
        guard AgentClient.configuredSocket == nil else { return nil }
        guard let command = try? OAuth2Command.parseAsRoot(arguments), let answering = command as? any AnswersFromStore else {
            return nil
        }
        // What CLI.run checks before any command runs.
        if let global = (command as? any TakesGlobalOptions)?.global {
            guard (try? global.validateHTTPTimeout()) != nil else { return nil }
        }
        return answering.answerFromStore()
    }
}
