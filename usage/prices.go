package usage

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"regexp"
	"strings"
	"sync"
	"time"
)

// The price table is a snapshot of @pydantic/genai-prices (MIT), a
// regularly updated table of LLM API prices that npm ships; `go run
// ./usage/refresh` takes the registry's newest and writes prices.json
// again. It is read as that package reads it: a provider by its id or by
// the model's name, then the first of its models whose match the name
// satisfies, then the prices in force when the call was made.

//go:embed prices.json
var snapshot []byte

// Table is a price table: the snapshot, with overrides before it.
type Table struct {
	// Source, Version and Published say where the snapshot came from.
	Source    string     `json:"source"`
	Version   string     `json:"version"`
	Published string     `json:"published"`
	Providers []provider `json:"providers"`
	overrides map[string]Prices
	// fingerprint changes with the snapshot and the overrides.
	fingerprint string
	mu          sync.Mutex
	found       map[string]*model // by provider and model name: lookups repeat
	regexps     map[string]*regexp.Regexp
}

// Prices are a model's prices in dollars per million tokens. A tiered
// price applies to the whole call once its input passes a tier's start.
type Prices struct {
	Input        Price `json:"input_mtok"`
	Output       Price `json:"output_mtok"`
	CacheRead    Price `json:"cache_read_mtok"`
	CacheWrite   Price `json:"cache_write_mtok"`
	CacheWrite1h Price `json:"cache_write_1h_mtok"`
}

// Price is one price: a number, or a base with tiers.
type Price struct {
	Set   bool
	Base  float64
	Tiers []Tier
}

// Tier is the price from a call's input tokens past Start.
type Tier struct {
	Start int64   `json:"start"`
	Price float64 `json:"price"`
}

// UnmarshalJSON reads a number or {"base": …, "tiers": […]}.
func (p *Price) UnmarshalJSON(b []byte) error {
	var n float64
	if json.Unmarshal(b, &n) == nil {
		if n < 0 {
			return fmt.Errorf("price %v is negative", n)
		}
		*p = Price{Set: true, Base: n}
		return nil
	}
	var t struct {
		Base  *float64 `json:"base"`
		Tiers []Tier   `json:"tiers"`
	}
	if err := json.Unmarshal(b, &t); err != nil || t.Base == nil || *t.Base < 0 {
		return fmt.Errorf("price %.40s is neither a number nor a base with tiers", b)
	}
	for _, tr := range t.Tiers {
		if tr.Start < 0 || tr.Price < 0 {
			return fmt.Errorf("price tier %+v is negative", tr)
		}
	}
	*p = Price{Set: true, Base: *t.Base, Tiers: t.Tiers}
	return nil
}

// MarshalJSON writes what UnmarshalJSON reads.
func (p Price) MarshalJSON() ([]byte, error) {
	if len(p.Tiers) == 0 {
		return json.Marshal(p.Base)
	}
	return json.Marshal(struct {
		Base  float64 `json:"base"`
		Tiers []Tier  `json:"tiers"`
	}{p.Base, p.Tiers})
}

// at is the price per token for a call of input tokens in all.
func (p Price) at(input int64) float64 {
	v := p.Base
	for _, t := range p.Tiers {
		if input > t.Start {
			v = t.Price
		}
	}
	return v / 1e6
}

type provider struct {
	ID            string   `json:"id"`
	ModelMatch    *match   `json:"model_match"`
	ProviderMatch *match   `json:"provider_match"`
	Fallbacks     []string `json:"fallback_model_providers"`
	Models        []model  `json:"models"`
}

type model struct {
	ID     string          `json:"id"`
	Match  match           `json:"match"`
	Prices json.RawMessage `json:"prices"`
	fixed  *Prices
	dated  []datedPrices
}

type datedPrices struct {
	Constraint *struct {
		Type      string `json:"type"`
		StartDate string `json:"start_date"`
		StartTime string `json:"start_time"`
		EndTime   string `json:"end_time"`
	} `json:"constraint"`
	Prices Prices `json:"prices"`
}

type match struct {
	Or         []match `json:"or"`
	And        []match `json:"and"`
	Equals     *string `json:"equals"`
	StartsWith *string `json:"starts_with"`
	EndsWith   *string `json:"ends_with"`
	Contains   *string `json:"contains"`
	Regex      *string `json:"regex"`
}

// Default is the snapshot's table, without overrides.
func Default() *Table {
	defaultOnce.Do(func() {
		t, err := parseTable(snapshot)
		if err != nil {
			panic("usage: the price snapshot is damaged: " + err.Error())
		}
		defaultTable = t
	})
	return defaultTable
}

var (
	defaultOnce  sync.Once
	defaultTable *Table
)

func parseTable(data []byte) (*Table, error) {
	t := &Table{}
	if err := json.Unmarshal(data, t); err != nil {
		return nil, err
	}
	for i := range t.Providers {
		p := &t.Providers[i]
		for j := range p.Models {
			m := &p.Models[j]
			if len(m.Prices) > 0 && m.Prices[0] == '[' {
				if err := json.Unmarshal(m.Prices, &m.dated); err != nil {
					return nil, fmt.Errorf("%s/%s: %w", p.ID, m.ID, err)
				}
			} else {
				m.fixed = &Prices{}
				if err := json.Unmarshal(m.Prices, m.fixed); err != nil {
					return nil, fmt.Errorf("%s/%s: %w", p.ID, m.ID, err)
				}
			}
			m.Prices = nil
		}
	}
	t.fingerprint = t.Source + "@" + t.Version
	return t, nil
}

// ErrOverrides is an override file that cannot be used.
var ErrOverrides = errors.New("usage: price overrides")

// WithOverrides is t with the prices of an override file before its own
// (and before the overrides t has, for the models both name):
// a JSON object whose "models" map a model's name (claude-opus-4-6) or
// provider/model (anthropic/claude-opus-4-6), compared without case, to
// its prices in dollars per million tokens, as the table writes them
// ({"input_mtok": 4, "output_mtok": 20, "cache_read_mtok": 0.4,
// "cache_write_mtok": 5}). Negotiated prices, or a model the table lacks.
func (t *Table) WithOverrides(data []byte) (*Table, error) {
	var f struct {
		Models map[string]Prices `json:"models"`
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrOverrides, err)
	}
	if len(f.Models) == 0 {
		return nil, fmt.Errorf(`%w: no "models" given`, ErrOverrides)
	}
	c := &Table{Source: t.Source, Version: t.Version, Published: t.Published, Providers: t.Providers, overrides: maps.Clone(t.overrides)}
	if c.overrides == nil {
		c.overrides = map[string]Prices{}
	}
	for name, p := range f.Models {
		if strings.TrimSpace(name) == "" || len(name) > 256 {
			return nil, fmt.Errorf("%w: a model name is empty or longer than 256 bytes", ErrOverrides)
		}
		if !p.Input.Set || !p.Output.Set {
			return nil, fmt.Errorf("%w: %.64q gives no input_mtok or no output_mtok", ErrOverrides, name)
		}
		c.overrides[strings.ToLower(strings.TrimSpace(name))] = p
	}
	h := fnv.New64a()
	h.Write(data)
	c.fingerprint = t.fingerprint + "+" + fmt.Sprintf("%x", h.Sum64())
	return c, nil
}

// Fingerprint changes whenever a price could: what was priced with
// another must be priced again.
func (t *Table) Fingerprint() string { return t.fingerprint }

// Cost is what c cost: what its agent recorded, or its tokens at the
// table's prices when it was made. known is false when neither is to be
// had (a model the table does not price): never count that as free.
func (t *Table) Cost(c Call) (cost float64, known bool) {
	if c.Recorded != nil {
		return *c.Recorded, true
	}
	if c.Tokens() == 0 {
		return 0, true
	}
	if c.Model == "" || c.Fast {
		return 0, false
	}
	p, ok := t.PricesOf(c.Provider, c.Model, c.At)
	if !ok {
		return 0, false
	}
	in := c.Input + c.CacheRead + c.CacheWrite
	cost = float64(c.Input)*p.Input.at(in) + float64(c.Output)*p.Output.at(in)
	cost += float64(c.CacheRead) * orInput(p.CacheRead, p).at(in)
	w5 := c.CacheWrite - c.CacheWrite1h
	cost += float64(w5) * orInput(p.CacheWrite, p).at(in)
	if c.CacheWrite1h > 0 {
		if p.CacheWrite1h.Set {
			cost += float64(c.CacheWrite1h) * p.CacheWrite1h.at(in)
		} else {
			// Anthropic's rule: an hour's cache write is twice the input.
			cost += float64(c.CacheWrite1h) * 2 * p.Input.at(in)
		}
	}
	return cost, true
}

// orInput is p, or the input price where the table gives none (tokens
// read from or written to a cache are input: genai-prices' rule).
func orInput(p Price, all Prices) Price {
	if p.Set {
		return p
	}
	return all.Input
}

// PricesOf are the prices of provider's model at time at.
func (t *Table) PricesOf(providerID, modelName string, at time.Time) (Prices, bool) {
	name := strings.ToLower(strings.TrimSpace(modelName))
	if p, ok := t.overrides[name]; ok {
		return p, true
	}
	if p, ok := t.overrides[strings.ToLower(providerID)+"/"+name]; ok {
		return p, true
	}
	m := t.find(strings.ToLower(strings.TrimSpace(providerID)), name)
	if m == nil {
		return Prices{}, false
	}
	return m.at(at), true
}

func (t *Table) find(providerID, name string) *model {
	key := providerID + "\x00" + name
	t.mu.Lock()
	defer t.mu.Unlock()
	if m, ok := t.found[key]; ok {
		return m
	}
	if t.found == nil {
		t.found = map[string]*model{}
	}
	var m *model
	if p := t.provider(providerID, name); p != nil {
		m = t.modelOf(p, name, true)
		if m == nil {
			if dated := undate(name); dated != name {
				m = t.modelOf(p, dated, true)
			}
		}
	}
	if len(t.found) < 1<<14 {
		t.found[key] = m
	}
	return m
}

// provider is the provider named id (or matching it), else the first
// whose model match takes name.
func (t *Table) provider(id, name string) *provider {
	if id != "" {
		for i := range t.Providers {
			if t.Providers[i].ID == id {
				return &t.Providers[i]
			}
		}
		for i := range t.Providers {
			if p := &t.Providers[i]; p.ProviderMatch != nil && t.matches(p.ProviderMatch, id) {
				return p
			}
		}
	}
	for i := range t.Providers {
		if p := &t.Providers[i]; p.ModelMatch != nil && t.matches(p.ModelMatch, name) {
			return p
		}
	}
	return nil
}

func (t *Table) modelOf(p *provider, name string, fallbacks bool) *model {
	for i := range p.Models {
		if t.matches(&p.Models[i].Match, name) {
			return &p.Models[i]
		}
	}
	if !fallbacks {
		return nil
	}
	for _, id := range p.Fallbacks {
		for i := range t.Providers {
			if t.Providers[i].ID == id {
				if m := t.modelOf(&t.Providers[i], name, false); m != nil {
					return m
				}
			}
		}
	}
	return nil
}

// dateSuffix is a model name's date written without dashes
// (claude-3-5-sonnet-20241022), which genai-prices also tries with them.
var dateSuffix = regexp.MustCompile(`-(20\d{2})(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])(-|:|$)`)

func undate(name string) string {
	return dateSuffix.ReplaceAllString(name, "-$1-$2-$3$4")
}

func (t *Table) matches(m *match, name string) bool {
	switch {
	case len(m.Or) > 0:
		for i := range m.Or {
			if t.matches(&m.Or[i], name) {
				return true
			}
		}
		return false
	case len(m.And) > 0:
		for i := range m.And {
			if !t.matches(&m.And[i], name) {
				return false
			}
		}
		return true
	case m.Equals != nil:
		return name == strings.ToLower(*m.Equals)
	case m.StartsWith != nil:
		return strings.HasPrefix(name, strings.ToLower(*m.StartsWith))
	case m.EndsWith != nil:
		return strings.HasSuffix(name, strings.ToLower(*m.EndsWith))
	case m.Contains != nil:
		return strings.Contains(name, strings.ToLower(*m.Contains))
	case m.Regex != nil:
		re, ok := t.regexps[*m.Regex]
		if !ok {
			re, _ = regexp.Compile(*m.Regex) // JavaScript's syntax; one Go cannot read matches nothing
			if t.regexps == nil {
				t.regexps = map[string]*regexp.Regexp{}
			}
			t.regexps[*m.Regex] = re
		}
		return re != nil && re.MatchString(name)
	}
	return false
}

// at are m's prices in force at time at: the last of its dated prices
// whose constraint holds, else the first.
func (m *model) at(at time.Time) Prices {
	if m.fixed != nil {
		return *m.fixed
	}
	for i := len(m.dated) - 1; i >= 0; i-- {
		d := m.dated[i]
		c := d.Constraint
		switch {
		case c == nil:
			return d.Prices
		case c.Type == "start_date" || (c.Type == "" && c.StartDate != ""):
			if start, err := time.Parse(time.DateOnly, c.StartDate); err == nil && !at.Before(start) {
				return d.Prices
			}
		case c.StartTime != "":
			s, e, now := clock(c.StartTime), clock(c.EndTime), at.UTC().Sub(at.UTC().Truncate(24*time.Hour))
			if (e < s && (now >= s || now < e)) || (now >= s && now < e) {
				return d.Prices
			}
		}
	}
	if len(m.dated) == 0 {
		return Prices{}
	}
	return m.dated[0].Prices
}

// clock reads a time of day (15:04, 15:04:05, with an optional Z).
func clock(s string) time.Duration {
	s = strings.TrimSuffix(s, "Z")
	for _, layout := range []string{"15:04:05", "15:04"} {
		if t, err := time.Parse(layout, s); err == nil {
			return time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute + time.Duration(t.Second())*time.Second
		}
	}
	return 0
}
