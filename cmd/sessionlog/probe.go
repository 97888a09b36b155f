package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// runProbe asks a node's /readyz (or /healthz) and exits 0 only on 200:
// the healthcheck of images that have no HTTP client of their own.
func runProbe(ctx context.Context, e env) error {
	fs := newFlags("probe", e)
	timeout := fs.Duration("timeout", 3*time.Second, "give up after this long")
	url, err := oneArg(fs, e.args, "URL such as http://127.0.0.1:8080/readyz")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return usageError("%v", err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s %s", url, res.Status, body)
	}
	fmt.Fprintf(e.stdout, "%s\n", body)
	return nil
}
