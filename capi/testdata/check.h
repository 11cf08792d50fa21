/* What the test programs share: a check that ends the job naming the line. */
#ifndef CHECK_H
#define CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include <shmem.h>

#define CHECK(cond, ...)                                                            \
	do {                                                                        \
		if (!(cond)) {                                                      \
			fprintf(stderr, "FAIL PE %d %s:%d: ", shmem_my_pe(), __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                               \
			fprintf(stderr, "\n");                                      \
			shmem_global_exit(1);                                       \
		}                                                                   \
	} while (0)

#endif
