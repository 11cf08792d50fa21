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

int main(void)
{
	test_init();
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
