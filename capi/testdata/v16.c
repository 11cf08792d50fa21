/*
 * What OpenSHMEM 1.6 adds, through the generated header: each part cites
 * the specification's wording in brief.
 */
#include <stdint.h>
#include <string.h>

#include "check.h"

/*
 * 1.6, shmem_init: the routines may be called more than once; the library
 * stays initialized until as many shmem_finalize calls balance them.
 * shmem_query_initialized: nonzero while the library is initialized, and
 * it may be called at any time.
 */
static void test_init(void)
{
	int on = -1, provided = -1;
	shmem_query_initialized(&on);
	if (on != 0) {
		fprintf(stderr, "FAIL: initialized before shmem_init\n");
		exit(1);
	}
	shmem_init();
	shmem_query_initialized(&on);
	CHECK(on != 0, "not initialized after shmem_init");
	CHECK(shmem_init_thread(SHMEM_THREAD_SINGLE, &provided) == 0, "second init");
	/* The level stays what the first call set (shmem_init: MULTIPLE). */
	CHECK(provided == SHMEM_THREAD_MULTIPLE, "provided %d", provided);
	shmem_init();
	shmem_finalize();
	shmem_query_initialized(&on);
	CHECK(on != 0, "finalized by the first of three finalize calls");
	shmem_finalize();
	shmem_query_initialized(&on);
	CHECK(on != 0, "finalized by the second of three finalize calls");
	shmem_barrier_all(); /* the library still works */
}

/*
 * 1.6, shmem_signal_add and shmem_signal_set: an atomic update of a
 * remote signal word, atomic with the signal updates of put-with-signal;
 * a fence orders it after earlier puts to the same PE.
 */
static uint64_t sig;
static long data[16];

static void test_signal(void)
{
	int me = shmem_my_pe(), n = shmem_n_pes(), right = (me + 1) % n, left = (me + n - 1) % n;
	shmem_ctx_t ctx;
	CHECK(shmem_ctx_create(0, &ctx) == 0, "ctx_create");
	long one = 1;
	for (int i = 0; i < 10; i++) {
		shmem_signal_add(&sig, 1, right);
		shmem_ctx_signal_add(ctx, &sig, 2, right);
		shmem_long_put_signal_nbi(&data[i], &one, 1, &sig, 4, SHMEM_SIGNAL_ADD, right);
	}
	shmem_quiet();
	shmem_ctx_quiet(ctx);
	uint64_t got = shmem_signal_wait_until(&sig, SHMEM_CMP_GE, 70);
	CHECK(got == 70, "signal counted %llu, want 70", (unsigned long long)got);
	shmem_barrier_all();
	for (uint64_t round = 1; round <= 2; round++) {
		long sent[16];
		for (int i = 0; i < 16; i++)
			sent[i] = me * 1000 + (long)round * 100 + i;
		if (round == 1) {
			shmem_long_put_nbi(data, sent, 16, right);
			shmem_fence();
			shmem_signal_set(&sig, round, right);
		} else {
			shmem_ctx_long_put_nbi(ctx, data, sent, 16, right);
			shmem_ctx_fence(ctx);
			shmem_ctx_signal_set(ctx, &sig, round, right);
		}
		shmem_signal_wait_until(&sig, SHMEM_CMP_EQ, round);
		for (int i = 0; i < 16; i++)
			CHECK(data[i] == left * 1000 + (long)round * 100 + i, "round %llu: data[%d] %ld before its signal",
				(unsigned long long)round, i, data[i]);
		shmem_quiet();
		shmem_ctx_quiet(ctx);
		shmem_barrier_all();
	}
	shmem_ctx_destroy(ctx);
}

int main(void)
{
	test_init();
	test_signal();
	int me = shmem_my_pe();
	shmem_barrier_all();
	printf("v16 ok %d\n", me);
	shmem_finalize();
	int on = -1;
	shmem_query_initialized(&on);
	if (on != 0) {
		fprintf(stderr, "FAIL PE %d: initialized after the last shmem_finalize\n", me);
		return 1;
	}
	return 0;
}
