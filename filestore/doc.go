// Package filestore keeps a session in a JSONL file in the pi coding
// agent's session format (version 3): one header line, then one line per
// entry, appended and optionally fsynced one write at a time. codec decodes
// the files (pi's versions 1 to 3, bad lines reported by line number);
// this package does the file I/O around it: locking, truncating a torn
// tail, rewriting an old file as version 3.
package filestore
