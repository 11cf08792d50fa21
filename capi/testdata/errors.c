/* Programs that must end the job: one per argument. */
#include <string.h>

#include "check.h"

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "";
	if (strcmp(what, "before-init") == 0) {
		static long x;
		shmem_long_p(&x, 1, 0);
		return 0;
	}
	shmem_init();
	int me = shmem_my_pe(), n = shmem_n_pes();
	long *x = shmem_malloc(sizeof(long));
	shmem_barrier_all();
	if (strcmp(what, "bad-pe") == 0) {
		if (me == 0)
			shmem_long_p(x, 1, n);
		shmem_barrier_all();
	} else if (strcmp(what, "not-symmetric") == 0) {
		long local;
		if (me == n - 1)
			shmem_long_put(&local, &local, 1, 0);
		shmem_barrier_all();
	} else if (strcmp(what, "global-exit") == 0) {
		/* the others wait in a barrier that never completes */
		if (me == n - 1)
			shmem_global_exit(7);
		shmem_barrier_all();
		shmem_barrier_all();
	} else if (strcmp(what, "no-finalize") == 0) {
		/* leaving main finalizes */
		printf("left %d\n", me);
		return 0;
	}
	shmem_finalize();
	return 0;
}
