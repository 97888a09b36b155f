// Package deploy holds deployment configurations for sessionlog — a
// three-node nats-server cluster, systemd units, Kubernetes manifests, a
// compose file and a Dockerfile — and the tests that check them. See
// README.md and docs/operations.md.
package deploy
