/* Atomics of several types, fetching and not, blocking and not; locks. */
#include "check.h"

static long lock;

int main(void)
{
	shmem_init();
	int me = shmem_my_pe(), n = shmem_n_pes();
	long *l = shmem_calloc(4, sizeof(long));
	int *i = shmem_calloc(4, sizeof(int));
	unsigned int *u = shmem_calloc(2, sizeof(unsigned int));
	double *d = shmem_calloc(2, sizeof(double));
	float *f = shmem_calloc(2, sizeof(float));
	CHECK(l && i && u && d && f, "calloc");
	CHECK(l[0] == 0 && l[3] == 0, "calloc zeroes");
	shmem_barrier_all();

	shmem_long_atomic_add(&l[0], me + 1, 0);
	shmem_long_atomic_inc(&l[1], 0);
	long old = shmem_long_atomic_fetch_add(&l[2], 10, 0);
	CHECK(old % 10 == 0 && old < 10 * n, "fetch_add old %ld", old);
	shmem_int_atomic_fetch_inc(&i[0], 0);
	shmem_uint_atomic_or(&u[0], 1u << me, 0);
	shmem_barrier_all();
	if (me == 0) {
		CHECK(l[0] == (long)n * (n + 1) / 2, "add: %ld", l[0]);
		CHECK(l[1] == n, "inc: %ld", l[1]);
		CHECK(l[2] == 10L * n, "fetch_add: %ld", l[2]);
		CHECK(i[0] == n, "int fetch_inc: %d", i[0]);
		CHECK(u[0] == (1u << n) - 1, "or: %x", u[0]);
	}
	shmem_barrier_all();

	/* compare-swap: exactly one PE wins */
	int prev = shmem_int_atomic_compare_swap(&i[1], 0, me + 1, 0);
	shmem_barrier_all();
	int winner = shmem_int_atomic_fetch(&i[1], 0);
	CHECK(winner >= 1 && winner <= n, "cswap winner %d", winner);
	CHECK((prev == 0) == (winner == me + 1), "cswap: prev %d winner %d", prev, winner);

	/* floating point: set, fetch, swap */
	shmem_double_atomic_set(&d[0], 2.5 + me, me);
	CHECK(shmem_double_atomic_fetch(&d[0], me) == 2.5 + me, "double set/fetch");
	float was = shmem_float_atomic_swap(&f[0], 1.5f, me);
	CHECK(was == 0.0f && shmem_float_atomic_fetch(&f[0], me) == 1.5f, "float swap");

	/* non-blocking fetching forms, written by quiet */
	shmem_barrier_all();
	long fetched = -1;
	shmem_long_atomic_fetch_add_nbi(&fetched, &l[3], 1, (me + 1) % n);
	shmem_quiet();
	CHECK(fetched == 0, "fetch_add_nbi %ld", fetched);
	shmem_barrier_all();

	/* context atomics */
	shmem_ctx_t ctx;
	CHECK(shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx) == 0, "ctx_create");
	shmem_ctx_long_atomic_add(ctx, &l[3], 100, 0);
	shmem_ctx_quiet(ctx);
	shmem_ctx_destroy(ctx);
	shmem_barrier_all();
	if (me == 0)
		CHECK(l[3] == 1 + 100L * n, "ctx add: %ld", l[3]);

	/* a lock around a read-modify-write of PE 0's word */
	shmem_barrier_all();
	for (int k = 0; k < 20; k++) {
		shmem_set_lock(&lock);
		long v = shmem_long_g(&l[1], 0);
		shmem_long_p(&l[1], v + 1, 0);
		shmem_clear_lock(&lock);
	}
	shmem_barrier_all();
	if (me == 0)
		CHECK(l[1] == n + 20L * n, "lock: %ld", l[1]);
	if (shmem_test_lock(&lock) == 0)
		shmem_clear_lock(&lock);

	shmem_barrier_all();
	printf("amo ok %d\n", me);
	shmem_finalize();
	return 0;
}
