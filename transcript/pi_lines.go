package transcript

import (
	"fmt"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
)

// piLines decodes a pi session file (version 3) a line at a time: its
// header, then one entry a line, as pi appends them.
type piLines struct {
	header *session.Header
}

func (p *piLines) Line(no int, line []byte) ([]*session.Entry, error) {
	if p.header == nil {
		h, err := codec.DecodeHeader(line)
		if err != nil {
			return nil, fmt.Errorf("%w: the first line is not a session header: %w", ErrBadLine, err)
		}
		if h.Version != session.CurrentVersion {
			return nil, fmt.Errorf("%w: a version %d file (a follow reads version %d; import older files)", ErrBadLine, h.Version, session.CurrentVersion)
		}
		p.header = h
		return nil, nil
	}
	e, err := codec.DecodeEntry(line)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadLine, err)
	}
	return []*session.Entry{e}, nil
}

// Header is the file's own header: pi names its sessions.
func (p *piLines) Header(Source) (session.Header, bool) {
	if p.header == nil {
		return session.Header{}, false
	}
	return *p.header, true
}
