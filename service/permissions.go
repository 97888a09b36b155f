package service

import (
	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/stream"
	"github.com/agentcore/sessionlog/tracker"
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
			tracker.DeadLetterSubjects(sc),
		},
		Subscribe: []string{"_INBOX.>"},
	}
}

// Permit gives auth's tenants what serve gives them, for the service on
// its default subject: each user ClientPermissions, each edge's link
// EdgePermissions for a hub in JetStream domain hub.
func Permit(auth *cluster.AuthConfig, sc stream.Config, hub string) {
	auth.ClientPermissions = ClientPermissions(sc, api.DefaultSubject)
	auth.EdgePermissions = EdgePermissions(api.DefaultSubject, hub)
}

// EdgePermissions are what an edge node's leafnode link may carry (see
// cluster.Edge), for a hub in JetStream domain hub: from the edge, the
// messages of the hub's sourcing of its streams ($JS.S), the replies to
// the hub's requests ($JSC.R, _INBOX), its link request, and its own
// streams' sourcing of the hub's (consumer creation in the hub's domain,
// flow control replies); to the edge, the hub's requests to its domain's
// JetStream API, flow control, the hub's messages for its sourcing and
// replies. Nothing else of the tenant's account crosses: the edge cannot
// publish to the hub's streams, and reads only what a consumer of its
// own tenant's streams delivers.
func EdgePermissions(subject, hub string) func(domain string) cluster.Permissions {
	return func(domain string) cluster.Permissions {
		return cluster.Permissions{
			Publish: []string{"$JS.S.>", "$JSC.R.>", "_INBOX.>", subject + "." + api.OpLink,
				"$JS." + hub + ".API.CONSUMER.CREATE.>", "$JS.FC.>"},
			Subscribe: []string{"$JS." + domain + ".API.>", "$JS.FC.>", "_INBOX.>", "$JS.S.>", "$JSC.R.>"},
		}
	}
}
