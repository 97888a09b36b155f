package gateway

// The query parameters of the listing, the search and the usage report,
// turned into their requests.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentcore/sessionlog/api"
)

// listQuery is a listing's request: limit, cursor and the filters of
// api.ListRequest, label and meta (k=v) as often as wanted.
func listQuery(r *http.Request, _ int64) ([]byte, error) {
	req := map[string]any{}
	bad := func(k, format string, args ...any) error {
		return &api.Error{Code: api.CodeBadRequest, Field: "?" + k, Message: fmt.Sprintf(format, args...)}
	}
	for k, vs := range r.URL.Query() {
		switch k {
		case "label":
			req["labels"] = vs
		case "meta":
			m := map[string]string{}
			for _, v := range vs {
				key, val, ok := strings.Cut(v, "=")
				if !ok {
					return nil, bad(k, "meta %q is not key=value", v)
				}
				if _, dup := m[key]; dup {
					return nil, bad(k, "meta %q given twice", key)
				}
				m[key] = val
			}
			req["meta"] = m
		case "limit", "cursor", "name", "cwd", "since", "until":
			if len(vs) != 1 {
				return nil, bad(k, "query parameter %q given %d times", k, len(vs))
			}
			if k != "limit" {
				req[k] = vs[0]
				continue
			}
			n, err := strconv.ParseInt(vs[0], 10, 64)
			if err != nil {
				return nil, bad(k, "query parameter %q must be an integer, not %q", k, vs[0])
			}
			req[k] = n
		default:
			return nil, bad(k, "unknown query parameter %q", k)
		}
	}
	return json.Marshal(req)
}

// searchQuery is a search's request: q, and session, limit, offset.
func searchQuery(r *http.Request, maxBody int64) ([]byte, error) {
	q := r.URL.Query()
	if vs, ok := q["q"]; ok {
		if len(vs) != 1 {
			return nil, &api.Error{Code: api.CodeBadRequest, Field: "?q", Message: fmt.Sprintf(`query parameter "q" given %d times`, len(vs))}
		}
		q["query"] = vs
		delete(q, "q")
	} else if _, ok := q["query"]; ok {
		return nil, &api.Error{Code: api.CodeBadRequest, Field: "?query", Message: `the query parameter is "q"`}
	}
	r2 := r.Clone(r.Context())
	r2.URL.RawQuery = q.Encode()
	return query(read(map[string]bool{"query": false, "session": false, "scope": false, "at": false, "limit": true, "offset": true,
		"role": false, "tool": false, "path": false, "model": false, "agent": false, "cwd": false, "label": false, "since": false, "until": false}))(r2, maxBody)
}

// usageQuery is a usage report's request: by (dimensions, comma
// separated; given empty, none), the filters, and limit.
func usageQuery(r *http.Request, _ int64) ([]byte, error) {
	req := map[string]any{}
	for k, vs := range r.URL.Query() {
		if len(vs) != 1 {
			return nil, &api.Error{Code: api.CodeBadRequest, Field: "?" + k, Message: fmt.Sprintf("query parameter %q given %d times", k, len(vs))}
		}
		switch v := vs[0]; k {
		case "by":
			by := []string{}
			if v != "" {
				by = strings.Split(v, ",")
			}
			req[k] = by
		case "since", "until", "model", "project", "agent", "session":
			req[k] = v
		case "limit":
			n, err := strconv.Atoi(v)
			if err != nil {
				return nil, &api.Error{Code: api.CodeBadRequest, Field: "?limit", Message: fmt.Sprintf("query parameter \"limit\" must be an integer, not %.40q", v)}
			}
			req[k] = n
		default:
			return nil, &api.Error{Code: api.CodeBadRequest, Field: "?" + k, Message: fmt.Sprintf("unknown query parameter %.64q", k)}
		}
	}
	return json.Marshal(req)
}
