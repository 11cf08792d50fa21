// Package conformance is the suite every provider passes: one named
// subtest per behaviour, run with several PE counts, in one process (PEs as
// goroutines) and as separate OS processes through the launcher. A
// provider's test file is a few lines:
//
//	func TestMain(m *testing.M) { conformance.Main(m) }
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, conformance.Harness{Provider: "loopback"})
//	}
//
//	func TestConformanceProcesses(t *testing.T) {
//		conformance.RunProcesses(t, conformance.Harness{Provider: "loopback"})
//	}
//
// Cases are skipped only when the provider's Info says it lacks a
// capability they need; the skip names the capability, so a provider that
// stops advertising something shows up as a skip, not as silence.
//
// Each case runs with fresh resources (a new job, heap and shared-memory
// directory), under a watchdog that dumps every goroutine and fails the
// test binary if the case hangs, and ends with a goroutine leak check.
package conformance
