package main

import (
	"testing"

	"lnk.dev/linkharness/store/storetest"
)

// The test binary is lnk-sqlite itself when storetest.Plugin starts it, so
// the tests reach the store through the plugin program as the harness does.
func TestMain(m *testing.M) { storetest.PluginMain(m, main) }

// TestConformance runs the suite through the plugin program, and through
// the store bridge in front of it.
func TestConformance(t *testing.T) { storetest.RunPlugin(t, storetest.Plugin) }

func BenchmarkPlugin(b *testing.B) { storetest.BenchmarkPlugin(b, storetest.Plugin) }
