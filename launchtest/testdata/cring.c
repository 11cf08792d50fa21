/* cring: each PE passes a block round the ring for a number of rounds
 * and checks what it received; PE 0 prints "cring: N PEs, R rounds:
 * verified". With a third argument, PE 1 calls shmem_global_exit with
 * that status once every PE has started. */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>

#define N 1024

static long block[N];
static long sent[N];

int main(int argc, char **argv) {
	long rounds = argc > 1 ? atol(argv[1]) : 100;
	shmem_init();
	int me = shmem_my_pe(), npes = shmem_n_pes();
	int right = (me + 1) % npes, left = (me + npes - 1) % npes;
	if (argc > 2) {
		shmem_barrier_all();
		if (me == 1 % npes) {
			shmem_global_exit(atoi(argv[2]));
		}
		for (;;) {
			shmem_barrier_all(); /* until the global exit ends this PE */
		}
	}
	for (long r = 0; r < rounds; r++) {
		for (int i = 0; i < N; i++) {
			sent[i] = r * npes * N + me * N + i;
		}
		shmem_long_put(block, sent, N, right);
		shmem_barrier_all();
		for (int i = 0; i < N; i++) {
			long want = r * npes * N + left * N + i;
			if (block[i] != want) {
				fprintf(stderr, "cring: PE %d round %ld: block[%d] = %ld, want %ld\n", me, r, i, block[i], want);
				shmem_global_exit(3);
			}
		}
		shmem_barrier_all();
	}
	if (me == 0) {
		printf("cring: %d PEs, %ld rounds: verified\n", npes, rounds);
	}
	shmem_finalize();
	return 0;
}
