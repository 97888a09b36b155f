// Package console is sessionlog's web console: a single page (plain
// JavaScript, no build step, embedded here) that browses, searches and
// acts on sessions through the gateway's own HTTP API, on the gateway's
// listener and behind its credentials; and the self-contained HTML export
// of one session (ExportHTML).
package console

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed assets
var assets embed.FS

// Prefix is where the console is served.
const Prefix = "/console/"

// securityHeaders keep the page to its own scripts and styles and to the
// gateway: a session's content is shown as text, and even an injected
// element could load nothing from elsewhere nor be framed.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
}

// Handler serves the console's files under Prefix. The caller puts it
// behind its authentication: the files are public, but a console page
// that loads only after the credentials are asked for lets the browser
// reuse them for the API.
func Handler() http.Handler {
	sub, _ := fs.Sub(assets, "assets")
	files := http.FileServer(http.FS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		securityHeaders(w.Header())
		name := strings.TrimPrefix(r.URL.Path, Prefix)
		if name == "" {
			name = "index.html"
		}
		if _, err := fs.Stat(sub, path.Clean(name)); err != nil {
			http.NotFound(w, r)
			return
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/" + path.Clean(name)
		if name == "index.html" {
			// http.FileServer redirects /index.html to /: serve it as is.
			b, _ := fs.ReadFile(sub, "index.html")
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Write(b)
			return
		}
		files.ServeHTTP(w, r2)
	})
}
