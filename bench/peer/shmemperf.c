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
 * The collectives come in both of their forms, under the same names as
 * cmd/shmemperf's: the OpenSHMEM 1.4 active-set routine with pSync (and
 * pWrk), under the plain name (bcast_lat: shmem_broadcast64), and the 1.5
 * team routine on SHMEM_TEAM_WORLD, under the name with team_ in front
 * (team_bcast_lat: shmem_broadcastmem). They move 64-bit elements, size/8
 * of them and at least one, and the team routines as many bytes;
 * alltoalls has strides of 1, the data of alltoall through the strided
 * routine. The barriers and syncs are barrier (shmem_barrier_all),
 * sync_all, set_barrier and set_sync (shmem_barrier and shmem_sync on the
 * active set of every PE) and team_sync. Each collective is checked once
 * per size, untimed, before it is measured. An OpenSHMEM before 1.5 (Open
 * MPI's OSHMEM 4) has no teams: the program still builds there and
 * reports the team tests as unavailable.
 *
 * The active-set collectives alternate between two pSync (and pWrk)
 * arrays. OpenSHMEM 1.4 lets a pSync be reused once no member is still in
 * the call that used it last: a collective that no member can leave before
 * every member has entered it (barrier, sync, collect, fcollect, alltoall,
 * alltoalls, the reductions) guarantees that for the call before it, so
 * calls can follow each other. A broadcast does not: the root may leave as
 * soon as its data is sent. So both forms of broadcast are followed by an
 * untimed shmem_barrier_all, each call is timed alone, and the figure is
 * the slowest PE's mean time in the call.
 */
#include <ctype.h>
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Teams, and the team collectives, came with OpenSHMEM 1.5. */
#if defined(SHMEM_MAJOR_VERSION) && (SHMEM_MAJOR_VERSION > 1 || SHMEM_MINOR_VERSION >= 5)
#define HAVE_TEAMS 1
#define TEAM_OP(f) f
#else
#define HAVE_TEAMS 0
#define TEAM_OP(f) NULL
#endif

enum metric { LATENCY, BANDWIDTH, RATE };

/* What a collective computes, for the check before it is measured. */
enum kind { NOCHECK, BCAST, GATHER, ALLTOALL, ALLTOALLS, REDUCE };

#define BYTE_BUDGET (512L << 20)
#define MIN_ITERS 20
#define MAX_SIZES 64

static long iters = 100000, warmup = 1000, window = 64;
static int me, npes, peer, json, failed;
static const char *label = "oshmem";
static char *sym, *local;
static long *word;

/*
 * The collectives' buffers, symmetric, allocated only when a collective
 * test runs: a source and a dest of npes times the largest size, two sets of pSync and pWrk that alternate from one call to the
 * next, and one double per PE where each PE leaves its figure for PE 0.
 */
static long *coll_src, *coll_dst, *psync[2], *pwrk[2];
static double *times;
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
static void op_finc(long size) { (void)size; shmem_long_atomic_fetch_inc(word, peer); }
/* The 32-bit atomics work on the word's first half, symmetric as it is. */
static void op_fadd32(long size) { (void)size; shmem_int_atomic_fetch_add((int *)word, 1, peer); }
static void op_finc32(long size) { (void)size; shmem_int_atomic_fetch_inc((int *)word, peer); }
static void op_cswap32(long size) { (void)size; shmem_int_atomic_compare_swap((int *)word, 0, 0, peer); }

/* The collectives move at least one 64-bit element, as cmd/shmemperf's
 * do: size/8 of them, or 1. */
static size_t nlong(long size) { return size < 8 ? 1 : (size_t)size / 8; }

/* next_psync returns the pSync (and, in phase, the pWrk) of the next
 * active-set call: the other one of the two. */
static long *next_psync(void)
{
	phase ^= 1;
	return psync[phase];
}

/* The barriers and syncs. */
static void op_barrier(long size) { (void)size; shmem_barrier_all(); }
static void op_sync_all(long size) { (void)size; shmem_sync_all(); }
static void op_set_barrier(long size) { (void)size; shmem_barrier(0, 0, npes, next_psync()); }
static void op_set_sync(long size) { (void)size; shmem_sync(0, 0, npes, next_psync()); }

/* The active-set collectives, on every PE, PE 0 the broadcasts' root. */
static void op_bcast(long size) { shmem_broadcast64(coll_dst, coll_src, nlong(size), 0, 0, 0, npes, next_psync()); }
static void op_fcollect(long size) { shmem_fcollect64(coll_dst, coll_src, nlong(size), 0, 0, npes, next_psync()); }
static void op_collect(long size) { shmem_collect64(coll_dst, coll_src, nlong(size), 0, 0, npes, next_psync()); }
static void op_alltoall(long size) { shmem_alltoall64(coll_dst, coll_src, nlong(size), 0, 0, npes, next_psync()); }

static void op_alltoalls(long size)
{
	shmem_alltoalls64(coll_dst, coll_src, 1, 1, nlong(size), 0, 0, npes, next_psync());
}

static void op_reduce(long size)
{
	long *ps = next_psync();
	shmem_long_sum_to_all(coll_dst, coll_src, (int)nlong(size), 0, 0, npes, pwrk[phase], ps);
}

#if HAVE_TEAMS
/* The same collectives on the team of every PE. */
static void op_team_sync(long size) { (void)size; shmem_team_sync(SHMEM_TEAM_WORLD); }
static void op_team_bcast(long size) { shmem_broadcastmem(SHMEM_TEAM_WORLD, coll_dst, coll_src, 8 * nlong(size), 0); }
static void op_team_fcollect(long size) { shmem_fcollectmem(SHMEM_TEAM_WORLD, coll_dst, coll_src, 8 * nlong(size)); }
static void op_team_collect(long size) { shmem_collectmem(SHMEM_TEAM_WORLD, coll_dst, coll_src, 8 * nlong(size)); }
static void op_team_alltoall(long size) { shmem_alltoallmem(SHMEM_TEAM_WORLD, coll_dst, coll_src, 8 * nlong(size)); }
static void op_team_reduce(long size) { shmem_long_sum_reduce(SHMEM_TEAM_WORLD, coll_dst, coll_src, nlong(size)); }

static void op_team_alltoalls(long size)
{
	shmem_alltoallsmem(SHMEM_TEAM_WORLD, coll_dst, coll_src, 1, 1, 8 * nlong(size));
}
#endif

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

/*
 * time_each times each call of op alone and runs between, untimed, after
 * each, on every PE; it returns, on PE 0, the largest of the PEs' mean
 * microseconds per call.
 */
static double time_each(void (*op)(long), void (*between)(void), long size, long per)
{
	long w = scale(warmup, size, per), n = scale(iters, size, per);
	if (warmup == 0)
		w = 0;
	for (long i = 0; i < w; i++) {
		op(size);
		between();
	}
	double sum = 0;
	for (long i = 0; i < n; i++) {
		double t0 = now_us();
		op(size);
		sum += now_us() - t0;
		between();
	}
	shmem_double_p(&times[me], sum / n, 0);
	shmem_barrier_all();
	double worst = 0;
	if (me == 0)
		for (int r = 0; r < npes; r++)
			if (times[r] > worst)
				worst = times[r];
	return worst;
}

struct test {
	const char *name;
	enum metric metric;
	long fixed;   /* -1: every -sizes size; else the only size */
	int every_pe; /* all PEs run the loop (barrier) */
	long per;     /* operations per call of op; 0: -window; -1: npes */
	void (*op)(long); /* NULL: not in this OpenSHMEM */
	void (*setup)(void);
	int coll;     /* needs the collectives' buffers */
	enum kind check;
	void (*between)(void); /* see time_each */
};

static void reset_word(void) { shmem_long_atomic_set(word, 0, peer); }

static struct test tests[] = {
	{.name = "put_lat", .metric = LATENCY, .fixed = -1, .per = 1, .op = op_put_lat},
	{.name = "get_lat", .metric = LATENCY, .fixed = -1, .per = 1, .op = op_get_lat},
	{.name = "put_bw", .metric = BANDWIDTH, .fixed = -1, .per = 0, .op = op_put_bw},
	{.name = "get_bw", .metric = BANDWIDTH, .fixed = -1, .per = 0, .op = op_get_bw},
	{.name = "put_rate", .metric = RATE, .fixed = 8, .per = 0, .op = op_put_rate},
	{.name = "fadd_lat", .metric = LATENCY, .fixed = 8, .per = 1, .op = op_fadd},
	{.name = "cswap_lat", .metric = LATENCY, .fixed = 8, .per = 1, .op = op_cswap, .setup = reset_word},
	{.name = "finc_lat", .metric = LATENCY, .fixed = 8, .per = 1, .op = op_finc},
	{.name = "fadd32_lat", .metric = LATENCY, .fixed = 4, .per = 1, .op = op_fadd32},
	{.name = "finc32_lat", .metric = LATENCY, .fixed = 4, .per = 1, .op = op_finc32},
	{.name = "cswap32_lat", .metric = LATENCY, .fixed = 4, .per = 1, .op = op_cswap32, .setup = reset_word},
	{.name = "add_rate", .metric = RATE, .fixed = 8, .per = 0, .op = op_add_rate},
	/* A barrier costs thousands of small puts on many PEs: per 10. */
	{.name = "barrier", .metric = LATENCY, .fixed = 0, .every_pe = 1, .per = 10, .op = op_barrier},
	{.name = "sync_all", .metric = LATENCY, .fixed = 0, .every_pe = 1, .per = 10, .op = op_sync_all},
	{.name = "set_barrier", .metric = LATENCY, .fixed = 0, .every_pe = 1, .per = 10, .op = op_set_barrier, .coll = 1},
	{.name = "set_sync", .metric = LATENCY, .fixed = 0, .every_pe = 1, .per = 10, .op = op_set_sync, .coll = 1},
	{.name = "team_sync", .metric = LATENCY, .fixed = 0, .every_pe = 1, .per = 10, .op = TEAM_OP(op_team_sync)},
	{.name = "bcast_lat", .metric = LATENCY, .fixed = -1, .every_pe = 1, .per = 1, .op = op_bcast, .coll = 1,
	 .check = BCAST, .between = shmem_barrier_all},
	{.name = "team_bcast_lat", .metric = LATENCY, .fixed = -1, .every_pe = 1, .per = 1, .op = TEAM_OP(op_team_bcast),
	 .coll = 1, .check = BCAST, .between = shmem_barrier_all},
	{.name = "fcollect_lat", .metric = LATENCY, .fixed = -1, .every_pe = 1, .per = -1, .op = op_fcollect, .coll = 1,
	 .check = GATHER},
	{.name = "team_fcollect_lat", .metric = LATENCY, .fixed = -1, .every_pe = 1, .per = -1,
	 .op = TEAM_OP(op_team_fcollect), .coll = 1, .check = GATHER},
	{.name = "collect_lat", .metric = LATENCY, .fixed = -1, .every_pe = 1, .per = -1, .op = op_collect, .coll = 1,
	 .check = GATHER},
	{.name = "team_collect_lat", .metric = LATENCY, .fixed = -1, .every_pe = 1, .per = -1,
	 .op = TEAM_OP(op_team_collect), .coll = 1, .check = GATHER},
	{.name = "alltoall_lat", .metric = LATENCY, .fixed = -1, .every_pe = 1, .per = -1, .op = op_alltoall, .coll = 1,
	 .check = ALLTOALL},
	{.name = "team_alltoall_lat", .metric = LATENCY, .fixed = -1, .every_pe = 1, .per = -1,
	 .op = TEAM_OP(op_team_alltoall), .coll = 1, .check = ALLTOALL},
	{.name = "alltoalls_lat", .metric = LATENCY, .fixed = -1, .every_pe = 1, .per = -1, .op = op_alltoalls, .coll = 1,
	 .check = ALLTOALL},
	{.name = "team_alltoalls_lat", .metric = LATENCY, .fixed = -1, .every_pe = 1, .per = -1,
	 .op = TEAM_OP(op_team_alltoalls), .coll = 1, .check = ALLTOALL},
	{.name = "reduce_lat", .metric = LATENCY, .fixed = -1, .every_pe = 1, .per = 1, .op = op_reduce, .coll = 1,
	 .check = REDUCE},
	{.name = "team_reduce_lat", .metric = LATENCY, .fixed = -1, .every_pe = 1, .per = 1, .op = TEAM_OP(op_team_reduce),
	 .coll = 1, .check = REDUCE},
};
#define NTESTS (sizeof tests / sizeof tests[0])

/* The value element i of PE pe's source holds for the checks. */
static long val(int pe, size_t i) { return pe * 1000003L + (long)i; }

/*
 * check runs t once on size bytes from a known source, untimed, and
 * compares what it computed on this PE; a wrong element is reported and
 * makes the program exit non-zero when it is done.
 */
static void check(const struct test *t, long size)
{
	size_t n = nlong(size), total = n * npes;
	for (size_t i = 0; i < total; i++) {
		coll_src[i] = val(me, i);
		coll_dst[i] = -1;
	}
	shmem_barrier_all();
	t->op(size);
	shmem_barrier_all();
	size_t bad = total, k = 0;
	long got = 0, want = 0;
	for (; k < total && bad == total; k++) {
		size_t r = k / n, i = k % n;
		switch (t->check) {
		case BCAST: /* only the first n, on the PEs other than the root */
			if (k >= n || me == 0)
				continue;
			want = val(0, i);
			break;
		case GATHER: want = val((int)r, i); break;
		case ALLTOALL: want = val((int)r, me * n + i); break;
		case REDUCE:
			if (k >= n)
				continue;
			want = 1000003L * npes * (npes - 1) / 2 + npes * (long)i;
			break;
		default: continue;
		}
		if ((got = coll_dst[k]) != want)
			bad = k;
	}
	if (bad < total) {
		fprintf(stderr, "shmemperf-peer: %s, %ld bytes, %d PEs: wrong result on PE %d: element %zu is %ld, not %ld\n",
			t->name, size, npes, me, bad, got, want);
		failed = 1;
	}
	shmem_barrier_all();
}

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
		printf("%-18s %8ld %14.3f  %s\n", t->name, size, v, units[t->metric]);
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
		coll |= run[k] && tests[k].coll && tests[k].op;
	if (coll) {
		size_t elems = nlong(largest) * npes, wrk = nlong(largest) / 2 + 1;
		if (wrk < SHMEM_REDUCE_MIN_WRKDATA_SIZE)
			wrk = SHMEM_REDUCE_MIN_WRKDATA_SIZE;
		coll_src = shmem_calloc(elems, sizeof(long));
		coll_dst = shmem_calloc(elems, sizeof(long));
		times = shmem_calloc(npes, sizeof(double));
		for (int i = 0; i < 2; i++) {
			psync[i] = shmem_malloc(SHMEM_SYNC_SIZE * sizeof(long));
			pwrk[i] = shmem_malloc(wrk * sizeof(long));
			if (!psync[i] || !pwrk[i])
				usage("out of symmetric memory for the collectives' buffers");
			for (int j = 0; j < SHMEM_SYNC_SIZE; j++)
				psync[i][j] = SHMEM_SYNC_VALUE;
		}
		if (!coll_src || !coll_dst || !times)
			usage("out of symmetric memory for the collectives' buffers");
	}
	memset(local, 1, largest);
	if (me == 0 && !json) {
		printf("# shmemperf-peer: %s, %d PEs\n", label, npes);
		printf("%-18s %8s %14s  %s\n", "test", "size", "figure", "unit");
	}
	/* Tests this OpenSHMEM lacks are named, not failed. */
	char missing[1024] = "";
	for (size_t k = 0; k < NTESTS; k++) {
		if (!run[k] || tests[k].op)
			continue;
		if (strlen(missing) + strlen(tests[k].name) + 3 < sizeof missing)
			strcat(strcat(missing, *missing ? ", " : ""), tests[k].name);
	}
	if (me == 0 && json && *missing) /* a table has their rows */
		fprintf(stderr, "shmemperf-peer: unavailable in this OpenSHMEM %d.%d, which has no teams: %s\n",
			SHMEM_MAJOR_VERSION, SHMEM_MINOR_VERSION, missing);
	shmem_barrier_all();

	for (size_t k = 0; k < NTESTS; k++) {
		const struct test *t = &tests[k];
		if (!run[k])
			continue;
		if (!t->op) {
			if (me == 0 && !json)
				printf("%-18s %8s %14s  %s\n", t->name, "-", "-", "unavailable");
			continue;
		}
		long one = t->fixed, *list = t->fixed >= 0 ? &one : sizes;
		int n = t->fixed >= 0 ? 1 : nsizes;
		for (int s = 0; s < n; s++) {
			long size = list[s], per = t->per > 0 ? t->per : t->per < 0 ? npes : window;
			double us = 0;
			if (t->check)
				check(t, size);
			if (t->between) {
				shmem_barrier_all();
				us = time_each(t->op, t->between, size, per);
			} else if (t->every_pe) {
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
		shmem_free(times);
		shmem_free(coll_dst);
		shmem_free(coll_src);
	}
	shmem_free(word);
	shmem_free(sym);
	free(local);
	shmem_finalize();
	return failed;
}
