// The `oauth2` command-line tool. See README.md ("The oauth2 command") for the contract:
// global options before or after the command, results on stdout, everything else on
// stderr, and fixed exit codes (ExitStatus).
import Foundation

// `oauth2 exec` gives its command the signal state the tool was started with.
ProcessReplacement.recordInheritedSignals()
let arguments = GlobalOptions.hoisted(DPoPArgument.expanded(Array(CommandLine.arguments.dropFirst())))
// A cached token is answered here, on the main thread, before the first `await`: async
// code would start the Swift concurrency pool's threads (StoreAnswer).
if let status = StoreAnswer.answer(arguments) { exit(status.rawValue) }
let status = await CLI.run(arguments)
exit(status.rawValue)
