package codec

import (
	"fmt"
	"io"

	"github.com/agentcore/sessionlog/session"
)

// Exported for the tests of package codec_test.
var (
	JSONToMsgpackFast   = jsonToMsgpackFast
	JSONToMsgpackTokens = jsonToMsgpackTokens
	JSONToMsgpack       = jsonToMsgpack
	MsgpackToJSON       = msgpackToJSON
	Canonical           = canonical
)

// SetMaxLineBytes bounds the lines DecodeFile decodes until restore.
func SetMaxLineBytes(n int) (restore func()) {
	old := maxLineBytes
	maxLineBytes = n
	return func() { maxLineBytes = old }
}

// DecodeEntryJSONText is DecodeEntry (DecodeEntryStrict when strict) with
// jsontext's Decoder tokenizing in place of the scanner.
func DecodeEntryJSONText(line []byte, strict bool) (*session.Entry, error) {
	return decodeEntry(getJSONTextReader(line), strict, strict)
}

// ScanValue reads one JSON value with the scanner and checks nothing
// follows: it returns the value as read.
func ScanValue(data []byte) ([]byte, error) {
	var s scanner
	s.Reset(data)
	v, err := s.ReadValue()
	if err != nil {
		return nil, err
	}
	if _, err := s.ReadToken(); err != io.EOF {
		return nil, fmt.Errorf("after the value: %v", err)
	}
	return v, nil
}

// SymbolsLearnt interns values in one reader's table and returns how many
// it holds then, and the bound.
func SymbolsLearnt(values []string) (held, bound int) {
	var s symbols
	for _, v := range values {
		s.intern([]byte(v))
	}
	return len(s), maxSymbols
}
