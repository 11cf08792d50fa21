/* The symmetric heap from C: every allocation routine and its edge cases. */
#include <stdint.h>
#include <string.h>

#include "check.h"

int main(void)
{
	shmem_init();
	int me = shmem_my_pe(), n = shmem_n_pes();
	CHECK(shmem_malloc(0) == NULL, "malloc(0)");
	shmem_free(NULL);
	char *a = shmem_align(4096, 100);
	CHECK(a && ((uintptr_t)a & 4095) == 0, "align");
	memset(a, 'x', 100);
	char *b = shmem_realloc(a, 10000);
	CHECK(b && b[99] == 'x', "realloc keeps the contents");
	b[9999] = (char)me;
	shmem_barrier_all();
	CHECK(shmem_char_g(&b[9999], (me + 1) % n) == (char)((me + 1) % n), "realloc is symmetric");
	long *h = shmem_malloc_with_hints(16, SHMEM_MALLOC_ATOMICS_REMOTE | SHMEM_MALLOC_SIGNAL_REMOTE);
	CHECK(h, "malloc_with_hints");
	CHECK(shmem_realloc(h, 0) == NULL, "realloc to 0 frees");
	/* more than the heap: NULL on every PE, and the job goes on */
	CHECK(shmem_malloc((size_t)1 << 40) == NULL, "a request larger than the heap");
	void *old = shmalloc(64);
	CHECK(old, "shmalloc");
	shfree(old);
	shmem_free(b);
	shmem_barrier_all();
	printf("memory ok %d\n", me);
	shmem_finalize();
	return 0;
}
