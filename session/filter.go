package session

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// MaxListedLabels bounds the labels a listing carries per session (the
// most recently set distinct ones): a listing record is rewritten as the
// session grows, and must not grow with it.
const MaxListedLabels = 64

// Filter narrows a listing. Its zero value keeps every session; each set
// field must hold.
type Filter struct {
	// Name is a case-insensitive part of the session's name.
	Name string
	// Cwd is the session's working directory or one above it.
	Cwd string
	// Labels must all be among the session's labels in force (of the
	// MaxListedLabels most recently set).
	Labels []string
	// Meta are top-level members of the header's metadata: a string
	// member equal to the value, or another JSON value written as it.
	Meta map[string]string
	// Since and Until bound when the session was last updated:
	// Since <= updated < Until. Zero: unbounded.
	Since, Until time.Time
}

// IsZero reports whether f keeps every session.
func (f *Filter) IsZero() bool {
	return f == nil || (f.Name == "" && f.Cwd == "" && len(f.Labels) == 0 && len(f.Meta) == 0 && f.Since.IsZero() && f.Until.IsZero())
}

// Validate checks the filter is one a listing can apply.
func (f *Filter) Validate() error {
	if f == nil {
		return nil
	}
	bad := func(what, why string) error { return &FilterError{Field: what, Reason: why} }
	switch {
	case len(f.Name) > MaxNameLen:
		return bad("name", fmt.Sprintf("is over %d bytes", MaxNameLen))
	case len(f.Cwd) > MaxPathLen:
		return bad("cwd", fmt.Sprintf("is over %d bytes", MaxPathLen))
	case len(f.Labels) > MaxListedLabels:
		return bad("labels", fmt.Sprintf("number %d (at most %d)", len(f.Labels), MaxListedLabels))
	case len(f.Meta) > MaxListedLabels:
		return bad("meta", fmt.Sprintf("has %d members (at most %d)", len(f.Meta), MaxListedLabels))
	case !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until):
		return bad("since", fmt.Sprintf("(%s) is not before until (%s)", f.Since.Format(time.RFC3339), f.Until.Format(time.RFC3339)))
	}
	for _, l := range f.Labels {
		if l == "" || len(l) > MaxNameLen {
			return bad("label", fmt.Sprintf("%q is empty or over %d bytes", l, MaxNameLen))
		}
	}
	for k, v := range f.Meta {
		if k == "" || len(k) > MaxNameLen || len(v) > MaxNameLen {
			return bad("meta", fmt.Sprintf("member %q is empty or it or its value is over %d bytes", k, MaxNameLen))
		}
	}
	return nil
}

// FilterError says which field of a Filter cannot be used, and why. It
// unwraps to ErrInvalidConfig.
type FilterError struct {
	Field  string // "name", "cwd", "label", "labels", "meta", "since"
	Reason string
}

func (e *FilterError) Error() string {
	return fmt.Sprintf("%v: filter %s %s", ErrInvalidConfig, e.Field, e.Reason)
}

func (e *FilterError) Unwrap() error { return ErrInvalidConfig }

// Match reports whether in passes the filter.
func (f *Filter) Match(in Listing) bool {
	if f.IsZero() {
		return true
	}
	if f.Name != "" && !strings.Contains(strings.ToLower(in.Name), strings.ToLower(f.Name)) {
		return false
	}
	if f.Cwd != "" && !under(in.Cwd, f.Cwd) {
		return false
	}
	for _, l := range f.Labels {
		if !slices.Contains(in.Labels, l) {
			return false
		}
	}
	for k, v := range f.Meta {
		if !metaHas(Raw(in.Metadata), k, v) {
			return false
		}
	}
	if !f.Since.IsZero() || !f.Until.IsZero() {
		at, err := ParseUpdated(in.Updated)
		if err != nil || (!f.Since.IsZero() && at.Before(f.Since)) || (!f.Until.IsZero() && !at.Before(f.Until)) {
			return false
		}
	}
	return true
}

// ParseUpdated reads Listing.Updated (RFC 3339, any precision).
func ParseUpdated(s string) (time.Time, error) { return time.Parse(time.RFC3339Nano, s) }

// under reports whether dir is base or below it.
func under(dir, base string) bool {
	base = strings.TrimSuffix(base, "/")
	if base == "" {
		return strings.HasPrefix(dir, "/")
	}
	return dir == base || strings.HasPrefix(dir, base+"/")
}

// metaHas reports whether the metadata object has member k equal to v: a
// string member's value, or another member's JSON text.
func metaHas(meta Raw, k, v string) bool {
	if len(meta) == 0 {
		return false
	}
	d := jsontext.NewDecoder(bytes.NewReader(meta))
	if t, err := d.ReadToken(); err != nil || t.Kind() != '{' {
		return false
	}
	for d.PeekKind() == '"' {
		name, err := d.ReadToken()
		if err != nil {
			return false
		}
		match := name.String() == k // the token is valid until the next read
		val, err := d.ReadValue()
		if err != nil {
			return false
		}
		if !match {
			continue
		}
		if val.Kind() == '"' {
			var s string
			if err := jsonUnquote(val, &s); err != nil {
				return false
			}
			return s == v
		}
		return string(val) == v
	}
	return false
}

func jsonUnquote(v jsontext.Value, s *string) error {
	t, err := jsontext.NewDecoder(bytes.NewReader(v)).ReadToken()
	if err != nil {
		return err
	}
	*s = t.String()
	return nil
}

// ListedLabels keeps the labels a listing shows of a session (see
// Listing.Labels) as entries' labels change: the MaxListedLabels
// distinct texts most recently set that some entry still carries. A text
// dropped for room is not brought back when a newer one is cleared.
type ListedLabels struct {
	listed []string
	count  map[string]int // label text -> entries labelled with it
}

// Change records one entry's label changing from old to new ("" for none).
func (l *ListedLabels) Change(old, new string) {
	if old == new {
		return
	}
	if l.count == nil {
		l.count = map[string]int{}
	}
	if old != "" {
		if l.count[old]--; l.count[old] <= 0 {
			delete(l.count, old)
			l.listed = slices.DeleteFunc(slices.Clone(l.listed), func(s string) bool { return s == old })
		}
	}
	if new != "" {
		l.count[new]++
		// A new slice each time: listings handed out share the old one.
		ls := slices.DeleteFunc(slices.Clone(l.listed), func(s string) bool { return s == new })
		ls = append(ls, new)
		if len(ls) > MaxListedLabels {
			ls = ls[len(ls)-MaxListedLabels:]
		}
		l.listed = ls
	}
}

// List returns the labels, in the order set. The slice is shared: do not
// change it.
func (l *ListedLabels) List() []string { return l.listed }
