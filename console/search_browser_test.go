package console_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agentcore/sessionlog/api"
)

// Search in a real browser: hits grouped by session, a filter that
// narrows them, a session's scope, a hit's link to its entry in the
// tree, and a hostile snippet shown as text.
func TestSearchInBrowser(t *testing.T) {
	s := startStack(t)
	ctx := browser(t)
	dir := artifacts(t)
	for _, id := range []string{"one", "two"} {
		if err := s.client.Call(context.Background(), api.OpCreate, api.CreateRequest{ID: id}, nil); err != nil {
			t.Fatal(err)
		}
	}
	s.append(t, "one", user("the kumquat orchard"), reply("p/m", "2026-03-01T10:00:00Z", 1, 1, 0), user("kumquat again <img src=x onerror=window.pwned=1>"))
	two := s.append(t, "two", user("a kumquat elsewhere"))
	if err := s.ix.CaughtUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	err := chromedp.Do(ctx,
		chromedp.Navigate(s.url+"/#/search?q=kumquat"),
		poll(`document.querySelectorAll('#hits .hit-group').length === 2 && document.querySelectorAll('#hits .hit').length === 3`),
		shot(t, dir, "8-search-grouped"),
	)
	if err != nil {
		t.Fatalf("grouped hits: %v\n%s", err, page(ctx))
	}
	groups, err := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll('#hits .hit-group')].map(g => g.dataset.session + ':' + g.querySelectorAll('.hit').length).join(' ')`))
	if err != nil || groups != "one:2 two:1" && groups != "two:1 one:2" {
		t.Fatalf("groups %q %v", groups, err)
	}
	hostile, err := chromedp.Run(ctx, chromedp.Evaluate[string](`[document.querySelectorAll('#hits img').length, window.pwned === undefined, document.querySelectorAll('#hits mark').length].join(' ')`))
	if err != nil || hostile != "0 true 3" {
		t.Fatalf("hostile snippet, marks: %q %v", hostile, err)
	}
	// A filter: the session's working directory is none, so cwd narrows
	// to nothing; the label filter to what is labelled.
	var lr api.LabelReply
	if err := s.client.Call(context.Background(), api.OpLabel, api.LabelRequest{Session: "two", Target: two.Leaf, Label: "fruit"}, &lr); err != nil {
		t.Fatal(err)
	}
	if err := s.ix.CaughtUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	err = chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`#search-filters input[name=label]`), "fruit"),
		chromedp.Click(chromedp.CSS(`#search-filters button`)),
		poll(`location.hash.includes('label=fruit') && document.querySelectorAll('#hits .hit').length === 1`),
		clickOn(`#hits .entry-link`),
		poll(`!!document.querySelector('#tree .row.selected') && document.querySelector('#tree .row.selected').dataset.id === '`+two.Leaf+`'`),
	)
	if err != nil {
		t.Fatalf("label filter and the link to the entry: %v\n%s", err, page(ctx))
	}
	// From a session's page: its branch, the selected entry's.
	err = chromedp.Do(ctx,
		chromedp.Navigate(s.url+"/#/s/one"),
		chromedp.WaitVisible(chromedp.CSS(`#tree .row`)),
		poll(`(window.prompt = () => "kumquat") && true`),
		chromedp.Click(chromedp.CSS(`#act-search`)),
		poll(`location.hash.includes('session=one') && location.hash.includes('scope=branch') && document.querySelectorAll('#hits .hit').length === 2`),
	)
	if err != nil {
		t.Fatalf("search from a session: %v\n%s", err, page(ctx))
	}
	// Within a session: every branch, with the scope chosen.
	err = chromedp.Do(ctx,
		chromedp.Navigate(s.url+"/#/search?q=kumquat&session=one&scope=session"),
		poll(`document.querySelectorAll('#hits .hit').length === 2 && document.querySelector('#search-filters select[name=scope]').value === 'session'`),
	)
	if err != nil {
		t.Fatalf("scope: %v\n%s", err, page(ctx))
	}
	if got := text(ctx, t, "#search-summary"); !strings.Contains(got, "2 hit(s)") {
		t.Fatalf("summary %q", got)
	}
}
