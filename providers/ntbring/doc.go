// Package ntbring is the provider for hosts joined in a switchless ring by
// PCIe non-transparent bridges, after the seed papers (Lim, Park and Cha,
// IPDPSW 2019; Lim and Cha, JIPS 2022). One PE runs per host; PE i is host
// i, whose Left port faces host i-1 and whose Right port faces host i+1.
// The device is reached only through the ntb.Port contract; here it is
// the emulated PLX NT port of internal/ntb/emu.
//
// # The ring protocol (GOSHMEM_NTBRING_PROTOCOL=ring, the default)
//
// Nothing on the data path reads across the link. Per link and direction
// a ring of descriptors and data slots lives in the receiver's inbound
// window 0; the producer index lives in the receiver's memory, the
// consumer index is written back into the sender's, each on its own
// cache line (ringlink.go). A sender fills entries and publishes every
// ready entry with one store of the producer index; it rings the doorbell
// only if the receiver said it sleeps, and the receiver, which polls a
// while before it sleeps, re-checks the index after saying so, so no
// wake-up is lost. Scratchpads carry only the link-up hello: a magic and
// a random epoch, per link and link-up, that every descriptor repeats, so
// a restarted neighbour or an old ring is never taken for the new one. Every descriptor is validated (desc.go)
// and garbage is dropped and logged.
//
// Regions live in memory registered with the device, and inbound window
// 1+r of each port points at region r where the device has the window:
// a put to a neighbour is stored or DMAed straight into its heap and is
// complete on return, with a landed notice that wakes its waiters.
// Other transfers travel the shorter way round through the rings, relayed
// entry by entry as they arrive; the last relay lands a put straight in
// the destination's heap. Relays never wait for room while holding an
// entry, and a quarter of every ring is kept for relays and answers, so
// the ring cannot deadlock. Gets and atomics run at the owner, which
// answers with one traversal back. Barrier is a dissemination barrier
// over the rings (GOSHMEM_NTBRING_BARRIER=ring for the seeds' doorbells).
// The domain is a core.CheckedBarrierer: BarrierCheck's check ends the
// wait as a lost peer does, so a layer above can end a barrier on a
// failure the ring cannot see (a global exit).
//
// # Blocked moves and sessions (ring protocol)
//
// A blocked put (core.BlockMover: shmem's iput and ibput) to a neighbour
// whose window maps the region is one transfer into its heap: stores
// for the small blocks, DMA descriptors submitted back to back on one
// channel for the large, and one landed notice for the whole span
// (blocks.go). Elsewhere, and for blocked gets, it is a put or a get per
// block.
//
// A session's batch (SHMEM_CTX_SESSION_BATCH) changes nothing here: the
// endpoint is no core.Batcher, because nothing a batch could defer costs
// anything per operation. A put to a neighbour is stores or a DMA
// straight into its heap, complete on return, and its landed notice is
// left out while an earlier one has not been acted on (noticePending),
// so a stream of puts already costs one notice per wake-up. Through the
// ring, a sender publishes every ready entry with one store of the
// producer index and rings the doorbell only when the receiver said it
// sleeps, which a receiver does only after polling a while: holding the
// stores back would save one store per entry and keep entries from a
// receiver that polls for them, and holding the doorbell back would
// leave a sleeping receiver asleep over entries it could act on. Each
// entry carries one payload in a slot of its own, so small puts cannot
// share an entry without a new kind of entry that every relay and a
// cut's resend would have to take apart. Where tcp saves a system call
// and a frame per put, the ring has neither to save.
//
// # The seed protocol (GOSHMEM_NTBRING_PROTOCOL=seed)
//
// At Open each host points its two inbound windows of each port at fresh
// buffers, writes its host id, the ring size and its slot geometry into
// its neighbours' scratchpads, and checks what they wrote into its own
// (setupLinks, the start-up both protocols share; only the hello's words
// differ).
// Window 0 (direct) receives payloads for the host itself, window 1
// (bypass) payloads it relays on. Each window is cut into one data slot
// per worker.
//
// A transfer to the neighbour on one side: take a data slot, wait until
// the scratchpad group of that slot is free (word 0 zero, read across the
// link), DMA the payload into the slot, write the metadata (source,
// destination, region, offset, size, kind, tag; see meta) into the
// neighbour's scratchpads, word 0 last, and ring the slot's doorbell
// (doorbell_dmaputget[n]). The neighbour's worker n reads the metadata,
// copies the payload out and clears word 0. A transfer for a host further
// on is sent on in the same direction, straight from the bypass window if
// the next link is free at once, else from a bypass buffer by a forwarder;
// transfers leave by the shorter way round.
//
// A put returns once its data has left through the first link; the
// destination's ack, travelling back round the ring, completes it. A get
// is a request travelling to the owner, whose answer carries the data
// back. Atomics travel like gets and run at the owner with sync/atomic.
// The barrier is the seeds' two rounds of doorbells: BARRIER_START from
// host 0 round the ring and back, then BARRIER_END.
//
// # Lifetimes
//
// Open starts, per host, one dispatcher goroutine per port and, for the
// seed protocol, per worker one worker and one forwarder goroutine; for
// the ring protocol, one receiver and one forwarder per port and the
// workers. Domain.Close quiets the endpoints, waits at a bootstrap
// barrier until every host has done so, then stops the goroutines, closes
// the ports and retires the regions' memory (see core.Domain's Close).
// A registered region (RegisterRegion) is the program's own memory, which
// this host's receivers write into; Close leaves it to the program. It
// gets no device window, so neighbours' puts into it come through the ring.
// Under the seed protocol regions are shared mappings of files that are
// unlinked as soon as they are mapped, so nothing of them outlives the
// process; under the ring protocol they are the device's registered
// memory, whose files the device removes at Close (or the launcher, with
// the job's directory, after a crash).
//
// # Rerouting round a cut link (ring protocol)
//
// A link that goes down is routed round (reroute.go). The hosts at its
// two ends stop taking entries from each other's ring at a definite
// entry and tell each other, by a cut notice sent the long way round,
// how far they read; each resends, the other way round, the entries the
// other never took, from copies kept until the entry is reused. Every
// host the notice passes routes round the cut from then on; a transfer
// that meets the cut turns round. So every transfer is acted on once: no
// put, fetch-add or answer is lost or repeated.
//
// A link that comes back up is used again (repair.go): once the cut was
// dealt with, each end retires the cut ring (late DMA completions and
// releases go on touching only its memory), points its ring window at a
// fresh buffer, runs the hello with a new epoch and a "mapped" handshake
// in the scratchpads, and only then puts the new ring in use and sends a
// repair notice the long way round, on which every host routes the short
// way again. A later single cut is then a first cut again.
//
// # Past the ring: a 2D torus (ring protocol)
//
// Where the device describes its fabric as a torus (the simulated
// fabric's GOSHMEM_NTB_SIM_TOPOLOGY), every host has four ports, Left
// and Right along its row, Up and Down along its column, and one rlink
// per port (topology, topo.go). A transfer is routed hop by hop by each
// host's table (routes: the side of a shortest path over the links not
// known cut, along the row first), so a relay sends it on by the table,
// not straight on. A cut link is left out of every table: its two ends
// exchange cut notices round it and resend what the other did not take,
// as on a ring, and every host that learns of a cut tells its
// neighbours (kindLinkDown), so that all learn. Any number of cuts is
// routed round while every host can still reach every other; one that
// leaves a host with no path fails the domain, naming it. A cut link is
// not repaired on a torus, and the seeds' protocol and doorbell barrier
// are refused there: they go round a ring.
//
// # Failures
//
// Under the seed protocol a link that goes down outside Close fails the
// domain; under the ring protocol a second cut, a neighbour that died, a
// cut notice that does not come within GOSHMEM_NTBRING_TIMEOUT, or a cut
// under the doorbell barrier does. A scratchpad slot that stays busy,
// an answer that does not come within GOSHMEM_NTBRING_TIMEOUT, or a PE the
// bootstrap reports lost fail the domain: every operation in flight and
// every later one ends with an error wrapping core.ErrPeerLost. A host
// whose domain fails rings the broken-ring alarm on both ports, and every
// host that hears it fails and passes it on, so the whole ring learns.
// It also reports the lost host to the bootstrap (core.ReportLost), which
// the store may not know lost (a stopped process keeps its connection):
// every bootstrap collective then fails at once, Close's barrier
// included, and the launcher learns which PE to blame. A
// transfer whose metadata or header is malformed is dropped and logged;
// its sender's operation then times out.
package ntbring
