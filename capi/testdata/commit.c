/* A heap block whose memory the shared-memory file system cannot hold:
 * NULL from every allocation routine on every PE, the old block kept by
 * realloc, and the job goes on. Run with GOSHMEM_SHM_DIR on a file system
 * of the test's own, which PE 0 fills to the brim after init. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "check.h"

#define BIG ((size_t)8 << 20)

int main(void)
{
	shmem_init();
	int me = shmem_my_pe();
	const char *dir = getenv("GOSHMEM_SHM_DIR");
	CHECK(dir && *dir, "GOSHMEM_SHM_DIR is set");
	char *small = shmem_malloc(64);
	CHECK(small, "a small block while there is room");
	memset(small, 'x', 64);

	char path[4096];
	snprintf(path, sizeof path, "%s/filler", dir);
	int fd = -1;
	if (me == 0) {
		struct statvfs st;
		CHECK(statvfs(dir, &st) == 0, "statvfs %s", dir);
		fd = open(path, O_CREAT | O_EXCL | O_RDWR, 0600);
		CHECK(fd >= 0, "create %s", path);
		int err = posix_fallocate(fd, 0, (off_t)st.f_bavail * (off_t)st.f_frsize);
		CHECK(err == 0, "fill %s: %s", dir, strerror(err));
	}
	shmem_barrier_all();

	CHECK(shmem_malloc(BIG) == NULL, "malloc of a block nobody can commit");
	CHECK(shmem_calloc(1, BIG) == NULL, "calloc");
	CHECK(shmem_align(1 << 20, BIG) == NULL, "align");
	CHECK(shmem_malloc_with_hints(BIG, SHMEM_MALLOC_ATOMICS_REMOTE) == NULL, "malloc_with_hints");
	CHECK(shmem_realloc(small, BIG) == NULL, "realloc");
	CHECK(small[63] == 'x', "realloc keeps the old block");
	shmem_barrier_all();

	if (me == 0) {
		close(fd);
		CHECK(unlink(path) == 0, "remove %s", path);
	}
	shmem_barrier_all();
	char *big = shmem_malloc(BIG);
	CHECK(big, "malloc once there is room again");
	big[BIG - 1] = 1;
	shmem_free(big);
	shmem_free(small);
	shmem_barrier_all();
	printf("commit ok %d\n", me);
	shmem_finalize();
	return 0;
}
