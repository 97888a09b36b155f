package session_test

import (
	"errors"
	"testing"

	"github.com/agentcore/sessionlog/session"
)

// A version from oldest to newest is read; a newer one is ErrNewerFormat,
// an older one a FormatError that is not.
func TestCheckFormat(t *testing.T) {
	for _, tc := range []struct {
		version   int
		ok, newer bool
	}{{1, true, false}, {2, true, false}, {3, false, true}, {0, false, false}} {
		err := session.CheckFormat("thing", "here", tc.version, 1, 2)
		var fe *session.FormatError
		if (err == nil) != tc.ok || errors.Is(err, session.ErrNewerFormat) != tc.newer || !tc.ok && (!errors.As(err, &fe) || fe.Version != tc.version) {
			t.Errorf("version %d: %v", tc.version, err)
		}
	}
}
