package service

import (
	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/replica"
	"github.com/agentcore/sessionlog/stream"
)

// ClientPermissions are what a tenant's users may do inside the tenant's
// own account: call the service (subject, sessionlog.v1) and discover it,
// and use JetStream read-only — consumers (replicas, event consumers,
// server-sent events), message gets, stream info — plus the dead-letter
// stream of event consumers. They cannot publish entries, put index or
// snapshot records, or delete, purge or reconfigure streams: every write
// goes through the service, which checks it. (Other tenants' data is not
// in the account at all: that isolation does not depend on this list.)
func ClientPermissions(sc stream.Config, subject string) cluster.Permissions {
	dlq := sc.Stream + "_DLQ"
	return cluster.Permissions{
		Publish: []string{
			subject + ".>", "$SRV.>",
			"$JS.API.INFO", "$JS.API.STREAM.INFO.>", "$JS.API.STREAM.NAMES", "$JS.API.STREAM.LIST",
			"$JS.API.STREAM.MSG.GET.>", "$JS.API.DIRECT.GET.>",
			"$JS.API.CONSUMER.>", "$JS.ACK.>", "$JS.FC.>",
			// stream.New and replica.Subscribe create what is missing;
			// in a served account it all exists and these only confirm it.
			"$JS.API.STREAM.CREATE." + sc.Stream,
			"$JS.API.STREAM.CREATE.KV_" + sc.IndexBucket(),
			"$JS.API.STREAM.CREATE.OBJ_" + sc.SnapshotBucket(),
			"$JS.API.STREAM.CREATE.KV_" + sc.SnapshotBucket() + "_HEADS",
			"$JS.API.STREAM.CREATE." + dlq, "$JS.API.STREAM.UPDATE." + dlq,
			replica.DeadLetterSubjects(sc),
		},
		Subscribe: []string{"_INBOX.>"},
	}
}
