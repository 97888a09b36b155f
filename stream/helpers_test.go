package stream_test

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
)

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func decodeHeader(b []byte) (*session.Header, error) { return codec.DecodeHeaderMsgpack(b) }
func decodeEntry(b []byte) (*session.Entry, error)   { return codec.DecodeEntryMsgpack(b) }
