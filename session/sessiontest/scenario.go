package sessiontest

import "testing"

func runScenarios(t *testing.T, b Backend) {}
