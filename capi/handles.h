/*
 * The private side of shmem.h's handles, shared by the hand-written C of
 * the library (runtime.c, fast.c) and the cgo glue.
 *
 * A handle is a small C struct, so that C can answer the questions asked
 * on every call (which PE am I in this team, which world PE is rank r)
 * without crossing into Go; the Go objects behind it are named by a
 * cgo.Handle, which only the slow path dereferences.
 */
#ifndef GOSHMEM_HANDLES_H
#define GOSHMEM_HANDLES_H

#include <stddef.h>
#include <stdint.h>
#include <pthread.h>

#include "shmem.h"

struct gsh_team {
	uintptr_t h;  /* cgo.Handle of the *shmem.Team; 0 before shmem_init */
	int my_pe;    /* this PE's rank in the team */
	int n_pes;
	/*
	 * World PE of rank r: start + r * stride when members is NULL (every
	 * team a strided split of a strided team makes), else members[r].
	 */
	int start, stride;
	int *members;
	shmem_team_config_t config;
	long config_mask;
	/* Contexts created on the team, which its destruction destroys. */
	struct gsh_ctx *ctxs;
	pthread_mutex_t mu; /* guards ctxs */
	void *fast;         /* the fast path's state for the team */
};

struct gsh_ctx {
	uintptr_t h;           /* cgo.Handle of the shmem.Ctx; 0 before shmem_init */
	struct gsh_team *team; /* whose ranks name PEs in this context's calls */
	long options;          /* SHMEM_CTX_* */
	struct gsh_ctx *next;  /* in team->ctxs */
	void *fast;            /* the fast path's state for the context */
	/*
	 * Calls into Go on this context that returned (issued) and the value
	 * issued had when the last quiet that completed began (quieted): a
	 * quiet with the two equal has nothing to complete and stays in C.
	 */
	unsigned long issued, quieted;
	/*
	 * shmemx_pcntr_*: the puts (and atomics) and gets the program issued
	 * on this context and how many of each are complete (GSH_PC_*).
	 */
	uint64_t pc[4];
};

enum { GSH_PC_PUT, GSH_PC_GET, GSH_PC_PUT_DONE, GSH_PC_GET_DONE };

/*
 * An operation the runtime queued on the default context instead of
 * calling into Go for it (runtime.c: deferred operations); Go runs a
 * queue of them in one call, in order.
 */
enum gsh_op_kind {
	GSH_DEFER_PUT = 1, /* blocking put; src is the runtime's copy of the source */
	GSH_DEFER_PUT_NBI, /* src is the program's, untouched until the quiet */
	GSH_DEFER_GET_NBI, /* dest is the program's, written by the quiet */
	GSH_DEFER_FENCE    /* shmem_fence between the ones before and after */
};

struct gsh_qop {
	void *dest;
	void *src;
	size_t n;
	int pe;   /* as the program named it: a rank of the context's team */
	int kind; /* a gsh_op_kind */
	const char *fn; /* the routine the program called, for errors */
};

/* What gshgo_flush does after the queue: nothing, a quiet or a fence. */
enum gsh_then { GSH_THEN_NONE = 0, GSH_THEN_QUIET, GSH_THEN_FENCE };

/* World PE of rank r of team t; r is a valid rank. */
static inline int gsh_team_world_pe(const struct gsh_team *t, int r)
{
	return t->members ? t->members[r] : t->start + r * t->stride;
}

/* World PE of the PE a context's call names, or -1 if it is out of range. */
static inline int gsh_ctx_world_pe(shmem_ctx_t ctx, int pe)
{
	const struct gsh_team *t = ctx->team;
	if (pe < 0 || pe >= t->n_pes)
		return -1;
	return gsh_team_world_pe(t, pe);
}

/* Library state: set by shmem_init, cleared by shmem_finalize. */
enum gsh_state { GSH_UNINIT = 0, GSH_RUNNING, GSH_FINALIZED };
extern volatile int gsh_state;
extern int gsh_my_pe_cached, gsh_n_pes_cached;

/*
 * The C library's settings, which Go reads from the job's environment
 * through the settings registry (capi/cenv) at shmem_init, before any C
 * code below uses them: C reads no environment variable itself, so it
 * parses every value as Go does.
 */
struct gsh_settings {
	int defer_on;     /* GOSHMEM_C_DEFER */
	int window_on;    /* GOSHMEM_C_WINDOW */
	int fast_path_on; /* GOSHMEM_C_FAST_PATH */
	long cpus;        /* GOSHMEM_CPUS, else the CPUs this process may use */
};
extern struct gsh_settings gsh_settings;

/* Ends the job: "goshmem: fn: msg" on stderr, then a global exit with 1. */
void gsh_fatal(const char *fn, const char *msg) __attribute__((noreturn));

#endif
