/* Collectives on teams and on active sets, reductions of every kind. */
#include <complex.h>
#include <string.h>

#include "check.h"

static long pSync[SHMEM_REDUCE_SYNC_SIZE];
static long pWrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE + 64];

int main(void)
{
	shmem_init();
	int me = shmem_my_pe(), n = shmem_n_pes();
	for (int k = 0; k < SHMEM_REDUCE_SYNC_SIZE; k++)
		pSync[k] = SHMEM_SYNC_VALUE;
	long *src = shmem_malloc(8 * sizeof(long));
	long *dst = shmem_malloc(8 * n * sizeof(long));
	for (int k = 0; k < 8; k++)
		src[k] = me * 10 + k;
	shmem_barrier_all();

	/* broadcast from the last PE */
	CHECK(shmem_long_broadcast(SHMEM_TEAM_WORLD, dst, src, 8, n - 1) == 0, "broadcast");
	CHECK(dst[7] == (n - 1) * 10 + 7, "broadcast: %ld", dst[7]);

	/* fcollect, and collect of me+1 elements each */
	shmem_long_fcollect(SHMEM_TEAM_WORLD, dst, src, 2);
	for (int p = 0; p < n; p++)
		CHECK(dst[2 * p + 1] == p * 10 + 1, "fcollect: dst[%d] = %ld", 2 * p + 1, dst[2 * p + 1]);
	shmem_long_collect(SHMEM_TEAM_WORLD, dst, src, me + 1);
	for (int p = 0, at = 0; p < n; at += ++p)
		CHECK(dst[at + p] == p * 10 + p, "collect: PE %d's last at %d: %ld", p, at + p, dst[at + p]);

	/* alltoall: element p of my block goes to PE p */
	long *a = shmem_malloc(n * 2 * sizeof(long));
	for (int p = 0; p < n; p++)
		a[2 * p] = me * 100 + p, a[2 * p + 1] = -1;
	shmem_barrier_all();
	shmem_long_alltoall(SHMEM_TEAM_WORLD, dst, a, 2);
	for (int p = 0; p < n; p++)
		CHECK(dst[2 * p] == p * 100 + me, "alltoall: from %d: %ld", p, dst[2 * p]);

	/* reductions */
	int *is = shmem_malloc(3 * sizeof(int)), *id = shmem_malloc(3 * sizeof(int));
	unsigned *us = shmem_malloc(sizeof(unsigned)), *ud = shmem_malloc(sizeof(unsigned));
	is[0] = me + 1; is[1] = 1 << me; is[2] = -me;
	*us = 1u << me;
	shmem_barrier_all();
	shmem_int_prod_reduce(SHMEM_TEAM_WORLD, id, is, 1);
	long fact = 1;
	for (int p = 1; p <= n; p++)
		fact *= p;
	CHECK(id[0] == fact, "prod: %d", id[0]);
	shmem_uint_or_reduce(SHMEM_TEAM_WORLD, ud, us, 1);
	CHECK(*ud == (1u << n) - 1, "or: %u", *ud);
	shmem_int_min_reduce(SHMEM_TEAM_WORLD, id, is, 3);
	CHECK(id[2] == -(n - 1), "min: %d", id[2]);
	double *ds = shmem_malloc(2 * sizeof(double));
	ds[0] = 0.5 * me; ds[1] = me;
	shmem_double_max_reduce(SHMEM_TEAM_WORLD, ds, ds, 2); /* in place */
	CHECK(ds[0] == 0.5 * (n - 1), "double max in place: %g", ds[0]);
	double _Complex *cs = shmem_malloc(sizeof(double _Complex)), *cd = shmem_malloc(sizeof(double _Complex));
	*cs = me + 1.0 * I;
	shmem_complexd_sum_reduce(SHMEM_TEAM_WORLD, cd, cs, 1);
	CHECK(creal(*cd) == n * (n - 1) / 2.0 && cimag(*cd) == n, "complex sum");
	long double *ls = shmem_malloc(2 * sizeof(long double)), *ld = shmem_malloc(2 * sizeof(long double));
	ls[0] = me + 0.25L; ls[1] = me + 1;
	shmem_longdouble_sum_reduce(SHMEM_TEAM_WORLD, ld, ls, 2);
	CHECK(ld[0] == n * (n - 1) / 2.0L + n * 0.25L, "long double sum: %Lg", ld[0]);
	shmem_longdouble_prod_reduce(SHMEM_TEAM_WORLD, ls, ls, 2); /* in place */
	CHECK(ls[1] == (long double)fact, "long double prod in place: %Lg", ls[1]);

	/* active sets: every PE, then the even ones */
	shmem_barrier(0, 0, n, pSync);
	shmem_sync(0, 0, n, pSync);
	shmem_barrier_all();
	memset(dst, 0, 8 * sizeof(long));
	shmem_barrier_all();
	shmem_broadcast64(dst, src, 8, 0, 0, 0, n, pSync);
	if (me != 0)
		CHECK(dst[3] == 3, "broadcast64: %ld", dst[3]);
	shmem_barrier_all();
	shmem_fcollect64(dst, src, 1, 0, 0, n, pSync);
	CHECK(dst[n - 1] == (n - 1) * 10, "fcollect64: %ld", dst[n - 1]);
	shmem_barrier_all();
	if (me % 2 == 0) {
		int evens = (n + 1) / 2;
		shmem_long_sum_to_all(dst, src, 4, 0, 1, evens, pWrk, pSync);
		long want = 0;
		for (int p = 0; p < n; p += 2)
			want += p * 10 + 3;
		CHECK(dst[3] == want, "sum_to_all on the even PEs: %ld", dst[3]);
	}
	shmem_barrier_all();

	shmem_sync_all();
	CHECK(shmem_team_sync(SHMEM_TEAM_WORLD) == 0, "team_sync");
	CHECK(shmem_long_sum_reduce(SHMEM_TEAM_INVALID, dst, src, 1) != 0, "a reduction on SHMEM_TEAM_INVALID fails");
	printf("coll ok %d\n", me);
	shmem_finalize();
	return 0;
}
