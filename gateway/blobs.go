package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
)

// Content larger than a request travels to the service as an upload in
// pieces (api.OpUpload), streamed from the HTTP body: the gateway
// holds one piece at a time. Replies are asked of the service with
// references and resolved here, one item at a time, so that a response
// holding large images is written as it is read.

// refsParam reads ?refs=: whether the caller wants references to content
// stored apart rather than the content.
func refsParam(v string) (bool, error) { return boolParam("refs", v) }

// boolParam reads a query parameter that is true or false.
func boolParam(name, v string) (bool, error) {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, &api.Error{Code: api.CodeBadRequest, Field: "?" + name, Message: fmt.Sprintf("query parameter %s must be true or false, not %q", name, v)}
	}
	return b, nil
}

// largeBody is a body over MaxBodyBytes: what was read of it, and the
// rest.
type largeBody struct {
	head []byte
	rest io.Reader
}

func (*largeBody) Error() string { return "gateway: large body" }

// readOrStream reads a body up to maxBody bytes, or returns a *largeBody
// for one larger (up to maxUpload in all).
func readOrStream(r *http.Request, maxBody, maxUpload int64) ([]byte, error) {
	body := http.MaxBytesReader(nil, r.Body, maxUpload)
	head, err := io.ReadAll(io.LimitReader(body, maxBody+1))
	if err != nil {
		return nil, bodyError(err, maxUpload)
	}
	if int64(len(head)) > maxBody {
		return nil, &largeBody{head: head, rest: body}
	}
	return head, nil
}

func bodyError(err error, max int64) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return &api.Error{Code: api.CodeTooLarge, Message: fmt.Sprintf("request body over the limit of %d bytes", max)}
	}
	return &api.Error{Code: api.CodeBadRequest, Message: "reading the body: " + err.Error()}
}

// appendBody is bodyWithPath for appends, which may be larger than a
// request (see stage).
func (g *Gateway) appendBody(r *http.Request, maxBody int64) ([]byte, error) {
	b, err := readOrStream(r, maxBody, g.cfg.MaxUploadBytes)
	if err != nil {
		return nil, err
	}
	return withPath(r, b)
}

// stage sends a large body as an upload and returns the request that
// names it.
func (g *Gateway) stage(ctx context.Context, u *userConn, lb *largeBody, op string, r *http.Request, w http.ResponseWriter) ([]byte, error) {
	id, err := uploadID()
	if err != nil {
		return nil, err
	}
	rest := &deadlineReader{r: lb.rest, rc: http.NewResponseController(w), every: g.cfg.ReadTimeout}
	if _, err := u.c.Upload(ctx, id, io.MultiReader(bytes.NewReader(lb.head), rest)); err != nil {
		return nil, bodyError(err, g.cfg.MaxUploadBytes)
	}
	switch op {
	case api.OpAppend:
		return json.Marshal(api.AppendRequest{Session: r.PathValue("id"), Upload: id})
	default:
		return json.Marshal(api.PutBlobRequest{Upload: id})
	}
}

// deadlineReader gives each read of a body its own ReadTimeout: a large
// body may take long, but never stall.
type deadlineReader struct {
	r     io.Reader
	rc    *http.ResponseController
	every time.Duration
}

func (d *deadlineReader) Read(p []byte) (int, error) {
	_ = d.rc.SetReadDeadline(time.Now().Add(d.every))
	return d.r.Read(p)
}

func uploadID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "gw-" + hex.EncodeToString(b[:]), nil
}

// blobBody is the putblob request of POST /v1/blobs: the body is the
// blob's bytes.
func (g *Gateway) blobBody(r *http.Request, maxBody int64) ([]byte, error) {
	// Base64 in JSON: a body up to 3/4 of a request goes inline.
	b, err := readOrStream(r, maxBody/4*3-64, g.cfg.MaxUploadBytes)
	if err != nil {
		return nil, err
	}
	return json.Marshal(api.PutBlobRequest{Data: append([]byte{}, b...), SHA256: r.URL.Query().Get("sha256")})
}

// getBlob streams blob {sha256} as it reads it, a piece at a time.
func (g *Gateway) getBlob(w http.ResponseWriter, r *http.Request) {
	w, r, end := g.trace(w, r, api.OpBlob)
	defer end()
	u, release, ok := g.admit(w, r)
	if !ok {
		return
	}
	defer release()
	longLived(w)
	ctx := r.Context()
	req := api.BlobRequest{SHA256: r.PathValue("sha256")}
	rc := http.NewResponseController(w)
	for first := true; ; first = false {
		var rep api.BlobDataReply
		cctx, cancel := context.WithTimeout(ctx, g.cfg.RequestTimeout)
		err := u.c.Call(cctx, api.OpBlob, req, &rep)
		cancel()
		if err != nil {
			if first {
				writeError(w, err, 0)
			}
			return // mid-body: the short length tells the client
		}
		if first {
			h := w.Header()
			h.Set("Content-Type", "application/octet-stream")
			h.Set("Content-Length", strconv.FormatInt(rep.Size, 10))
			h.Set("ETag", `"`+rep.SHA256+`"`)
			h.Set("Cache-Control", "private, max-age=31536000, immutable")
		}
		_ = rc.SetWriteDeadline(time.Now().Add(g.cfg.WriteTimeout))
		if _, err := w.Write(rep.Data); err != nil || rep.Next == 0 {
			return
		}
		req.Offset, req.Cursor = rep.Next, rep.Cursor
	}
}

// fetcher reads blobs through the caller's connection for resolving, the
// last one kept (an image repeated in a response is read once).
type fetcher struct {
	ctx   context.Context
	c     *api.Client
	max   int64 // what one item may resolve to
	spent int64 // resolved for the current item (see item)
	last  string
	bytes []byte
}

// item starts resolving another item: its blobs count afresh.
func (f *fetcher) item() { f.spent = 0 }

func (f *fetcher) get(ref session.BlobRef) ([]byte, error) {
	if f.spent += session.ResolvedSize([]session.BlobRef{ref}); f.spent > f.max {
		return nil, &api.Error{Code: api.CodeTooLarge, Message: fmt.Sprintf("an item resolves to more than the %d bytes the gateway resolves at once: ask with ?refs=true and GET /v1/blobs/{sha256}", f.max)}
	}
	if ref.SHA256+ref.Encoding == f.last {
		return f.bytes, nil
	}
	var buf bytes.Buffer
	buf.Grow(int(ref.Size))
	for {
		buf.Reset()
		_, err := f.c.ReadBlob(f.ctx, ref.SHA256, &buf)
		var pe *api.Error
		if errors.As(err, &pe) && pe.Code == api.CodeRateLimited {
			// The caller's own budget: wait for it rather than fail.
			select {
			case <-f.ctx.Done():
				return nil, err
			case <-time.After(time.Duration(max(pe.RetryAfterMs, 10)) * time.Millisecond):
				continue
			}
		}
		if err != nil {
			return nil, err
		}
		if int64(buf.Len()) != ref.Size {
			return nil, &api.Error{Code: api.CodeInvalidEntry, Message: fmt.Sprintf("blob %s is %d bytes, its reference says %d", ref.SHA256, buf.Len(), ref.Size)}
		}
		f.last, f.bytes = ref.SHA256+ref.Encoding, session.BlobContent(ref, buf.Bytes())
		return f.bytes, nil
	}
}

// resolvedItems names, per operation asked with references, the array
// whose items the gateway resolves, and how.
var resolvedItems = map[string]struct {
	key     string
	resolve func(item []byte, get session.BlobFetch) ([]byte, error)
}{
	api.OpContext: {"messages", func(item []byte, get session.BlobFetch) ([]byte, error) {
		m, err := codec.DecodeMessage(item)
		if err != nil {
			return nil, err
		}
		if m, err = session.ResolveMessage(m, get); err != nil {
			return nil, err
		}
		return codec.EncodeMessage(m)
	}},
	api.OpEntries: {"entries", func(item []byte, get session.BlobFetch) ([]byte, error) {
		e, err := codec.DecodeEntry(item)
		if err != nil {
			return nil, err
		}
		if e, err = session.ResolveEntry(e, get); err != nil {
			return nil, err
		}
		return codec.EncodeEntry(e)
	}},
}

// writeResolved writes reply (asked with references) with the items that
// hold references resolved, one item at a time.
func (g *Gateway) writeResolved(w http.ResponseWriter, ctx context.Context, u *userConn, op string, reply []byte) error {
	how, ok := resolvedItems[op]
	if !ok || !bytes.Contains(reply, []byte(`"$blob"`)) {
		w.Header().Set("Content-Type", "application/json")
		_, err := w.Write(reply)
		return err
	}
	var obj map[string]jsontext.Value
	if err := json.Unmarshal(reply, &obj); err != nil {
		return err
	}
	var items []jsontext.Value
	if err := json.Unmarshal(obj[how.key], &items); err != nil {
		return err
	}
	delete(obj, how.key)
	head, err := json.Marshal(obj, json.Deterministic(true))
	if err != nil {
		return err
	}
	f := &fetcher{ctx: ctx, c: u.c, max: g.cfg.MaxUploadBytes}
	// The first item is resolved before anything is written, so that an
	// error still gets its status.
	rc := http.NewResponseController(w)
	for i, it := range items {
		b := []byte(it)
		f.item()
		if bytes.Contains(b, []byte(`"$blob"`)) {
			if b, err = how.resolve(b, f.get); err != nil {
				if i == 0 {
					return err
				}
				return nil // mid-body: the JSON ends short, the client sees it
			}
		}
		if i == 0 {
			w.Header().Set("Content-Type", "application/json")
			w.Write(head[:len(head)-1])
			if len(head) > 2 {
				w.Write([]byte{','})
			}
			fmt.Fprintf(w, "%q:[", how.key)
		} else {
			w.Write([]byte{','})
		}
		_ = rc.SetWriteDeadline(time.Now().Add(g.cfg.WriteTimeout))
		if _, err := w.Write(b); err != nil {
			return nil
		}
	}
	if len(items) == 0 {
		w.Header().Set("Content-Type", "application/json")
		_, err := w.Write(reply)
		return err
	}
	_, _ = w.Write([]byte("]}"))
	return nil
}
