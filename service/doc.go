// Package service serves sessions over NATS request/reply, as a
// nats.go/micro service (discoverable with $SRV.PING/INFO/STATS), so agents
// in any language can use a sessionlog deployment: JSON requests on
// <subject>.<op> (sessionlog.v1.append), JSON replies, errors as codes
// clients switch on. One Service serves the sessions of one stream — one
// tenant's, when the deployment has tenants (see cluster.Tenant): it is
// started on a connection inside the tenant's account, so it can reach no
// other tenant's data whatever a request says.
package service
