// Package filestore keeps a session in a JSONL file in the pi coding
// agent's session format (version 3): one header line, then one line per
// entry, appended and optionally fsynced one write at a time. It loads pi's
// files of versions 1 to 3, migrating old ones, and reports bad lines by
// file and line number.
package filestore
