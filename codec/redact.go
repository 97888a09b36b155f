package codec

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentcore/sessionlog/session"
)

// Redaction: secrets in what agents write (keys pasted in a prompt, a
// token a tool printed, a private key a command cat'ed) are replaced
// before an entry is stored, in every string of the entry — text,
// thinking, tool arguments and results, details, custom data, members
// this version does not know — by session.RedactionText(rule name).
// Patterns are RE2 (linear time whatever the input).

// RedactRule is one kind of secret.
type RedactRule struct {
	// Name says what was found, in the replacement: letters, digits and
	// '-', at most 40.
	Name string `json:"name"`
	// Pattern matches the secret. When it has a group named "secret",
	// only that group is replaced (the "Bearer " before a token stays).
	Pattern string `json:"pattern"`
}

// ErrBadRule is returned by NewRedactor for a rule it cannot use.
var ErrBadRule = errors.New("codec: bad redaction rule")

// DefaultRedactRules are the secrets redacted unless a deployment lists
// its own: cloud and forge credentials, private keys, bearer tokens and
// the keys of common LLM providers.
func DefaultRedactRules() []RedactRule {
	return []RedactRule{
		{"private-key", `-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----`},
		{"aws-access-key", `\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b`},
		{"aws-secret-key", `(?i)aws_?secret_?access_?key["']?\s*[:=]\s*["']?(?P<secret>[A-Za-z0-9/+=]{40})\b`},
		{"github-token", `\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b`},
		{"gitlab-token", `\bgl(?:pat|dt|rt|ptt)-[A-Za-z0-9_\-]{20,}`},
		{"anthropic-key", `\bsk-ant-[A-Za-z0-9_\-]{20,}`},
		{"openai-key", `\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}`},
		{"google-api-key", `\bAIza[0-9A-Za-z_\-]{35}`},
		{"xai-key", `\bxai-[A-Za-z0-9]{40,}`},
		{"groq-key", `\bgsk_[A-Za-z0-9]{40,}`},
		{"huggingface-token", `\bhf_[A-Za-z0-9]{30,}`},
		{"slack-token", `\bxox[abposr]-[A-Za-z0-9\-]{10,}`},
		{"stripe-key", `\b[sr]k_live_[A-Za-z0-9]{20,}`},
		{"bearer-token", `(?i)\bbearer\s+(?P<secret>[A-Za-z0-9\-._~+/]{20,}=*)`},
	}
}

// RedactConfig says which secrets a deployment (or a tenant) redacts:
// the default rules, rules of its own, or both.
type RedactConfig struct {
	Defaults bool         `json:"defaults"`
	Rules    []RedactRule `json:"rules,omitempty"`
}

// Redactor compiles the configured rules.
func (c RedactConfig) Redactor() (*Redactor, error) {
	var rules []RedactRule
	if c.Defaults {
		rules = DefaultRedactRules()
	}
	return NewRedactor(append(rules, c.Rules...))
}

// Redactor replaces the secrets its rules match. It is safe for
// concurrent use.
type Redactor struct {
	rules []redactRule
}

type redactRule struct {
	name   string
	re     *regexp.Regexp
	secret int // the index of the "secret" group, or 0: the whole match
	text   string
}

var ruleName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9\-]{0,39}$`)

// NewRedactor compiles rules; the error names the first it cannot use.
func NewRedactor(rules []RedactRule) (*Redactor, error) {
	if len(rules) == 0 {
		return nil, fmt.Errorf("%w: no rules", ErrBadRule)
	}
	r := &Redactor{}
	for i, rule := range rules {
		if !ruleName.MatchString(rule.Name) {
			return nil, fmt.Errorf("%w: rule %d: name %q (letters, digits and '-', at most 40)", ErrBadRule, i, rule.Name)
		}
		re, err := regexp.Compile(rule.Pattern)
		if err != nil {
			return nil, fmt.Errorf("%w: rule %q: %v", ErrBadRule, rule.Name, err)
		}
		if re.MatchString("") {
			return nil, fmt.Errorf("%w: rule %q matches the empty string", ErrBadRule, rule.Name)
		}
		r.rules = append(r.rules, redactRule{name: rule.Name, re: re, secret: re.SubexpIndex("secret"), text: session.RedactionText(rule.Name)})
	}
	return r, nil
}

// redact replaces the secrets in s, counting them by rule.
func (r *Redactor) redact(s string, counts map[string]int) string {
	for i := range r.rules {
		rule := &r.rules[i]
		locs := rule.re.FindAllStringSubmatchIndex(s, -1)
		if len(locs) == 0 {
			continue
		}
		var out []byte
		last := 0
		for _, loc := range locs {
			lo, hi := loc[0], loc[1]
			if rule.secret > 0 {
				lo, hi = loc[2*rule.secret], loc[2*rule.secret+1]
				if lo < 0 {
					continue
				}
			}
			out = append(append(out, s[last:lo]...), rule.text...)
			last = hi
			counts[rule.name]++
		}
		s = string(append(out, s[last:]...))
	}
	return s
}

// RedactEntry returns e with its secrets replaced, and how many of each
// rule's it replaced; e itself when there were none. Every string value
// of the entry's JSON is looked at (member names are not).
func (r *Redactor) RedactEntry(e *session.Entry) (*session.Entry, map[string]int, error) {
	line, err := EncodeEntry(e)
	if err != nil {
		return nil, nil, err
	}
	counts := map[string]int{}
	out, err := r.redactJSON(line, counts)
	if err != nil {
		return nil, nil, err
	}
	if len(counts) == 0 {
		return e, nil, nil
	}
	red, err := DecodeEntry(out)
	if err != nil {
		return nil, nil, fmt.Errorf("codec: redacted entry %s: %w", e.ID, err)
	}
	return red, counts, nil
}

// redactJSON rewrites the string values of one JSON value.
func (r *Redactor) redactJSON(data []byte, counts map[string]int) ([]byte, error) {
	var s scanner
	s.Reset(data)
	out := make([]byte, 0, len(data))
	last := 0
	for {
		k := s.PeekKind()
		if k == '"' {
			named := s.expectingName()
			v, err := s.ReadValue()
			if err != nil {
				return nil, err
			}
			if named {
				continue
			}
			text, _ := jsontext.AppendUnquote(nil, v)
			red := r.redact(string(text), counts)
			if red == string(text) {
				continue
			}
			end := s.pos
			start := end - len(v)
			out = appendString(append(out, data[last:start]...), red)
			last = end
			continue
		}
		if _, err := s.ReadToken(); err != nil {
			if err == io.EOF {
				return append(out, data[last:]...), nil
			}
			return nil, err
		}
	}
}

// ruleSet is a config's rules, defaults expanded, by name and pattern.
func (c RedactConfig) ruleSet() map[RedactRule]bool {
	set := map[RedactRule]bool{}
	if c.Defaults {
		for _, r := range DefaultRedactRules() {
			set[r] = true
		}
	}
	for _, r := range c.Rules {
		set[r] = true
	}
	return set
}

// Missing lists the rules of want that c does not apply (the same name
// and pattern), by name: what an edge node redacting with c would let
// through of a tenant that redacts with want.
func (c RedactConfig) Missing(want RedactConfig) []string {
	have := c.ruleSet()
	var out []string
	for r := range want.ruleSet() {
		if !have[r] {
			out = append(out, r.Name)
		}
	}
	slices.Sort(out)
	return out
}

// With is c and o together: a write redacted by it goes through every
// rule of both.
func (c RedactConfig) With(o RedactConfig) RedactConfig {
	out := RedactConfig{Defaults: c.Defaults || o.Defaults, Rules: slices.Clone(c.Rules)}
	have := c.ruleSet()
	for _, r := range o.Rules {
		if !have[r] {
			out.Rules = append(out.Rules, r)
			have[r] = true
		}
	}
	return out
}

// Common is what c and o both apply: the rules every entry redacted by
// one or the other went through.
func (c RedactConfig) Common(o RedactConfig) RedactConfig {
	out := RedactConfig{Defaults: c.Defaults && o.Defaults}
	theirs := o.ruleSet()
	for _, r := range c.Rules {
		if theirs[r] {
			out.Rules = append(out.Rules, r)
		}
	}
	if c.Defaults && !o.Defaults {
		// Defaults of c's that o lists itself.
		for _, r := range DefaultRedactRules() {
			if theirs[r] {
				out.Rules = append(out.Rules, r)
			}
		}
	}
	return out
}
