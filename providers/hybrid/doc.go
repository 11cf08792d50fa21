// Package hybrid composes two transports into one domain: pairs of PEs on
// one host go through loopback (shared memory), every other pair through
// the inter-host provider the job selected (tcp, a plugin). Importing it
// registers a core.Composer; core.Open then composes it whenever the
// selected provider serves any hosts, the job spans hosts, some host runs
// several PEs and GOSHMEM_HYBRID is not "0". shmem sees one domain and
// knows nothing of the two.
//
// Lifetime and ownership:
//
//   - Open opens the inter-host provider over the whole job, then
//     loopback over the PEs of this host, through a bootstrap of theirs
//     (see group) whose collectives run in step on every host. Either
//     fails on every PE or neither does.
//   - A region is loopback's memory, whole pages, which the inter-host
//     provider serves as registered memory (core.Domain.RegisterRegion):
//     a put lands in the same bytes whichever transport carried it. A
//     registered region is registered with both. The composite is a
//     core.Committer: a reserved region (shmem's heap) is loopback's
//     reserved region, and Commit is loopback's, where the inter-host
//     provider leaves the memory where it lies (tcp); where it moves
//     every local PE's part onto memory of its own (ntbring's lanes),
//     the region is committed whole and Commit does nothing.
//   - An endpoint holds one endpoint of each; Fence and Quiet span both.
//     Its counter completes fetching operations as they return and the
//     others at the next Quiet.
//   - Close closes the inter-host provider first (after it no PE of
//     another host touches this PE's memory), then loopback, which
//     unmaps the regions. The Bootstrap is the caller's.
package hybrid
