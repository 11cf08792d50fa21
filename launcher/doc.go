// Package launcher starts a goshmem job: a bootstrap store and NP
// processes, supervised until they have all exited. cmd/oshrun is its
// command line; test code launches PEs as processes through Run too.
//
// # What a PE gets
//
// Each PE runs Options.Program with Options.Args, in its own process
// group, with stdin from /dev/null, and the environment of the caller plus
// Options.Env plus the contract of bootstrap: GOSHMEM_RANK,
// GOSHMEM_SIZE, GOSHMEM_JOBID, GOSHMEM_BOOTSTRAP (the store's host:port)
// and GOSHMEM_SECRET (a fresh random 128-bit secret, hex), and
// GOSHMEM_PROVIDER when Options.Provider is set. Contract variables
// inherited from an enclosing job are removed first.
//
// # How a job ends
//
// The job succeeds when every PE exits with status 0. It is ended early,
// with one line on Stderr naming the PE, its pid and its status or signal,
// when a PE exits non-zero or is killed by a signal, when a PE that joined
// the store exits without finalizing (closing its bootstrap) while others
// run, or when the store loses a PE whose process still runs. Ending
// means SIGTERM to every remaining PE's process group, then SIGKILL after
// Options.Grace. Cancelling the context ends the job the same way.
//
// The PE named, whose status the job takes, is the one that failed first,
// not one that failed because it did: PEs that see a peer die exit too,
// often before the dead one's status reaches the launcher. So a PE killed
// by a signal is the cause; else the PE the store reported lost first
// (its connection ended, or another PE reported it, as one does for a
// stopped process), once its exit status is in or it has run on for
// lostWait after the report; else the first PE that exited non-zero,
// once settleWait has brought no earlier failure to light. That decision
// is the blamer's (blame.go): events in, verdicts out (a wait to arm, the
// PE to blame), with no I/O, so its table tests need no processes.
//
// A PE ends the job on purpose with shmem_global_exit: before it tells
// any other PE, it records its rank and status in the job's directory
// (core.JobDir; internal/globalexit holds the record's format), and Run,
// seeing any PE exit while that record exists, ends the job with the
// recorded status (its low 8 bits), even 0, naming the PE that called
// it. So a PE that leaves as soon as it sees the exit is never blamed for
// leaving. The library ends a job the same way on an error in a routine
// that cannot return one (shmem.World.Abort): its record holds the
// reason, which Run repeats instead of naming a global_exit nobody called.
//
// # Lifetimes and ownership
//
// Run owns everything it creates and releases it before returning: the
// store (its listener and goroutines), one waiter goroutine per PE, exec's
// output-copying goroutines, and the timers. It returns only after every
// PE has been reaped; it then removes the job's shared-memory directory
// (core.JobDir, as the PEs' environment defines it), which providers
// create and may leave behind when a PE crashes. Run owns that directory
// too (core.MakeJobDir) from before the first PE starts, so another
// job's sweep never takes it for a dead job's while the PEs' exits,
// and the global exit record that explains them, are still being read. Before it starts a job it
// removes the directories of dead jobs (core.SweepJobDirs): a launcher
// killed outright cleans nothing, and its PEs die with it. On Linux PEs are started
// with Pdeathsig=SIGKILL, so they die with the launcher even if it is killed
// outright. The kernel ties Pdeathsig to the thread that started the
// child, so Run keeps its goroutine locked to its thread until the job is
// over.
//
// Output: untagged PE output goes straight to Stdout and Stderr when they
// are files, or through a mutex otherwise. Tagged output is cut into whole
// lines (at most 64 KiB each) and every line is written at once, so lines
// of different PEs never interleave.
package launcher
