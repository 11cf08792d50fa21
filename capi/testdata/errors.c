/* Programs that must end the job: one per argument. */
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "check.h"

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "";
	if (strcmp(what, "before-init") == 0) {
		static long x;
		shmem_long_p(&x, 1, 0);
		return 0;
	}
	shmem_init();
	int me = shmem_my_pe(), n = shmem_n_pes();
	long *x = shmem_malloc(sizeof(long));
	shmem_barrier_all();
	if (strcmp(what, "bad-pe") == 0) {
		if (me == 0)
			shmem_long_p(x, 1, n);
		shmem_barrier_all();
	} else if (strcmp(what, "not-symmetric") == 0) {
		long local;
		if (me == n - 1)
			shmem_long_put(&local, &local, 1, 0);
		shmem_barrier_all();
	} else if (strncmp(what, "overflow-", 9) == 0) {
		/*
		 * A count whose bytes size_t cannot hold: multiplied out
		 * unchecked it wraps to one element's 8 bytes, which move.
		 */
		const size_t huge = SIZE_MAX / sizeof(long) + 2;
		const char *r = what + 9;
		static uint64_t sig;
		static long psync[SHMEM_COLLECT_SYNC_SIZE];
		*x = 0;
		if (me == 0) {
			if (strcmp(r, "put") == 0)
				shmem_long_put(x, x, huge, 1);
			else if (strcmp(r, "put_nbi") == 0)
				shmem_long_put_nbi(x, x, huge, 1);
			else if (strcmp(r, "get") == 0)
				shmem_long_get(x, x, huge, 1);
			else if (strcmp(r, "get_nbi") == 0)
				shmem_long_get_nbi(x, x, huge, 1);
			else if (strcmp(r, "put64") == 0)
				shmem_put64(x, x, SIZE_MAX / 8 + 2, 1);
			else if (strcmp(r, "put_signal") == 0)
				shmem_long_put_signal(x, x, huge, &sig, 1, SHMEM_SIGNAL_SET, 1);
			else if (strcmp(r, "iput") == 0)
				/* 2 strides of 2^60 elements of 8 bytes are 2^64 bytes: 0 */
				shmem_long_iput(x, x, (ptrdiff_t)1 << 60, 1, 3, 1);
			else if (strcmp(r, "ibput") == 0)
				/* 3 blocks 2^60 elements apart, of 8 bytes, wrap to 8 bytes */
				shmem_long_ibput(x, x, (ptrdiff_t)1 << 60, 1, 1, 3, 1);
			else if (strcmp(r, "ibget") == 0)
				shmem_long_ibget(x, x, 1, (ptrdiff_t)1 << 62, 1, 5, 1);
			else if (strcmp(r, "iget") == 0)
				shmem_long_iget(x, x, 1, 1, huge, 1);
			else if (strcmp(r, "test_all") == 0)
				(void)shmem_long_test_all(x, huge, NULL, SHMEM_CMP_EQ, 1);
			else if (strcmp(r, "broadcast") == 0)
				(void)shmem_long_broadcast(SHMEM_TEAM_WORLD, x, x, huge, 0);
			else if (strcmp(r, "fcollect64") == 0)
				shmem_fcollect64(x, x, SIZE_MAX / 8 + 2, 0, 0, n, psync);
			else if (strcmp(r, "alltoalls") == 0)
				(void)shmem_long_alltoalls(SHMEM_TEAM_WORLD, x, x, 1, 1, huge);
			else if (strcmp(r, "wait_until_any") == 0)
				(void)shmem_long_wait_until_any(x, huge, NULL, SHMEM_CMP_EQ, 0);
			printf("returned from %s\n", r);
		}
		shmem_barrier_all();
	} else if (strcmp(what, "pe-quiet-bad-pe") == 0) {
		int pes[2] = { 0, n };
		if (me == 0)
			shmem_pe_quiet(pes, 2);
		shmem_barrier_all();
	} else if (strcmp(what, "bad-free") == 0) {
		long local;
		shmem_free(&local);
	} else if (strcmp(what, "global-exit") == 0) {
		/* the others wait in a barrier that never completes */
		if (me == n - 1)
			shmem_global_exit(7);
		shmem_barrier_all();
		shmem_barrier_all();
	} else if (strcmp(what, "finalize-in-barrier") == 0 || strcmp(what, "exit-in-barrier") == 0) {
		/* PE 1 finalizes (or leaves main, which finalizes) where the
		 * others call a barrier: theirs must not complete */
		if (me == 1) {
			if (what[0] == 'e')
				return 0;
			shmem_finalize();
			return 0;
		}
		shmem_barrier_all();
		printf("PE %d passed a barrier PE 1 never reached\n", me);
	} else if (strcmp(what, "sleep-in-barrier") == 0) {
		/* the last PE keeps the others waiting past GOSHMEM_WAIT_REPORT */
		if (me == n - 1)
			nanosleep(&(struct timespec){1, 500000000}, NULL);
		shmem_barrier_all();
		printf("PE %d passed\n", me);
	} else if (strcmp(what, "no-finalize") == 0) {
		/* leaving main finalizes */
		printf("left %d\n", me);
		return 0;
	}
	shmem_finalize();
	return 0;
}
