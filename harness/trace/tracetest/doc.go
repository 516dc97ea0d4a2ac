// Package tracetest reads back the spans of package trace for tests, as
// one type, Span, whichever way they were kept: in memory (Memory), or by
// a real trace backend, Jaeger all-in-one started for the test
// (StartJaeger) and read through its query API, so what the harness
// exports is checked by a program nobody here wrote.
//
// StartJaeger runs the binary LNK_TEST_JAEGER names, built from the module
// tools/jaeger (.ci/run builds it) and configured by tools/jaeger/jaeger.yaml.
// Without it a test is skipped, except in CI (CI=true), where it fails.
package tracetest
