// Package usage reads what model calls consumed out of a session's
// entries, counts each call once, and prices it.
//
// Agents record usage in their own ways, and the figures people bill from
// (ccusage's) follow them: pi writes usage and cost on each assistant
// message; Claude Code writes a line per content block of an API message
// and repeats the message's usage on each (Ledger counts the message
// once); Codex reports usage in token_count events, the model in the turn
// context before them (Reader). Imported lines are read as the agent
// wrote them, from the line the entry keeps, so sessions imported by
// earlier versions are counted the same once the index is rebuilt.
//
// Prices come from a snapshot of @pydantic/genai-prices (Table, refreshed
// by `go run ./usage/refresh`), with an override file for negotiated
// prices; a call whose model has no price is counted as unpriced, never
// as free.
//
// The package does no I/O of its own and starts no goroutines: Read
// asks the store it is given.
package usage
