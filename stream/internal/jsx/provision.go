package jsx

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// EnsureKV opens a key-value bucket, creating it if it does not exist. An
// existing one is used as it is: every node of a cluster may be
// provisioning at once, and updating one another's buckets only makes
// them wait on each other.
func EnsureKV(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (kv jetstream.KeyValue, err error) {
	err = Provisioning(ctx, func(ctx context.Context) error {
		if kv, err = js.KeyValue(ctx, cfg.Bucket); !errors.Is(err, jetstream.ErrBucketNotFound) {
			return err
		}
		kv, err = js.CreateKeyValue(ctx, cfg)
		if errors.Is(err, jetstream.ErrBucketExists) || errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			kv, err = js.KeyValue(ctx, cfg.Bucket)
		}
		return err
	})
	return kv, err
}

// EnsureObjectStore is EnsureKV for an object store.
func EnsureObjectStore(ctx context.Context, js jetstream.JetStream, cfg jetstream.ObjectStoreConfig) (obs jetstream.ObjectStore, err error) {
	err = Provisioning(ctx, func(ctx context.Context) error {
		if obs, err = js.ObjectStore(ctx, cfg.Bucket); !errors.Is(err, jetstream.ErrBucketNotFound) {
			return err
		}
		obs, err = js.CreateObjectStore(ctx, cfg)
		if errors.Is(err, jetstream.ErrBucketExists) || errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			obs, err = js.ObjectStore(ctx, cfg.Bucket)
		}
		return err
	})
	return obs, err
}

// provisionLimit bounds provisioning when the caller gives no deadline.
const provisionLimit = time.Minute

// Provisioning runs step until it succeeds, fails for good, or ctx ends:
// errors a cluster gives while it elects leaders (no response, no
// peers, JetStream not ready) are retried. In a cluster that is still
// electing, or with every node creating the same asset at once, a
// request can go unanswered where the next one succeeds.
func Provisioning(ctx context.Context, step func(ctx context.Context) error) error {
	if _, ok := ctx.Deadline(); !ok {
		// Never forever: a cluster that cannot elect for a minute is
		// reported, not waited on in silence.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, provisionLimit)
		defer cancel()
	}
	for {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := step(actx)
		cancel()
		if err == nil || ctx.Err() != nil || !Transient(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}
