/* SHMEM_THREAD_MULTIPLE: threads of one PE call at once, on the default
 * context and on contexts of their own. */
#include <pthread.h>

#include "check.h"

#define THREADS 4
#define ROUNDS 200

static long *slots, *count;
static int me, n;

static void *worker(void *arg)
{
	long id = (long)arg;
	int right = (me + 1) % n;
	shmem_ctx_t ctx;
	CHECK(shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx) == 0, "ctx_create in a thread");
	for (long r = 1; r <= ROUNDS; r++) {
		shmem_ctx_long_p(ctx, &slots[id], r, right);
		shmem_ctx_quiet(ctx);
		shmem_long_atomic_inc(count, 0);
	}
	shmem_ctx_destroy(ctx);
	/* the left neighbour's thread id finishes with ROUNDS in slot id */
	shmem_long_wait_until(&slots[id], SHMEM_CMP_EQ, ROUNDS);
	return NULL;
}

int main(void)
{
	int prov;
	CHECK(shmem_init_thread(SHMEM_THREAD_MULTIPLE, &prov) == 0 && prov == SHMEM_THREAD_MULTIPLE, "init_thread");
	me = shmem_my_pe();
	n = shmem_n_pes();
	slots = shmem_calloc(THREADS, sizeof(long));
	count = shmem_calloc(1, sizeof(long));
	shmem_barrier_all();
	pthread_t th[THREADS];
	for (long i = 0; i < THREADS; i++)
		CHECK(pthread_create(&th[i], NULL, worker, (void *)i) == 0, "pthread_create");
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	shmem_barrier_all();
	if (me == 0)
		CHECK(*count == (long)n * THREADS * ROUNDS, "count %ld", *count);
	printf("threads ok %d\n", me);
	shmem_finalize();
	return 0;
}
