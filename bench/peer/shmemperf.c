/*
 * shmemperf.c: the tests of cmd/shmemperf, written against the OpenSHMEM C
 * API, so that another OpenSHMEM (Open MPI's OSHMEM by default) can be
 * measured with the same loops and reported in the same JSON schema.
 *
 *   oshcc -O2 -o shmemperf-peer shmemperf.c
 *   oshrun -np 2 ./shmemperf-peer -test put_lat,get_lat -json -label oshmem
 *
 * Flags: -test (all or a comma separated list), -sizes (LO:HI powers of
 * two, or a list; K, M, G suffixes), -iters, -warmup, -window, -json and
 * -label (the "provider" value reported). Their defaults, the iteration
 * counts and the loops match cmd/shmemperf.
 *
 * The collectives (bcast_lat, fcollect_lat, collect_lat, alltoall_lat,
 * reduce_lat, a sum of longs) use OpenSHMEM 1.4's active-set routines on
 * every PE, which Open MPI 4 provides, with 64-bit elements: size/8 of
 * them, at least one.
 */
#include <ctype.h>
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum metric { LATENCY, BANDWIDTH, RATE };

#define BYTE_BUDGET (512L << 20)
#define MIN_ITERS 20
#define MAX_SIZES 64

static long iters = 100000, warmup = 1000, window = 64;
static int me, npes, peer, json;
static const char *label = "oshmem";
static char *sym, *local;
static long *word;

/*
 * The collectives' buffers, symmetric, allocated only when a collective
 * test runs: a source and a dest of npes times the largest size, and two
 * sets of pSync and pWrk that alternate from one call to the next, as
 * OpenSHMEM 1.4 allows back-to-back collectives without a barrier between.
 */
static long *coll_src, *coll_dst, *psync[2], *pwrk[2];
static int phase;

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* scale is cmd/shmemperf's counts: fewer iterations for large sizes. */
static long scale(long n, long size, long per)
{
	if (size > 0 && n * size > BYTE_BUDGET) {
		n = BYTE_BUDGET / size;
		if (n < MIN_ITERS)
			n = MIN_ITERS;
	}
	n /= per;
	return n < 1 ? 1 : n;
}

/* The operations each test repeats; op runs one iteration of size bytes. */
static void op_put_lat(long size) { shmem_putmem(sym, local, size, peer); shmem_quiet(); }
static void op_get_lat(long size) { shmem_getmem(local, sym, size, peer); }
static void op_fadd(long size) { (void)size; shmem_long_atomic_fetch_add(word, 1, peer); }
static void op_cswap(long size) { (void)size; shmem_long_atomic_compare_swap(word, 0, 0, peer); }
static void op_barrier(long size) { (void)size; shmem_barrier_all(); }

/* The collectives move at least one 64-bit element, as cmd/shmemperf's
 * reduce does: size/8 of them, or 1. */
static size_t nlong(long size) { return size < 8 ? 1 : (size_t)size / 8; }

static long *next_psync(void)
{
	phase ^= 1;
	return psync[phase];
}

static void op_bcast(long size)
{
	shmem_broadcast64(coll_dst, coll_src, nlong(size), 0, 0, 0, npes, next_psync());
}

static void op_fcollect(long size) { shmem_fcollect64(coll_dst, coll_src, nlong(size), 0, 0, npes, next_psync()); }
static void op_collect(long size) { shmem_collect64(coll_dst, coll_src, nlong(size), 0, 0, npes, next_psync()); }
static void op_alltoall(long size) { shmem_alltoall64(coll_dst, coll_src, nlong(size), 0, 0, npes, next_psync()); }

static void op_reduce(long size)
{
	long *ps = next_psync();
	shmem_long_sum_to_all(coll_dst, coll_src, (int)nlong(size), 0, 0, npes, pwrk[phase], ps);
}

static void op_put_bw(long size)
{
	for (long i = 0; i < window; i++)
		shmem_putmem_nbi(sym, local, size, peer);
	shmem_quiet();
}

static void op_get_bw(long size)
{
	for (long i = 0; i < window; i++)
		shmem_getmem_nbi(local, sym, size, peer);
	shmem_quiet();
}

static void op_put_rate(long size)
{
	for (long i = 0; i < window; i++)
		shmem_putmem(sym, local, size, peer);
	shmem_quiet();
}

static void op_add_rate(long size)
{
	(void)size;
	for (long i = 0; i < window; i++)
		shmem_long_atomic_add(word, 1, peer);
	shmem_quiet();
}

/* time_loop returns the microseconds per call of op. */
static double time_loop(void (*op)(long), long size, long per)
{
	long w = scale(warmup, size, per), n = scale(iters, size, per);
	if (warmup == 0)
		w = 0;
	for (long i = 0; i < w; i++)
		op(size);
	double t0 = now_us();
	for (long i = 0; i < n; i++)
		op(size);
	return (now_us() - t0) / n;
}

struct test {
	const char *name;
	enum metric metric;
	long fixed;   /* -1: every -sizes size; else the only size */
	int every_pe; /* all PEs run the loop (barrier) */
	long per;     /* operations per call of op; 0: -window; -1: npes */
	void (*op)(long);
	void (*setup)(void);
	int coll;     /* needs the collectives' buffers */
};

static void reset_word(void) { shmem_long_atomic_set(word, 0, peer); }

static struct test tests[] = {
	{"put_lat", LATENCY, -1, 0, 1, op_put_lat, NULL},
	{"get_lat", LATENCY, -1, 0, 1, op_get_lat, NULL},
	{"put_bw", BANDWIDTH, -1, 0, 0, op_put_bw, NULL},
	{"get_bw", BANDWIDTH, -1, 0, 0, op_get_bw, NULL},
	{"put_rate", RATE, 8, 0, 0, op_put_rate, NULL},
	{"fadd_lat", LATENCY, 8, 0, 1, op_fadd, NULL},
	{"cswap_lat", LATENCY, 8, 0, 1, op_cswap, reset_word},
	{"add_rate", RATE, 8, 0, 0, op_add_rate, NULL},
	{"barrier", LATENCY, 0, 1, 10, op_barrier, NULL},
	{"bcast_lat", LATENCY, -1, 1, 1, op_bcast, NULL, 1},
	{"fcollect_lat", LATENCY, -1, 1, -1, op_fcollect, NULL, 1},
	{"collect_lat", LATENCY, -1, 1, -1, op_collect, NULL, 1},
	{"alltoall_lat", LATENCY, -1, 1, -1, op_alltoall, NULL, 1},
	{"reduce_lat", LATENCY, -1, 1, 1, op_reduce, NULL, 1},
};
#define NTESTS (sizeof tests / sizeof tests[0])

static void usage(const char *why)
{
	if (me == 0)
		fprintf(stderr, "shmemperf-peer: %s\nusage: oshrun -np N shmemperf-peer [-test all|a,b] [-sizes 8:4M|8,64,1K] "
				"[-iters N] [-warmup N] [-window N] [-json] [-label NAME]\n", why);
	shmem_finalize();
	exit(2);
}

static long parse_size(const char *s)
{
	char *end;
	double v = strtod(s, &end);
	long mult = 1;
	switch (toupper((unsigned char)*end)) {
	case 'K': mult = 1L << 10; end++; break;
	case 'M': mult = 1L << 20; end++; break;
	case 'G': mult = 1L << 30; end++; break;
	}
	if (toupper((unsigned char)*end) == 'B')
		end++;
	if (end == s || *end != '\0' || v * mult < 1 || v * mult > (1L << 30))
		usage("-sizes: sizes are from 1 to 1G, with an optional K, M or G suffix");
	return (long)(v * mult);
}

static int parse_sizes(char *spec, long *out)
{
	int n = 0;
	char *colon = strchr(spec, ':');
	if (colon) {
		*colon = '\0';
		long lo = parse_size(spec), hi = parse_size(colon + 1), p = 1;
		while (p < lo)
			p *= 2;
		for (; p <= hi && n < MAX_SIZES; p *= 2)
			out[n++] = p;
	} else {
		for (char *tok = strtok(spec, ","); tok && n < MAX_SIZES; tok = strtok(NULL, ","))
			out[n++] = parse_size(tok);
	}
	if (n == 0)
		usage("-sizes: no size");
	return n;
}

static void report(const struct test *t, long size, double us)
{
	static const char *keys[] = {"latency_us", "bandwidth_MBps", "rate_Mops"};
	static const char *units[] = {"us", "MB/s", "M/s"};
	double v = t->metric == LATENCY ? us : t->metric == BANDWIDTH ? size / us : 1 / us;
	if (json)
		printf("{\"test\":\"%s\",\"provider\":\"%s\",\"npes\":%d,\"size\":%ld,\"%s\":%.6g}\n",
		       t->name, label, npes, size, keys[t->metric], v);
	else
		printf("%-12s %8ld %14.3f  %s\n", t->name, size, v, units[t->metric]);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	char *test_spec = "all", sizes_spec[256] = "8:4M";
	long sizes[MAX_SIZES];
	shmem_init();
	me = shmem_my_pe();
	npes = shmem_n_pes();
	peer = npes > 1 ? 1 : 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int more = i + 1 < argc;
		if (!strcmp(a, "-json"))
			json = 1;
		else if (!strcmp(a, "-test") && more)
			test_spec = argv[++i];
		else if (!strcmp(a, "-sizes") && more)
			snprintf(sizes_spec, sizeof sizes_spec, "%s", argv[++i]);
		else if (!strcmp(a, "-iters") && more)
			iters = atol(argv[++i]);
		else if (!strcmp(a, "-warmup") && more)
			warmup = atol(argv[++i]);
		else if (!strcmp(a, "-window") && more)
			window = atol(argv[++i]);
		else if (!strcmp(a, "-label") && more)
			label = argv[++i];
		else
			usage("unknown flag or missing value");
	}
	if (iters < 1 || warmup < 0 || window < 1)
		usage("-iters and -window must be at least 1, -warmup at least 0");
	int nsizes = parse_sizes(sizes_spec, sizes);

	int run[NTESTS] = {0};
	if (!strcmp(test_spec, "all")) {
		for (size_t k = 0; k < NTESTS; k++)
			run[k] = 1;
	} else {
		char *spec = strdup(test_spec);
		for (char *tok = strtok(spec, ","); tok; tok = strtok(NULL, ",")) {
			size_t k = 0;
			while (k < NTESTS && strcmp(tests[k].name, tok))
				k++;
			if (k == NTESTS)
				usage("-test: unknown test");
			run[k] = 1;
		}
		free(spec);
	}

	long largest = 8;
	for (int s = 0; s < nsizes; s++)
		if (sizes[s] > largest)
			largest = sizes[s];
	sym = shmem_malloc(largest);
	word = shmem_calloc(1, sizeof *word);
	local = malloc(largest);
	if (!sym || !word || !local)
		usage("out of memory for the buffers");
	int coll = 0;
	for (size_t k = 0; k < NTESTS; k++)
		coll |= run[k] && tests[k].coll;
	if (coll) {
		size_t elems = nlong(largest) * npes, wrk = nlong(largest) / 2 + 1;
		if (wrk < SHMEM_REDUCE_MIN_WRKDATA_SIZE)
			wrk = SHMEM_REDUCE_MIN_WRKDATA_SIZE;
		coll_src = shmem_calloc(elems, sizeof(long));
		coll_dst = shmem_calloc(elems, sizeof(long));
		for (int i = 0; i < 2; i++) {
			psync[i] = shmem_malloc(SHMEM_SYNC_SIZE * sizeof(long));
			pwrk[i] = shmem_malloc(wrk * sizeof(long));
			if (!psync[i] || !pwrk[i])
				usage("out of symmetric memory for the collectives' buffers");
			for (int j = 0; j < SHMEM_SYNC_SIZE; j++)
				psync[i][j] = SHMEM_SYNC_VALUE;
		}
		if (!coll_src || !coll_dst)
			usage("out of symmetric memory for the collectives' buffers");
	}
	memset(local, 1, largest);
	if (me == 0 && !json) {
		printf("# shmemperf-peer: %s, %d PEs\n", label, npes);
		printf("%-12s %8s %14s  %s\n", "test", "size", "figure", "unit");
	}
	shmem_barrier_all();

	for (size_t k = 0; k < NTESTS; k++) {
		const struct test *t = &tests[k];
		if (!run[k])
			continue;
		long one = t->fixed, *list = t->fixed >= 0 ? &one : sizes;
		int n = t->fixed >= 0 ? 1 : nsizes;
		for (int s = 0; s < n; s++) {
			long size = list[s], per = t->per > 0 ? t->per : t->per < 0 ? npes : window;
			double us = 0;
			if (t->every_pe) {
				shmem_barrier_all();
				us = time_loop(t->op, size, per);
			} else {
				if (me == 0) {
					if (t->setup)
						t->setup();
					us = time_loop(t->op, size, per);
				}
				shmem_barrier_all();
			}
			if (!t->per)
				us /= window;
			if (me == 0)
				report(t, size, us);
		}
	}
	shmem_barrier_all();
	if (coll) {
		for (int i = 0; i < 2; i++) {
			shmem_free(pwrk[i]);
			shmem_free(psync[i]);
		}
		shmem_free(coll_dst);
		shmem_free(coll_src);
	}
	shmem_free(word);
	shmem_free(sym);
	free(local);
	shmem_finalize();
	return 0;
}
