/* Puts and gets of every shape, into the heap and into static variables. */
#include <string.h>

#include "check.h"

static long ring[8];         /* bss */
static int counter = 42;     /* data */
static uint64_t sig;         /* a static signal word */

int main(void)
{
	shmem_init();
	int me = shmem_my_pe(), n = shmem_n_pes();
	int right = (me + 1) % n, left = (me + n - 1) % n;

	long *heap = shmem_malloc(16 * sizeof(long));
	CHECK(heap != NULL, "malloc");
	long src[16];
	for (int i = 0; i < 16; i++)
		src[i] = me * 1000 + i;

	/* put, get, p, g on the heap */
	shmem_long_put(heap, src, 16, right);
	shmem_barrier_all();
	for (int i = 0; i < 16; i++)
		CHECK(heap[i] == left * 1000 + i, "put: heap[%d] = %ld", i, heap[i]);
	long got[16];
	shmem_long_get(got, heap, 16, right);
	for (int i = 0; i < 16; i++)
		CHECK(got[i] == me * 1000 + i, "get: got[%d] = %ld", i, got[i]);
	CHECK(shmem_long_g(&heap[5], left) == ((left + n - 1) % n) * 1000 + 5, "g");
	shmem_barrier_all();
	shmem_int_p((int *)heap, me, right);
	shmem_barrier_all();
	CHECK(*(int *)heap == left, "p: %d", *(int *)heap);

	/* strided */
	shmem_barrier_all();
	memset(heap, 0, 16 * sizeof(long));
	shmem_barrier_all();
	shmem_long_iput(heap, src, 2, 3, 5, right); /* heap[0,2,..8] = src[0,3,..12] */
	shmem_barrier_all();
	for (int i = 0; i < 5; i++)
		CHECK(heap[2 * i] == left * 1000 + 3 * i, "iput: heap[%d] = %ld", 2 * i, heap[2 * i]);
	memset(got, 0, sizeof got);
	shmem_long_iget(got, heap, 1, 2, 5, right);
	for (int i = 0; i < 5; i++)
		CHECK(got[i] == me * 1000 + 3 * i, "iget: got[%d] = %ld", i, got[i]);

	/* non-blocking, completed by quiet */
	shmem_barrier_all();
	shmem_long_put_nbi(heap + 8, src, 8, right);
	shmem_quiet();
	shmem_barrier_all();
	CHECK(heap[15] == left * 1000 + 7, "put_nbi");
	shmem_long_get_nbi(got, heap + 8, 8, left);
	shmem_quiet();
	CHECK(got[7] == ((left + n - 1) % n) * 1000 + 7, "get_nbi");

	/* static variables as targets and sources */
	shmem_barrier_all();
	shmem_long_put(ring, src, 8, right);
	shmem_int_atomic_add(&counter, 1, 0);
	shmem_barrier_all();
	CHECK(ring[7] == left * 1000 + 7, "static put: %ld", ring[7]);
	if (me == 0)
		CHECK(counter == 42 + n, "static atomic: %d", counter);
	CHECK(shmem_int_g(&counter, 0) == 42 + n, "static g");
	CHECK(shmem_addr_accessible(ring, right), "static addr_accessible");

	/* put with signal into static data */
	shmem_barrier_all();
	shmem_long_put_signal(ring, src, 4, &sig, 1, SHMEM_SIGNAL_ADD, right);
	uint64_t s = shmem_signal_wait_until(&sig, SHMEM_CMP_GE, 1);
	CHECK(s == 1 && ring[3] == left * 1000 + 3, "put_signal: sig %llu ring[3] %ld", (unsigned long long)s, ring[3]);
	CHECK(shmem_signal_fetch(&sig) == 1, "signal_fetch");

	/* shmem_ptr: this PE's own address at least */
	CHECK(shmem_ptr(heap, me) == heap, "ptr to self");
	CHECK(shmem_pe_accessible(right) && !shmem_pe_accessible(n), "pe_accessible");
	CHECK(!shmem_addr_accessible(src, right), "a stack address is not symmetric");

	shmem_barrier_all();
	shmem_free(heap);
	printf("rma ok %d\n", me);
	shmem_finalize();
	return 0;
}
