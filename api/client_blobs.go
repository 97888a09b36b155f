package api

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// UploadPiece is how many bytes Upload sends a request: base64 in JSON
// keeps a piece's request under the default 1 MiB.
const UploadPiece = 512 << 10

// Upload sends r as upload id, a piece at a time, and returns its size.
// Name it next in a putblob (PutBlobRequest.Upload) or an append
// (AppendRequest.Upload).
func (c *Client) Upload(ctx context.Context, id string, r io.Reader) (int64, error) {
	buf := make([]byte, UploadPiece)
	var off int64
	for {
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			var rep UploadReply
			if cerr := c.Call(ctx, OpUpload, UploadRequest{Upload: id, Offset: off, Data: buf[:n]}, &rep); cerr != nil {
				return off, cerr
			}
			off = rep.Size
		}
		switch {
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			if off == 0 {
				return 0, fmt.Errorf("service: upload %s: nothing to send", id)
			}
			return off, nil
		case err != nil:
			return off, err
		}
	}
}

// ReadBlob copies blob sha256 to w, a piece at a time, and returns its
// size.
func (c *Client) ReadBlob(ctx context.Context, sha256 string, w io.Writer) (int64, error) {
	req := BlobRequest{SHA256: sha256}
	for {
		var rep BlobDataReply
		if err := c.Call(ctx, OpBlob, req, &rep); err != nil {
			return req.Offset, err
		}
		if _, err := w.Write(rep.Data); err != nil {
			return req.Offset, err
		}
		if rep.Next == 0 {
			return rep.Size, nil
		}
		req.Offset, req.Cursor = rep.Next, rep.Cursor
	}
}
