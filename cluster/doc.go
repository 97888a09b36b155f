// Package cluster runs the NATS server sessionlog stores its sessions in:
// an embedded JetStream node inside the process (the zero-setup default),
// or a connection to an existing NATS deployment.
package cluster
