package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrLeaseHeld is returned by Acquire while another holder has the lease.
var ErrLeaseHeld = errors.New("lifecycle: lease held by another node")

// LeaseBucket is the KV bucket of a deployment's (or account's) leases.
const LeaseBucket = "SESSIONS_LEASES"

// OpenLeases opens (creating it if needed) a bucket of leases that lapse
// ttl after their holder last renewed them.
func OpenLeases(ctx context.Context, js jetstream.JetStream, ttl time.Duration, replicas int) (jetstream.KeyValue, error) {
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: LeaseBucket, Description: "sessionlog: which node runs a deployment-wide job", TTL: ttl,
		Storage: jetstream.FileStorage, Replicas: max(replicas, 1), History: 1,
	})
	if err != nil {
		return nil, fmt.Errorf("lifecycle: lease bucket: %w", err)
	}
	return kv, nil
}

// Lease is one job's lease, held: the holder renews it while it works
// (or it lapses after the bucket's TTL, and another node may take it)
// and releases it when done.
type Lease struct {
	kv     jetstream.KeyValue
	key    string
	holder string
	rev    uint64
}

// Acquire takes the lease on job for holder, or returns ErrLeaseHeld.
func Acquire(ctx context.Context, kv jetstream.KeyValue, job, holder string) (*Lease, error) {
	rev, err := kv.Create(ctx, job, []byte(holder))
	if errors.Is(err, jetstream.ErrKeyExists) {
		return nil, ErrLeaseHeld
	}
	if err != nil {
		return nil, fmt.Errorf("lifecycle: lease %s: %w", job, err)
	}
	return &Lease{kv: kv, key: job, holder: holder, rev: rev}, nil
}

// Renew extends the lease; ErrLeaseHeld when it lapsed and another node
// took it (stop working then).
func (l *Lease) Renew(ctx context.Context) error {
	rev, err := l.kv.Update(ctx, l.key, []byte(l.holder), l.rev)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrLeaseHeld, err)
	}
	l.rev = rev
	return nil
}

// Release gives the lease up, if still ours.
func (l *Lease) Release(ctx context.Context) error {
	err := l.kv.Delete(ctx, l.key, jetstream.LastRevision(l.rev))
	if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("lifecycle: release %s: %w", l.key, err)
	}
	return nil
}
