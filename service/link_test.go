package service_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/service"
	"github.com/agentcore/sessionlog/service/servicetest"
	"github.com/agentcore/sessionlog/stream"
)

// The link op refuses, naming the member at fault, every request but
// one from the tenant's own edge, of this layout, whose entries went
// through the tenant's redaction; a refused request changes nothing.
func TestLinkRefusesWhatItShould(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := stream.DefaultConfig()
	cfg.Stream, cfg.Prefix = "LINKS", "links"
	cfg.Redact = &codec.RedactConfig{Defaults: true, Rules: []codec.RedactRule{{Name: "acme-token", Pattern: `acme_[0-9a-f]{32}`}}}
	b, err := stream.New(ctx, nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, scfg := servicetest.Start(t, nc, b, func(c *service.Config) {
		c.AcceptLinks, c.EdgeDomains, c.Domain = true, []string{"laptop"}, "hub"
	})
	c := api.NewClient(nc, scfg.Subject)
	streams := b.Config().Streams()
	covers := `{"defaults":true,"rules":[{"name":"acme-token","pattern":"acme_[0-9a-f]{32}"}]}`
	cases := []struct {
		name, body, field string
	}{
		{"no domain", `{"streams":["LINKS"],"redact":` + covers + `}`, "/domain"},
		{"a domain with a space", `{"domain":"lap top","streams":["LINKS"],"redact":` + covers + `}`, "/domain"},
		{"a domain with a subject's tokens", `{"domain":"a.>","streams":["LINKS"],"redact":` + covers + `}`, "/domain"},
		{"a domain with a newline", `{"domain":"laptop\n","streams":["LINKS"],"redact":` + covers + `}`, "/domain"},
		{"a domain too long", `{"domain":"` + strings.Repeat("d", 65) + `","streams":["LINKS"],"redact":` + covers + `}`, "/domain"},
		{"another tenant's edge", `{"domain":"stranger","streams":["LINKS"],"redact":` + covers + `}`, "/domain"},
		{"another layout", `{"domain":"laptop","streams":["LINKS_P0","LINKS_P1"],"redact":` + covers + `}`, "/streams"},
		{"no redaction", `{"domain":"laptop","streams":["LINKS"]}`, "/redact"},
		{"the defaults only", `{"domain":"laptop","streams":["LINKS"],"redact":{"defaults":true}}`, "/redact"},
		{"the rule's name with another pattern", `{"domain":"laptop","streams":["LINKS"],"redact":{"defaults":true,"rules":[{"name":"acme-token","pattern":"."}]}}`, "/redact"},
		{"redaction not an object", `{"domain":"laptop","streams":["LINKS"],"redact":"all"}`, "/redact"},
		{"redaction with a member twice", `{"domain":"laptop","streams":["LINKS"],"redact":{"defaults":false,"defaults":true,"rules":[{"name":"acme-token","pattern":"acme_[0-9a-f]{32}"}]}}`, "/redact"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Raw(ctx, api.OpLink, []byte(tc.body))
			var ae *api.Error
			// The member at fault is named (or one inside it, where the
			// decoder refuses the request whole).
			if !errors.As(err, &ae) || ae.Code != api.CodeBadRequest || (ae.Field != tc.field && !strings.HasPrefix(ae.Field, tc.field+"/")) {
				t.Fatalf("got %v, want bad_request at %s", err, tc.field)
			}
		})
	}
	s, err := b.JetStream().Stream(ctx, streams[0])
	if err != nil {
		t.Fatal(err)
	}
	if srcs := s.CachedInfo().Config.Sources; len(srcs) != 0 {
		t.Fatalf("refused links left sources: %+v", srcs[0])
	}
	var reply api.LinkReply
	if err := c.Call(ctx, api.OpLink, api.LinkRequest{Domain: "laptop", Streams: streams, Redact: []byte(covers)}, &reply); err != nil {
		t.Fatal(err)
	}
	if reply.Domain != "hub" || len(reply.Streams) != 1 {
		t.Fatalf("reply %+v", reply)
	}
	if s, err = b.JetStream().Stream(ctx, streams[0]); err != nil || len(s.CachedInfo().Config.Sources) != 1 {
		t.Fatalf("the edge's link left the stream sourcing %v (%v)", s.CachedInfo().Config.Sources, err)
	}
}
