package stream

import "context"

// Resend exposes the resending of requests whose outcome is unknown.
func (b *Backend) Resend(ctx context.Context, fn func(ctx context.Context) error, onResend func(error)) error {
	return b.resend(ctx, fn, onResend)
}

// ErrInProcess and ErrUnavailable are the server's answers resend waits out.
var ErrInProcess, ErrUnavailable error = errInProcess, errUnavailable
