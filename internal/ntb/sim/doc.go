// Package sim is a simulated fabric of PCIe NT ports behind ntb.Port: a
// ring of hosts, or a 2D torus of hosts with four ports each
// (Config.Width, ParseTopology), whose every device action costs virtual time from a
// named-parameter device model (Model; Gen3x8 by default, Gen4x16 beside
// it), with the flows that share a link direction sharing its rate.
//
// It uses the time package for its clock: run inside a testing/synctest
// bubble, time passes only when every goroutine of the bubble waits, so
// a job's figures are the model's and its protocol's, the same on any
// machine. Outside a bubble the same costs pass in real time.
//
//	f, err := sim.New(sim.Config{Hosts: 8, Model: sim.Gen3x8, Seed: 1})
//	h := f.Host(3) // h.Left, h.Right (and in a torus h.Up, h.Down): ntb.Port
//	f.SetLinkDown(2, true)
//
// A provider finds the fabric of its job with Attach; Prepare sets the
// configuration a job's fabric is made with. docs/ntb-sim.md describes
// the model, its sources and what is not modelled.
package sim
