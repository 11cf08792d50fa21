/* Waits and tests in every form, woken by other PEs. */
#include "check.h"

int main(void)
{
	shmem_init();
	int me = shmem_my_pe(), n = shmem_n_pes();
	int right = (me + 1) % n, left = (me + n - 1) % n;
	long *flag = shmem_calloc(1, sizeof(long));
	int *vars = shmem_calloc(4, sizeof(int));
	shmem_barrier_all();

	CHECK(shmem_long_test(flag, SHMEM_CMP_EQ, 0), "test");
	CHECK(!shmem_long_test(flag, SHMEM_CMP_NE, 0), "test ne");
	shmem_barrier_all(); /* before PE 1 stores into PE 0's flag */

	/* one variable, a while after the waiter started */
	if (me == 0) {
		shmem_long_wait_until(flag, SHMEM_CMP_EQ, 7);
	} else if (me == 1) {
		for (volatile int k = 0; k < 2000000; k++)
			;
		shmem_long_p(flag, 7, 0);
	}
	shmem_barrier_all();

	/* any: the left neighbour sets vars[2] */
	shmem_int_p(&vars[2], me + 1, right);
	size_t idx = shmem_int_wait_until_any(vars, 4, NULL, SHMEM_CMP_NE, 0);
	CHECK(idx == 2 && vars[2] == left + 1, "any: %zu, vars[2] = %d", idx, vars[2]);
	int status[4] = {0, 0, 1, 0};
	CHECK(shmem_int_test_any(vars, 4, status, SHMEM_CMP_NE, 0) == SIZE_MAX, "test_any with the ready one excluded");
	shmem_barrier_all();

	/* all and some */
	for (int k = 0; k < 4; k++)
		shmem_int_atomic_set(&vars[k], 5, right);
	shmem_int_wait_until_all(vars, 4, NULL, SHMEM_CMP_EQ, 5);
	size_t got[4];
	size_t c = shmem_int_test_some(vars, 4, got, NULL, SHMEM_CMP_EQ, 5);
	CHECK(c == 4 && got[3] == 3, "test_some %zu", c);
	c = shmem_int_wait_until_some(vars, 4, got, status, SHMEM_CMP_GE, 5);
	CHECK(c == 3, "wait_until_some %zu", c);
	int want[4] = {5, 5, 5, 5};
	shmem_int_wait_until_all_vector(vars, 4, NULL, SHMEM_CMP_EQ, want);
	CHECK(shmem_int_test_all_vector(vars, 4, NULL, SHMEM_CMP_EQ, want), "test_all_vector");

	shmem_barrier_all();
	printf("wait ok %d\n", me);
	shmem_finalize();
	return 0;
}
