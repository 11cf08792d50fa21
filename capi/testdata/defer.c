/*
 * The default context's queued operations (runtime.c: deferred
 * operations, where peers are not mapped): more puts than the queue
 * holds, a fence between data and flag, a source reused as soon as the
 * put returns, a PE that waits for its peer's answer without a quiet of
 * its own (its wait must hand the queue over), non-blocking gets, and
 * quiets and fences with nothing to do.
 */
#include <string.h>

#include "check.h"

#define N 200

static long data[N];
static long flag, answer;

int main(void)
{
	shmem_init();
	int me = shmem_my_pe(), n = shmem_n_pes();
	int right = (me + 1) % n, left = (me + n - 1) % n;

	/* Nothing issued yet: these have nothing to do. */
	shmem_quiet();
	shmem_fence();

	/* Element by element, more than the queue holds, then one quiet. */
	for (int i = 0; i < N; i++)
		shmem_long_p(&data[i], me * 10000 + i, right);
	shmem_quiet();
	shmem_barrier_all();
	for (int i = 0; i < N; i++)
		CHECK(data[i] == left * 10000 + i, "p: data[%d] = %ld", i, data[i]);
	shmem_barrier_all();

	/* The source may change once the put returned. */
	long v = me + 1;
	for (int i = 0; i < N; i++) {
		shmem_long_put(&data[i], &v, 1, right);
		v = -1;
		v = me + 1 + i + 1;
	}
	shmem_barrier_all();
	for (int i = 0; i < N; i++)
		CHECK(data[i] == left + 1 + i, "put: data[%d] = %ld", i, data[i]);
	shmem_barrier_all();

	/* Data, fence, flag: whoever sees the flag sees the data. */
	for (int round = 1; round <= 3; round++) {
		for (int i = 0; i < N; i++)
			shmem_long_p(&data[i], round * 100000 + me * 1000 + i, right);
		shmem_fence();
		shmem_long_p(&flag, round, right);
		shmem_long_wait_until(&flag, SHMEM_CMP_EQ, round);
		for (int i = 0; i < N; i++)
			CHECK(data[i] == round * 100000 + left * 1000 + i, "fence round %d: data[%d] = %ld", round, i, data[i]);
		/*
		 * No quiet: the answer to the left goes out when this PE waits
		 * for its own from the right.
		 */
		shmem_long_p(&answer, round, left);
		shmem_long_wait_until(&answer, SHMEM_CMP_EQ, round);
		shmem_barrier_all();
	}

	/* Non-blocking puts and gets, completed by one quiet. */
	long src[N], got[N];
	for (int i = 0; i < N; i++)
		src[i] = me * 7 + i;
	for (int i = 0; i < N; i++)
		shmem_long_put_nbi(&data[i], &src[i], 1, right);
	shmem_quiet();
	shmem_barrier_all();
	memset(got, 0, sizeof got);
	for (int i = 0; i < N; i++)
		shmem_long_get_nbi(&got[i], &data[i], 1, right);
	shmem_quiet();
	for (int i = 0; i < N; i++)
		CHECK(got[i] == me * 7 + i, "get_nbi: got[%d] = %ld", i, got[i]);

	/* A put, its quiet, then a get of the same word sees the put. */
	shmem_barrier_all();
	shmem_long_p(&data[0], 4242 + me, right);
	shmem_quiet();
	shmem_quiet(); /* nothing left for the second */
	CHECK(shmem_long_g(&data[0], right) == 4242 + me, "g after p and quiet");
	shmem_barrier_all();

	printf("defer ok %d\n", me);
	shmem_finalize();
	return 0;
}
