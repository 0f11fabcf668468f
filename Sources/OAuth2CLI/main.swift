// The `oauth2` command-line tool. See README.md ("The oauth2 command") for the contract:
// global options before or after the command, results on stdout, everything else on
// stderr, and fixed exit codes (ExitStatus).
import Foundation

let arguments = GlobalOptions.hoisted(DPoPArgument.expanded(Array(CommandLine.arguments.dropFirst())))
let status = await CLI.run(arguments)
exit(status.rawValue)
