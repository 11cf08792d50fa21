/*
 * The window path (window.h) against the Go side of ntbring's direct
 * puts, in one job over ntbring (window_test.go runs it under oshrun).
 * Every wait is bounded: a lost wake-up or a lost put fails, never hangs.
 *
 *   window show         prints, per PE, whether the window path is on and
 *                       which PEs it reaches
 *   window stream N     PE 0 puts N values into PE 1's array (shmem_long_p
 *                       by the window path, and every 64th element in a
 *                       putmem of 8 KiB, which Go does by DMA over the same
 *                       link and whose notices share the link's words),
 *                       then sets a flag; PE 1 sleeps in wait_until on it
 *                       and checks every element. Prints the calls into Go
 *                       for notices, which must be fewer than the puts.
 *   window threads N    as stream, but the small puts from one thread and
 *                       the 8 KiB ones from another (SHMEM_THREAD_MULTIPLE)
 *   window cut N        PE 0 puts rounds of N values to PE 1 until the link
 *                       it stores through is cut (GOSHMEM_NTB_FAULT), then
 *                       one round more; PE 1 checks every round: nothing
 *                       lost, each value the round's
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <shmem.h>

#include "window.h"

static int me, npes;
static const struct gsh_win_map *win;

static void fail(const char *what, long a, long b)
{
	fprintf(stderr, "window: PE %d: %s (%ld, %ld)\n", me, what, a, b);
	fflush(stderr);
	shmem_global_exit(2);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

#define BLOCK 1024 /* longs: 8 KiB, more than the window path's largest put */

static long *arr, *flag, *big;
static long nvals;

/* The 8 KiB putmems: block b of the big array, every value b*BLOCK+i+round. */
static void put_blocks(long round, long from, long step)
{
	static long buf[BLOCK];
	for (long b = from; b * BLOCK < nvals; b += step) {
		for (long i = 0; i < BLOCK; i++)
			buf[i] = b * BLOCK + i + round;
		shmem_putmem(big + b * BLOCK, buf, sizeof buf, 1);
	}
}

static void put_values(long round)
{
	for (long i = 0; i < nvals; i++)
		shmem_long_p(&arr[i], i + round, 1);
}

static struct {
	long round;
} job;

static void *thread_main(void *arg)
{
	(void)arg;
	put_blocks(job.round, 0, 1);
	return NULL;
}

/*
 * wait_until sleeps in Go once C's polls are over: landed notices wake
 * it (and its sleep slices end, so a lost one only makes it slow; the
 * test's time limit catches a lost put).
 */
static void wait_flag(long want)
{
	shmem_long_wait_until(flag, SHMEM_CMP_GE, want);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "show";
	nvals = argc > 2 ? atol(argv[2]) : 1000;
	nvals = (nvals + BLOCK - 1) / BLOCK * BLOCK;
	int provided;
	shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided);
	me = shmem_my_pe();
	npes = shmem_n_pes();
	win = gsh_win_table();
	arr = shmem_calloc((size_t)nvals, sizeof *arr);
	big = shmem_calloc((size_t)nvals, sizeof *big);
	flag = shmem_calloc(1, sizeof *flag);
	if (!arr || !big || !flag)
		fail("calloc", nvals, 0);
	shmem_barrier_all();

	if (strcmp(mode, "show") == 0) {
		printf("PE %d: window path %s, max %zu, reaches", me, win->on ? "on" : "off", win->max);
		for (int pe = 0; pe < npes; pe++)
			if (win->on && win->up[pe] && win->seg[0].peer[pe])
				printf(" %d", pe);
		printf("\n");
	} else if (strcmp(mode, "stream") == 0 || strcmp(mode, "threads") == 0) {
		int threads = strcmp(mode, "threads") == 0;
		const long rounds = 3;
		for (long r = 1; r <= rounds; r++) {
			if (me == 0) {
				pthread_t th;
				job.round = r;
				if (threads && pthread_create(&th, NULL, thread_main, NULL) != 0)
					fail("pthread_create", r, 0);
				put_values(r);
				if (threads)
					pthread_join(th, NULL);
				else
					put_blocks(r, 0, 1);
				shmem_fence();
				shmem_long_p(flag, r, 1);
				shmem_quiet();
			} else if (me == 1) {
				wait_flag(r);
				for (long i = 0; i < nvals; i++) {
					if (arr[i] != i + r)
						fail("value lost or stale", i, arr[i]);
					if (big[i] != i + r)
						fail("block value lost or stale", i, big[i]);
				}
			}
			shmem_barrier_all();
		}
		if (me == 0) {
			struct gsh_win_counts c;
			gsh_win_counts(&c);
			long puts = rounds * (nvals + 1);
			printf("%s: %ld rounds of %ld, %lu notices from C for %ld puts, %lu redone\n", mode, rounds, nvals,
				c.noticed, puts, c.redone);
			if (win->on && (long)c.noticed >= puts)
				fail("no notice coalesced", (long)c.noticed, puts);
		}
	} else if (strcmp(mode, "cut") == 0) {
		long r = 0;
		int cut = 0, after = 0;
		double deadline = now() + 20;
		while (!after) {
			r++;
			if (me == 0) {
				put_values(r);
				shmem_fence();
				shmem_long_p(flag, r, 1);
				shmem_quiet();
				if (cut)
					after = 1;
				else if (!win->on || !__atomic_load_n(win->up[1], __ATOMIC_SEQ_CST))
					cut = 1;
				if (now() > deadline)
					fail("the link was never cut", r, 0);
			} else if (me == 1) {
				wait_flag(r);
				for (long i = 0; i < nvals; i++)
					if (arr[i] != i + r)
						fail("value lost or stale", i, arr[i]);
			}
			/* PE 0 says whether this was the last round. */
			static long last;
			if (me == 0)
				last = after;
			shmem_barrier_all();
			if (me != 0)
				after = (int)shmem_long_g(&last, 0);
			shmem_barrier_all();
		}
		if (me == 0) {
			struct gsh_win_counts c;
			gsh_win_counts(&c);
			printf("cut: %ld rounds of %ld, link cut seen, %lu notices from C, %lu redone\n", r, nvals, c.noticed,
				c.redone);
		}
	} else {
		fail("unknown mode", 0, 0);
	}
	shmem_barrier_all();
	shmem_finalize();
	return 0;
}
