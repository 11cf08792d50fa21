// Package bootstrap implements core.Bootstrap, the job's out-of-band
// channel: Local for PEs that are goroutines of one process (tests), and a
// TCP store (Server) with its Client for PEs that are processes, on one
// host or many.
//
// # Starting a PE
//
// A PE calls JobFromEnv to learn its rank, size, job id, secret and the
// store's address from the variables its launcher set (see the Env
// constants), then Connect, which returns the right core.Bootstrap.
// JobFromEnv is two steps: ReadSettings reads the variables through the
// registry and asks nobody, yielding Settings, a plain value that says
// whether a launcher must be asked; Settings.Join asks it (PMIx or PMI,
// PE 0 opening the store's listener, the fence) and yields the Job.
//
//   - oshrun runs the store itself and sets GOSHMEM_RANK, GOSHMEM_SIZE,
//     GOSHMEM_JOBID, GOSHMEM_BOOTSTRAP and GOSHMEM_SECRET; every PE dials.
//   - Under a PMIx launcher (Open MPI's mpirun, srun --mpi=pmix), which
//     sets PMIX_NAMESPACE and PMIX_RANK, nothing need be set: JobFromEnv
//     initializes PMIx through OpenPMIx's library, loaded at run time
//     (package pmix), learns the rank and size from it, and publishes
//     the store as under PMI below, with PMIx_Put, PMIx_Commit and a
//     PMIx_Fence that collects the data and gives up after the join
//     timeout. PMIx's local peers say whether every PE is on PE 0's
//     node. The connection stays open in the Client Connect returns: its
//     Close finalizes PMIx, and its AbortJob (core.JobAborter, which a
//     global exit calls) asks the launcher to end the job.
//   - Under MPICH's Hydra (mpiexec) or srun --mpi=pmi2, which hand each
//     process a PMI socket (PMI_FD or PMI_PORT), nothing need be set:
//     JobFromEnv asks the launcher (package pmi; PMI-1 for Hydra, PMI-2
//     for Slurm). PE 0 opens the store's listener on a free port where
//     its PEs are (listen.go): the loopback address when the launcher's
//     PMI_process_mapping puts every PE on PE 0's node, else the address
//     of GOSHMEM_BOOTSTRAP_IFACE or of PE 0's host name. It makes a
//     secret and a job id and puts them with that address in the
//     launcher's key-value space, which only the job's processes see;
//     after the fence the others read them (decodeStoreFacts).
//   - Under srun without --mpi (SLURM_PROCID, SLURM_NTASKS) or any
//     launcher that gives the rank and size in variables but no PMIx or
//     PMI, the user sets GOSHMEM_BOOTSTRAP=host:port, a free port
//     on PE 0's host; PE 0 serves the store on that port (on that
//     address if it is one of this host's, on GOSHMEM_BOOTSTRAP_IFACE's
//     if set, else on every interface) and every PE, PE 0 included,
//     dials it. Unset, every PE fails with a NoLauncherError listing
//     what was looked for. GOSHMEM_BOOTSTRAP also takes the place of
//     PMI or PMIx wherever it is set and the launcher's variables give
//     the rank and size. Such a launcher gives no
//     secret, so the user gives one (GOSHMEM_SECRET or
//     GOSHMEM_SECRET_FILE, the same for every PE); without one the job is
//     refused, since anyone who can reach an unauthenticated store while
//     the job starts can take a rank that has not joined yet. Only
//     GOSHMEM_INSECURE=1 runs it so, PE 0 warning on standard error.
//   - Without a launcher the process is the only PE and needs no store.
//
// # Joining, bounded
//
// GOSHMEM_JOIN_TIMEOUT (Job.JoinTimeout, 60s by default) bounds every wait
// while the job assembles: the PMI or PMIx fence, a PE's dialling of the store,
// and PE 0's wait in Connect until every rank has joined. PE 0 then loses
// the ranks that never came, so the members that did join hear which and
// why, and fails naming them and the address they were told. SHMEM_DEBUG
// prints each step to standard error.
//
// # The store
//
// The Server keeps no data between collectives: each member sends its
// contribution to its k-th collective, and when all size members have, the
// server answers each with every contribution in rank order. Barrier is an
// allgather of nothing. Each collective is one round trip per member.
//
// A member whose connection ends without a clean close (its process died,
// its host vanished, found by TCP keepalive within about ten seconds, or it
// broke the protocol) is lost: the server tells every other member at once,
// so their Err returns a *core.PeerLostError, and every running or later
// collective fails with it. A member that closed cleanly is finalized:
// collectives it already entered still complete, later ones fail.
//
// These decisions, and the ones below for silent and reported members and
// ranks that never join, are the ledger's (ledger.go): a state machine
// from the store's events to what it does (frames to queue, connections
// to close, events to emit), with no I/O, clock or lock, which the Server
// calls and carries out.
//
// A member that sends nothing for the store's DeadAfter is lost too: a
// stopped process (SIGSTOP) keeps its connection open and its kernel
// answers TCP keepalives, so only silence tells. Every member sends ALIVE
// a few times within it; the store PE 0 serves under srun, mpirun or
// mpiexec watches with GOSHMEM_DEAD_AFTER (30s) and announces it, and the
// members then lose the store, hosted by PE 0, after as long a silence from
// it. oshrun's store does not watch: oshrun sees its PEs' processes stop
// (see launcher.Options.StoppedAfter) and loses them with Server.Lose.
//
// A member may also be lost by report (Client.ReportLost, through
// core.ReportLost): a provider whose links saw a peer go tells the store,
// which cannot see a stopped process (its connection stays open). The
// reporter's collectives end at once; the store then loses the reported
// member as above, naming the reporter in the reason, and closes its
// connection.
//
// Connections are authenticated by a challenge/response on the job secret,
// internal/auth's, the one the tcp provider opens its connections with
// too; the wire format, the handshake's framing included, is in wire.go.
// Keepalive and the TCP user timeout (set through internal/sys, the one
// importer of golang.org/x/sys) are in keepalive.go.
//
// bootstrap builds on core and knows no provider, no shmem and no
// launcher; internal/layering keeps it so.
//
// # Lifetimes and ownership
//
// Server: the caller owns the listener it passes to NewServer until it
// calls Serve; from then on the server owns it. Serve blocks, accepting;
// each connection gets a reader goroutine, and each member also a writer
// goroutine that alone writes to its connection. Close stops listening,
// closes every connection (reporting nobody lost), and returns after every
// one of those goroutines, and the one delivering OnEvent, has ended;
// Serve then returns nil. OnEvent runs on the server's event goroutine and
// must not call Close.
//
// Client: Dial starts one reader goroutine, which alone reads the
// connection and records losses; ReportLost starts one more, once, to
// send the report, which Close waits for. AbortJob, under PMIx, calls
// PMIx_Abort on a goroutine it waits for a few seconds at most: its caller
// then ends the process, as a global exit does. Collectives run on the caller's goroutine
// and are serialized. Close sends the clean close, waits (boundedly) for
// the server to acknowledge by closing its end, closes the connection and
// returns after the reader has ended. A Client made by Connect for PE 0
// under srun or mpirun also owns the Server: its Close keeps the store up
// until every other member has finalized or been lost (members that never
// joined are given up after the connect timeout), then closes it.
//
// Local: see NewLocal; it starts no goroutines.
package bootstrap
