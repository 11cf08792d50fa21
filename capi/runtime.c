/*
 * The hand-written runtime of the C interface: every OpenSHMEM 1.5
 * routine that is not one of shmem.h's typed families, and the gsh_*
 * layer of impl.h that the typed families call.
 *
 * Each gsh_* operation first asks the fast path (fast.h) and otherwise
 * crosses into Go (the gshgo_* functions of this package). Questions
 * every call asks, such as this PE's number or a team's ranks, are
 * answered here from the handles (handles.h), without crossing.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "handles.h"
#include "impl.h"
#include "shmemx.h"
#include "fast.h"
#include "window.h"
#include "_cgo_export.h"

static inline void gsh_flush(void);
static inline void gsh_flush_ctx(shmem_ctx_t ctx);
static void gsh_defer_init(void);
static void gsh_defer_off(void);

/* The predefined handles; shmem_init fills them. */
struct gsh_team gsh_team_world = { .mu = PTHREAD_MUTEX_INITIALIZER };
struct gsh_team gsh_team_shared = { .mu = PTHREAD_MUTEX_INITIALIZER };
struct gsh_ctx gsh_ctx_default = { .team = &gsh_team_world };

/*
 * A program built as a position-dependent or PIE executable refers to
 * these three through copy relocations: it has its own copy in its bss,
 * initialised from ours when it is loaded, while this library, linked
 * to bind its own symbols locally, goes on using ours. So
 * SHMEM_TEAM_WORLD in the program is another address than in the
 * library. At shmem_init the program's copies (found by the dynamic
 * linker's lookup, which finds the executable's first) are filled like
 * ours, and identity tests accept both.
 */
static struct gsh_team *gsh_world_copy, *gsh_shared_copy;
static struct gsh_ctx *gsh_default_copy;

static int gsh_is_predefined_team(shmem_team_t t)
{
	return t == &gsh_team_world || t == &gsh_team_shared ||
		(t && (t == gsh_world_copy || t == gsh_shared_copy));
}

static int gsh_is_default_ctx(shmem_ctx_t c)
{
	return c == &gsh_ctx_default || (c && c == gsh_default_copy);
}

/*
 * The executable's definition of name, if it has one other than ours.
 * The lookup goes through the main program's handle: RTLD_DEFAULT, asked
 * from a library that binds its symbols locally, finds the library's own.
 */
static void *gsh_program_copy(const char *name, void *ours)
{
	void *prog = dlopen(NULL, RTLD_NOW | RTLD_NOLOAD);
	void *p = prog ? dlsym(prog, name) : NULL;
	if (prog)
		dlclose(prog);
	return p != ours ? p : NULL;
}

static void gsh_copy_team(struct gsh_team *to, const struct gsh_team *from)
{
	to->h = from->h;
	to->my_pe = from->my_pe;
	to->n_pes = from->n_pes;
	to->start = from->start;
	to->stride = from->stride;
	to->members = from->members;
	to->config = from->config;
	to->config_mask = from->config_mask;
	to->fast = from->fast;
}

/* Fills the program's copies of the predefined handles from ours. */
static void gsh_publish_handles(void)
{
	gsh_world_copy = gsh_program_copy("gsh_team_world", &gsh_team_world);
	gsh_shared_copy = gsh_program_copy("gsh_team_shared", &gsh_team_shared);
	gsh_default_copy = gsh_program_copy("gsh_ctx_default", &gsh_ctx_default);
	if (gsh_world_copy)
		gsh_copy_team(gsh_world_copy, &gsh_team_world);
	if (gsh_shared_copy)
		gsh_copy_team(gsh_shared_copy, &gsh_team_shared);
	if (gsh_default_copy) {
		gsh_default_copy->h = gsh_ctx_default.h;
		gsh_default_copy->team = gsh_ctx_default.team;
		gsh_default_copy->options = gsh_ctx_default.options;
	}
}

/* After finalize, the program's copies say so, as ours do. */
static void gsh_retract_handles(void)
{
	if (gsh_world_copy) {
		gsh_world_copy->h = 0;
		gsh_world_copy->fast = NULL;
	}
	if (gsh_shared_copy) {
		gsh_shared_copy->h = 0;
		gsh_shared_copy->fast = NULL;
	}
	if (gsh_default_copy)
		gsh_default_copy->h = 0;
}

volatile int gsh_state = GSH_UNINIT;
int gsh_my_pe_cached = -1, gsh_n_pes_cached = -1;
struct gsh_settings gsh_settings = { .defer_on = 1, .window_on = 1, .fast_path_on = 1, .cpus = 1 };

/* The Go side takes names and messages as char *; it never writes them. */
#define GSH_FN(fn) ((char *)(fn))

void gsh_fatal(const char *fn, const char *msg)
{
	gshgo_fail(GSH_FN(fn), (char *)msg);
	abort(); /* not reached: gshgo_fail ends the process */
}

void gsh_overflow(const char *fn, size_t nelems, size_t esize)
{
	char msg[200];
	snprintf(msg, sizeof msg, "nelems %zu of %zu-byte elements overflows size_t: a call names at most %zu of them",
		nelems, esize, SIZE_MAX / esize);
	gsh_fatal(fn, msg);
}

static void gsh_need_running(const char *fn)
{
	if (gsh_state != GSH_RUNNING)
		gsh_fatal(fn, gsh_state == GSH_UNINIT ? "called before shmem_init" : "called after shmem_finalize");
}

/* A pause in a spin loop: it lets a sibling hyperthread run. */
static inline void gsh_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/*
 * How often a wait re-reads its variables in C before it hands over to
 * Go, which sleeps: the fast path's answer (many polls when every PE has
 * a CPU, few when they share), and none when the fast path is off, as
 * Go then spins before it sleeps anyway.
 */
#define GSH_SPINS gsh_fast_wait_polls()

/* ---- Initialisation and finalisation ---- */

static pthread_mutex_t gsh_init_mu = PTHREAD_MUTEX_INITIALIZER;

struct gsh_segment {
	uintptr_t start, end;
};

/*
 * The main program's writable data (data and bss), which the
 * specification makes symmetric: its writable PT_LOAD, less the part the
 * dynamic linker makes read-only after relocation (PT_GNU_RELRO), in
 * whole pages. The linker starts the writable rest on the page where
 * RELRO's protection ends, so nothing writable is left out; the first
 * object dl_iterate_phdr reports is the main program.
 */
static int gsh_find_static(struct dl_phdr_info *info, size_t size, void *data)
{
	struct gsh_segment *seg = data;
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = 0, hi = 0, relro = 0;
	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W)) {
			if (hi == 0 || a < lo)
				lo = a;
			if (a + ph->p_memsz > hi)
				hi = a + ph->p_memsz;
		} else if (ph->p_type == PT_GNU_RELRO) {
			relro = a + ph->p_memsz;
		}
	}
	lo &= ~(page - 1);
	hi = (hi + page - 1) & ~(page - 1);
	relro &= ~(page - 1); /* the dynamic linker protects whole pages below it */
	if (relro > lo)
		lo = relro;
	if (hi > lo) {
		seg->start = lo;
		seg->end = hi;
	}
	return 1; /* the main program only */
}

/*
 * A program that never calls shmem_finalize is finalized as it exits
 * normally, so the launcher does not see a PE leave the job without
 * finalizing. An exit with a nonzero status is a failure the launcher
 * reports as such; finalizing then could wait for PEs that will never
 * arrive.
 */
static void gsh_at_exit(int status, void *arg)
{
	(void)arg;
	/* Every init the program did not balance, so the library ends. */
	while (status == 0 && gsh_state == GSH_RUNNING)
		shmem_finalize();
}

static int gsh_init(int requested, int *provided, const char *fn)
{
	static int exit_hooked;
	int rc = 0;
	pthread_mutex_lock(&gsh_init_mu);
	if (gsh_state == GSH_RUNNING) {
		/*
		 * 1.6 allows more than one call: a later one is counted, for
		 * shmem_finalize to balance, and changes nothing else.
		 */
		rc = gshgo_init(requested, provided, NULL, 0, GSH_FN(fn));
		goto out;
	}
	if (gsh_state == GSH_FINALIZED) {
		pthread_mutex_unlock(&gsh_init_mu);
		gsh_fatal(fn, "called after the last shmem_finalize: the library cannot be initialised again");
	}
	struct gsh_segment seg = { 0, 0 };
	dl_iterate_phdr(gsh_find_static, &seg);
	rc = gshgo_init(requested, provided, (void *)seg.start, seg.end - seg.start, GSH_FN(fn));
	if (rc != 0)
		goto out;
	gsh_fast_init(); /* before the handles' copies, which take its team states */
	gsh_publish_handles();
	gsh_state = GSH_RUNNING;
	gsh_win_init();
	gsh_defer_init();
	if (!exit_hooked) {
		exit_hooked = 1;
		on_exit(gsh_at_exit, NULL);
	}
out:
	pthread_mutex_unlock(&gsh_init_mu);
	return rc;
}

void shmem_init(void)
{
	if (gsh_init(-1, NULL, "shmem_init") != 0)
		exit(1); /* why is on stderr; there is no job to end */
}

int shmem_init_thread(int requested, int *provided)
{
	return gsh_init(requested, provided, "shmem_init_thread");
}

void start_pes(int npes)
{
	(void)npes; /* the launcher decides the number of PEs */
	if (gsh_init(-1, NULL, "start_pes") != 0)
		exit(1);
}

void shmem_query_initialized(int *initialized)
{
	if (initialized)
		*initialized = gshgo_query_initialized();
}

void shmem_query_thread(int *provided)
{
	gsh_need_running("shmem_query_thread");
	if (provided)
		*provided = gshgo_query_thread(GSH_FN("shmem_query_thread"));
}

void shmem_finalize(void)
{
	pthread_mutex_lock(&gsh_init_mu);
	if (gsh_state != GSH_RUNNING) {
		int never = gsh_state == GSH_UNINIT;
		pthread_mutex_unlock(&gsh_init_mu);
		if (never)
			gsh_fatal("shmem_finalize", "called before shmem_init");
		return; /* finalized already */
	}
	if (gshgo_inits() > 1) {
		/* Not the last: it balances one of several inits, and the
		 * library stays initialized until the last. */
		gshgo_finalize(GSH_FN("shmem_finalize"));
		pthread_mutex_unlock(&gsh_init_mu);
		return;
	}
	gsh_flush();
	gsh_defer_off(); /* later calls go to Go, which reports them */
	gsh_win_fini();
	gsh_fast_fini();
	gshgo_finalize(GSH_FN("shmem_finalize"));
	gsh_retract_handles();
	gsh_state = GSH_FINALIZED;
	pthread_mutex_unlock(&gsh_init_mu);
}

void shmem_global_exit(int status)
{
	fflush(NULL); /* the Go side leaves with _exit semantics */
	gshgo_global_exit(status);
	_exit(status);
}

/*
 * The job's shape stays known after shmem_finalize (programs print it on
 * the way out); only a call before shmem_init is an error.
 */
static inline int gsh_known(int v, const char *fn)
{
	if (gsh_state == GSH_UNINIT)
		gsh_fatal(fn, "called before shmem_init");
	return v;
}

int shmem_my_pe(void) { return gsh_known(gsh_my_pe_cached, "shmem_my_pe"); }
int shmem_n_pes(void) { return gsh_known(gsh_n_pes_cached, "shmem_n_pes"); }
int _my_pe(void) { return gsh_known(gsh_my_pe_cached, "_my_pe"); }
int _num_pes(void) { return gsh_known(gsh_n_pes_cached, "_num_pes"); }

int shmem_pe_accessible(int pe)
{
	return gshgo_pe_accessible(pe, GSH_FN("shmem_pe_accessible"));
}

int shmem_addr_accessible(const void *addr, int pe)
{
	return gshgo_addr_accessible((void *)addr, pe, GSH_FN("shmem_addr_accessible"));
}

void *shmem_ptr(const void *dest, int pe)
{
	return gshgo_ptr((void *)dest, pe, GSH_FN("shmem_ptr"));
}

void *shmem_team_ptr(shmem_team_t team, const void *dest, int pe)
{
	if (team == SHMEM_TEAM_INVALID)
		return NULL;
	return gshgo_team_ptr(team, (void *)dest, pe, GSH_FN("shmem_team_ptr"));
}

static uint64_t (*gsh_gettid)(void);

void shmemx_register_gettid(uint64_t (*gettid_fn)(void))
{
	__atomic_store_n(&gsh_gettid, gettid_fn, __ATOMIC_RELAXED);
}

void shmem_info_get_version(int *major, int *minor)
{
	if (major)
		*major = SHMEM_MAJOR_VERSION;
	if (minor)
		*minor = SHMEM_MINOR_VERSION;
}

void shmem_info_get_name(char *name)
{
	if (!name)
		return;
	strncpy(name, SHMEM_VENDOR_STRING, SHMEM_MAX_NAME_LEN - 1);
	name[SHMEM_MAX_NAME_LEN - 1] = '\0';
}

void shmem_pcontrol(int level, ...)
{
	gshgo_pcontrol(level, GSH_FN("shmem_pcontrol"));
}

/* ---- Memory management ---- */

enum { GSH_ALLOC_MALLOC, GSH_ALLOC_CALLOC, GSH_ALLOC_ALIGN, GSH_ALLOC_HINTS };

void *shmem_malloc(size_t size)
{
	gsh_flush();
	return gshgo_alloc(GSH_ALLOC_MALLOC, size, 0, 0, GSH_FN("shmem_malloc"));
}

void *shmem_calloc(size_t count, size_t size)
{
	if (size != 0 && count > SIZE_MAX / size)
		gsh_fatal("shmem_calloc", "count * size overflows");
	gsh_flush();
	return gshgo_alloc(GSH_ALLOC_CALLOC, count * size, 0, 0, GSH_FN("shmem_calloc"));
}

void *shmem_align(size_t alignment, size_t size)
{
	gsh_flush();
	return gshgo_alloc(GSH_ALLOC_ALIGN, size, alignment, 0, GSH_FN("shmem_align"));
}

void *shmem_malloc_with_hints(size_t size, long hints)
{
	gsh_flush();
	return gshgo_alloc(GSH_ALLOC_HINTS, size, 0, hints, GSH_FN("shmem_malloc_with_hints"));
}

void *shmem_realloc(void *ptr, size_t size)
{
	gsh_flush();
	return gshgo_realloc(ptr, size, GSH_FN("shmem_realloc"));
}

void shmem_free(void *ptr)
{
	gsh_flush();
	gshgo_free(ptr, GSH_FN("shmem_free"));
}

void *shmalloc(size_t size)
{
	gsh_flush();
	return gshgo_alloc(GSH_ALLOC_MALLOC, size, 0, 0, GSH_FN("shmalloc"));
}

void shfree(void *ptr)
{
	gsh_flush();
	gshgo_free(ptr, GSH_FN("shfree"));
}

void *shrealloc(void *ptr, size_t size)
{
	gsh_flush();
	return gshgo_realloc(ptr, size, GSH_FN("shrealloc"));
}

void *shmemalign(size_t alignment, size_t size)
{
	gsh_flush();
	return gshgo_alloc(GSH_ALLOC_ALIGN, size, alignment, 0, GSH_FN("shmemalign"));
}

/* ---- Teams ---- */

static struct gsh_team *gsh_team_new(const char *fn)
{
	struct gsh_team *t = calloc(1, sizeof *t);
	if (!t)
		gsh_fatal(fn, "out of memory for a team");
	pthread_mutex_init(&t->mu, NULL);
	return t;
}

static void gsh_team_free(struct gsh_team *t)
{
	free(t->members);
	pthread_mutex_destroy(&t->mu);
	free(t);
}

int shmem_team_my_pe(shmem_team_t team)
{
	if (team == SHMEM_TEAM_INVALID)
		return -1;
	if (!team->h)
		gsh_need_running("shmem_team_my_pe");
	return team->my_pe;
}

int shmem_team_n_pes(shmem_team_t team)
{
	if (team == SHMEM_TEAM_INVALID)
		return -1;
	if (!team->h)
		gsh_need_running("shmem_team_n_pes");
	return team->n_pes;
}

int shmem_team_get_config(shmem_team_t team, long config_mask, shmem_team_config_t *config)
{
	if (team == SHMEM_TEAM_INVALID || !config)
		return -1;
	if (!team->h)
		gsh_need_running("shmem_team_get_config");
	if (config_mask & SHMEM_TEAM_NUM_CONTEXTS)
		config->num_contexts = team->config.num_contexts;
	return 0;
}

/* Rank of world PE pe in team t, or -1. */
static int gsh_team_rank(const struct gsh_team *t, int pe)
{
	if (t->members) {
		for (int r = 0; r < t->n_pes; r++)
			if (t->members[r] == pe)
				return r;
		return -1;
	}
	long d = (long)pe - t->start;
	if (t->stride == 0)
		return d == 0 && t->n_pes > 0 ? 0 : -1;
	if (d % t->stride != 0)
		return -1;
	long r = d / t->stride;
	return r >= 0 && r < t->n_pes ? (int)r : -1;
}

int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team)
{
	if (src_team == SHMEM_TEAM_INVALID || dest_team == SHMEM_TEAM_INVALID)
		return -1;
	if (!src_team->h || !dest_team->h)
		gsh_need_running("shmem_team_translate_pe");
	if (src_pe < 0 || src_pe >= src_team->n_pes)
		return -1;
	return gsh_team_rank(dest_team, gsh_team_world_pe(src_team, src_pe));
}

static int gsh_num_contexts(const shmem_team_config_t *config, long mask)
{
	return config && (mask & SHMEM_TEAM_NUM_CONTEXTS) ? config->num_contexts : 0;
}

/* Keeps the new team t, or drops it when this PE is not in it. */
static shmem_team_t gsh_team_keep(struct gsh_team *t, long mask)
{
	if (!t->h) {
		gsh_team_free(t);
		return SHMEM_TEAM_INVALID;
	}
	t->config_mask = mask & SHMEM_TEAM_NUM_CONTEXTS;
	gsh_fast_team_created(t);
	return t;
}

int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride, int size,
	const shmem_team_config_t *config, long config_mask, shmem_team_t *new_team)
{
	static const char fn[] = "shmem_team_split_strided";
	if (!new_team)
		gsh_fatal(fn, "new_team is NULL");
	*new_team = SHMEM_TEAM_INVALID;
	if (parent_team == SHMEM_TEAM_INVALID)
		return -1;
	struct gsh_team *t = gsh_team_new(fn);
	gsh_flush();
	int rc = gshgo_team_split_strided(parent_team, start, stride, size,
		gsh_num_contexts(config, config_mask), t, GSH_FN(fn));
	if (rc != 0) {
		gsh_team_free(t);
		return rc;
	}
	*new_team = gsh_team_keep(t, config_mask);
	return 0;
}

int shmem_team_split_2d(shmem_team_t parent_team, int xrange,
	const shmem_team_config_t *xaxis_config, long xaxis_mask, shmem_team_t *xaxis_team,
	const shmem_team_config_t *yaxis_config, long yaxis_mask, shmem_team_t *yaxis_team)
{
	static const char fn[] = "shmem_team_split_2d";
	if (!xaxis_team || !yaxis_team)
		gsh_fatal(fn, "xaxis_team or yaxis_team is NULL");
	*xaxis_team = *yaxis_team = SHMEM_TEAM_INVALID;
	if (parent_team == SHMEM_TEAM_INVALID)
		return -1;
	struct gsh_team *x = gsh_team_new(fn), *y = gsh_team_new(fn);
	gsh_flush();
	int rc = gshgo_team_split_2d(parent_team, xrange, gsh_num_contexts(xaxis_config, xaxis_mask),
		gsh_num_contexts(yaxis_config, yaxis_mask), x, y, GSH_FN(fn));
	if (rc != 0) {
		gsh_team_free(x);
		gsh_team_free(y);
		return rc;
	}
	*xaxis_team = gsh_team_keep(x, xaxis_mask);
	*yaxis_team = gsh_team_keep(y, yaxis_mask);
	return 0;
}

void shmem_team_destroy(shmem_team_t team)
{
	static const char fn[] = "shmem_team_destroy";
	if (team == SHMEM_TEAM_INVALID)
		return;
	if (gsh_is_predefined_team(team))
		gsh_fatal(fn, "SHMEM_TEAM_WORLD and SHMEM_TEAM_SHARED cannot be destroyed");
	pthread_mutex_lock(&team->mu);
	struct gsh_ctx *ctxs = team->ctxs;
	team->ctxs = NULL;
	pthread_mutex_unlock(&team->mu);
	for (struct gsh_ctx *c = ctxs; c; c = c->next)
		gsh_fast_ctx_destroyed(c);
	gsh_fast_team_destroyed(team);
	/* Destroys the team's contexts on the Go side too. */
	gsh_flush();
	gshgo_team_destroy(team, GSH_FN(fn));
	while (ctxs) {
		struct gsh_ctx *next = ctxs->next;
		free(ctxs);
		ctxs = next;
	}
	gsh_team_free(team);
}

int shmem_team_sync(shmem_team_t team)
{
	if (team == SHMEM_TEAM_INVALID)
		return -1;
	/* The World's team syncs through the domain's barrier, in C on the fast path. */
	if ((team == &gsh_team_world || team == gsh_world_copy) && gsh_fast_barrier())
		return 0;
	gsh_flush();
	return gshgo_team_sync(team, GSH_FN("shmem_team_sync"));
}

/* ---- Contexts ---- */

static int gsh_ctx_new(shmem_team_t team, long options, shmem_ctx_t *ctx, const char *fn)
{
	if (!ctx)
		gsh_fatal(fn, "ctx is NULL");
	*ctx = SHMEM_CTX_INVALID;
	if (team == SHMEM_TEAM_INVALID)
		return -1;
	struct gsh_ctx *c = calloc(1, sizeof *c);
	if (!c)
		return -1;
	c->team = team;
	c->options = options;
	if (gshgo_ctx_create(team, options, c, GSH_FN(fn)) != 0) {
		free(c);
		return -1;
	}
	pthread_mutex_lock(&team->mu);
	c->next = team->ctxs;
	team->ctxs = c;
	pthread_mutex_unlock(&team->mu);
	gsh_fast_ctx_created(c);
	*ctx = c;
	return 0;
}

int shmem_ctx_create(long options, shmem_ctx_t *ctx)
{
	return gsh_ctx_new(SHMEM_TEAM_WORLD, options, ctx, "shmem_ctx_create");
}

int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t *ctx)
{
	return gsh_ctx_new(team, options, ctx, "shmem_team_create_ctx");
}

void shmem_ctx_destroy(shmem_ctx_t ctx)
{
	static const char fn[] = "shmem_ctx_destroy";
	if (ctx == SHMEM_CTX_INVALID)
		return;
	if (gsh_is_default_ctx(ctx))
		gsh_fatal(fn, "SHMEM_CTX_DEFAULT cannot be destroyed");
	gsh_fast_ctx_destroyed(ctx);
	gshgo_ctx_destroy(ctx, GSH_FN(fn));
	struct gsh_team *t = ctx->team;
	pthread_mutex_lock(&t->mu);
	for (struct gsh_ctx **p = &t->ctxs; *p; p = &(*p)->next) {
		if (*p == ctx) {
			*p = ctx->next;
			break;
		}
	}
	pthread_mutex_unlock(&t->mu);
	free(ctx);
}

/*
 * 1.6's sessions: hints, in Go (shmem's SessionStart), where a batch
 * holds the context's small puts and atomics back on tcp. A NULL config
 * is the defaults, as a mask of 0 is. Stopping hands the default
 * context's deferred queue to Go first, so that what the batch held
 * leaves together.
 */
void shmem_ctx_session_start(shmem_ctx_t ctx, long options, const shmem_ctx_session_config_t *config, long config_mask)
{
	if (ctx == SHMEM_CTX_INVALID)
		return;
	if (!config)
		config_mask = 0;
	gshgo_session_start(ctx, options, config ? config->total_ops : SIZE_MAX, config_mask, GSH_FN("shmem_ctx_session_start"));
}

void shmem_ctx_session_stop(shmem_ctx_t ctx)
{
	if (ctx == SHMEM_CTX_INVALID)
		return;
	gsh_flush_ctx(ctx);
	gshgo_session_stop(ctx, GSH_FN("shmem_ctx_session_stop"));
}

int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t *team)
{
	if (!team)
		return -1;
	if (ctx == SHMEM_CTX_INVALID) {
		*team = SHMEM_TEAM_INVALID;
		return -1;
	}
	/* The program compares it with its own SHMEM_TEAM_WORLD. */
	*team = ctx->team;
	if (*team == &gsh_team_world && gsh_world_copy)
		*team = gsh_world_copy;
	else if (*team == &gsh_team_shared && gsh_shared_copy)
		*team = gsh_shared_copy;
	return 0;
}

/* ---- Ordering ---- */

/*
 * The context a call names, with the program's copy of the default
 * context (see gsh_publish_handles) taken as ours, so that the
 * bookkeeping below has one place per context.
 */
static inline shmem_ctx_t gsh_ctx_canon(shmem_ctx_t ctx)
{
	return ctx && ctx == gsh_default_copy ? &gsh_ctx_default : ctx;
}

/*
 * The performance counters of shmemx_pcntr_*: one more operation of kind
 * which on ctx. A plain increment (a relaxed load and store, no locked
 * instruction), so the operations pay next to nothing for it: exact for
 * a context one thread uses, and it may miss counts where threads share
 * one.
 */
static inline void gsh_pc_count(shmem_ctx_t ctx, int which)
{
	if (!ctx)
		return;
	uint64_t *p = &gsh_ctx_canon(ctx)->pc[which];
	__atomic_store_n(p, __atomic_load_n(p, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}

/* A quiet that began when ctx had issued the puts and gets of snap completed them. */
static inline void gsh_pc_quieted(shmem_ctx_t ctx, const uint64_t snap[2])
{
	for (int i = 0; i < 2; i++) {
		uint64_t *done = &ctx->pc[GSH_PC_PUT_DONE + i];
		if (__atomic_load_n(done, __ATOMIC_RELAXED) < snap[i])
			__atomic_store_n(done, snap[i], __ATOMIC_RELAXED);
	}
}

/*
 * Quiet with nothing to complete. Every call into Go on a context counts
 * in ctx->issued when it returns; a quiet reads the count before it
 * enters Go and, once Go's quiet returned, raises ctx->quieted to what it
 * read. An operation that returned before a quiet began is counted in
 * what that quiet read, so while issued equals quieted every operation
 * that returned has been completed by a quiet, and another has nothing to
 * do. Threads may race on both words: quieted only grows, and only to a
 * count a finished quiet read.
 */
static inline void gsh_issued(shmem_ctx_t ctx)
{
	__atomic_fetch_add(&ctx->issued, 1, __ATOMIC_RELEASE);
}

static inline void gsh_quieted(shmem_ctx_t ctx, unsigned long seen)
{
	unsigned long q = __atomic_load_n(&ctx->quieted, __ATOMIC_RELAXED);
	while ((long)(seen - q) > 0 &&
	       !__atomic_compare_exchange_n(&ctx->quieted, &q, seen, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
}

static inline int gsh_nothing_pending(shmem_ctx_t ctx, unsigned long *seen)
{
	*seen = __atomic_load_n(&ctx->issued, __ATOMIC_ACQUIRE);
	return *seen == __atomic_load_n(&ctx->quieted, __ATOMIC_ACQUIRE);
}

/*
 * Deferred operations of the default context. Where peers' memory is not
 * mapped every operation is a call into Go, which costs about as much as
 * a whole small put over ntbring (docs/measuring.md, "What a call from
 * C costs"). So
 * the default context's small puts and non-blocking transfers wait in
 * this queue, and the next quiet or fence, or any routine that enters Go
 * or waits, hands the queue to Go in one call (gshgo_flush), in order:
 * a put and its quiet are one call, a window of non-blocking puts and
 * their quiet is one call. A blocking put's source is copied here (up to
 * GSH_DEFER_COPY bytes), so the program may reuse it on return as the
 * specification says; a non-blocking transfer's buffers are the
 * program's until its quiet anyway. Whatever waits (wait and test,
 * barriers, locks, collectives, allocation, finalize) flushes the queue
 * first, so no PE waits for a peer while holding back what that peer
 * waits for. At SHMEM_THREAD_MULTIPLE threads share the queue under its
 * mutex, held across the call into Go so that a quiet of one thread
 * completes what another queued before it. GOSHMEM_C_DEFER=0 turns it
 * off.
 */
#define GSH_DEFER_OPS 64
#define GSH_DEFER_COPY 64
#define GSH_DEFER_NBI 8192 /* larger transfers start at once, to overlap */

static struct {
	pthread_mutex_t mu;
	int on; /* set at shmem_init: peers not mapped and not turned off */
	int mt; /* SHMEM_THREAD_MULTIPLE: threads take mu */
	int n;  /* queued; written under mu, read without it to skip */
	struct gsh_qop ops[GSH_DEFER_OPS];
	_Alignas(16) unsigned char copy[GSH_DEFER_OPS][GSH_DEFER_COPY];
} gsh_defer = { .mu = PTHREAD_MUTEX_INITIALIZER };

/*
 * Below SHMEM_THREAD_MULTIPLE one thread at a time calls the library,
 * and the program orders those calls itself, so the queue needs no lock.
 */
static inline void gsh_defer_lock(void)
{
	if (gsh_defer.mt)
		pthread_mutex_lock(&gsh_defer.mu);
}

static inline void gsh_defer_unlock(void)
{
	if (gsh_defer.mt)
		pthread_mutex_unlock(&gsh_defer.mu);
}

static void gsh_defer_init(void)
{
	int on = gsh_settings.defer_on;
	gsh_defer.mt = gshgo_query_thread(GSH_FN("shmem_init")) == SHMEM_THREAD_MULTIPLE;
	__atomic_store_n(&gsh_defer.on, on && !gsh_fast.on, __ATOMIC_RELAXED);
}

static void gsh_defer_off(void)
{
	gsh_defer_lock();
	__atomic_store_n(&gsh_defer.on, 0, __ATOMIC_RELAXED);
	gsh_defer_unlock();
}

/* Hands the queue to Go, then does then; mu is held. */
static void gsh_defer_flush_locked(int then, const char *fn)
{
	int n = gsh_defer.n;
	unsigned long seen = __atomic_load_n(&gsh_ctx_default.issued, __ATOMIC_ACQUIRE);
	gshgo_flush(&gsh_ctx_default, gsh_defer.ops, n, then, GSH_FN(fn));
	__atomic_store_n(&gsh_defer.n, 0, __ATOMIC_RELAXED);
	if (then == GSH_THEN_QUIET)
		gsh_quieted(&gsh_ctx_default, seen);
	else if (n > 0)
		gsh_issued(&gsh_ctx_default);
}

static inline int gsh_deferred(void)
{
	return __atomic_load_n(&gsh_defer.n, __ATOMIC_RELAXED) != 0;
}

/* Before anything that enters Go or waits: the queue goes first. */
static inline void gsh_flush(void)
{
	if (__builtin_expect(!gsh_deferred(), 1))
		return;
	gsh_defer_lock();
	if (gsh_defer.n)
		gsh_defer_flush_locked(GSH_THEN_NONE, "shmem_quiet");
	gsh_defer_unlock();
}

/* Before a call into Go on ctx: the default context's queue goes first. */
static inline void gsh_flush_ctx(shmem_ctx_t ctx)
{
	if (gsh_ctx_canon(ctx) == &gsh_ctx_default)
		gsh_flush();
}

/*
 * Queues a transfer on the default context if it may wait: 1 if it did,
 * 0 if the caller is to go to Go at once.
 */
static int gsh_defer_op(shmem_ctx_t ctx, int kind, void *dest, const void *src, size_t n, int pe, const char *fn)
{
	if (!__atomic_load_n(&gsh_defer.on, __ATOMIC_RELAXED) || gsh_ctx_canon(ctx) != &gsh_ctx_default)
		return 0;
	if (kind == GSH_DEFER_PUT ? n > GSH_DEFER_COPY : n > GSH_DEFER_NBI)
		return 0;
	/* A transfer with this PE itself is not worth holding back. */
	if (pe == ctx->team->my_pe)
		return 0;
	gsh_defer_lock();
	if (!gsh_defer.on) { /* finalized meanwhile */
		gsh_defer_unlock();
		return 0;
	}
	if (gsh_defer.n == GSH_DEFER_OPS)
		gsh_defer_flush_locked(GSH_THEN_NONE, fn);
	int i = gsh_defer.n;
	struct gsh_qop *op = &gsh_defer.ops[i];
	op->dest = dest;
	op->src = (void *)src;
	if (kind == GSH_DEFER_PUT) {
		memcpy(gsh_defer.copy[i], src, n);
		op->src = gsh_defer.copy[i];
	}
	op->n = n;
	op->pe = pe;
	op->kind = kind;
	op->fn = fn;
	__atomic_store_n(&gsh_defer.n, i + 1, __ATOMIC_RELAXED);
	gsh_defer_unlock();
	return 1;
}

static void gsh_quiet_ops(shmem_ctx_t ctx, const char *fn);

static void gsh_quiet(shmem_ctx_t ctx, const char *fn)
{
	shmem_ctx_t c = gsh_ctx_canon(ctx);
	uint64_t snap[2] = { 0, 0 };
	if (c) {
		snap[0] = __atomic_load_n(&c->pc[GSH_PC_PUT], __ATOMIC_RELAXED);
		snap[1] = __atomic_load_n(&c->pc[GSH_PC_GET], __ATOMIC_RELAXED);
	}
	gsh_quiet_ops(ctx, fn);
	if (c)
		gsh_pc_quieted(c, snap);
}

static void gsh_quiet_ops(shmem_ctx_t ctx, const char *fn)
{
	unsigned long seen;
	if (ctx && gsh_fast_quiet(ctx))
		return;
	ctx = gsh_ctx_canon(ctx);
	if (ctx == &gsh_ctx_default && gsh_deferred()) {
		gsh_defer_lock();
		if (gsh_defer.n) {
			gsh_defer_flush_locked(GSH_THEN_QUIET, fn);
			gsh_defer_unlock();
			return;
		}
		gsh_defer_unlock();
	}
	if (!ctx) {
		gshgo_quiet(ctx, GSH_FN(fn)); /* Go names what is wrong */
		return;
	}
	if (gsh_nothing_pending(ctx, &seen))
		return;
	gshgo_quiet(ctx, GSH_FN(fn));
	gsh_quieted(ctx, seen);
}

static void gsh_fence(shmem_ctx_t ctx, const char *fn)
{
	unsigned long seen;
	if (ctx && gsh_fast_fence(ctx))
		return;
	ctx = gsh_ctx_canon(ctx);
	if (ctx == &gsh_ctx_default && gsh_deferred()) {
		gsh_defer_lock();
		if (gsh_defer.n) {
			/* A fence between queued operations is queued too. */
			if (gsh_defer.n == GSH_DEFER_OPS) {
				gsh_defer_flush_locked(GSH_THEN_FENCE, fn);
			} else {
				struct gsh_qop *op = &gsh_defer.ops[gsh_defer.n];
				memset(op, 0, sizeof *op);
				op->kind = GSH_DEFER_FENCE;
				op->fn = fn;
				__atomic_store_n(&gsh_defer.n, gsh_defer.n + 1, __ATOMIC_RELAXED);
			}
			gsh_defer_unlock();
			return;
		}
		gsh_defer_unlock();
	}
	/* Nothing outstanding: nothing to order. */
	if (ctx && gsh_nothing_pending(ctx, &seen))
		return;
	gshgo_fence(ctx, GSH_FN(fn));
}

/* On SHMEM_CTX_INVALID, quiet and fence perform no operation (1.5 and 1.6). */
void shmem_ctx_quiet(shmem_ctx_t ctx)
{
	if (ctx == SHMEM_CTX_INVALID)
		return;
	gsh_quiet(ctx, "shmem_ctx_quiet");
}

void shmem_quiet(void)
{
	gsh_quiet(SHMEM_CTX_DEFAULT, "shmem_quiet");
}

/*
 * 1.6's per-PE quiet: what C holds goes to Go first, without a quiet (the
 * fast path's stores are complete and are ordered by its barrier; the
 * default context's deferred queue is handed over), then shmem's, which
 * checks the list and waits for the listed PEs alone where the provider
 * can (core.PEQuieter), so a slow PE outside the list does not hold it
 * up. The performance counters' completions are left to the next whole
 * quiet: operations to other PEs may still be in flight.
 */
static void gsh_pe_quiet(shmem_ctx_t ctx, const int *target_pes, size_t npes, const char *fn)
{
	if (npes == 0)
		return;
	if (!target_pes)
		gsh_fatal(fn, "target_pes is NULL, and npes is not 0");
	if (ctx)
		(void)gsh_fast_quiet(ctx);
	gsh_flush_ctx(ctx);
	gshgo_pe_quiet(ctx, (int *)target_pes, npes, GSH_FN(fn));
}

void shmem_ctx_pe_quiet(shmem_ctx_t ctx, const int *target_pes, size_t npes)
{
	if (ctx == SHMEM_CTX_INVALID)
		return;
	gsh_pe_quiet(ctx, target_pes, npes, "shmem_ctx_pe_quiet");
}

void shmem_pe_quiet(const int *target_pes, size_t npes)
{
	gsh_pe_quiet(SHMEM_CTX_DEFAULT, target_pes, npes, "shmem_pe_quiet");
}

void shmem_ctx_fence(shmem_ctx_t ctx)
{
	if (ctx == SHMEM_CTX_INVALID)
		return;
	gsh_fence(ctx, "shmem_ctx_fence");
}

void shmem_fence(void)
{
	gsh_fence(SHMEM_CTX_DEFAULT, "shmem_fence");
}

/* ---- Barriers ---- */

static void gsh_barrier_all_ops(void);

/*
 * The barriers complete the default context's operations: the fast
 * path's first (gsh_fast_quiet orders its stores), then Go's, inside the
 * Go barrier itself.
 */
void shmem_barrier_all(void)
{
	uint64_t snap[2] = { gsh_ctx_default.pc[GSH_PC_PUT], gsh_ctx_default.pc[GSH_PC_GET] };
	gsh_barrier_all_ops();
	gsh_pc_quieted(&gsh_ctx_default, snap); /* the barrier completed them */
}

static void gsh_barrier_all_ops(void)
{
	if (gsh_fast_barrier_all())
		return;
	(void)gsh_fast_quiet(SHMEM_CTX_DEFAULT);
	gsh_flush();
	gshgo_barrier_all(GSH_FN("shmem_barrier_all"));
}

void shmem_sync_all(void)
{
	if (gsh_fast_barrier())
		return;
	gsh_flush();
	gshgo_sync_all(GSH_FN("shmem_sync_all"));
}

/*
 * An active set that is the World, with a symmetric pSync: its barrier is
 * the World team's, which on the fast path is the domain's barrier in C,
 * and its pSync is not written. Any other set, or a pSync Go must report
 * on, goes to Go.
 */
static int gsh_fast_world_set(int PE_start, int logPE_stride, int PE_size, long *pSync)
{
	return gsh_fast.on && PE_start == 0 && PE_size == gsh_fast.npes && (logPE_stride == 0 || PE_size == 1) &&
		gsh_fast_target(SHMEM_CTX_DEFAULT, pSync, SHMEM_BARRIER_SYNC_SIZE * sizeof(long), gsh_fast.my_pe) != NULL;
}

void gsh_barrier_as(int PE_start, int logPE_stride, int PE_size, long *pSync, const char *fn)
{
	if (gsh_fast_world_set(PE_start, logPE_stride, PE_size, pSync) && gsh_fast_barrier_all())
		return;
	(void)gsh_fast_quiet(SHMEM_CTX_DEFAULT);
	gsh_flush();
	gshgo_barrier_as(PE_start, logPE_stride, PE_size, pSync, GSH_FN(fn));
}

void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long *pSync)
{
	gsh_barrier_as(PE_start, logPE_stride, PE_size, pSync, "shmem_barrier");
}

/*
 * The deprecated active-set sync. shmem has no active-set sync of its
 * own; the barrier is a sync that also completes this PE's operations,
 * which a sync permits, and it uses the same pSync words.
 */
void shmem_sync(int PE_start, int logPE_stride, int PE_size, long *pSync)
{
	if (gsh_fast_world_set(PE_start, logPE_stride, PE_size, pSync) && gsh_fast_barrier())
		return;
	gsh_flush();
	gshgo_barrier_as(PE_start, logPE_stride, PE_size, pSync, GSH_FN("shmem_sync"));
}

/* ---- Locks ---- */

void shmem_set_lock(long *lock)
{
	(void)gsh_fast_quiet(SHMEM_CTX_DEFAULT);
	gsh_flush();
	gshgo_lock(0, lock, GSH_FN("shmem_set_lock"));
}

int shmem_test_lock(long *lock)
{
	gsh_flush();
	return gshgo_lock(1, lock, GSH_FN("shmem_test_lock"));
}

void shmem_clear_lock(long *lock)
{
	/* Clearing completes the holder's stores, fast ones included. */
	(void)gsh_fast_quiet(SHMEM_CTX_DEFAULT);
	gsh_flush();
	gshgo_lock(2, lock, GSH_FN("shmem_clear_lock"));
}

/* ---- Cache management: deprecated, nothing to do on coherent memory ---- */

void shmem_clear_cache_inv(void) {}
void shmem_set_cache_inv(void) {}
void shmem_clear_cache_line_inv(void *dest) { (void)dest; }
void shmem_set_cache_line_inv(void *dest) { (void)dest; }
void shmem_udcflush(void) {}
void shmem_udcflush_line(void *dest) { (void)dest; }

/* ---- RMA ---- */

/*
 * The calls into Go on a context: the default context's queue first, the
 * count that quiet reads after.
 */
static void gsh_go_put(shmem_ctx_t ctx, void *dest, const void *src, size_t nbytes, int pe, int nbi, const char *fn)
{
	gsh_flush_ctx(ctx);
	gshgo_put(ctx, dest, (void *)src, nbytes, pe, nbi, GSH_FN(fn));
	gsh_issued(gsh_ctx_canon(ctx));
}

static void gsh_go_get(shmem_ctx_t ctx, void *dest, const void *src, size_t nbytes, int pe, int nbi, const char *fn)
{
	gsh_flush_ctx(ctx);
	gshgo_get(ctx, dest, (void *)src, nbytes, pe, nbi, GSH_FN(fn));
	gsh_issued(gsh_ctx_canon(ctx));
}

/*
 * Blocking and non-blocking transfers share one body: on the fast path
 * both are complete when the copy returns; through Go, nbi says which.
 */
static inline void gsh_put_any(shmem_ctx_t ctx, void *dest, const void *src, size_t nbytes, int pe,
	int nbi, const char *fn)
{
	void *t;
	if (nbytes == 0)
		return;
	if (ctx && (t = gsh_fast_target(ctx, dest, nbytes, pe))) {
		memcpy(t, src, nbytes);
		gsh_fast_written(ctx, t, nbytes, pe);
		return;
	}
	if (ctx && !gsh_deferred() && gsh_win_put(ctx, dest, src, nbytes, pe, 0, fn))
		return;
	if (ctx && gsh_defer_op(ctx, nbi ? GSH_DEFER_PUT_NBI : GSH_DEFER_PUT, dest, src, nbytes, pe, fn))
		return;
	gsh_go_put(ctx, dest, src, nbytes, pe, nbi, fn);
}

static inline void gsh_get_any(shmem_ctx_t ctx, void *dest, const void *src, size_t nbytes, int pe,
	int nbi, const char *fn)
{
	void *t;
	if (nbytes == 0)
		return;
	if (ctx && (t = gsh_fast_target(ctx, src, nbytes, pe))) {
		memcpy(dest, t, nbytes);
		return;
	}
	if (ctx && nbi && gsh_defer_op(ctx, GSH_DEFER_GET_NBI, dest, src, nbytes, pe, fn))
		return;
	gsh_go_get(ctx, dest, src, nbytes, pe, nbi, fn);
}

void gsh_put(shmem_ctx_t ctx, void *dest, const void *src, size_t nbytes, int pe, const char *fn)
{
	gsh_pc_count(ctx, GSH_PC_PUT);
	gsh_put_any(ctx, dest, src, nbytes, pe, 0, fn);
}

void gsh_put_nbi(shmem_ctx_t ctx, void *dest, const void *src, size_t nbytes, int pe, const char *fn)
{
	gsh_pc_count(ctx, GSH_PC_PUT);
	gsh_put_any(ctx, dest, src, nbytes, pe, 1, fn);
}

void gsh_get(shmem_ctx_t ctx, void *dest, const void *src, size_t nbytes, int pe, const char *fn)
{
	gsh_pc_count(ctx, GSH_PC_GET);
	gsh_pc_count(ctx, GSH_PC_GET_DONE); /* complete when it returns */
	gsh_get_any(ctx, dest, src, nbytes, pe, 0, fn);
}

void gsh_get_nbi(shmem_ctx_t ctx, void *dest, const void *src, size_t nbytes, int pe, const char *fn)
{
	gsh_pc_count(ctx, GSH_PC_GET);
	gsh_get_any(ctx, dest, src, nbytes, pe, 1, fn);
}

/*
 * Bytes a strided access of nelems elements of esize spans, or 0 for a
 * stride below 1 (Go reports it). A span size_t cannot hold would wrap,
 * and the elements land where the wrapped offsets say: it ends the job.
 */
static inline size_t gsh_span(ptrdiff_t stride, size_t nelems, size_t esize, const char *fn)
{
	size_t n;
	if (stride < 1 || nelems == 0)
		return 0;
	if (__builtin_mul_overflow(nelems - 1, (size_t)stride, &n) || __builtin_add_overflow(n, 1, &n) ||
	    __builtin_mul_overflow(n, esize, &n)) {
		char msg[200];
		snprintf(msg, sizeof msg, "nelems %zu at a stride of %td elements of %zu bytes overflows size_t: the span is more bytes than any buffer",
			nelems, stride, esize);
		gsh_fatal(fn, msg);
	}
	return n;
}

void gsh_iput(shmem_ctx_t ctx, void *dest, const void *src, ptrdiff_t dst, ptrdiff_t sst,
	size_t nelems, size_t esize, int pe, const char *fn)
{
	gsh_pc_count(ctx, GSH_PC_PUT);
	size_t span = gsh_span(dst, nelems, esize, fn);
	char *t;
	(void)gsh_span(sst, nelems, esize, fn);
	if (ctx && span && sst >= 1 && (t = gsh_fast_target(ctx, dest, span, pe))) {
		const char *s = src;
		for (size_t i = 0; i < nelems; i++)
			memcpy(t + i * dst * esize, s + i * sst * esize, esize);
		gsh_fast_written(ctx, t, span, pe);
		return;
	}
	gsh_flush_ctx(ctx);
	gshgo_strided(ctx, dest, (void *)src, dst, sst, nelems, esize, pe, 0, GSH_FN(fn));
	gsh_issued(gsh_ctx_canon(ctx));
}

void gsh_iget(shmem_ctx_t ctx, void *dest, const void *src, ptrdiff_t dst, ptrdiff_t sst,
	size_t nelems, size_t esize, int pe, const char *fn)
{
	gsh_pc_count(ctx, GSH_PC_GET);
	gsh_pc_count(ctx, GSH_PC_GET_DONE); /* complete when it returns */
	size_t span = gsh_span(sst, nelems, esize, fn);
	const char *t;
	(void)gsh_span(dst, nelems, esize, fn);
	if (ctx && span && dst >= 1 && (t = gsh_fast_target(ctx, src, span, pe))) {
		char *d = dest;
		for (size_t i = 0; i < nelems; i++)
			memcpy(d + i * dst * esize, t + i * sst * esize, esize);
		return;
	}
	gsh_flush_ctx(ctx);
	gshgo_strided(ctx, dest, (void *)src, dst, sst, nelems, esize, pe, 1, GSH_FN(fn));
	gsh_issued(gsh_ctx_canon(ctx));
}

/*
 * The bytes from the first block's start to the last block's end of
 * nblocks blocks of bsize elements of esize bytes, stride elements apart;
 * 0 where nothing moves or the stride is below 1 (Go reports it). A span
 * size_t cannot hold ends the job, as gsh_span's does.
 */
static inline size_t gsh_bspan(ptrdiff_t stride, size_t bsize, size_t nblocks, size_t esize, const char *fn)
{
	size_t n;
	if (stride < 1 || nblocks == 0 || bsize == 0)
		return 0;
	if (__builtin_mul_overflow(nblocks - 1, (size_t)stride, &n) || __builtin_add_overflow(n, bsize, &n) ||
	    __builtin_mul_overflow(n, esize, &n)) {
		char msg[240];
		snprintf(msg, sizeof msg, "%zu blocks of %zu elements of %zu bytes at a stride of %td elements overflow size_t: the span is more bytes than any buffer",
			nblocks, bsize, esize, stride);
		gsh_fatal(fn, msg);
	}
	return n;
}

void gsh_ibput(shmem_ctx_t ctx, void *dest, const void *src, ptrdiff_t dst, ptrdiff_t sst,
	size_t bsize, size_t nblocks, size_t esize, int pe, const char *fn)
{
	gsh_pc_count(ctx, GSH_PC_PUT);
	size_t span = gsh_bspan(dst, bsize, nblocks, esize, fn);
	char *t;
	(void)gsh_bspan(sst, bsize, nblocks, esize, fn);
	if (ctx && span && sst >= 1 && (t = gsh_fast_target(ctx, dest, span, pe))) {
		const char *s = src;
		for (size_t i = 0; i < nblocks; i++)
			memcpy(t + i * dst * esize, s + i * sst * esize, bsize * esize);
		gsh_fast_written(ctx, t, span, pe);
		return;
	}
	gsh_flush_ctx(ctx);
	gshgo_blocked(ctx, dest, (void *)src, dst, sst, bsize, nblocks, esize, pe, 0, GSH_FN(fn));
	gsh_issued(gsh_ctx_canon(ctx));
}

void gsh_ibget(shmem_ctx_t ctx, void *dest, const void *src, ptrdiff_t dst, ptrdiff_t sst,
	size_t bsize, size_t nblocks, size_t esize, int pe, const char *fn)
{
	gsh_pc_count(ctx, GSH_PC_GET);
	gsh_pc_count(ctx, GSH_PC_GET_DONE); /* complete when it returns */
	size_t span = gsh_bspan(sst, bsize, nblocks, esize, fn);
	const char *t;
	(void)gsh_bspan(dst, bsize, nblocks, esize, fn);
	if (ctx && span && dst >= 1 && (t = gsh_fast_target(ctx, src, span, pe))) {
		char *d = dest;
		for (size_t i = 0; i < nblocks; i++)
			memcpy(d + i * dst * esize, t + i * sst * esize, bsize * esize);
		return;
	}
	gsh_flush_ctx(ctx);
	gshgo_blocked(ctx, dest, (void *)src, dst, sst, bsize, nblocks, esize, pe, 1, GSH_FN(fn));
	gsh_issued(gsh_ctx_canon(ctx));
}

/*
 * One element through a mapping: an aligned element of 1, 2, 4 or 8
 * bytes moves in one access, as a remote PE's single store or load would,
 * so a concurrent reader never sees it torn.
 */
static inline void gsh_store(void *t, const void *v, size_t size)
{
	if (((uintptr_t)t & (size - 1)) == 0) {
		switch (size) {
		case 1: __atomic_store_n((uint8_t *)t, *(const uint8_t *)v, __ATOMIC_RELAXED); return;
		case 2: { uint16_t x; memcpy(&x, v, 2); __atomic_store_n((uint16_t *)t, x, __ATOMIC_RELAXED); return; }
		case 4: { uint32_t x; memcpy(&x, v, 4); __atomic_store_n((uint32_t *)t, x, __ATOMIC_RELAXED); return; }
		case 8: { uint64_t x; memcpy(&x, v, 8); __atomic_store_n((uint64_t *)t, x, __ATOMIC_RELAXED); return; }
		}
	}
	memcpy(t, v, size);
}

static inline void gsh_load(void *r, const void *t, size_t size)
{
	if (((uintptr_t)t & (size - 1)) == 0) {
		switch (size) {
		case 1: *(uint8_t *)r = __atomic_load_n((const uint8_t *)t, __ATOMIC_RELAXED); return;
		case 2: { uint16_t x = __atomic_load_n((const uint16_t *)t, __ATOMIC_RELAXED); memcpy(r, &x, 2); return; }
		case 4: { uint32_t x = __atomic_load_n((const uint32_t *)t, __ATOMIC_RELAXED); memcpy(r, &x, 4); return; }
		case 8: { uint64_t x = __atomic_load_n((const uint64_t *)t, __ATOMIC_RELAXED); memcpy(r, &x, 8); return; }
		}
	}
	memcpy(r, t, size);
}

void gsh_p(shmem_ctx_t ctx, void *dest, const void *value, size_t size, int pe, const char *fn)
{
	gsh_pc_count(ctx, GSH_PC_PUT);
	void *t;
	if (ctx && (t = gsh_fast_target(ctx, dest, size, pe))) {
		gsh_store(t, value, size);
		gsh_fast_written(ctx, t, size, pe);
		return;
	}
	if (ctx && !gsh_deferred() && gsh_win_put(ctx, dest, value, size, pe, 1, fn))
		return;
	if (ctx && gsh_defer_op(ctx, GSH_DEFER_PUT, dest, value, size, pe, fn))
		return;
	gsh_go_put(ctx, dest, value, size, pe, 0, fn);
}

void gsh_g(shmem_ctx_t ctx, void *result, const void *src, size_t size, int pe, const char *fn)
{
	gsh_pc_count(ctx, GSH_PC_GET);
	gsh_pc_count(ctx, GSH_PC_GET_DONE); /* complete when it returns */
	void *t;
	if (ctx && (t = gsh_fast_target(ctx, src, size, pe))) {
		gsh_load(result, t, size);
		return;
	}
	gsh_go_get(ctx, result, src, size, pe, 0, fn);
}

/*
 * The signal update of a put-with-signal, and shmem_signal_set and _add,
 * on the mapped word s of pe: one atomic, with release order, so a PE
 * that sees the signal sees what this context wrote before it.
 */
static inline void gsh_fast_signal(shmem_ctx_t ctx, void *s, uint64_t signal, int sig_op, int pe)
{
	if (sig_op == SHMEM_SIGNAL_SET)
		__atomic_store_n((uint64_t *)s, signal, __ATOMIC_RELEASE);
	else
		__atomic_fetch_add((uint64_t *)s, signal, __ATOMIC_RELEASE);
	gsh_fast_written(ctx, s, sizeof(uint64_t), pe);
}

void gsh_put_signal(shmem_ctx_t ctx, void *dest, const void *src, size_t nbytes,
	uint64_t *sig_addr, uint64_t signal, int sig_op, int pe, int nbi, const char *fn)
{
	gsh_pc_count(ctx, GSH_PC_PUT);
	void *t = NULL, *s;
	if (ctx && (sig_op == SHMEM_SIGNAL_SET || sig_op == SHMEM_SIGNAL_ADD) &&
	    ((uintptr_t)sig_addr & 7) == 0 &&
	    (nbytes == 0 || (t = gsh_fast_target(ctx, dest, nbytes, pe))) &&
	    (s = gsh_fast_target(ctx, sig_addr, sizeof *sig_addr, pe))) {
		if (nbytes) {
			memcpy(t, src, nbytes);
			gsh_fast_written(ctx, t, nbytes, pe);
		}
		gsh_fast_signal(ctx, s, signal, sig_op, pe);
		return;
	}
	gsh_flush_ctx(ctx);
	gshgo_put_signal(ctx, dest, (void *)src, nbytes, sig_addr, signal, sig_op, pe, nbi, GSH_FN(fn));
	gsh_issued(gsh_ctx_canon(ctx));
}

void gsh_signal(shmem_ctx_t ctx, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe, const char *fn)
{
	gsh_pc_count(ctx, GSH_PC_PUT);
	void *s;
	if (ctx && (sig_op == SHMEM_SIGNAL_SET || sig_op == SHMEM_SIGNAL_ADD) &&
	    ((uintptr_t)sig_addr & 7) == 0 && (s = gsh_fast_target(ctx, sig_addr, sizeof *sig_addr, pe))) {
		gsh_fast_signal(ctx, s, signal, sig_op, pe);
		return;
	}
	gsh_flush_ctx(ctx);
	gshgo_signal(ctx, sig_addr, signal, sig_op, pe, GSH_FN(fn));
	gsh_issued(gsh_ctx_canon(ctx));
}

uint64_t shmem_signal_fetch(const uint64_t *sig_addr)
{
	if (!sig_addr)
		gsh_fatal("shmem_signal_fetch", "sig_addr is NULL");
	gsh_flush(); /* a program may poll here for what its puts caused */
	return __atomic_load_n(sig_addr, __ATOMIC_ACQUIRE);
}

/* ---- Atomics ---- */

/*
 * Whether the fast path may run op on an element of kind: the floating
 * types have only fetch, set and swap; anything else goes to Go, which
 * reports it.
 */
static inline int gsh_amo_ok(int op, int kind)
{
	if (op < GSH_AMO_FETCH || op > GSH_AMO_XOR)
		return 0;
	if (kind == GSH_FLOAT)
		return op == GSH_AMO_FETCH || op == GSH_AMO_SET || op == GSH_AMO_SWAP;
	return kind == GSH_INT || kind == GSH_UINT;
}

#define GSH_AMO_BODY(T, p, op, v, c)                                                   \
	do {                                                                           \
		T *p_ = (T *)(p), v_ = (T)(v), c_ = (T)(c);                          \
		switch (op) {                                                          \
		case GSH_AMO_FETCH: return __atomic_load_n(p_, __ATOMIC_SEQ_CST);      \
		case GSH_AMO_SET: __atomic_store_n(p_, v_, __ATOMIC_SEQ_CST); return 0; \
		case GSH_AMO_SWAP: return __atomic_exchange_n(p_, v_, __ATOMIC_SEQ_CST); \
		case GSH_AMO_CSWAP:                                                    \
			__atomic_compare_exchange_n(p_, &c_, v_, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
			return c_;                                                     \
		case GSH_AMO_FINC: case GSH_AMO_FADD:                                  \
			return __atomic_fetch_add(p_, v_, __ATOMIC_SEQ_CST);           \
		case GSH_AMO_INC: case GSH_AMO_ADD:                                    \
			__atomic_fetch_add(p_, v_, __ATOMIC_SEQ_CST); return 0;        \
		case GSH_AMO_FAND: return __atomic_fetch_and(p_, v_, __ATOMIC_SEQ_CST); \
		case GSH_AMO_AND: __atomic_fetch_and(p_, v_, __ATOMIC_SEQ_CST); return 0; \
		case GSH_AMO_FOR: return __atomic_fetch_or(p_, v_, __ATOMIC_SEQ_CST);  \
		case GSH_AMO_OR: __atomic_fetch_or(p_, v_, __ATOMIC_SEQ_CST); return 0; \
		case GSH_AMO_FXOR: return __atomic_fetch_xor(p_, v_, __ATOMIC_SEQ_CST); \
		case GSH_AMO_XOR: __atomic_fetch_xor(p_, v_, __ATOMIC_SEQ_CST); return 0; \
		}                                                                      \
		return 0;                                                              \
	} while (0)

/* op on the word at t, which the fast path mapped; floats as their bits. */
static uint64_t gsh_amo_at(void *t, int op, int size, uint64_t v, uint64_t c)
{
	if (size == 4)
		GSH_AMO_BODY(uint32_t, t, op, v, c);
	GSH_AMO_BODY(uint64_t, t, op, v, c);
}

uint64_t gsh_amo(shmem_ctx_t ctx, void *dest, int op, int kind, int size,
	uint64_t operand, uint64_t compare, int pe, const char *fn)
{
	gsh_pc_count(ctx, op == GSH_AMO_FETCH ? GSH_PC_GET : GSH_PC_PUT);
	void *t;
	if (ctx && (size == 4 || size == 8) && ((uintptr_t)dest & (size - 1)) == 0 && gsh_amo_ok(op, kind) &&
	    (t = gsh_fast_target(ctx, dest, size, pe))) {
		uint64_t old = gsh_amo_at(t, op, size, operand, compare);
		if (op != GSH_AMO_FETCH)
			gsh_fast_written(ctx, t, size, pe);
		return old;
	}
	gsh_flush_ctx(ctx);
	uint64_t old = gshgo_amo(ctx, NULL, dest, op, kind, size, operand, compare, pe, GSH_FN(fn));
	gsh_issued(gsh_ctx_canon(ctx));
	return old;
}

void gsh_amo_nbi(shmem_ctx_t ctx, void *fetch, void *dest, int op, int kind, int size,
	uint64_t operand, uint64_t compare, int pe, const char *fn)
{
	gsh_pc_count(ctx, op == GSH_AMO_FETCH ? GSH_PC_GET : GSH_PC_PUT);
	void *t;
	if (!fetch)
		gsh_fatal(fn, "fetch is NULL");
	if (ctx && (size == 4 || size == 8) && ((uintptr_t)dest & (size - 1)) == 0 && gsh_amo_ok(op, kind) &&
	    (t = gsh_fast_target(ctx, dest, size, pe))) {
		uint64_t old = gsh_amo_at(t, op, size, operand, compare);
		if (op != GSH_AMO_FETCH)
			gsh_fast_written(ctx, t, size, pe);
		if (size == 4) {
			uint32_t o = (uint32_t)old;
			memcpy(fetch, &o, 4);
		} else {
			memcpy(fetch, &old, 8);
		}
		return;
	}
	gsh_flush_ctx(ctx);
	gshgo_amo(ctx, fetch, dest, op, kind, size, operand, compare, pe, GSH_FN(fn));
	gsh_issued(gsh_ctx_canon(ctx));
}

/* ---- Point-to-point synchronisation ---- */

/*
 * Compares the element of kind and size at p with the value bits v:
 * 1 or 0, or -1 when the arguments are not ones this can judge (Go then
 * reports what is wrong with them).
 */
static inline int gsh_cmp(const void *p, int kind, int size, int cmp, uint64_t v)
{
	int64_t a, b;
	uint64_t ua, ub;
	switch (size) {
	case 2: ua = __atomic_load_n((const uint16_t *)p, __ATOMIC_ACQUIRE); ub = (uint16_t)v;
		a = (int16_t)ua; b = (int16_t)ub; break;
	case 4: ua = __atomic_load_n((const uint32_t *)p, __ATOMIC_ACQUIRE); ub = (uint32_t)v;
		a = (int32_t)ua; b = (int32_t)ub; break;
	case 8: ua = __atomic_load_n((const uint64_t *)p, __ATOMIC_ACQUIRE); ub = v;
		a = (int64_t)ua; b = (int64_t)ub; break;
	default: return -1;
	}
	if (kind == GSH_INT) {
		switch (cmp) {
		case SHMEM_CMP_EQ: return a == b;
		case SHMEM_CMP_NE: return a != b;
		case SHMEM_CMP_GT: return a > b;
		case SHMEM_CMP_GE: return a >= b;
		case SHMEM_CMP_LT: return a < b;
		case SHMEM_CMP_LE: return a <= b;
		}
	} else if (kind == GSH_UINT) {
		switch (cmp) {
		case SHMEM_CMP_EQ: return ua == ub;
		case SHMEM_CMP_NE: return ua != ub;
		case SHMEM_CMP_GT: return ua > ub;
		case SHMEM_CMP_GE: return ua >= ub;
		case SHMEM_CMP_LT: return ua < ub;
		case SHMEM_CMP_LE: return ua <= ub;
		}
	}
	return -1;
}

/* The comparison value of element i: values[i] for the vector forms. */
static inline uint64_t gsh_value(const void *values, size_t i, int size, uint64_t value)
{
	if (!values)
		return value;
	switch (size) {
	case 2: return ((const uint16_t *)values)[i];
	case 4: return ((const uint32_t *)values)[i];
	default: return ((const uint64_t *)values)[i];
	}
}

/* Where scans of the ANY form start, so no variable starves the others. */
static unsigned gsh_rotation;

/*
 * One scan of a wait or test. It sets *done when the wait is over and
 * returns gsh_wait's result; -2 when the arguments need Go's judgement.
 */
static long long gsh_scan(int form, const char *ivars, size_t nelems, const int *status, size_t *indices,
	int kind, int size, int cmp, uint64_t value, const void *values, int *done)
{
	*done = 0;
	if (((uintptr_t)ivars & (size - 1)) != 0 || (form != GSH_WAIT_ONE && nelems > 0 && !ivars))
		return -2;
	switch (form) {
	case GSH_WAIT_ONE: {
		if (!ivars)
			return -2;
		int ok = gsh_cmp(ivars, kind, size, cmp, value);
		if (ok < 0)
			return -2;
		*done = ok;
		return ok;
	}
	case GSH_WAIT_ALL:
		for (size_t i = 0; i < nelems; i++) {
			if (status && status[i])
				continue;
			int ok = gsh_cmp(ivars + i * size, kind, size, cmp, gsh_value(values, i, size, value));
			if (ok < 0)
				return -2;
			if (!ok)
				return 0;
		}
		*done = 1;
		return 1;
	case GSH_WAIT_ANY: {
		size_t active = 0;
		size_t start = nelems ? __atomic_fetch_add(&gsh_rotation, 1, __ATOMIC_RELAXED) % nelems : 0;
		for (size_t k = 0; k < nelems; k++) {
			size_t i = (start + k) % nelems;
			if (status && status[i])
				continue;
			active++;
			int ok = gsh_cmp(ivars + i * size, kind, size, cmp, gsh_value(values, i, size, value));
			if (ok < 0)
				return -2;
			if (ok) {
				*done = 1;
				return (long long)i;
			}
		}
		*done = active == 0; /* nothing to wait for */
		return -1;           /* SIZE_MAX */
	}
	case GSH_WAIT_SOME: {
		size_t active = 0, n = 0;
		for (size_t i = 0; i < nelems; i++) {
			if (status && status[i])
				continue;
			active++;
			int ok = gsh_cmp(ivars + i * size, kind, size, cmp, gsh_value(values, i, size, value));
			if (ok < 0)
				return -2;
			if (ok) {
				if (!indices)
					return -2;
				indices[n++] = i;
			}
		}
		*done = n > 0 || active == 0;
		return (long long)n;
	}
	}
	return -2;
}

size_t gsh_wait(int mode, void *ivars, size_t nelems, const int *status, size_t *indices,
	int kind, int size, int cmp, uint64_t value, const void *values, const char *fn)
{
	int block = mode & GSH_WAIT_BLOCK, form = mode & ~GSH_WAIT_BLOCK, done;
	long polls = GSH_SPINS;
	if (form != GSH_WAIT_ONE) {
		/* The widest of the arrays nelems counts: ivars, values, status, indices. */
		size_t widest = size > 0 ? (size_t)size : 1;
		if (status && widest < sizeof *status)
			widest = sizeof *status;
		if (form == GSH_WAIT_SOME && widest < sizeof *indices)
			widest = sizeof *indices;
		(void)gsh_bytes(nelems, widest, fn);
	}
	gsh_flush(); /* what this PE queued may be what it waits for */
	for (long spin = 0;; spin++) {
		long long r = gsh_scan(form, ivars, nelems, status, indices, kind, size, cmp, value, values, &done);
		if (r == -2)
			break; /* Go reports what is wrong */
		if (done || !block)
			return r == -1 ? SIZE_MAX : (size_t)r;
		if (spin >= polls)
			break; /* Go sleeps until a store wakes it */
		gsh_relax();
	}
	gsh_flush();
	return gshgo_wait(mode, ivars, nelems, (int *)status, indices, kind, size, cmp, value, (void *)values, GSH_FN(fn));
}

uint64_t shmem_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_value)
{
	static const char fn[] = "shmem_signal_wait_until";
	if (sig_addr && ((uintptr_t)sig_addr & 7) == 0) {
		long polls = GSH_SPINS;
		for (long spin = 0; spin < polls; spin++) {
			int ok = gsh_cmp(sig_addr, GSH_UINT, 8, cmp, cmp_value);
			if (ok < 0)
				break;
			if (ok)
				return __atomic_load_n(sig_addr, __ATOMIC_ACQUIRE);
			gsh_relax();
		}
	}
	gsh_flush();
	return gshgo_signal_wait_until(sig_addr, cmp, cmp_value, GSH_FN(fn));
}

/* ---- Collectives on teams ---- */

int gsh_broadcast(shmem_team_t team, void *dest, const void *src, size_t nbytes, int root, const char *fn)
{
	if (team == SHMEM_TEAM_INVALID)
		return -1;
	gsh_flush();
	if (gsh_fast_broadcast(team, dest, src, nbytes, root))
		return 0;
	gshgo_broadcast(team, dest, (void *)src, nbytes, root, GSH_FN(fn));
	return 0;
}

int gsh_collect(shmem_team_t team, void *dest, const void *src, size_t nbytes, const char *fn)
{
	if (team == SHMEM_TEAM_INVALID)
		return -1;
	gsh_flush();
	gshgo_collect(team, dest, (void *)src, nbytes, GSH_FN(fn));
	return 0;
}

int gsh_fcollect(shmem_team_t team, void *dest, const void *src, size_t nbytes, const char *fn)
{
	if (team == SHMEM_TEAM_INVALID)
		return -1;
	gsh_flush();
	if (gsh_fast_fcollect(team, dest, src, nbytes))
		return 0;
	gshgo_fcollect(team, dest, (void *)src, nbytes, GSH_FN(fn));
	return 0;
}

int gsh_alltoall(shmem_team_t team, void *dest, const void *src, size_t nbytes, const char *fn)
{
	if (team == SHMEM_TEAM_INVALID)
		return -1;
	gsh_flush();
	if (gsh_fast_alltoall(team, dest, src, nbytes))
		return 0;
	gshgo_alltoalls(team, dest, (void *)src, 1, 1, nbytes, 1, GSH_FN(fn));
	return 0;
}

int gsh_alltoalls(shmem_team_t team, void *dest, const void *src, ptrdiff_t dst, ptrdiff_t sst,
	size_t nelems, size_t esize, const char *fn)
{
	if (team == SHMEM_TEAM_INVALID)
		return -1;
	gsh_flush();
	gshgo_alltoalls(team, dest, (void *)src, dst, sst, nelems, esize, GSH_FN(fn));
	return 0;
}

/*
 * The long double combiners of the reductions, which Go calls for
 * elements it carries as 16 bytes: Go checks the operator first.
 */
void gsh_combine_ld(void *accp, const void *inp, size_t n, int op)
{
	long double *acc = accp;
	const long double *in = inp;
	for (size_t i = 0; i < n; i++) {
		switch (op) {
		case GSH_OP_MAX: if (in[i] > acc[i]) acc[i] = in[i]; break;
		case GSH_OP_MIN: if (in[i] < acc[i]) acc[i] = in[i]; break;
		case GSH_OP_SUM: acc[i] += in[i]; break;
		case GSH_OP_PROD: acc[i] *= in[i]; break;
		}
	}
}

int gsh_reduce(shmem_team_t team, void *dest, const void *src, size_t nreduce,
	int op, int kind, int size, const char *fn)
{
	if (team == SHMEM_TEAM_INVALID)
		return -1;
	gsh_flush();
	gshgo_reduce(team, dest, (void *)src, nreduce, op, kind, size, GSH_FN(fn));
	return 0;
}

int gsh_sum_scan(shmem_team_t team, void *dest, const void *src, size_t nelems,
	int exclusive, int kind, int size, const char *fn)
{
	if (team == SHMEM_TEAM_INVALID)
		return -1;
	gsh_flush();
	gshgo_scan(team, dest, (void *)src, nelems, exclusive, kind, size, GSH_FN(fn));
	return 0;
}

/* ---- Collectives on active sets (deprecated) ---- */

void gsh_broadcast_as(void *dest, const void *src, size_t nbytes, int PE_root,
	int PE_start, int logPE_stride, int PE_size, long *pSync, const char *fn)
{
	gsh_flush();
	if (gsh_fast_broadcast_as(dest, src, nbytes, PE_root, PE_start, logPE_stride, PE_size, pSync))
		return;
	gshgo_broadcast_as(dest, (void *)src, nbytes, PE_root, PE_start, logPE_stride, PE_size, pSync, GSH_FN(fn));
}

void gsh_collect_as(void *dest, const void *src, size_t nbytes,
	int PE_start, int logPE_stride, int PE_size, long *pSync, const char *fn)
{
	gsh_flush();
	gshgo_collect_as(dest, (void *)src, nbytes, PE_start, logPE_stride, PE_size, pSync, GSH_FN(fn));
}

void gsh_fcollect_as(void *dest, const void *src, size_t nbytes,
	int PE_start, int logPE_stride, int PE_size, long *pSync, const char *fn)
{
	gsh_flush();
	if (gsh_fast_fcollect_as(dest, src, nbytes, PE_start, logPE_stride, PE_size, pSync))
		return;
	gshgo_fcollect_as(dest, (void *)src, nbytes, PE_start, logPE_stride, PE_size, pSync, GSH_FN(fn));
}

void gsh_alltoall_as(void *dest, const void *src, size_t nbytes,
	int PE_start, int logPE_stride, int PE_size, long *pSync, const char *fn)
{
	gsh_flush();
	if (gsh_fast_alltoall_as(dest, src, nbytes, PE_start, logPE_stride, PE_size, pSync))
		return;
	gshgo_alltoall_as(dest, (void *)src, nbytes, PE_start, logPE_stride, PE_size, pSync, GSH_FN(fn));
}

void gsh_alltoalls_as(void *dest, const void *src, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
	size_t esize, int PE_start, int logPE_stride, int PE_size, long *pSync, const char *fn)
{
	gsh_flush();
	gshgo_alltoalls_as(dest, (void *)src, dst, sst, nelems, esize, PE_start, logPE_stride, PE_size, pSync, GSH_FN(fn));
}

void gsh_reduce_as(void *dest, const void *src, int nreduce, int op, int kind, int size,
	int PE_start, int logPE_stride, int PE_size, void *pWrk, long *pSync, const char *fn)
{
	gsh_flush();
	gshgo_reduce_as(dest, (void *)src, nreduce, op, kind, size, PE_start, logPE_stride, PE_size, pWrk, pSync, GSH_FN(fn));
}

/* The profiling names of the routines above: pshmem_ weak aliases. */
#include "pshmem_gen.h"

/* ---- Performance counters (shmemx.h) ---- */

/*
 * shmemx_pcntr_*: what the program issued on a context and what of it is
 * complete. Puts, put-with-signal, signal updates and atomics count as
 * writes (an atomic fetch as a read); a blocking get is complete when it
 * returns, the rest when a quiet (or, on the default context, a barrier)
 * completes them. goshmem does not count what other PEs do to this one's
 * memory, so the target count is 0.
 */
static uint64_t gsh_pc(shmem_ctx_t ctx, int which, const char *fn)
{
	gsh_need_running(fn);
	ctx = gsh_ctx_canon(ctx);
	if (!ctx)
		return 0;
	return __atomic_load_n(&ctx->pc[which], __ATOMIC_RELAXED);
}

void shmemx_pcntr_get_issued_write(shmem_ctx_t ctx, uint64_t *cntr_value)
{
	if (cntr_value)
		*cntr_value = gsh_pc(ctx, GSH_PC_PUT, "shmemx_pcntr_get_issued_write");
}

void shmemx_pcntr_get_issued_read(shmem_ctx_t ctx, uint64_t *cntr_value)
{
	if (cntr_value)
		*cntr_value = gsh_pc(ctx, GSH_PC_GET, "shmemx_pcntr_get_issued_read");
}

void shmemx_pcntr_get_completed_write(shmem_ctx_t ctx, uint64_t *cntr_value)
{
	if (cntr_value)
		*cntr_value = gsh_pc(ctx, GSH_PC_PUT_DONE, "shmemx_pcntr_get_completed_write");
}

void shmemx_pcntr_get_completed_read(shmem_ctx_t ctx, uint64_t *cntr_value)
{
	if (cntr_value)
		*cntr_value = gsh_pc(ctx, GSH_PC_GET_DONE, "shmemx_pcntr_get_completed_read");
}

void shmemx_pcntr_get_completed_target(uint64_t *cntr_value)
{
	gsh_need_running("shmemx_pcntr_get_completed_target");
	if (cntr_value)
		*cntr_value = 0;
}

void shmemx_pcntr_get_all(shmem_ctx_t ctx, shmemx_pcntr_t *pcntr)
{
	if (!pcntr)
		return;
	pcntr->pending_put = gsh_pc(ctx, GSH_PC_PUT, "shmemx_pcntr_get_all");
	pcntr->pending_get = gsh_pc(ctx, GSH_PC_GET, "shmemx_pcntr_get_all");
	pcntr->completed_put = gsh_pc(ctx, GSH_PC_PUT_DONE, "shmemx_pcntr_get_all");
	pcntr->completed_get = gsh_pc(ctx, GSH_PC_GET_DONE, "shmemx_pcntr_get_all");
	pcntr->target = 0;
}
