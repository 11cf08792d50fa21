/*
 * What OpenSHMEM 1.6 adds, through the generated header: each part cites
 * the specification's wording in brief.
 */
#include <complex.h>
#include <stdint.h>
#include <string.h>

#include "check.h"

/* The legacy paths forward to the same headers. */
#include <mpp/shmem.h>
#include <mpp/shmemx.h>

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

/*
 * 1.6, shmem_signal_add and shmem_signal_set: an atomic update of a
 * remote signal word, atomic with the signal updates of put-with-signal;
 * a fence orders it after earlier puts to the same PE.
 */
static uint64_t sig;
static long data[16];

static void test_signal(void)
{
	int me = shmem_my_pe(), n = shmem_n_pes(), right = (me + 1) % n, left = (me + n - 1) % n;
	shmem_ctx_t ctx;
	CHECK(shmem_ctx_create(0, &ctx) == 0, "ctx_create");
	long one = 1;
	for (int i = 0; i < 10; i++) {
		shmem_signal_add(&sig, 1, right);
		shmem_ctx_signal_add(ctx, &sig, 2, right);
		shmem_long_put_signal_nbi(&data[i], &one, 1, &sig, 4, SHMEM_SIGNAL_ADD, right);
	}
	shmem_quiet();
	shmem_ctx_quiet(ctx);
	uint64_t got = shmem_signal_wait_until(&sig, SHMEM_CMP_GE, 70);
	CHECK(got == 70, "signal counted %llu, want 70", (unsigned long long)got);
	shmem_barrier_all();
	for (uint64_t round = 1; round <= 2; round++) {
		long sent[16];
		for (int i = 0; i < 16; i++)
			sent[i] = me * 1000 + (long)round * 100 + i;
		if (round == 1) {
			shmem_long_put_nbi(data, sent, 16, right);
			shmem_fence();
			shmem_signal_set(&sig, round, right);
		} else {
			shmem_ctx_long_put_nbi(ctx, data, sent, 16, right);
			shmem_ctx_fence(ctx);
			shmem_ctx_signal_set(ctx, &sig, round, right);
		}
		shmem_signal_wait_until(&sig, SHMEM_CMP_EQ, round);
		for (int i = 0; i < 16; i++)
			CHECK(data[i] == left * 1000 + (long)round * 100 + i, "round %llu: data[%d] %ld before its signal",
				(unsigned long long)round, i, data[i]);
		shmem_quiet();
		shmem_ctx_quiet(ctx);
		shmem_barrier_all();
	}
	shmem_ctx_destroy(ctx);
}

/*
 * 1.6, shmem_sum_inscan and shmem_sum_exscan: dest[i] becomes the sum of
 * source[i] over the team's PEs of rank up to this one's (inscan) or
 * below it (exscan); in place is allowed. Through the typed names and
 * the C11 generic ones.
 */
static void test_scan(void)
{
	int me = shmem_my_pe(), n = shmem_n_pes();
	enum { N = 40 };
	long src[N], dst[N];
	double dsrc[N], ddst[N];
	long double lsrc[N], ldst[N];
	double _Complex csrc[N], cdst[N];
	for (int i = 0; i < N; i++) {
		src[i] = me * 10 + i;
		dsrc[i] = me + 0.5 * i;
		lsrc[i] = me * 2 + i;
		csrc[i] = me + i * 1.0 * _Complex_I;
	}
	CHECK(shmem_long_sum_inscan(SHMEM_TEAM_WORLD, dst, src, N) == 0, "long_sum_inscan");
	for (int i = 0; i < N; i++)
		CHECK(dst[i] == 10L * me * (me + 1) / 2 + (long)(me + 1) * i, "inscan[%d] %ld", i, dst[i]);
	CHECK(shmem_sum_exscan(SHMEM_TEAM_WORLD, dst, src, N) == 0, "generic exscan");
	for (int i = 0; i < N; i++)
		CHECK(dst[i] == 10L * me * (me - 1) / 2 + (long)me * i, "exscan[%d] %ld", i, dst[i]);
	CHECK(shmem_sum_inscan(SHMEM_TEAM_WORLD, ddst, dsrc, N) == 0, "double inscan");
	for (int i = 0; i < N; i++)
		CHECK(ddst[i] == me * (me + 1) / 2.0 + (me + 1) * 0.5 * i, "double inscan[%d] %g", i, ddst[i]);
	CHECK(shmem_longdouble_sum_exscan(SHMEM_TEAM_WORLD, ldst, lsrc, N) == 0, "long double exscan");
	for (int i = 0; i < N; i++)
		CHECK(ldst[i] == (long double)me * (me - 1) + (long double)me * i, "long double exscan[%d]", i);
	CHECK(shmem_complexd_sum_inscan(SHMEM_TEAM_WORLD, cdst, csrc, N) == 0, "complex inscan");
	for (int i = 0; i < N; i++)
		CHECK(cdst[i] == me * (me + 1) / 2.0 + (me + 1) * i * 1.0 * _Complex_I, "complex inscan[%d]", i);
	/* In place. */
	CHECK(shmem_sum_inscan(SHMEM_TEAM_WORLD, src, src, N) == 0, "inscan in place");
	for (int i = 0; i < N; i++)
		CHECK(src[i] == 10L * me * (me + 1) / 2 + (long)(me + 1) * i, "in place inscan[%d] %ld", i, src[i]);
	/* A team other than the World's: every other PE. */
	shmem_team_t evens;
	int r = shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, NULL, 0, &evens);
	CHECK(r == 0, "split");
	if (evens != SHMEM_TEAM_INVALID) {
		int tme = shmem_team_my_pe(evens);
		int one = 1, got = -1;
		CHECK(shmem_int_sum_exscan(evens, &got, &one, 1) == 0, "team exscan");
		CHECK(got == tme, "team exscan %d on team PE %d", got, tme);
		shmem_team_destroy(evens);
	}
	/* The invalid team: the routine returns nonzero and does nothing. */
	CHECK(shmem_long_sum_inscan(SHMEM_TEAM_INVALID, dst, src, N) != 0, "inscan on SHMEM_TEAM_INVALID");
	shmem_barrier_all();
}

/*
 * 1.6, shmem_ibput and shmem_ibget: nblocks blocks of bsize contiguous
 * elements, dst elements apart in dest and sst apart in source; strides
 * are at least 1 and scaled by the element size.
 */
static int iblk[64];
static double dblk[64];

static void test_blocks(void)
{
	int me = shmem_my_pe(), n = shmem_n_pes(), right = (me + 1) % n, left = (me + n - 1) % n;
	int src[64], got[64];
	for (int i = 0; i < 64; i++)
		src[i] = me * 100 + i;
	memset(iblk, 0, sizeof iblk);
	shmem_barrier_all();
	/* 4 blocks of 3, 5 apart in dest and 4 in source. */
	shmem_int_ibput(iblk, src, 5, 4, 3, 4, right);
	shmem_barrier_all();
	for (int b = 0; b < 4; b++) {
		for (int j = 0; j < 5; j++) {
			int want = j < 3 ? left * 100 + b * 4 + j : 0;
			if (b * 5 + j < 64)
				CHECK(iblk[b * 5 + j] == want, "ibput block %d element %d: %d, want %d", b, j, iblk[b * 5 + j], want);
		}
	}
	memset(got, 0, sizeof got);
	shmem_ibget(got, iblk, 4, 5, 3, 4, right); /* C11 generic */
	for (int b = 0; b < 4; b++)
		for (int j = 0; j < 3; j++)
			CHECK(got[b * 4 + j] == me * 100 + b * 4 + j, "ibget block %d element %d: %d", b, j, got[b * 4 + j]);
	shmem_barrier_all();
	/* Context, sized and generic context forms. */
	shmem_ctx_t ctx;
	CHECK(shmem_ctx_create(0, &ctx) == 0, "ctx_create");
	double d[8];
	for (int i = 0; i < 8; i++)
		d[i] = me + i / 4.0;
	memset(dblk, 0, sizeof dblk);
	shmem_barrier_all();
	shmem_ibput(ctx, dblk, d, 3, 2, 2, 4, right);
	shmem_ctx_quiet(ctx);
	shmem_barrier_all();
	for (int b = 0; b < 4; b++)
		for (int j = 0; j < 2; j++)
			CHECK(dblk[b * 3 + j] == left + (b * 2 + j) / 4.0, "ctx ibput block %d element %d", b, j);
	uint64_t back[8] = {0};
	shmem_ctx_ibget64(ctx, back, dblk, 2, 3, 2, 4, right);
	CHECK(memcmp(back, d, sizeof d) == 0, "ctx ibget64 gave other bytes");
	shmem_ctx_destroy(ctx);
	shmem_barrier_all();
}

/*
 * 1.6, shmem_team_ptr: a team member's copy of a symmetric object, by its
 * number in the team, where loads and stores reach it; NULL elsewhere.
 * shmem_pe_quiet: completes the operations to the listed PEs, visible to
 * every PE on return.
 */
static long tp[4];

static void test_team_ptr_pe_quiet(void)
{
	int me = shmem_my_pe(), n = shmem_n_pes(), right = (me + 1) % n, left = (me + n - 1) % n;
	CHECK(shmem_team_ptr(SHMEM_TEAM_WORLD, tp, me) == (void *)tp, "team_ptr of this PE");
	CHECK(shmem_team_ptr(SHMEM_TEAM_WORLD, tp, n) == NULL, "team_ptr past the team");
	CHECK(shmem_team_ptr(SHMEM_TEAM_INVALID, tp, 0) == NULL, "team_ptr on SHMEM_TEAM_INVALID");
	CHECK(shmem_team_ptr(SHMEM_TEAM_WORLD, tp, right) == shmem_ptr(tp, right), "team_ptr and ptr disagree");
	int sr = (shmem_team_my_pe(SHMEM_TEAM_SHARED) + 1) % shmem_team_n_pes(SHMEM_TEAM_SHARED);
	int wr = shmem_team_translate_pe(SHMEM_TEAM_SHARED, sr, SHMEM_TEAM_WORLD);
	CHECK(shmem_team_ptr(SHMEM_TEAM_SHARED, tp, sr) == shmem_ptr(tp, wr), "team_ptr on SHMEM_TEAM_SHARED");

	long src[4] = { me, me + 1, me + 2, me + 3 };
	shmem_long_put_nbi(tp, src, 4, right);
	int pes[1] = { right };
	shmem_pe_quiet(pes, 1);
	shmem_signal_set(&sig, 1000, right);
	shmem_signal_wait_until(&sig, SHMEM_CMP_EQ, 1000);
	for (int i = 0; i < 4; i++)
		CHECK(tp[i] == left + i, "pe_quiet: tp[%d] %ld", i, tp[i]);
	shmem_pe_quiet(NULL, 0); /* nothing to complete */
	shmem_ctx_pe_quiet(SHMEM_CTX_INVALID, pes, 1); /* no operation */
	shmem_ctx_pe_quiet(SHMEM_CTX_DEFAULT, pes, 1);
	shmem_barrier_all();
}

/*
 * 1.6's clarifications: shmem_test_all returns 1 when nelems is 0, the
 * set being empty (and, here, when status excludes every element); the
 * vector forms' cmp_values are const.
 */
static long flags3[3];

static void test_clarifications(void)
{
	const int all[3] = { 1, 1, 1 };
	CHECK(shmem_long_test_all(flags3, 0, NULL, SHMEM_CMP_EQ, 7) == 1, "test_all of no elements");
	CHECK(shmem_long_test_all(flags3, 3, all, SHMEM_CMP_EQ, 7) == 1, "test_all of excluded elements");
	const long want[3] = { 0, 0, 0 };
	CHECK(shmem_long_test_all_vector(flags3, 3, NULL, SHMEM_CMP_EQ, want) == 1, "test_all_vector, const cmp_values");
	shmem_long_wait_until_all(flags3, 3, all, SHMEM_CMP_EQ, 7);
}

/*
 * The invalid handles, as 1.5 and 1.6 say of each routine: a routine
 * that returns a status returns nonzero (and a team or context it would
 * create is the invalid one), one that returns a PE or count returns -1
 * or NULL, and one that returns nothing performs no operation.
 */
static void test_invalid_handles(void)
{
	shmem_team_t t = SHMEM_TEAM_WORLD, x = SHMEM_TEAM_WORLD;
	shmem_team_config_t cfg = { 0 };
	shmem_ctx_t c = SHMEM_CTX_DEFAULT;
	long v = 1, d = 0;
	CHECK(shmem_team_split_strided(SHMEM_TEAM_INVALID, 0, 1, 1, NULL, 0, &t) != 0 && t == SHMEM_TEAM_INVALID,
		"split_strided of SHMEM_TEAM_INVALID");
	t = x = SHMEM_TEAM_WORLD;
	CHECK(shmem_team_split_2d(SHMEM_TEAM_INVALID, 1, NULL, 0, &t, NULL, 0, &x) != 0 &&
		t == SHMEM_TEAM_INVALID && x == SHMEM_TEAM_INVALID, "split_2d of SHMEM_TEAM_INVALID");
	CHECK(shmem_team_get_config(SHMEM_TEAM_INVALID, SHMEM_TEAM_NUM_CONTEXTS, &cfg) != 0, "get_config of SHMEM_TEAM_INVALID");
	CHECK(shmem_team_create_ctx(SHMEM_TEAM_INVALID, 0, &c) != 0 && c == SHMEM_CTX_INVALID, "create_ctx on SHMEM_TEAM_INVALID");
	CHECK(shmem_team_sync(SHMEM_TEAM_INVALID) != 0, "team_sync on SHMEM_TEAM_INVALID");
	CHECK(shmem_long_broadcast(SHMEM_TEAM_INVALID, &d, &v, 1, 0) != 0, "broadcast on SHMEM_TEAM_INVALID");
	CHECK(shmem_long_sum_reduce(SHMEM_TEAM_INVALID, &d, &v, 1) != 0, "sum_reduce on SHMEM_TEAM_INVALID");
	CHECK(shmem_long_sum_exscan(SHMEM_TEAM_INVALID, &d, &v, 1) != 0, "sum_exscan on SHMEM_TEAM_INVALID");
	CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, 0, SHMEM_TEAM_INVALID) == -1, "translate to SHMEM_TEAM_INVALID");
	const int pe0[1] = { 0 };
	shmem_ctx_pe_quiet(SHMEM_CTX_INVALID, pe0, 1);
	shmem_barrier_all();
}

/* shmemx_pcntr_*: a context's writes and reads, issued and complete. */
static void test_pcntr(void)
{
	int me = shmem_my_pe(), right = (me + 1) % shmem_n_pes();
	shmem_ctx_t ctx;
	CHECK(shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx) == 0, "ctx_create");
	long v = me, got[2];
	for (int i = 0; i < 3; i++)
		shmem_ctx_long_put_nbi(ctx, &tp[i], &v, 1, right);
	shmem_ctx_long_atomic_add(ctx, &tp[3], 1, right);
	shmem_ctx_long_get(ctx, got, tp, 2, right);
	shmem_ctx_long_get_nbi(ctx, got, tp, 2, right);
	uint64_t w = 0, r = 0;
	shmemx_pcntr_get_issued_write(ctx, &w);
	shmemx_pcntr_get_issued_read(ctx, &r);
	CHECK(w == 4 && r == 2, "issued: %llu writes, %llu reads", (unsigned long long)w, (unsigned long long)r);
	shmemx_pcntr_get_completed_read(ctx, &r);
	CHECK(r == 1, "the blocking get is complete: %llu", (unsigned long long)r);
	shmem_ctx_quiet(ctx);
	shmemx_pcntr_t all;
	shmemx_pcntr_get_all(ctx, &all);
	CHECK(all.pending_put == 4 && all.completed_put == 4 && all.pending_get == 2 && all.completed_get == 2 && all.target == 0,
		"after quiet: %llu/%llu writes, %llu/%llu reads", (unsigned long long)all.completed_put,
		(unsigned long long)all.pending_put, (unsigned long long)all.completed_get, (unsigned long long)all.pending_get);
	shmem_ctx_destroy(ctx);
	shmem_barrier_all();
}

/*
 * 1.6, shmem_ctx_session_start and _stop: hints for a batch of small
 * operations, which change no completion or ordering. A second start
 * combines its options, a second stop has no effect, NULL config and a
 * mask of 0 are the defaults, and SHMEM_CTX_INVALID takes no action.
 */
static void test_sessions(void)
{
	enum { N = 256 };
	static long table[N];
	static uint64_t sum;
	int me = shmem_my_pe(), n = shmem_n_pes();
	int right = (me + 1) % n, left = (me + n - 1) % n;
	shmem_ctx_t ctx;
	CHECK(shmem_ctx_create(0, &ctx) == 0, "ctx_create");
	const shmem_ctx_session_config_t cfg = { .total_ops = N + 1 };
	shmem_ctx_session_start(ctx, 0, NULL, 0);
	shmem_ctx_session_start(ctx, SHMEM_CTX_SESSION_BATCH, &cfg, SHMEM_CTX_SESSION_TOTAL_OPS);
	for (int i = 0; i < N; i++)
		shmem_ctx_long_p(ctx, &table[i], (long)me * N + i, right);
	shmem_ctx_uint64_atomic_add(ctx, &sum, 1, right);
	shmem_ctx_session_stop(ctx);
	shmem_ctx_session_stop(ctx);
	shmem_ctx_quiet(ctx);
	shmem_barrier_all();
	for (int i = 0; i < N; i++)
		CHECK(table[i] == (long)left * N + i, "session: table[%d] %ld", i, table[i]);
	CHECK(sum == 1, "session: sum %llu", (unsigned long long)sum);
	shmem_barrier_all();

	shmem_ctx_session_start(SHMEM_CTX_DEFAULT, SHMEM_CTX_SESSION_BATCH, NULL, SHMEM_CTX_SESSION_TOTAL_OPS);
	for (int i = 0; i < N; i++)
		shmem_long_p(&table[i], -((long)me * N + i), right);
	shmem_quiet(); /* completes the session's operations; it goes on */
	shmem_ctx_session_stop(SHMEM_CTX_DEFAULT);
	shmem_barrier_all();
	for (int i = 0; i < N; i++)
		CHECK(table[i] == -((long)left * N + i), "default session: table[%d] %ld", i, table[i]);
	shmem_ctx_session_start(SHMEM_CTX_INVALID, SHMEM_CTX_SESSION_BATCH, &cfg, SHMEM_CTX_SESSION_TOTAL_OPS);
	shmem_ctx_session_stop(SHMEM_CTX_INVALID);
	shmem_ctx_destroy(ctx);
	shmem_barrier_all();
}

int main(void)
{
	test_init();
	shmemx_register_gettid(NULL);
	CHECK(SHMEMX_TEAM_NODE == SHMEM_TEAM_SHARED, "SHMEMX_TEAM_NODE");
	test_signal();
	test_scan();
	test_blocks();
	test_team_ptr_pe_quiet();
	test_clarifications();
	test_invalid_handles();
	test_pcntr();
	test_sessions();
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
