// Package tenants reads the tenants file of `sessionlog serve -tenants`:
// each tenant's NATS account (its users and limits, which package
// cluster turns into accounts) and the tenant's own sessionlog settings
// (offload threshold, redaction, retention), which the node applies to
// that tenant's streams. The file's schema lives here, apart from
// cluster, which knows nothing of sessionlog's settings.
package tenants

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/lifecycle"
	"github.com/agentcore/sessionlog/session"
)

// File is a tenants file: {"tenants":[…]}, optionally with the version
// of its format ({"version":1,…}; absent, 1).
type File struct {
	Version int      `json:"version,omitempty"`
	Tenants []Tenant `json:"tenants"`
}

// Version is the newest tenants file format this release reads. A file
// naming a newer one is refused, saying so: it was written for a later
// release. (Releases before v0.5.0 refuse the member itself: leave it out
// until every node runs v0.5.0 or later.)
const Version = 1

// Tenant is one tenant: its account (name, users, limits) and its own
// settings, each in place of the deployment's when set.
type Tenant struct {
	cluster.Tenant
	// Offload is the tenant's offload threshold in bytes
	// (stream.Config.OffloadThreshold; 0: store everything inline).
	Offload *int `json:"offload,omitempty"`
	// Redact is the tenant's redaction on write (stream.Config.Redact).
	Redact *codec.RedactConfig `json:"redact,omitempty"`
	// Retention is the tenant's retention policy (serve -retention).
	Retention *lifecycle.Policy `json:"retention,omitempty"`
}

// ErrInvalid is a tenants file that cannot be used; the message says
// where and why.
var ErrInvalid = errors.New("tenants: invalid tenants file")

// Load reads and checks a tenants file, refusing unknown members.
func Load(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tenants: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%w %s: %v", ErrInvalid, path, err)
	}
	if err := session.CheckFormat("tenants file", path, f.Version, 0, Version); err != nil { // 0: no version member
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err := f.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &f, nil
}

// Validate checks the accounts (cluster's rules) and each tenant's
// settings.
func (f *File) Validate() error {
	if err := f.Auth().CheckTenants(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	for _, t := range f.Tenants {
		switch {
		case t.Offload != nil && *t.Offload < 0:
			return fmt.Errorf("%w: tenant %q has a negative offload threshold", ErrInvalid, t.Name)
		case t.Retention != nil:
			if err := t.Retention.Validate(); err != nil {
				return fmt.Errorf("%w: tenant %q: retention: %w", ErrInvalid, t.Name, err)
			}
		}
		if t.Redact != nil {
			if _, err := t.Redact.Redactor(); err != nil {
				return fmt.Errorf("%w: tenant %q: redact: %w", ErrInvalid, t.Name, err)
			}
		}
	}
	return nil
}

// Auth is the file's accounts, for cluster.Config.Auth (the caller sets
// ClientPermissions).
func (f *File) Auth() *cluster.AuthConfig {
	a := &cluster.AuthConfig{Tenants: make([]cluster.Tenant, len(f.Tenants))}
	for i, t := range f.Tenants {
		a.Tenants[i] = t.Tenant
	}
	return a
}

// Of returns the settings of the tenant named name.
func (f *File) Of(name string) (Tenant, bool) {
	if f == nil {
		return Tenant{}, false
	}
	for _, t := range f.Tenants {
		if t.Name == name {
			return t, true
		}
	}
	return Tenant{}, false
}
