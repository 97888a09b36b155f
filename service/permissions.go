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
// snapshot records, or create, delete, purge or reconfigure streams (the
// node provisions every stream at start; clients only look them up):
// every write goes through the service, which checks it. (Other tenants' data is not
// in the account at all: that isolation does not depend on this list.)
func ClientPermissions(sc stream.Config, subject string) cluster.Permissions {
	return cluster.Permissions{
		Publish: []string{
			subject + ".>", "$SRV.>",
			"$JS.API.INFO", "$JS.API.STREAM.INFO.>", "$JS.API.STREAM.NAMES", "$JS.API.STREAM.LIST",
			"$JS.API.STREAM.MSG.GET.>", "$JS.API.DIRECT.GET.>",
			"$JS.API.CONSUMER.>", "$JS.ACK.>", "$JS.FC.>",
			replica.DeadLetterSubjects(sc),
		},
		Subscribe: []string{"_INBOX.>"},
	}
}
