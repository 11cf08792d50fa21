/*
 * The profiling interface: one pshmem_ routine of each family does what
 * its shmem_ name does, and a program's own shmem_ routine wraps the
 * library's pshmem_ one, as a profiling tool's does.
 */
#include <pshmem.h>

#include "check.h"

static long dest[4];
static long psync[SHMEM_BARRIER_SYNC_SIZE];
static long lock;
static uint64_t sig;
static long flag;

/* A tool's wrapper: it counts the program's calls and passes them on. */
static int barriers;

void shmem_barrier_all(void)
{
	barriers++;
	pshmem_barrier_all();
}

int main(void)
{
	pshmem_init();
	int me = pshmem_my_pe(), n = pshmem_n_pes();
	int right = (me + 1) % n, left = (me + n - 1) % n;
	for (int i = 0; i < SHMEM_BARRIER_SYNC_SIZE; i++)
		psync[i] = SHMEM_SYNC_VALUE;

	/* teams and memory */
	CHECK(pshmem_team_my_pe(SHMEM_TEAM_WORLD) == me, "team_my_pe");
	long *heap = pshmem_malloc(4 * sizeof(long));
	CHECK(heap != NULL, "malloc");
	shmem_barrier_all();

	/* contexts and RMA */
	shmem_ctx_t ctx;
	CHECK(pshmem_ctx_create(0, &ctx) == 0, "ctx_create");
	long src[4] = {me, me + 1, me + 2, me + 3};
	pshmem_ctx_long_put(ctx, dest, src, 4, right);
	pshmem_ctx_quiet(ctx);
	pshmem_ctx_destroy(ctx);
	shmem_barrier_all();
	for (int i = 0; i < 4; i++)
		CHECK(dest[i] == left + i, "put: dest[%d] = %ld", i, dest[i]);
	CHECK(pshmem_long_g(&dest[1], right) == me + 1, "g");

	/* AMOs */
	heap[0] = 0;
	shmem_barrier_all();
	pshmem_long_atomic_fetch_add(&heap[0], 1, 0);
	shmem_barrier_all();
	if (me == 0)
		CHECK(heap[0] == n, "fetch_add: %ld", heap[0]);

	/* put with signal and the signal's wait */
	pshmem_putmem_signal(&heap[1], &src[0], sizeof(long), &sig, 1, SHMEM_SIGNAL_ADD, right);
	pshmem_signal_wait_until(&sig, SHMEM_CMP_EQ, 1);
	CHECK(pshmem_signal_fetch(&sig) == 1, "signal");
	CHECK(heap[1] == left, "put_signal: %ld", heap[1]);

	/* point-to-point synchronization and ordering */
	pshmem_long_p(&flag, 1, right);
	pshmem_fence();
	pshmem_quiet();
	pshmem_long_wait_until(&flag, SHMEM_CMP_EQ, 1);

	/* collectives, on teams and on active sets */
	long sum;
	heap[2] = me;
	shmem_barrier_all();
	CHECK(pshmem_long_sum_reduce(SHMEM_TEAM_WORLD, &heap[3], &heap[2], 1) == 0, "sum_reduce");
	sum = heap[3];
	CHECK(sum == (long)n * (n - 1) / 2, "sum_reduce: %ld", sum);
	pshmem_barrier(0, 0, n, psync);
	pshmem_sync_all();

	/* locks */
	pshmem_set_lock(&lock);
	pshmem_clear_lock(&lock);

	/* deprecated cache management */
	pshmem_udcflush();

	shmem_barrier_all();
	CHECK(barriers == 6, "the program's shmem_barrier_all ran %d times, want 6", barriers);
	pshmem_free(heap);
	printf("pshmem ok %d\n", me);
	pshmem_finalize();
	return 0;
}
