/*
 * The default context's queued operations (runtime.c: deferred
 * operations, where peers are not mapped): more puts than the queue
 * holds, a fence between data and flag, a source reused as soon as the
 * put returns, a PE that waits for its peer's answer without a quiet of
 * its own (its wait must hand the queue over), non-blocking gets, and
 * quiets and fences with nothing to do. At SHMEM_THREAD_MULTIPLE (the
 * default) threads also queue on the default context at once; with the
 * argument "serialized" the program runs at SHMEM_THREAD_SERIALIZED,
 * where the queue takes no lock, and without threads.
 */
#include <pthread.h>
#include <string.h>

#include "check.h"

#define N 200

#define THREADS 4

static long data[N];
static long flag, answer;
static long slots[THREADS][N];
static int me, n, right, left;

/* Thread id puts its slots to the right, quieting now and then. */
static void *worker(void *arg)
{
	long id = (long)arg;
	for (int i = 0; i < N; i++) {
		shmem_long_p(&slots[id][i], id * 100000 + me * 1000 + i, right);
		if (i % 7 == 0)
			shmem_quiet();
		if (i % 11 == 0)
			shmem_fence();
	}
	shmem_quiet();
	return NULL;
}

int main(int argc, char **argv)
{
	int serialized = argc > 1 && strcmp(argv[1], "serialized") == 0, prov;
	CHECK(shmem_init_thread(serialized ? SHMEM_THREAD_SERIALIZED : SHMEM_THREAD_MULTIPLE, &prov) == 0, "init_thread");
	me = shmem_my_pe(), n = shmem_n_pes();
	right = (me + 1) % n, left = (me + n - 1) % n;

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

	if (!serialized) {
		CHECK(prov == SHMEM_THREAD_MULTIPLE, "thread level %d", prov);
		pthread_t th[THREADS];
		for (long i = 0; i < THREADS; i++)
			CHECK(pthread_create(&th[i], NULL, worker, (void *)i) == 0, "pthread_create");
		for (int i = 0; i < THREADS; i++)
			pthread_join(th[i], NULL);
		shmem_barrier_all();
		for (long id = 0; id < THREADS; id++)
			for (int i = 0; i < N; i++)
				CHECK(slots[id][i] == id * 100000 + left * 1000 + i, "thread %ld: slots[%d] = %ld", id, i, slots[id][i]);
	}

	printf("defer ok %d\n", me);
	shmem_finalize();
	return 0;
}
