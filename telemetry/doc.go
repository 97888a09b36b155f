// Package telemetry holds sessionlog's OpenTelemetry instruments and the
// W3C trace context carried in NATS message headers. Instrumented packages
// (stream, replica, service, gateway) take a *T; by default it uses the
// global providers, which record nothing until a program installs an SDK
// (Setup does, for `sessionlog serve`): with telemetry off, every span and
// measurement is a no-op.
package telemetry
