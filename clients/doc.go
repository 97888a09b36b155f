// Package clients runs the tests of the clients in other languages
// (clients/python, clients/typescript) against a real node, service and gateway started for
// them, when their toolchains are installed; without them the tests skip,
// saying what to install.
package clients
