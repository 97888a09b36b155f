// Package api is sessionlog's protocol and its Go client: the operations
// of the sessionlog.v1 service, their request and reply types, the error
// codes, and Client, which calls a service over NATS. It imports neither
// the server nor its storage, so a program that only calls sessionlog
// stays small (see docs/protocol.md).
package api
