#if MCP && Hummingbird
import Foundation
import MCP

/// The example's tools, each with the scope a token must grant to call it: what the HTTP
/// glue checks before a `tools/call` reaches the MCP server (``MCPEndpoint``), so that a
/// missing scope is answered with HTTP 403 `insufficient_scope` naming it — the challenge
/// an MCP client steps up on (incremental consent) — rather than with a JSON-RPC error.
enum ExampleTools {
    /// The scope of reading tools.
    static let readScope = "mcp:read"
    /// The scope of writing tools.
    static let writeScope = "mcp:write"
    /// Every scope the server knows: its metadata's `scopes_supported`.
    static let scopes = [readScope, writeScope]

    /// The scope each tool needs.
    static let requiredScope: [String: String] = ["echo": readScope, "list_notes": readScope, "write_note": writeScope]

    /// The tools as `tools/list` shows them.
    static let tools: [Tool] = [
        Tool(
            name: "echo", description: "Answers with its text (needs mcp:read).",
            inputSchema: .object(["type": "object", "properties": .object(["text": .object(["type": "string"])]), "required": .array(["text"])])),
        Tool(
            name: "list_notes", description: "Lists the notes written so far (needs mcp:read).",
            inputSchema: .object(["type": "object", "properties": .object([:])])),
        Tool(
            name: "write_note", description: "Keeps a note (needs mcp:write).",
            inputSchema: .object(["type": "object", "properties": .object(["text": .object(["type": "string"])]), "required": .array(["text"])])),
    ]

    /// Registers the tools' handlers on `server`; notes go to `notes`.
    static func register(on server: Server, notes: NoteBook) async {
        await server.withMethodHandler(ListTools.self) { _ in ListTools.Result(tools: tools) }
        await server.withMethodHandler(CallTool.self) { call in
            switch call.name {
            case "echo":
                guard let text = call.arguments?["text"]?.stringValue else { throw MCPError.invalidParams("echo needs a text.") }
                return CallTool.Result(content: [.text(text)])
            case "list_notes":
                return CallTool.Result(content: await notes.all().map { .text($0) })
            case "write_note":
                guard let text = call.arguments?["text"]?.stringValue else { throw MCPError.invalidParams("write_note needs a text.") }
                let count = await notes.add(text)
                return CallTool.Result(content: [.text("Noted (\(count) notes).")])
            default:
                throw MCPError.invalidParams("No tool is named \(call.name).")
            }
        }
    }
}

/// The notes `write_note` keeps, shared by every session, in memory.
actor NoteBook {
    private var notes: [String] = []

    /// Adds a note; returns how many there are.
    func add(_ note: String) -> Int {
        notes.append(note)
        return notes.count
    }

    /// Every note, oldest first.
    func all() -> [String] { notes }
}
#endif
