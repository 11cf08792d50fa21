// Package ntbring is the provider for hosts joined in a switchless ring by
// PCIe non-transparent bridges, after the seed papers (Lim, Park and Cha,
// IPDPSW 2019; Lim and Cha, JIPS 2022). One PE runs per host; PE i is host
// i, whose Left port faces host i-1 and whose Right port faces host i+1.
// The device is reached only through the ntb.Port contract; here it is
// the emulated PLX NT port of internal/ntb/emu.
//
// # The seed protocol (GOSHMEM_NTBRING_PROTOCOL=seed)
//
// At Open each host points its two inbound windows of each port at fresh
// buffers, writes its host id, the ring size and its slot geometry into
// its neighbours' scratchpads, and checks what they wrote into its own.
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
// Open starts, per host, one dispatcher goroutine per port and, per
// worker, one worker and one forwarder goroutine. Domain.Close quiets the
// endpoints, waits at a bootstrap barrier until every host has done so,
// then stops the goroutines, closes the ports and unmaps the regions.
// Regions are shared mappings of files that are unlinked as soon as they
// are mapped, so nothing of them outlives the process.
//
// # Failures
//
// A link that goes down outside Close, a scratchpad slot that stays busy,
// an answer that does not come within GOSHMEM_NTBRING_TIMEOUT, or a PE the
// bootstrap reports lost fail the domain: every operation in flight and
// every later one ends with an error wrapping core.ErrPeerLost. A host
// whose domain fails rings the broken-ring alarm on both ports, and every
// host that hears it fails and passes it on, so the whole ring learns. A
// transfer whose metadata or header is malformed is dropped and logged;
// its sender's operation then times out.
package ntbring
