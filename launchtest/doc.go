// Package launchtest runs goshmem programs, Go and C, under the launchers
// clusters run, against their real daemons, as a user would: a
// single-node Slurm of its own (munged, slurmctld and slurmd on free
// ports, in a temporary directory) for srun --mpi=pmix and srun
// --mpi=pmi2, and Open MPI's mpirun. Each test verifies the program's
// results with no goshmem variable set, and kills one PE to check that the
// job ends naming it. A test skips, saying why, only where a launcher is
// not installed or its daemons cannot start.
//
// The package holds tests only; its one Slurm is started by the first
// test that needs it and stopped by TestMain.
package launchtest
