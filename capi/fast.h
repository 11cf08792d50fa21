/*
 * The fast path: operations on PEs whose memory is mapped into this
 * process, done in C without entering Go (a call into Go costs about
 * 80 ns; a small put through a mapping, a few).
 *
 * The runtime (runtime.c) asks these hooks first in every RMA, atomic,
 * quiet and fence, and falls back to the Go stack when they decline.
 * They accept when the job runs on the loopback provider, whose PEs map
 * each other's memory and which offers its control words
 * (core.SharedMap): then a put is a copy into the peer's memory as mapped
 * here, an atomic is an __atomic builtin on the very word Go's
 * sync/atomic touches, and every write that lands tells the target's
 * waiters as providers/loopback/PROTOCOL.md says, so Go waiters and C
 * writers, Go writers and C waiters, meet on one protocol.
 *
 * pe is as the program passed it: a rank of ctx's team
 * (gsh_ctx_world_pe translates it). ctx is never SHMEM_CTX_INVALID here,
 * but it may be a context of a library not yet initialised (ctx->h 0):
 * its team has no PEs yet, so every hook declines.
 *
 * Each hook is a handful of instructions: no lock, no allocation, no
 * call but the one into the writer's wake-up while the target has a
 * waiter armed.
 */
#ifndef GOSHMEM_FAST_H
#define GOSHMEM_FAST_H

#include <stddef.h>
#include <stdint.h>

#include "handles.h"

/*
 * The loopback protocol's layout (PROTOCOL.md, version GSH_LOOP_VERSION):
 * offsets of the words in a PE's control file, and the constants of its
 * watch keys and page summary. providers/loopback's tests compare these
 * with the Go provider's.
 */
#define GSH_LOOP_VERSION 8
#define GSH_LOOP_CTL_SIZE 3072
#define GSH_LOOP_WAITERS 128
#define GSH_LOOP_ANY_WAITERS 132
#define GSH_LOOP_WATCH_MASK 136
#define GSH_LOOP_SEQ 256
#define GSH_LOOP_SLEEPERS 260
#define GSH_LOOP_WATCHES 384
#define GSH_LOOP_WATCH_SLOTS 16
#define GSH_LOOP_SEQ_STEP 2
#define GSH_LOOP_OFF_BITS 48
#define GSH_LOOP_PAGE_SHIFT 12
#define GSH_LOOP_SUMMARY_MAX 8
#define GSH_LOOP_HASH 0x9e3779b97f4a7c15ULL
#define GSH_LOOP_BAR_COUNT 640
#define GSH_LOOP_BAR_GEN 768
#define GSH_LOOP_BAR_SLEEPERS 772
#define GSH_LOOP_BAR_FLAGS 896
#define GSH_LOOP_BAR_ROUNDS 16
#define GSH_LOOP_BAR_EPOCH 2944
#define GSH_LOOP_BAR_MODE 2948

/* Symmetric segments the table holds: the heap, then static data. */
#define GSH_FAST_SEGS 4

/*
 * One symmetric segment: the part programs may name (the heap's user
 * part, a static segment), on this PE at base and on every PE as mapped
 * here at peer[pe], with key the protocol's watch key of its first byte.
 * size is 0 while the fast path is off, which makes every lookup miss.
 */
struct gsh_fast_seg {
	uintptr_t base;
	uintptr_t size;
	uintptr_t *peer;
	uint64_t key;
};

/*
 * The fast path's table, filled at shmem_init from what the Go side's
 * World offers (shmem.World.SharedMap) and read-only until
 * shmem_finalize. The heap comes first, so a heap address costs one
 * comparison.
 */
struct gsh_fast_map {
	struct gsh_fast_seg seg[GSH_FAST_SEGS];
	int nseg;
	int on;         /* the table is filled: quiet and fence are the fast path's */
	int fence;      /* writers fence: "atomic" mode */
	int dissemination; /* the domain's barrier is the dissemination one (barMode) */
	int npes, my_pe;
	unsigned char **ctl; /* ctl[pe]: pe's control file as mapped here */
	long wait_polls;     /* how often a wait polls in C before Go sleeps it */
	/* The broadcasts that go by push: shmem.BroadcastPushMax, ...Members. */
	size_t push_max;
	int push_members;
};

/*
 * Hidden: the library reaches it without a load through the GOT, and a
 * program cannot interpose a copy of its own. Tests see it through
 * gsh_fast_table.
 */
extern struct gsh_fast_map gsh_fast __attribute__((visibility("hidden")));
const struct gsh_fast_map *gsh_fast_table(void);

/*
 * A full memory barrier: an atomic read-modify-write of the stack, as the
 * Go provider's is an atomic add (a locked instruction costs less than
 * mfence on x86, and orders the same for ordinary memory).
 */
static inline void gsh_fast_mb(void)
{
#if defined(__x86_64__)
	__asm__ __volatile__("lock; orl $0, (%%rsp)" ::: "memory", "cc");
#else
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

/*
 * The address through which this process reaches the n bytes of the
 * symmetric object sym on pe, if the fast path may do the operation
 * with loads, stores and atomics there; NULL to let Go do it (and report
 * what is wrong, if anything is).
 */
void *gsh_fast_target_static(const void *sym, size_t n, int wpe);

/* gsh_fast_target for World PE w. */
static inline void *gsh_fast_target_pe(const void *sym, size_t n, int w)
{
	const struct gsh_fast_seg *s = &gsh_fast.seg[0];
	uintptr_t off = (uintptr_t)sym - s->base;
	if (__builtin_expect(off < s->size && n <= s->size - off, 1))
		return (void *)(s->peer[w] + off);
	return gsh_fast_target_static(sym, n, w);
}

static inline void *gsh_fast_target(shmem_ctx_t ctx, const void *sym, size_t n, int pe)
{
	int w = gsh_ctx_world_pe(ctx, pe);
	if (__builtin_expect(w < 0, 0))
		return NULL;
	const struct gsh_fast_seg *s = &gsh_fast.seg[0];
	uintptr_t off = (uintptr_t)sym - s->base;
	if (__builtin_expect(off < s->size && n <= s->size - off, 1))
		return (void *)(s->peer[w] + off);
	return gsh_fast_target_static(sym, n, w);
}

/*
 * The writer's duty of the protocol once the target has a waiter armed:
 * look at its summary and slots, and wake it if it watches the bytes.
 */
void gsh_fast_notify(int wpe, const void *target, size_t n);

/*
 * Called after the runtime stored into, or ran an atomic on, the n bytes
 * at target (from gsh_fast_target for pe). While pe has no waiter armed
 * it is one load of a line nobody writes. The barrier before it is the
 * writer's side of the handshake where writers fence; elsewhere a
 * compiler barrier keeps that load after the stores, and the waiters'
 * membarrier does the rest.
 */
static inline void gsh_fast_written_pe(void *target, size_t n, int w)
{
	const uint32_t *waiters = (const uint32_t *)(gsh_fast.ctl[w] + GSH_LOOP_WAITERS);
	if (gsh_fast.fence)
		gsh_fast_mb();
	else
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (__builtin_expect(__atomic_load_n(waiters, __ATOMIC_RELAXED) != 0, 0))
		gsh_fast_notify(w, target, n);
}

static inline void gsh_fast_written(shmem_ctx_t ctx, void *target, size_t n, int pe)
{
	gsh_fast_written_pe(target, n, gsh_ctx_world_pe(ctx, pe));
}

/*
 * Quiet and fence for what the fast path did on ctx. They return nonzero
 * when that is all there is to do, so Go need not be called: on loopback
 * every operation, the Go side's too, is complete when its call returns,
 * and a full barrier orders and publishes them as the Go provider's
 * quiet does.
 */
static inline int gsh_fast_quiet(shmem_ctx_t ctx)
{
	(void)ctx;
	if (!gsh_fast.on)
		return 0;
	gsh_fast_mb();
	return 1;
}

static inline int gsh_fast_fence(shmem_ctx_t ctx)
{
	return gsh_fast_quiet(ctx);
}

/*
 * The domain's barrier over the World, in C (PROTOCOL.md: the same words
 * and the same count of barriers as the Go provider's, so the two may
 * alternate in one PE). It returns nonzero when it ran; zero when the
 * fast path is off, for Go's barrier.
 */
int gsh_fast_barrier(void);

/*
 * The active-set broadcast (shmem_broadcast32/64) on the mapped memory,
 * by the protocol of shmem's push (docs/collectives.md): nonzero when it
 * ran; zero to let Go run it, and report what is wrong, if anything is.
 */
int gsh_fast_broadcast_as(void *dest, const void *src, size_t nbytes, int root,
	int start, int log_stride, int size, long *pSync);

/*
 * A team's fast state: where its collectives count (shmem.TeamWords),
 * filled by the Go side. Words are in this PE's memory, each at the same
 * offset from the heap on every member; counts are this PE's alone, and
 * Go reads and adds to them as well.
 *
 * from[s] is rank s's word of the broadcasts and direct gathers, seen[s]
 * this PE's count of it; push: broadcasts of up to push_max bytes go by
 * push. stage[p] is the staged gathers' word of parity p, stage_seen[p]
 * this PE's count of it, gen the generation of the World's gather banks,
 * of which bank p is at bank[p], bank_size bytes; staged: gathers of parts
 * of up to stage_part bytes that fit a bank in all are staged.
 */
struct gsh_fast_team {
	uint64_t *from;
	uint64_t *seen;
	int push;
	uint64_t *stage[2];
	uint64_t *stage_seen[2];
	uint64_t *gen;
	unsigned char *bank[2];
	size_t bank_size;
	size_t stage_part;
	int staged;
};

/*
 * The team broadcast (shmem_broadcast, shmem_TYPENAME_broadcast) on the
 * mapped memory, by the same protocol: nonzero when it ran; zero to let
 * Go run it.
 */
int gsh_fast_broadcast(struct gsh_team *team, void *dest, const void *src, size_t nbytes, int root);

/*
 * The team fcollect (shmem_fcollect and its typed forms) and contiguous
 * alltoall (shmem_alltoall) on the mapped memory, staged as shmem's are
 * (Team.stage): nonzero when it ran; zero to let Go run it.
 */
int gsh_fast_fcollect(struct gsh_team *team, void *dest, const void *src, size_t nbytes);
int gsh_fast_alltoall(struct gsh_team *team, void *dest, const void *src, size_t nbytes);

/* The same for the active-set forms on an active set that is the World. */
int gsh_fast_fcollect_as(void *dest, const void *src, size_t nbytes, int start, int log_stride, int size, long *pSync);
int gsh_fast_alltoall_as(void *dest, const void *src, size_t nbytes, int start, int log_stride, int size, long *pSync);

/* shmem_barrier_all: quiet, then the barrier. */
static inline int gsh_fast_barrier_all(void)
{
	if (!gsh_fast.on)
		return 0;
	gsh_fast_mb();
	return gsh_fast_barrier();
}

/*
 * How many times a blocking wait polls its variables in C before it asks
 * Go to wait, which arms the provider's waiter and sleeps: many when
 * every PE has a CPU (the store being waited for is probably under way),
 * few when PEs share CPUs (polling would keep the writer off the CPU).
 */
static inline long gsh_fast_wait_polls(void)
{
	return gsh_fast.wait_polls;
}

/*
 * Life cycle: gsh_fast_init runs at the end of shmem_init (the Go side is
 * up, the predefined handles filled), gsh_fast_fini at the start of
 * shmem_finalize; the others when a team or context is created (filled)
 * or is about to be destroyed, to set up or drop their fast fields.
 */
void gsh_fast_init(void);
void gsh_fast_fini(void);
void gsh_fast_team_created(struct gsh_team *team);
void gsh_fast_team_destroyed(struct gsh_team *team);
void gsh_fast_ctx_created(struct gsh_ctx *ctx);
void gsh_fast_ctx_destroyed(struct gsh_ctx *ctx);

/*
 * The Go side's half of gsh_fast_init (fastmap.go) hands the map over
 * through these: begin with the job's shape and fence mode, one control
 * file per PE, one segment at a time, then commit, which checks the
 * control files and turns the fast path on. A nonzero return refuses
 * the map, as abort does: the fast path stays off, and Go does
 * everything.
 */
int gsh_fast_begin(int npes, int my_pe, int fence, const char *protocol, int version);
void gsh_fast_set_push(size_t max, int members);
int gsh_fast_add_ctl(int pe, void *ctl, size_t len);
int gsh_fast_add_seg(uintptr_t base, uintptr_t size, uint64_t key, const uintptr_t *peer);
int gsh_fast_commit(void);
void gsh_fast_abort(void);

#endif
