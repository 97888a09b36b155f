package usage

// Ledger counts each model call once. Claude Code writes one line per
// content block of an API message and repeats the message's usage on
// each (the last line often with the final output count); a side
// conversation (/btw) may replay a parent's message under a new request.
// Calls are matched as ccusage matches them, so that the sums agree with
// the figures people bill from: by message id and request id, or by
// message id alone when either is a sidechain copy. Of two that match, a
// main-conversation call beats a sidechain copy; else the one with more
// tokens; else one at fast speed.
//
// A Ledger remembers the keyed calls it has seen: at most Window of them
// when Window is positive (the oldest forgotten first: the lines of one
// message are written together), every one when it is 0.
type Ledger struct {
	Window int
	byKey  map[string][]*slot
	order  []string // keys, oldest first, when windowed
}

type slot struct {
	request   string
	sidechain bool
	call      Call
}

// Add takes c and says what changes in the sums: c counts in place of
// old (when replaced is true, old is what was counted and must be taken
// out), or not at all (counted false: an earlier call of its key stands).
func (l *Ledger) Add(c Call) (counted bool, old Call, replaced bool) {
	if c.Key == "" {
		return true, Call{}, false
	}
	if l.byKey == nil {
		l.byKey = map[string][]*slot{}
	}
	slots := l.byKey[c.Key]
	var match *slot
	for _, s := range slots {
		if s.request == c.Request {
			match = s
			break
		}
	}
	if match == nil {
		for _, s := range slots {
			if c.Sidechain || s.sidechain {
				match = s
				break
			}
		}
	}
	if match == nil {
		l.remember(c.Key)
		l.byKey[c.Key] = append(slots, &slot{request: c.Request, sidechain: c.Sidechain, call: c})
		return true, Call{}, false
	}
	if !replaces(c, match) {
		return false, Call{}, false
	}
	old = match.call
	match.request, match.sidechain, match.call = c.Request, c.Sidechain, c
	return true, old, true
}

// replaces tells whether c is counted rather than what s holds.
func replaces(c Call, s *slot) bool {
	if c.Sidechain != s.sidechain {
		return s.sidechain
	}
	if a, b := c.Tokens(), s.call.Tokens(); a != b {
		return a > b
	}
	return c.Fast && !s.call.Fast
}

// remember records a new key, forgetting the oldest past the window.
func (l *Ledger) remember(key string) {
	if l.Window <= 0 {
		return
	}
	l.order = append(l.order, key)
	if len(l.order) > l.Window {
		delete(l.byKey, l.order[0])
		l.order = append(l.order[:0:0], l.order[1:]...)
	}
}

// Remembered are the calls a windowed ledger holds, oldest first, to be
// kept and given back to Restore.
func (l *Ledger) Remembered() []Call {
	var out []Call
	for _, k := range l.order {
		for _, s := range l.byKey[k] {
			out = append(out, s.call)
		}
	}
	return out
}

// Restore makes l remember calls (Remembered's) without counting them.
func (l *Ledger) Restore(calls []Call) {
	for _, c := range calls {
		l.Add(c)
	}
}
