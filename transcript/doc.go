// Package transcript takes other coding agents' session files in as pi
// sessions and gives them back as they were: Claude Code's transcripts
// (~/.claude/projects/<project>/<session>.jsonl, with their subagents
// under <session>/subagents/) and Codex CLI's rollouts
// (~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl).
//
// Every line becomes one entry, in order, or a short chain of entries
// when one line holds several tool results:
//
//   - a line with a conversation message (a user prompt, an assistant's
//     text, thinking and tool calls, tool results, images) becomes pi
//     message entries, so the context, search, the console and the MCP
//     tools work on it; the line itself is kept beside the message (see
//     Keep) so that it can be written back exactly;
//   - a compaction (Claude Code's compact boundary and the summary after
//     it, Codex's compacted line) becomes a pi compaction;
//   - every other line (progress events, file-history snapshots, system
//     lines, turn contexts, fields and types sessionlog does not know) is
//     a custom entry whose data is the line, verbatim.
//
// Export walks a session's entries in order and writes each kept line
// back: an import followed by an export gives the file's lines, each the
// same bytes.
//
// The tree follows the file's: Claude Code's uuid and parentUuid are the
// entries' ids and parents (a compact boundary hangs from its logical
// parent, so the session stays one tree); a line whose parent is in
// another file (a subagent's first lines) is a root, and a line without a
// uuid hangs from the entry before it. Codex's rollouts are a chain.
// Subagents are linked sessions: each subagent file is a session of its
// own whose header names the main session as its parent (ParentSession),
// with the id <session>_<agent file's name>.
//
// The package does no I/O: callers pass file contents and names.
package transcript
