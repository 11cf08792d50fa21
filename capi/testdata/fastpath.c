/*
 * The fast path against the Go side, in one job (fast_test.go runs it
 * under oshrun). It looks at the loopback protocol's words through the
 * library's table (fast.h) to know when a PE sleeps and whether a write
 * woke it; every wait it makes for that is bounded, so a broken
 * handshake fails instead of hanging.
 *
 *   fastpath show        prints, per PE, whether the fast path is on, and the barrier it runs
 *   fastpath wake R      R rounds: PE 0 sleeps in shmem_long_wait_until (C
 *                        polls, then Go sleeps in the futex) on a heap or
 *                        a static variable; PE 1 writes it once PE 0
 *                        sleeps, after a write outside the watched range
 *                        that must not wake it
 *   fastpath pingpong R  R round trips of shmem_long_p and wait_until
 *                        between PE 0 and PE 1
 *   fastpath barrier R   every PE counts on PE 0, then passes a barrier:
 *                        shmem_barrier_all (C) and shmem_team_sync (Go)
 *                        in turn, so the two share the barrier's count
 *   fastpath bcast R     R rounds of shmem_broadcast64 from every root in
 *                        turn, on every PE and on the even PEs, at sizes
 *                        on both sides of the push's limit (C pushes, or
 *                        Go does, by one protocol); every member checks
 *                        its data and pSync, the root that its dest is
 *                        untouched
 *   fastpath tbcast R    R rounds of shmem_broadcastmem from every root in
 *                        turn, on SHMEM_TEAM_WORLD and on a team of the
 *                        even PEs, at the same sizes, with a team sync
 *                        only every third round, so a root may be
 *                        broadcasts ahead of a member, and every fourth
 *                        round an alltoall, whose words Go counts on too;
 *                        every member and the root check the data
 *   fastpath gathers R   R rounds of shmem_fcollectmem and shmem_alltoallmem
 *                        on SHMEM_TEAM_WORLD and of shmem_fcollect64 and
 *                        shmem_alltoall64 on the World's active set, staged (C stages them, or
 *                        Go does, by one protocol) and past the banks,
 *                        with a sum reduction between (Go's, on the same
 *                        banks and generations) and one PE lingering
 *                        over its dest in turn; every member checks
 *
 * FASTPATH_GO_PE=r makes PE r move its data through Go
 * (GOSHMEM_C_FAST_PATH=0): Go writers against C waiters and back.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, setenv under -std=c11 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <shmem.h>

#include "fast.h"

static long static_flag;
static long static_far[4096]; /* pages away from static_flag */

static int me, npes;
static const struct gsh_fast_map *fast;

static void fail(const char *what, long a, long b)
{
	fprintf(stderr, "fastpath: PE %d: %s (%ld, %ld)\n", me, what, a, b);
	fflush(stderr);
	shmem_global_exit(2);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint32_t ctl_word(int pe, size_t off)
{
	return __atomic_load_n((uint32_t *)(fast->ctl[pe] + off), __ATOMIC_SEQ_CST);
}

/* Waits, yielding, until pe has a sleeper; fails after 20 s. */
static void await_sleeper(int pe)
{
	double deadline = now() + 20;
	while (ctl_word(pe, GSH_LOOP_SLEEPERS) == 0) {
		if (now() > deadline)
			fail("the waiter never went to sleep", pe, 0);
		sched_yield();
	}
}

static void wake(long rounds)
{
	long *heap_flag = shmem_calloc(1, sizeof(long));
	long *far = shmem_calloc(16384, sizeof(long)); /* far[8192] is 64 KiB on */
	if (!heap_flag || !far)
		fail("calloc", 0, 0);
	shmem_barrier_all();
	for (long r = 1; r <= rounds; r++) {
		long *flag = r % 2 ? heap_flag : &static_flag;
		long *other = r % 2 ? &far[8192] : &static_far[2048];
		if (me == 0) {
			shmem_long_wait_until(flag, SHMEM_CMP_EQ, r);
		} else if (me == 1) {
			await_sleeper(0);
			uint32_t seq = ctl_word(0, GSH_LOOP_SEQ);
			shmem_long_p(other, r, 0);
			if (ctl_word(0, GSH_LOOP_SEQ) != seq)
				fail("a write outside the watched range woke the waiter", r, 0);
			shmem_long_p(flag, r, 0);
			uint32_t after = ctl_word(0, GSH_LOOP_SEQ);
			if (after == seq)
				fail("a write to the watched variable left the waiter's seq", r, seq);
		}
		shmem_barrier_all();
	}
	if (me == 0)
		printf("wake: %ld rounds\n", rounds);
	shmem_free(far);
	shmem_free(heap_flag);
}

static void pingpong(long rounds)
{
	long *arr = shmem_calloc(64, sizeof(long));
	if (!arr)
		fail("calloc", 0, 0);
	long *ball = &arr[32];
	shmem_barrier_all();
	if (me < 2) {
		int other = 1 - me;
		for (long r = 1; r <= rounds; r++) {
			if (me == 0) {
				shmem_long_p(ball, 2 * r - 1, other);
				shmem_long_wait_until(ball, SHMEM_CMP_EQ, 2 * r);
			} else {
				shmem_long_wait_until(ball, SHMEM_CMP_EQ, 2 * r - 1);
				shmem_long_p(ball, 2 * r, other);
			}
		}
		/* And a bulk put whose bytes span the ball. */
		long block[64];
		for (int i = 0; i < 64; i++)
			block[i] = me == 0 ? -1 : -2;
		if (me == 0) {
			shmem_long_put(arr, block, 64, other);
			shmem_long_wait_until(ball, SHMEM_CMP_EQ, -2);
		} else {
			shmem_long_wait_until(ball, SHMEM_CMP_EQ, -1);
			shmem_long_put(arr, block, 64, other);
		}
	}
	shmem_barrier_all();
	if (me == 0)
		printf("pingpong: %ld rounds\n", rounds);
	shmem_free(arr);
}

static void barriers(long rounds)
{
	long *count = shmem_calloc(1, sizeof(long));
	if (!count)
		fail("calloc", 0, 0);
	shmem_barrier_all();
	for (long r = 1; r <= rounds; r++) {
		shmem_long_atomic_inc(count, 0);
		if (r % 2)
			shmem_barrier_all();
		else
			shmem_team_sync(SHMEM_TEAM_WORLD);
		long v = shmem_long_atomic_fetch(count, 0);
		if (v < r * npes || v > (r + 1) * npes)
			fail("a PE left the barrier before every PE counted", v, r);
	}
	shmem_barrier_all();
	if (me == 0)
		printf("barrier: %ld rounds\n", rounds);
	shmem_free(count);
}

static void bcasts(long rounds)
{
	/* 8 bytes, the push's limit, and past it (Go's binomial tree). */
	const size_t counts[] = {1, 8192, 8193};
	long *psync = shmem_malloc(2 * SHMEM_BCAST_SYNC_SIZE * sizeof(long));
	long *bar = shmem_malloc(SHMEM_BARRIER_SYNC_SIZE * sizeof(long));
	long *dst = shmem_malloc(8193 * sizeof(long)), *src = malloc(8193 * sizeof(long));
	if (!psync || !bar || !dst || !src)
		fail("malloc", 0, 0);
	for (int i = 0; i < 2 * SHMEM_BCAST_SYNC_SIZE; i++)
		psync[i] = SHMEM_SYNC_VALUE;
	for (int i = 0; i < SHMEM_BARRIER_SYNC_SIZE; i++)
		bar[i] = SHMEM_SYNC_VALUE;
	shmem_barrier_all();
	for (int set = 0; set < 2; set++) {
		int stride = set, size = set ? (npes + 1) / 2 : npes;
		if ((me & stride) != 0 || size < 2)
			continue;
		int rank = me >> stride;
		for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
			size_t n = counts[c];
			for (long r = 0; r < rounds; r++) {
				int root = (int)(r % size);
				long *ps = psync + (r & 1) * SHMEM_BCAST_SYNC_SIZE;
				for (size_t i = 0; i < n; i++) {
					src[i] = rank * 1000000L + (long)i * 10 + r;
					dst[i] = -1;
				}
				shmem_barrier(0, stride, size, bar);
				shmem_broadcast64(dst, src, n, root, 0, stride, size, ps);
				for (size_t i = 0; i < n; i++) {
					long want = rank == root ? -1 : root * 1000000L + (long)i * 10 + r;
					if (dst[i] != want)
						fail("broadcast: dest", dst[i], want);
				}
				if (ps[0] != SHMEM_SYNC_VALUE)
					fail("broadcast: pSync after the call", ps[0], SHMEM_SYNC_VALUE);
			}
		}
		shmem_barrier(0, stride, size, bar);
	}
	shmem_barrier_all();
	if (me == 0)
		printf("bcast: %ld rounds\n", rounds);
	shmem_free(dst);
	shmem_free(bar);
	shmem_free(psync);
	free(src);
}

static void tbcasts(long rounds)
{
	const size_t counts[] = {1, 8192, 8193};
	enum { K = 3, MAX = 8193 };
	long *dst = shmem_malloc(K * MAX * sizeof(long)), *src = malloc(MAX * sizeof(long));
	long *a2a_src = shmem_malloc(npes * sizeof(long)), *a2a_dst = shmem_malloc(npes * sizeof(long));
	if (!dst || !src || !a2a_src || !a2a_dst)
		fail("malloc", 0, 0);
	shmem_team_t even;
	if (shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (npes + 1) / 2, NULL, 0, &even) != 0)
		fail("split", 0, 0);
	for (int set = 0; set < 2; set++) {
		shmem_team_t team = set ? even : SHMEM_TEAM_WORLD;
		if (team == SHMEM_TEAM_INVALID || shmem_team_n_pes(team) < 2)
			continue;
		int size = shmem_team_n_pes(team), rank = shmem_team_my_pe(team);
		for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
			size_t n = counts[c];
			for (long r = 0; r < rounds; r++) {
				int root = (int)(r % size);
				long *d = dst + (r % K) * MAX;
				if (r % K == 0)
					shmem_team_sync(team);
				for (size_t i = 0; i < n; i++)
					src[i] = rank * 1000000L + (long)i * 10 + r;
				shmem_broadcastmem(team, d, src, n * sizeof(long), root);
				for (size_t i = 0; i < n; i++) {
					long want = root * 1000000L + (long)i * 10 + r;
					if (d[i] != want)
						fail("team broadcast: dest", d[i], want);
				}
				if (r % 4 == 1) {
					for (int j = 0; j < size; j++)
						a2a_src[j] = rank * 1000L + j + r;
					shmem_alltoallmem(team, a2a_dst, a2a_src, sizeof(long));
					for (int j = 0; j < size; j++)
						if (a2a_dst[j] != j * 1000L + rank + r)
							fail("team alltoall: dest", a2a_dst[j], j * 1000L + rank + r);
				}
			}
		}
		shmem_team_sync(team);
	}
	if (even != SHMEM_TEAM_INVALID)
		shmem_team_destroy(even);
	shmem_barrier_all();
	if (me == 0)
		printf("tbcast: %ld rounds\n", rounds);
	shmem_free(a2a_dst);
	shmem_free(a2a_src);
	shmem_free(dst);
	free(src);
}

static void gathers(long rounds)
{
	/* Bytes of each member's part: staged, and past the 64 KiB banks. */
	const size_t parts[] = {8, 4096, (65536 / (size_t)npes + 15) & ~(size_t)7};
	long *ps = shmem_malloc(SHMEM_ALLTOALL_SYNC_SIZE * sizeof(long));
	enum { MAXPART = 65536 };
	unsigned char *dst = shmem_malloc((size_t)npes * MAXPART), *src = malloc((size_t)npes * MAXPART);
	long *sum = shmem_malloc(sizeof(long)), *mine = shmem_malloc(sizeof(long));
	if (!dst || !src || !sum || !mine || !ps)
		fail("malloc", 0, 0);
	for (int i = 0; i < SHMEM_ALLTOALL_SYNC_SIZE; i++)
		ps[i] = SHMEM_SYNC_VALUE;
	shmem_barrier_all();
	for (size_t c = 0; c < sizeof parts / sizeof parts[0]; c++) {
		size_t part = parts[c];
		for (long r = 0; r < rounds; r++) {
			int all = r % 2;
			/* Byte j of the part for member t from member f in round r. */
#define GATHER_BYTE(f, t, j) ((unsigned char)((f) * 31 + (t) * 7 + (j) + r))
			for (int t = 0; t < npes; t++)
				for (size_t j = 0; j < part; j++)
					src[(size_t)t * part + j] = GATHER_BYTE(me, all ? t : 0, j);
			/* The team forms, then the active-set forms on the World. */
			if (r % 4 < 2 && all)
				shmem_alltoallmem(SHMEM_TEAM_WORLD, dst, src, part);
			else if (r % 4 < 2)
				shmem_fcollectmem(SHMEM_TEAM_WORLD, dst, src, part);
			else if (all)
				shmem_alltoall64(dst, src, part / 8, 0, 0, npes, ps);
			else
				shmem_fcollect64(dst, src, part / 8, 0, 0, npes, ps);
			if (me == (int)(r % npes)) {
				struct timespec linger = {0, 2000000};
				nanosleep(&linger, NULL);
			}
			for (int f = 0; f < npes; f++)
				for (size_t j = 0; j < part; j++)
					if (dst[(size_t)f * part + j] != GATHER_BYTE(f, all ? me : 0, j))
						fail(all ? "alltoall: dest" : "fcollect: dest", (long)f, (long)j);
			memset(dst, 0, (size_t)npes * part);
			*mine = me + r;
			shmem_long_sum_reduce(SHMEM_TEAM_WORLD, sum, mine, 1);
			long want = (long)npes * (npes - 1) / 2 + (long)npes * r;
			if (*sum != want)
				fail("sum_reduce", *sum, want);
		}
	}
	shmem_barrier_all();
	if (me == 0)
		printf("gathers: %ld rounds\n", rounds);
	shmem_free(ps);
	shmem_free(mine);
	shmem_free(sum);
	shmem_free(dst);
	free(src);
}

int main(int argc, char **argv)
{
	const char *go_pe = getenv("FASTPATH_GO_PE"), *rank = getenv("GOSHMEM_RANK");
	if (go_pe && rank && !strcmp(go_pe, rank))
		setenv("GOSHMEM_C_FAST_PATH", "0", 1);
	shmem_init();
	me = shmem_my_pe();
	npes = shmem_n_pes();
	fast = gsh_fast_table();
	const char *what = argc > 1 ? argv[1] : "on";
	long rounds = argc > 2 ? atol(argv[2]) : 100;
	if (!strcmp(what, "show")) {
		printf("PE %d: ", me);
		printf("fast path %s, data %s, barrier %s, writers %s\n", fast->on ? "on" : "off",
				fast->nseg && fast->seg[0].size ? "mapped" : "through Go",
				fast->dissemination ? "dissemination" : "counter",
				fast->fence ? "fence" : "do not fence");
	} else if (!strcmp(what, "wake")) {
		wake(rounds);
	} else if (!strcmp(what, "pingpong")) {
		pingpong(rounds);
	} else if (!strcmp(what, "barrier")) {
		barriers(rounds);
	} else if (!strcmp(what, "bcast")) {
		bcasts(rounds);
	} else if (!strcmp(what, "tbcast")) {
		tbcasts(rounds);
	} else if (!strcmp(what, "gathers")) {
		gathers(rounds);
	} else {
		fail("unknown test", 0, 0);
	}
	shmem_finalize();
	return 0;
}
