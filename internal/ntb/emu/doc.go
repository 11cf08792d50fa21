// Package emu is an emulated PLX PEX87xx NT port: ntb.Port over memory
// shared between the processes (or goroutines) of a ring of hosts, each
// host with two ports, Left (towards host id-1) and Right (towards host
// id+1, mod n).
//
// # Using it
//
// Hosts as goroutines of one process, as tests use them:
//
//	r, err := emu.NewRing(dir, 4, opts) // opts: emu.DefaultOptions(), or Model{} for no pacing
//	defer r.Close()
//	err = r.EnableAll(time.Minute)      // LinkEnable on every port, then WaitLink
//	left, right := r.Hosts[2].Left, r.Hosts[2].Right
//
// Hosts as processes, one per process, as a provider uses them:
//
//	opts, err := emu.OptionsFromEnv(cfg.Lookup, n) // GOSHMEM_NTB_* (Params)
//	h, err := emu.Open(cfg.JobDir(), rank, n, opts)
//	defer h.Close()
//	err = h.Left.LinkEnable() // likewise Right; then WaitLink
//
// Open creates the file of link id (the link of the host's Right port)
// and waits for host id-1 to create that of link id-1 (its Left port).
// Ports start with the link disabled, as ntb_link_enable expects.
// Params lists the parameters for a provider's Info.Params.
//
// # The device
//
// Each link k, joining host k's Right port (side a) and host k+1's Left
// port (side b), is one file of 4 KiB (layout.go) holding a header (magic,
// version, geometry; validated before anything else is trusted) and both
// sides' registers: 8 scratchpads, 16 doorbell bits with pending and mask
// words, the link and liveness words, the inbound window registers and
// the port's counters. Every register is accessed with sync/atomic.
//
// An inbound window translation (MWSetTrans) is a file of its own that
// the owner creates and the peer maps when it calls PeerMW, found by the
// generation number the owner publishes in the window's register: the
// MWSetTrans buffer of one side is what the other side's PeerMW maps. A
// port has 2 to 8 windows (GOSHMEM_NTB_WINDOWS) of up to
// GOSHMEM_NTB_MW_SIZE bytes, page aligned.
//
// Doorbells cross processes through the irq word of the receiving side
// and its interrupt line, a FIFO beside the link file: PeerDBSet sets the
// pending bits and bumps the word (and writes a byte into the FIFO if the
// side sleeps), and the receiving port's event goroutine, which polls
// briefly and then sleeps reading the FIFO in Go's network poller (so it
// holds no processor of the runtime while it sleeps), raises the bits that
// are pending, unmasked and not yet reported. The scheduler consults its
// network poller only when it runs out of runnable goroutines (or every
// 10 ms), so in a process kept busy by polling goroutines a FIFO byte
// waits; a port kicked in the last 2 ms therefore also looks at its irq
// word every 20 µs, by the read's deadline, a timer the scheduler runs on
// time. Several sets of one bit before it is cleared are one event, as
// with PLX's one interrupt vector; unmasking a pending bit raises it.
// Events go out through a second goroutine, so a slow reader merges
// events and never stalls the first.
//
// DMA: 4 channels per port, each a goroutine that performs its
// descriptors in order and calls each completion callback, with an error
// wrapping ntb.ErrLinkDown if the link went down under it.
//
// # Timing
//
// Model paces what a PCIe Gen3 x8 link would make slow (Gen3x8, the
// default): DMA at 6.5 GB/s per port and direction, shared by the port's
// channels, after a set-up cost per descriptor; a peer scratchpad read
// costs a round trip (non-posted); doorbells and peer scratchpad writes
// are posted and cost nothing extra. Stores through a window are plain
// stores, unpaced. Waits spin briefly, then yield, never sleep for short
// delays. The zero Model (GOSHMEM_NTB_MODEL=off) paces nothing.
//
// # Link state, liveness and faults
//
// The link is up when both ports are held and enabled, the link is not
// forced down, and the peer lives. Each port's event goroutine beats a
// heartbeat and watches the peer's: a peer whose process is gone (or is a
// zombie) is dead within a poll period (Options.Poll, 20 ms), one whose
// heartbeat stood still for GOSHMEM_NTB_DEAD_AFTER is dead too; PeerDead
// tells a dead peer from a link that is merely down. The other side then sees a
// LinkEvent and LinkIsUp false; peer operations fail with ntb.ErrLinkDown
// and peer scratchpad reads return 0xFFFFFFFF. When a link goes down,
// every inbound translation is reset, as on PLX hardware; scratchpads
// survive.
//
// Faults (Fault, ParseFaults, GOSHMEM_NTB_FAULT, Host.Inject,
// Port.SetLinkDown) force a link down or up, or kill a host, at a chosen
// time after the injecting host opened its ports.
//
// # Files
//
// Files are 0600 in the given directory: "ntb-[tag-]link<k>" per link and
// "ntb-[tag-]link<k><a|b>-mw<i>-<generation>" per window translation. A
// host removes what it created when it closes; after a crash they stay
// until the directory is removed, which the launcher does for a job's
// directory. Inspect reads a running ring's registers from its files.
package emu
