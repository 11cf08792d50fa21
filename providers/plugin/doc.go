// Package plugin runs goshmem providers that live outside the program, as
// separate executables speaking a gRPC protocol through
// github.com/hashicorp/go-plugin, and lets any core.Provider be served
// that way. A vendor ships a provider as an executable named
// goshmem-provider-NAME; users put its directory on GOSHMEM_PROVIDER_PATH,
// and in a program that imports this package NAME is then listed,
// selected by name and tested like a built-in provider. Programs that do
// not import it (providers/all does not) link neither go-plugin nor gRPC.
//
// # Two sides
//
// The serve side is Serve: the main of a plugin executable hands it a
// core.Provider and it serves that provider's Info, Open, NewRegion,
// endpoints and Close to one host. Re-exporting a provider is a few lines
// (see cmd/goshmem-provider-tcp-plugin). Run with ManifestFlag, the
// executable prints its manifest instead.
//
// The host side is the provider New returns for an executable. Importing
// the package adds a core.Source that, at the program's first provider
// lookup, registers one for every plugin on GOSHMEM_PROVIDER_PATH whose
// name no linked provider has. Nothing starts to list a plugin: Info reads
// its manifest (ManifestPath), written by the plugin itself or by
// WriteManifest after provinfo -check; Open starts one plugin process per
// domain, asks it what it offers, and the process ends when the domain
// closes.
// Automatic selection never starts one (the provider is core.ByName): a
// plugin serves only a job whose GOSHMEM_PROVIDER names it. A plugin runs
// in a process group of its own, which is killed when it does not finish
// its start within GOSHMEM_PLUGIN_START_TIMEOUT, or whenever it is ended;
// at most 64 KiB of its stdout is read (see groupRunner). Its socket is in
// a directory go-plugin removes when it ends, made in the job directory
// for a PE's plugin, so a PE that dies leaves it to the sweep of dead
// jobs' directories (core.SweepJobDirs). The
// advertised Info is the wrapped provider's, under the plugin's name,
// with Origin "plugin PATH, protocol N", without direct access (peers'
// memory is mapped in the plugin process, not in the PE) and with two
// parameters of the host's own: GOSHMEM_<NAME>_TIMEOUT and
// GOSHMEM_<NAME>_STAGING.
//
// # Handshake
//
// go-plugin's handshake guards the start: a magic cookie (so a plugin run
// by hand, or a program that is not a goshmem plugin, is refused), the
// protocol version (ProtocolVersion, offered through go-plugin's
// versioned plugin sets so a later version can be negotiated beside this
// one), the gRPC protocol only, and mutual TLS with certificates made for
// this one connection (AutoMTLS).
//
// # Data path
//
// Bulk data never travels in gRPC messages. The wrapped provider's part
// of each region is a file the PE maps too, so Region.Local on the PE is
// the very memory the provider's peers write. The plugin creates and maps
// that file (whole pages); a provider that implements core.RegionPlacer
// makes the region in the mapping, any other has the mapping registered
// (core.Domain's RegisterRegion), so any provider can be served: tcp
// works on the file's pages in place. A provider that moves registered
// memory onto a file of its own, as loopback does, removes that file's
// name before RegisterRegion returns, so the serve side keeps a hard link
// to each file of the job directory it maps while the call runs, finds
// the one holding the region's local part by inode (/proc/self/maps), and
// hands it to the PE instead (see capture).
//
// The file is allocated whole when the plugin creates it (sys.CreateShared),
// and so is a file loopback moves the mapping onto, so a plugin's region
// is committed whole from NewRegion on, whatever the wrapped provider: the
// PE's domain is no core.Committer, and shmem's heap over a plugin takes
// its whole size of the job directory's file system at start, as every
// heap did before heaps were committed as they were handed out. Reserving
// it would need a request for a reserved file, which the protocol does
// not have (the PE could then commit ranges of the file it maps through
// a descriptor of its own), and would still commit the whole of a region
// of a wrapped loopback, whose own file is allocated whole.
//
// RegisterRegion (memory the PE already has) goes the other way: the PE
// moves the memory in place onto a file of the job directory
// (sys.ShareInPlace), the plugin maps that file and registers its mapping
// with the wrapped provider, and if the provider moved the mapping onto a
// file of its own, as loopback does, the PE maps that file over the memory
// in turn. At Close the PE's memory becomes private again with its
// contents; it is never unmapped.
//
// Each endpoint has a staging area, a file the PE creates and the plugin
// maps. A put copies its source there and sends a command naming the
// extent; a get names an extent the plugin fills, then copies it out.
// Commands travel on one gRPC stream per endpoint and are pipelined:
// puts, value puts, non-fetching atomics and fences do not wait for their
// results, which come back in order and are collected when a later call
// waits, when the staging area is full, when 256 operations are
// outstanding (the stream's flow control, see window), or at Quiet (where
// the first error of an operation nobody waited for is reported). Small
// values and atomic operands travel in the command itself.
//
// # Bootstrap
//
// The wrapped provider's Open, NewRegion and Close are collective and use
// the job's bootstrap. Inside the plugin process the bootstrap is a proxy:
// each Allgather or Barrier is a message on the session stream, which the
// host answers with the PE's own bootstrap.
//
// # Failures
//
// A plugin that fails the handshake, answers something the protocol does
// not allow, dies or does not answer within GOSHMEM_<NAME>_TIMEOUT yields
// an *Error naming the plugin and its executable, wrapping core.ErrInvalid
// (handshake, garbage), core.ErrPeerLost (it died or the connection broke;
// the last panic line it wrote to stderr is quoted) or core.ErrTimeout (it
// hung). After such an error the endpoint and domain fail every call with
// it; Close then ends the process without asking it anything. A plugin
// process found gone while its domain is open is this PE's provider lost:
// the error becomes a *core.PeerLostError for this PE, the domain reports
// it (core.Failer) and tells the job's bootstrap (core.ReportLost), so the
// other PEs and the launcher end the job. Collective
// calls (Open, NewRegion, Close) wait for the other PEs, so the timeout
// bounds only the time the plugin spends on them outside the job's
// bootstrap: a slow peer is no hang, a plugin stuck in Open is. Errors of
// the wrapped provider
// cross the boundary as *core.RemoteError values that unwrap to the same core
// sentinel.
//
// A plugin never outlives its PE: the domain's Close ends it (go-plugin
// asks it to exit, then kills it), and a plugin whose PE died without
// closing notices that it was re-parented and exits.
//
// # Limits
//
// A provider whose registered region's local part is neither the memory
// it was given nor a whole file of the job directory gets
// core.ErrNotSupported from NewRegion. The host
// does not implement core.DirectAccess. It implements core.LocalWaiter
// when the wrapped domain does, by asking the plugin, where the wake-ups
// arrive: each wait costs round trips, but a PE is woken when a peer
// writes, instead of polling with back-off. Capture reads /proc, so the
// serve side works on Linux only.
package plugin
