package service

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentcore/sessionlog/session"

	"github.com/agentcore/sessionlog/api"
)

// Blobs over the service: pieces of uploads staged in the deployment
// (every instance sees them), blobs stored from inline data or an
// upload, and blobs read a piece at a time. A tenant's service reaches
// only its own account's blob store.

func (s *Service) upload(ctx context.Context, data []byte) (any, error) {
	req, err := decodeFor[api.UploadRequest](data, nil)
	if err != nil {
		return nil, err
	}
	if err := checkUploadID(req.Upload); err != nil {
		return nil, err
	}
	switch {
	case req.Offset < 0:
		return nil, badRequest("/offset", "offset must not be negative")
	case len(req.Data) == 0:
		return nil, badRequest("/data", "a piece holds at least one byte")
	case req.Offset+int64(len(req.Data)) > int64(s.cfg.Limits.MaxUploadBytes):
		return nil, &api.Error{Code: api.CodeTooLarge, Field: "/data", Message: fmt.Sprintf("the upload would hold %d bytes, over the limit of %d", req.Offset+int64(len(req.Data)), s.cfg.Limits.MaxUploadBytes)}
	}
	size, err := s.uploads.Stage(ctx, req.Upload, req.Offset, req.Data)
	if err != nil {
		return nil, err
	}
	return api.UploadReply{Upload: req.Upload, Size: size}, nil
}

func checkUploadID(id string) error {
	if id == "" {
		return badRequest("/upload", "upload is required: the client's id of the upload")
	}
	if err := session.ValidateSessionID(id); err != nil {
		return badRequest("/upload", "upload id: %v", err)
	}
	return nil
}

func (s *Service) putBlob(ctx context.Context, data []byte) (any, error) {
	req, err := decodeFor[api.PutBlobRequest](data, nil)
	if err != nil {
		return nil, err
	}
	if req.SHA256 != "" && !session.ValidBlobName(req.SHA256) {
		return nil, badRequest("/sha256", "sha256 must be 64 lowercase hex digits")
	}
	// On an edge that keeps sessions on the machine, kept there until an
	// entry of a session that syncs names it.
	blobs := s.b.BlobsForPuts()
	var ref session.BlobRef
	switch {
	case req.Upload != "" && req.Data != nil:
		return nil, badRequest("/upload", "give data or upload, not both")
	case req.Upload != "":
		if err := checkUploadID(req.Upload); err != nil {
			return nil, err
		}
		// Two passes over the staged pieces, never all of it in memory:
		// the hash names the blob, then the store reads it again.
		r, size, err := s.uploads.Open(ctx, req.Upload)
		if err != nil {
			return nil, err
		}
		h := sha256.New()
		if _, err := io.Copy(h, r); err != nil {
			return nil, err
		}
		ref = session.BlobRef{SHA256: hex.EncodeToString(h.Sum(nil)), Size: size}
		if err := s.checkDigest(req.SHA256, ref); err != nil {
			return nil, err
		}
		err = blobs.EnsureFrom(ctx, ref, func() (io.Reader, error) {
			r, _, err := s.uploads.Open(ctx, req.Upload)
			return r, err
		})
		if err != nil {
			return nil, err
		}
		_ = s.uploads.Discard(ctx, req.Upload) // expires anyway
	default:
		if req.Data == nil {
			return nil, badRequest("/data", "data (base64) or upload is required")
		}
		ref = session.NewBlobRef(req.Data, session.BlobJSON)
		if err := s.checkDigest(req.SHA256, ref); err != nil {
			return nil, err
		}
		if err := blobs.Ensure(ctx, ref, req.Data); err != nil {
			return nil, err
		}
	}
	return api.BlobReply{Blob: jsontext.Value(ref.Raw())}, nil
}

func (s *Service) checkDigest(want string, ref session.BlobRef) error {
	if want != "" && want != ref.SHA256 {
		return &api.Error{Code: api.CodeInvalidEntry, Field: "/sha256", Message: fmt.Sprintf("the content's SHA-256 is %s, not %s", ref.SHA256, want)}
	}
	return nil
}

func (s *Service) blob(ctx context.Context, data []byte) (any, error) {
	req, err := decodeFor[api.BlobRequest](data, nil)
	if err != nil {
		return nil, err
	}
	if !session.ValidBlobName(req.SHA256) {
		return nil, badRequest("/sha256", "sha256 must be 64 lowercase hex digits")
	}
	if req.Offset < 0 {
		return nil, badRequest("/offset", "offset must not be negative")
	}
	// base64 takes 4 bytes for 3.
	room := s.budget() / 4 * 3
	blobs := s.b.Blobs()
	from, skip := req.Cursor, req.Offset
	if from != 0 {
		skip = 0 // the cursor is where Offset starts
	}
	r := api.BlobDataReply{SHA256: req.SHA256, Offset: req.Offset}
	for {
		p, err := blobs.ReadPiece(ctx, req.SHA256, from, room)
		if err != nil {
			return nil, err
		}
		r.Size = p.Size
		if req.Offset > p.Size {
			return nil, badRequest("/offset", "offset %d is past the blob's %d bytes", req.Offset, p.Size)
		}
		if skip >= int64(len(p.Data)) && p.Next != 0 {
			// An offset without its cursor: read up to it.
			skip -= int64(len(p.Data))
			from = p.Next
			continue
		}
		r.Data = p.Data[min(skip, int64(len(p.Data))):]
		if p.Next != 0 {
			r.Next, r.Cursor = req.Offset+int64(len(r.Data)), p.Next
		}
		if r.Data == nil {
			r.Data = []byte{}
		}
		return r, nil
	}
}
