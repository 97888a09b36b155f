package stream

import "encoding/base64"

// The object store's layout (NATS ADR-20), for the blobs and snapshot
// bodies this package reads and writes message by message: the stream of
// a bucket, the subject of an object's chunks (by its object id) and of
// its meta (by its name).

func objStream(bucket string) string { return "OBJ_" + bucket }

func objChunks(bucket, nuid string) string { return "$O." + bucket + ".C." + nuid }

func objMeta(bucket, name string) string {
	return "$O." + bucket + ".M." + base64.URLEncoding.EncodeToString([]byte(name))
}

// objMetas is the filter of every meta of a bucket.
func objMetas(bucket string) string { return "$O." + bucket + ".M.>" }
