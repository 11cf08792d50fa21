// Command oshrun runs a goshmem job, the way every OpenSHMEM
// implementation's oshrun does:
//
//	oshrun -np 4 [-provider NAME] [-tag] [-bind ADDR] [-grace 3s] [-v] ./app [app args...]
//	oshrun --host a:2,b:2 | --hostfile FILE [-N K] [-np N] ./app [app args...]
//
// It starts a bootstrap store and four processes of ./app, each told its
// rank, the job's size, id, secret and the store's address through the
// environment (see bootstrap), forwards their output, and exits with
// the job's status: 0 if every PE exited 0, else the first failing PE's
// status (128+signal when a signal killed it), or 128+signal when oshrun
// itself was interrupted. When one PE fails, the others get SIGTERM, then
// SIGKILL after -grace. A PE that calls shmem_global_exit(status) ends
// the job the same way, and oshrun exits with that status, even 0. A PE
// whose process stays stopped by a signal (SIGSTOP, SIGTSTP; not a
// debugger's stop) for -stopped-after (5s) is lost, on this host or
// another (whose agent watches its PEs): the others' operations fail
// naming it, and the job ends as for a PE that died.
// Flag parsing stops at PROGRAM, so the program's
// own flags pass through. Usage errors exit 2; an unknown flag names the
// known one it resembles. Open MPI's -x, --oversubscribe, --bind-to and
// --tag-output are accepted (see -h), so command lines written for mpirun
// or another oshrun need no rewriting. As mpirun binds ranks to cores by
// default, oshrun binds each PE of a host to its share of the host's CPUs
// where the PEs fit them (--bind-to share; core and none as mpirun's).
//
// Across hosts: PEs fill the hosts' slots in order; on each other host
// the rsh command (GOSHMEM_RSH, default ssh) runs "oshrun --agent" (or
// --launch-agent), which reads the job, secret included, on its standard
// input, starts that host's PEs, and reports their output, pids and exit
// statuses back as frames (see package launcher). It ends them when told,
// or when its input ends because oshrun or the connection died.
//
// Lifetimes: main owns the signal handler, which turns the first SIGINT,
// SIGTERM or SIGHUP into the cancellation of the job's context (later ones
// are ignored while the job ends); launcher.Run owns the store and the PEs
// and returns only after every PE has exited, and PEs die with oshrun even
// if it is killed outright (Pdeathsig). Programs that never use goshmem
// run too: they simply never join the store.
package main
