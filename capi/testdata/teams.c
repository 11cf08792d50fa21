/* Teams, team contexts and the invalid handles. */
#include <string.h>

#include "check.h"

int main(void)
{
	shmem_init();
	int me = shmem_my_pe(), n = shmem_n_pes();
	long *buf = shmem_calloc(n, sizeof(long));
	long *s = shmem_malloc(sizeof(long)), *d = shmem_malloc(sizeof(long));
	shmem_barrier_all();

	CHECK(shmem_team_my_pe(SHMEM_TEAM_WORLD) == me && shmem_team_n_pes(SHMEM_TEAM_WORLD) == n, "world");
	CHECK(shmem_team_n_pes(SHMEM_TEAM_SHARED) >= 1, "shared");
	CHECK(shmem_team_my_pe(SHMEM_TEAM_INVALID) == -1 && shmem_team_n_pes(SHMEM_TEAM_INVALID) == -1, "invalid");
	CHECK(shmem_team_translate_pe(SHMEM_TEAM_INVALID, 0, SHMEM_TEAM_WORLD) == -1, "translate invalid");
	shmem_team_t t;
	CHECK(shmem_ctx_get_team(SHMEM_CTX_DEFAULT, &t) == 0 && t == SHMEM_TEAM_WORLD, "default ctx's team");
	CHECK(shmem_ctx_get_team(SHMEM_CTX_INVALID, &t) != 0 && t == SHMEM_TEAM_INVALID, "invalid ctx's team");

	/* the odd PEs, in reverse order: a negative stride */
	shmem_team_config_t cfg = { .num_contexts = 2 };
	shmem_team_t odd;
	int last_odd = (n - 1) % 2 ? n - 1 : n - 2;
	int nodd = n / 2;
	CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, last_odd, -2, nodd, &cfg, SHMEM_TEAM_NUM_CONTEXTS, &odd) == 0, "split");
	if (me % 2) {
		CHECK(odd != SHMEM_TEAM_INVALID, "odd PE left out");
		CHECK(shmem_team_my_pe(odd) == (last_odd - me) / 2, "odd rank %d", shmem_team_my_pe(odd));
		CHECK(shmem_team_translate_pe(odd, 0, SHMEM_TEAM_WORLD) == last_odd, "translate");
		CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, me, odd) == shmem_team_my_pe(odd), "translate back");
		shmem_team_config_t got = { 0 };
		CHECK(shmem_team_get_config(odd, SHMEM_TEAM_NUM_CONTEXTS, &got) == 0 && got.num_contexts == 2, "config");
		shmem_ctx_t ctx;
		CHECK(shmem_team_create_ctx(odd, 0, &ctx) == 0, "team ctx");
		shmem_team_t back;
		CHECK(shmem_ctx_get_team(ctx, &back) == 0 && back == odd, "ctx's team");
		/* team rank 0 is world PE last_odd */
		shmem_ctx_long_p(ctx, &buf[me], me + 100, 0);
		shmem_ctx_quiet(ctx);
		long sum;
		long mine = 1;
		*s = mine;
		shmem_long_sum_reduce(odd, d, s, 1);
		sum = *d;
		CHECK(sum == nodd, "sum over the odd team: %ld", sum);
		shmem_team_sync(odd);
		shmem_ctx_destroy(ctx);
		shmem_team_destroy(odd);
	} else {
		CHECK(odd == SHMEM_TEAM_INVALID, "even PE in the odd team");
	}
	shmem_barrier_all();
	if (me == last_odd && nodd > 0)
		for (int p = 1; p < n; p += 2)
			CHECK(buf[p] == p + 100, "team ctx put from %d: %ld", p, buf[p]);

	/* a 2D split */
	shmem_team_t x, y;
	CHECK(shmem_team_split_2d(SHMEM_TEAM_WORLD, 2, NULL, 0, &x, NULL, 0, &y) == 0, "split_2d");
	CHECK(shmem_team_my_pe(x) == me % 2 && shmem_team_my_pe(y) == me / 2, "2d ranks %d %d", shmem_team_my_pe(x), shmem_team_my_pe(y));
	shmem_team_destroy(x);
	shmem_team_destroy(y);

	/* a context on the world, with options */
	shmem_ctx_t c;
	CHECK(shmem_ctx_create(SHMEM_CTX_SERIALIZED, &c) == 0, "ctx_create");
	CHECK(shmem_ctx_get_team(c, &t) == 0 && t == SHMEM_TEAM_WORLD, "ctx_create's team");
	shmem_ctx_long_p(c, &buf[0], 1, (me + 1) % n);
	shmem_ctx_fence(c);
	shmem_ctx_quiet(c);
	shmem_ctx_destroy(c);
	shmem_ctx_destroy(SHMEM_CTX_INVALID);
	/* "If ctx has the value SHMEM_CTX_INVALID, no operation is performed." */
	shmem_ctx_quiet(SHMEM_CTX_INVALID);
	shmem_ctx_fence(SHMEM_CTX_INVALID);
	shmem_team_destroy(SHMEM_TEAM_INVALID);

	int prov;
	shmem_query_thread(&prov);
	CHECK(prov == SHMEM_THREAD_MULTIPLE, "thread level %d", prov);
	char name[SHMEM_MAX_NAME_LEN];
	shmem_info_get_name(name);
	int major, minor;
	shmem_info_get_version(&major, &minor);
	/* 1.6, shmem_info_get_version: the major and minor version of the
	 * specification the library implements, as the header's macros say. */
	CHECK(major == 1 && minor == 6, "version %d.%d", major, minor);
	CHECK(major == SHMEM_MAJOR_VERSION && minor == SHMEM_MINOR_VERSION, "version macros");
	CHECK(strcmp(name, SHMEM_VENDOR_STRING) == 0, "vendor string %s", name);
	shmem_barrier_all();
	printf("teams ok %d %s\n", me, name);
	shmem_finalize();
	return 0;
}
