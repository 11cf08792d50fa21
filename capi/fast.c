/*
 * The fast path's table and its slow parts (see fast.h): filling the
 * table at shmem_init, the lookup of static segments, and the writer's
 * wake-up of a waiting PE, per providers/loopback/PROTOCOL.md.
 */
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/syscall.h>

#include "fast.h"
#include "impl.h"
#include "_cgo_export.h"

struct gsh_fast_map gsh_fast;

const struct gsh_fast_map *gsh_fast_table(void)
{
	return &gsh_fast;
}

/* The routine a failure in the barrier's wait is reported as. */
#define GSH_FAST_BARRIER_FN ((char *)"shmem_barrier_all")

/* The table being filled by the Go side, committed whole. */
static struct gsh_fast_map pending;

void *gsh_fast_target_static(const void *sym, size_t n, int wpe)
{
	for (int i = 1; i < gsh_fast.nseg; i++) {
		const struct gsh_fast_seg *s = &gsh_fast.seg[i];
		uintptr_t off = (uintptr_t)sym - s->base;
		if (off < s->size && n <= s->size - off)
			return (void *)(s->peer[wpe] + off);
	}
	return NULL;
}

/* The protocol's summary bits of the watch keys [lo, hi), hi > lo. */
static uint64_t page_bits(uint64_t lo, uint64_t hi)
{
	uint64_t first = lo >> GSH_LOOP_PAGE_SHIFT, last = (hi - 1) >> GSH_LOOP_PAGE_SHIFT;
	if (last - first >= GSH_LOOP_SUMMARY_MAX)
		return ~(uint64_t)0;
	uint64_t m = 0;
	for (uint64_t p = first; p <= last; p++)
		m |= (uint64_t)1 << ((p * GSH_LOOP_HASH) >> 58);
	return m;
}

static inline uint32_t *word32(unsigned char *ctl, size_t off) { return (uint32_t *)(ctl + off); }
static inline uint64_t *word64(unsigned char *ctl, size_t off) { return (uint64_t *)(ctl + off); }

/*
 * Whether a waiter of the PE whose control file is ctl watches any byte
 * of [lo, hi): one for any change, or a slot that overlaps. A slot read
 * while its owner rewrites it may look wider than it is: a spurious
 * wake-up at worst.
 */
static int watched(unsigned char *ctl, uint64_t lo, uint64_t hi)
{
	if (__atomic_load_n(word32(ctl, GSH_LOOP_ANY_WAITERS), __ATOMIC_SEQ_CST) != 0)
		return 1;
	for (int i = 0; i < GSH_LOOP_WATCH_SLOTS; i++) {
		uint64_t *slot = word64(ctl, GSH_LOOP_WATCHES + 16 * i);
		uint64_t wh = __atomic_load_n(slot + 1, __ATOMIC_SEQ_CST);
		if (wh != 0 && lo < wh && __atomic_load_n(slot, __ATOMIC_SEQ_CST) < hi)
			return 1;
	}
	return 0;
}

/*
 * The writer's steps 3 to 5 of the protocol, once step 2 found a waiter:
 * the watch key of the bytes written, the summary, the slots, and the
 * wake-up: seq moves on, and sleepers are woken with a shared futex (they
 * are other processes, mapping the file elsewhere).
 */
void gsh_fast_notify(int wpe, const void *target, size_t n)
{
	uint64_t lo = 0;
	int found = 0;
	for (int i = 0; i < gsh_fast.nseg && !found; i++) {
		const struct gsh_fast_seg *s = &gsh_fast.seg[i];
		uintptr_t off = (uintptr_t)target - s->peer[wpe];
		if (off < s->size) {
			lo = s->key + off;
			found = 1;
		}
	}
	unsigned char *ctl = gsh_fast.ctl[wpe];
	if (found) {
		uint64_t hi = lo + (n ? n : 1);
		if ((__atomic_load_n(word64(ctl, GSH_LOOP_WATCH_MASK), __ATOMIC_SEQ_CST) & page_bits(lo, hi)) == 0 ||
			!watched(ctl, lo, hi))
			return;
	}
	/* Not found cannot happen for a target the table gave; wake anyway. */
	uint32_t *seq = word32(ctl, GSH_LOOP_SEQ);
	__atomic_add_fetch(seq, GSH_LOOP_SEQ_STEP, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(word32(ctl, GSH_LOOP_SLEEPERS), __ATOMIC_SEQ_CST) != 0)
		syscall(SYS_futex, seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* ---- The barrier ---- */

/* Wakes every sleeper on word, a shared futex: they are other processes. */
static void wake_all(uint32_t *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* As the Go provider's barrier: yield for 200 us, sleep in 1 ms slices. */
#define YIELD_NS 200000
#define SLICE_NS 1000000

/*
 * The first two steps of every wait of the fast path: polls while the PE
 * waited for is likely running, then sched_yield for YIELD_NS, which lets
 * it run where PEs share CPUs. Nonzero once ready(p, v) holds.
 */
static int poll_then_yield(long polls, int (*ready)(const void *p, uint64_t v), const void *p, uint64_t v)
{
	for (long i = 0; i < polls; i++) {
		if (ready(p, v))
			return 1;
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#endif
	}
	for (int64_t start = now_ns(); now_ns() - start < YIELD_NS;) {
		sched_yield();
		if (ready(p, v))
			return 1;
	}
	return 0;
}

static int moved32(const void *p, uint64_t old)
{
	return __atomic_load_n((const uint32_t *)p, __ATOMIC_SEQ_CST) != (uint32_t)old;
}

/*
 * Waits for word to leave old, as the Go provider's await does: polls
 * (many while every PE has a CPU, when the PE waited for is running; none
 * when PEs share CPUs, where polling keeps it off the CPU), yields the CPU
 * for a while (a PE still to arrive may be waiting for it), then sleeps
 * on the futex in slices, counted in sleepers so that the last to arrive
 * enters the kernel only if someone sleeps. Between slices Go looks for a
 * lost PE, a global exit or a PE that finalized, which end the job rather
 * than this wait, and reports a long wait; once it ends, Go hears so.
 */
static void await(uint32_t *word, uint32_t *sleepers, uint32_t old)
{
	if (poll_then_yield(gsh_fast.dissemination ? gsh_fast.wait_polls : 0, moved32, word, old))
		return;
	const struct timespec slice = {0, SLICE_NS};
	int64_t start = now_ns() - YIELD_NS;
	for (;;) {
		/* Counted before the futex compares the word: see the waker. */
		__atomic_add_fetch(sleepers, 1, __ATOMIC_SEQ_CST);
		syscall(SYS_futex, word, FUTEX_WAIT, old, &slice, NULL, 0);
		__atomic_sub_fetch(sleepers, 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(word, __ATOMIC_SEQ_CST) != old)
			break;
		gshgo_fast_check(GSH_FAST_BARRIER_FN, (long long)(now_ns() - start));
	}
	gshgo_fast_done();
}

/*
 * The counter barrier on PE 0's words: read the generation, count in; the
 * last to arrive resets the count, moves the generation on and wakes the
 * sleepers; the others wait for the generation to move.
 */
static void count_barrier(void)
{
	unsigned char *c = gsh_fast.ctl[0];
	uint32_t *count = word32(c, GSH_LOOP_BAR_COUNT), *gen = word32(c, GSH_LOOP_BAR_GEN);
	uint32_t *sleepers = word32(c, GSH_LOOP_BAR_SLEEPERS);
	uint32_t g = __atomic_load_n(gen, __ATOMIC_SEQ_CST);
	if (__atomic_add_fetch(count, 1, __ATOMIC_SEQ_CST) == (uint32_t)gsh_fast.npes) {
		__atomic_store_n(count, 0, __ATOMIC_SEQ_CST);
		__atomic_add_fetch(gen, 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(sleepers, __ATOMIC_SEQ_CST) != 0)
			wake_all(gen);
		return;
	}
	await(gen, sleepers, g);
}

/*
 * The dissemination barrier: barrier number e (this PE's count, in its
 * control file, shared with the Go provider's barrier); in round r store
 * e into flag r of the PE 2^r ranks above, then wait for our flag r to
 * leave e - 1.
 */
static void disseminate(void)
{
	int me = gsh_fast.my_pe, n = gsh_fast.npes;
	unsigned char *own = gsh_fast.ctl[me];
	uint32_t e = __atomic_add_fetch(word32(own, GSH_LOOP_BAR_EPOCH), 1, __ATOMIC_SEQ_CST);
	for (int r = 0, dist = 1; dist < n; r++, dist <<= 1) {
		unsigned char *to = gsh_fast.ctl[(me + dist) % n];
		uint32_t *flag = word32(to, GSH_LOOP_BAR_FLAGS + 128 * r);
		/* A sequentially consistent store: ordered before the load of sleepers. */
		__atomic_store_n(flag, e, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(flag + 1, __ATOMIC_SEQ_CST) != 0)
			wake_all(flag);
		uint32_t *mine = word32(own, GSH_LOOP_BAR_FLAGS + 128 * r);
		if (__atomic_load_n(mine, __ATOMIC_SEQ_CST) == e - 1)
			await(mine, mine + 1, e - 1);
	}
}

int gsh_fast_barrier(void)
{
	if (!gsh_fast.on)
		return 0;
	if (gsh_fast.npes == 1)
		return 1;
	if (gsh_fast.dissemination)
		disseminate();
	else
		count_barrier();
	return 1;
}

/* Filling the table: the Go side's calls (fastmap.go). */

int gsh_fast_begin(int npes, int my_pe, int fence, const char *protocol, int version)
{
	if (strcmp(protocol, "goshmem-loopback") != 0 || version != GSH_LOOP_VERSION)
		return 1;
	if (npes < 1 || my_pe < 0 || my_pe >= npes)
		return 1;
	memset(&pending, 0, sizeof pending);
	pending.npes = npes;
	pending.my_pe = my_pe;
	pending.fence = fence != 0;
	pending.ctl = calloc((size_t)npes, sizeof *pending.ctl);
	return pending.ctl == NULL;
}

static void drop(struct gsh_fast_map *m)
{
	for (int i = 0; i < m->nseg; i++)
		free(m->seg[i].peer);
	free(m->ctl);
	memset(m, 0, sizeof *m);
}

/*
 * A control file must say it is pe's, in this layout: the Go side
 * checked every header at Open, and this checks that both sides mean the
 * same layout.
 */
int gsh_fast_add_ctl(int pe, void *ctl, size_t len)
{
	unsigned char *c = ctl;
	uint32_t version, rank, size;
	if (pe < 0 || pe >= pending.npes || len < GSH_LOOP_CTL_SIZE || memcmp(c, "GSHMLOOP", 8) != 0)
		return 1;
	memcpy(&version, c + 8, 4);
	memcpy(&rank, c + 12, 4);
	memcpy(&size, c + 20, 4);
	if (version != GSH_LOOP_VERSION || rank != (uint32_t)pe || size != GSH_LOOP_CTL_SIZE)
		return 1;
	/* The barrier's mode is the job's: the same in every file. */
	uint32_t mode = __atomic_load_n((uint32_t *)(c + GSH_LOOP_BAR_MODE), __ATOMIC_SEQ_CST);
	if (mode > 1 || (pe > 0 && (int)mode != pending.dissemination))
		return 1;
	pending.dissemination = (int)mode;
	pending.ctl[pe] = c;
	return 0;
}

int gsh_fast_add_seg(uintptr_t base, uintptr_t size, uint64_t key, const uintptr_t *peer)
{
	if (pending.nseg == GSH_FAST_SEGS)
		return 1;
	struct gsh_fast_seg *s = &pending.seg[pending.nseg];
	s->peer = malloc((size_t)pending.npes * sizeof *s->peer);
	if (s->peer == NULL)
		return 1;
	memcpy(s->peer, peer, (size_t)pending.npes * sizeof *s->peer);
	s->base = base;
	s->size = size;
	s->key = key;
	pending.nseg++;
	return 0;
}

/*
 * How many PEs this host runs against its CPUs decides how long a wait
 * polls in C: oshrun says how many CPUs the job has (GOSHMEM_CPUS).
 */
static long wait_polls(int npes)
{
	return npes <= gsh_settings.cpus ? 20000 : 200;
}

int gsh_fast_commit(void)
{
	if (pending.nseg == 0) {
		drop(&pending);
		return 1;
	}
	for (int pe = 0; pe < pending.npes; pe++) {
		if (pending.ctl[pe] == NULL) {
			drop(&pending);
			return 1;
		}
	}
	pending.wait_polls = wait_polls(pending.npes);
	pending.on = 1;
	gsh_fast = pending;
	memset(&pending, 0, sizeof pending);
	return 0;
}

void gsh_fast_abort(void)
{
	drop(&pending);
}

/* The predefined teams' states, which live as long as the fast path. */
static struct gsh_fast_team world_fast, shared_fast;

static void team_words(struct gsh_team *team, struct gsh_fast_team *ft)
{
	gshgo_fast_team(team, ft);
	team->fast = ft;
}

/*
 * GOSHMEM_C_FAST_PATH off sends this PE's RMA and atomics through Go even
 * where the fast path could take them: to measure what it saves, and to
 * test Go writers against C ones in one job. The barrier and quiet stay
 * the fast path's: every PE of a job must run the same barrier.
 */
void gsh_fast_init(void)
{
	gshgo_fast_map();
	if (gsh_fast.on) {
		team_words(&gsh_team_world, &world_fast);
		team_words(&gsh_team_shared, &shared_fast);
	}
	if (gsh_fast.on && !gsh_settings.fast_path_on) {
		for (int i = 0; i < gsh_fast.nseg; i++)
			gsh_fast.seg[i].size = 0;
	}
}

/*
 * Off before Go unmaps anything: sizes of 0 make every lookup miss, and
 * quiet and fence go back to Go (which knows the library has finished).
 */
void gsh_fast_fini(void)
{
	struct gsh_fast_map old = gsh_fast;
	memset(&gsh_fast, 0, sizeof gsh_fast);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	drop(&old);
	gsh_team_world.fast = gsh_team_shared.fast = NULL;
}

void gsh_fast_team_created(struct gsh_team *team)
{
	if (!gsh_fast.on || team->fast)
		return;
	struct gsh_fast_team *ft = calloc(1, sizeof *ft);
	if (ft)
		team_words(team, ft);
}

void gsh_fast_team_destroyed(struct gsh_team *team)
{
	if (team->fast != &world_fast && team->fast != &shared_fast)
		free(team->fast);
	team->fast = NULL;
}
void gsh_fast_ctx_created(struct gsh_ctx *ctx) { (void)ctx; }
void gsh_fast_ctx_destroyed(struct gsh_ctx *ctx) { (void)ctx; }

/*
 * Adds one to sig, World PE w's word as mapped here, as a writer of it:
 * sequentially consistent, so after the data put before it, and before
 * the notice it is.
 */
static void signal_pe(uint64_t *sig, int w)
{
	__atomic_add_fetch(sig, 1, __ATOMIC_SEQ_CST);
	gsh_fast_written_pe(sig, 8, w);
}

/*
 * World PE w's copy, as mapped here, of what is at local in this PE's
 * heap mapping: for shmem's internal words and banks, which lie outside
 * the segments gsh_fast_target_pe looks in.
 */
static void *heap_peer(const void *local, int w)
{
	const struct gsh_fast_seg *heap = &gsh_fast.seg[0];
	return (void *)(heap->peer[w] + ((uintptr_t)local - heap->base));
}

/* ---- The active-set broadcast ---- */

/* The routine a failure in the broadcast's wait is reported as. */
#define GSH_FAST_BCAST_FN ((char *)"shmem_broadcast")

/*
 * The World PE of rank r in the active set (start, log_stride, size), or
 * -1 where the set is not one this PE may call a collective on: Go then
 * runs the call and names what is wrong.
 */
static int set_rank(int start, int log_stride, int size)
{
	int n = gsh_fast.npes, me = gsh_fast.my_pe;
	if (start < 0 || log_stride < 0 || log_stride > 30 || size < 1 || start >= n)
		return -1;
	long long last = (long long)start + ((long long)(size - 1) << log_stride);
	if (last >= n || me < start || ((me - start) & ((1 << log_stride) - 1)) != 0)
		return -1;
	int r = (me - start) >> log_stride;
	return r < size ? r : -1;
}

/*
 * Waits for this PE's pSync[0] to count one more, as Go's await does on an
 * active set: polls while the root may be running, yields the CPU to let
 * it run where PEs share CPUs, then lets Go wait, which sleeps until the
 * root's store wakes it and ends the job if a PE is lost meanwhile.
 */
static int reached(const void *p, uint64_t v)
{
	return __atomic_load_n((const long *)p, __ATOMIC_ACQUIRE) >= (long)v;
}

static void await_signal(long *word)
{
	if (poll_then_yield(gsh_fast.wait_polls, reached, word, 1))
		return;
	gshgo_wait(GSH_WAIT_ONE | GSH_WAIT_BLOCK, word, 1, NULL, NULL, GSH_INT, 8, SHMEM_CMP_GE, 1, NULL, GSH_FAST_BCAST_FN);
}

/*
 * shmem's push (docs/collectives.md) for an active set: the root copies
 * source into every other member's dest and then adds one to its pSync
 * word 0, which announces it; every other member waits for its word and
 * takes the one off again, so pSync is back at SHMEM_SYNC_VALUE. Go's
 * members and roots do the same, word for word, so a PE whose calls go
 * to Go may meet these in one call.
 */
int gsh_fast_broadcast_as(void *dest, const void *src, size_t nbytes, int root,
	int start, int log_stride, int size, long *pSync)
{
	if (!gsh_fast.on || nbytes == 0 || nbytes > gsh_fast.push_max || size < 2 || size > gsh_fast.push_members ||
		((uintptr_t)pSync & 7) != 0)
		return 0;
	int me = set_rank(start, log_stride, size);
	if (me < 0 || root < 0 || root >= size)
		return 0;
	int wme = gsh_fast.my_pe;
	if (!gsh_fast_target_pe(pSync, 8 * SHMEM_BCAST_SYNC_SIZE, wme) || !gsh_fast_target_pe(dest, nbytes, wme))
		return 0;
	if (me != root) {
		await_signal(pSync);
		__atomic_sub_fetch(pSync, 1, __ATOMIC_SEQ_CST);
		return 1;
	}
	/* Every target first: a call Go would refuse must not half happen here. */
	for (int i = 1; i < size; i++) {
		int w = start + (((root + i) % size) << log_stride);
		if (!gsh_fast_target_pe(dest, nbytes, w) || !gsh_fast_target_pe(pSync, 8, w))
			return 0;
	}
	for (int i = 1; i < size; i++) {
		int w = start + (((root + i) % size) << log_stride);
		void *d = gsh_fast_target_pe(dest, nbytes, w);
		long *sig = gsh_fast_target_pe(pSync, 8, w);
		memcpy(d, src, nbytes);
		gsh_fast_written_pe(d, nbytes, w);
		signal_pe((uint64_t *)sig, w);
	}
	return 1;
}

void gsh_fast_set_push(size_t max, int members)
{
	pending.push_max = max;
	pending.push_members = members;
}

/* ---- The team broadcast ---- */

static int counted(const void *p, uint64_t v)
{
	return __atomic_load_n((const uint64_t *)p, __ATOMIC_ACQUIRE) >= v;
}

/*
 * shmem's push for a team (docs/collectives.md): the root copies source
 * into its own dest and every other member's, each followed by one added
 * to the member's word of the root's rank, which announces it; a member
 * waits until that word has counted one more than it has seen. Go's
 * members and roots do the same, word for word. A member whose wait
 * outlasts the polls and yields leaves the call to Go, which waits the
 * same way, with the checks for lost and finalized PEs.
 */
int gsh_fast_broadcast(struct gsh_team *team, void *dest, const void *src, size_t nbytes, int root)
{
	const struct gsh_fast_team *ft = team->fast;
	int n = team->n_pes, me = team->my_pe;
	if (!gsh_fast.on || !ft || !ft->push || nbytes == 0 || nbytes > gsh_fast.push_max || n < 2 ||
		n > gsh_fast.push_members || root < 0 || root >= n)
		return 0;
	if (!gsh_fast_target_pe(dest, nbytes, gsh_fast.my_pe))
		return 0;
	if (me != root) {
		uint64_t want = ft->seen[root] + 1;
		if (!poll_then_yield(gsh_fast.wait_polls, counted, ft->from + root, want))
			return 0;
		ft->seen[root] = want;
		return 1;
	}
	/* Every target first: a call Go would refuse must not half happen here. */
	for (int i = 1; i < n; i++) {
		if (!gsh_fast_target_pe(dest, nbytes, gsh_team_world_pe(team, (root + i) % n)))
			return 0;
	}
	if (dest != src)
		memmove(dest, src, nbytes);
	for (int i = 1; i < n; i++) {
		int w = gsh_team_world_pe(team, (root + i) % n);
		void *d = gsh_fast_target_pe(dest, nbytes, w);
		memcpy(d, src, nbytes);
		gsh_fast_written_pe(d, nbytes, w);
		signal_pe(heap_peer(ft->from + root, w), w);
	}
	return 1;
}

/* ---- The staged gathers ---- */

/*
 * shmem's staged gather (Team.stage, docs/collectives.md): this PE's part
 * for member r, part bytes at src + r * stride (the same part for every
 * member where stride is 0), goes to this PE's place in r's gather bank
 * of the generation's parity, then one is added to r's stage word of that
 * parity; once this PE's word has counted every other member's part, the
 * bank, every member's part in rank order, is dest. Go's members do the
 * same, word for word, and count the same generations.
 */
static int stage(struct gsh_team *team, void *dest, const void *src, size_t part, size_t stride, const char *fn)
{
	struct gsh_fast_team *ft = team->fast;
	int n = team->n_pes, me = team->my_pe;
	if (!gsh_fast.on || !ft || !ft->staged || part == 0 || n < 2 || part > ft->stage_part || part > ft->bank_size / (size_t)n)
		return 0;
	if (!gsh_fast_target_pe(dest, part * (size_t)n, gsh_fast.my_pe))
		return 0;
	uint64_t gen = *ft->gen + 1;
	int p = (int)(gen & 1);
	*ft->gen = gen;
	unsigned char *place = ft->bank[p] + (size_t)me * part;
	for (int i = 1; i < n; i++) {
		int r = (me + i) % n, w = gsh_team_world_pe(team, r);
		void *d = heap_peer(place, w);
		memcpy(d, (const unsigned char *)src + (size_t)r * stride, part);
		gsh_fast_written_pe(d, part, w);
	}
	memcpy(place, (const unsigned char *)src + (size_t)me * stride, part);
	for (int i = 1; i < n; i++) {
		int w = gsh_team_world_pe(team, (me + i) % n);
		signal_pe(heap_peer(ft->stage[p], w), w);
	}
	uint64_t want = *ft->stage_seen[p] + (uint64_t)(n - 1);
	if (!poll_then_yield(gsh_fast.wait_polls, counted, ft->stage[p], want))
		gshgo_fast_wait_count(team, ft->stage[p], want, (char *)fn);
	*ft->stage_seen[p] = want;
	memcpy(dest, ft->bank[p], part * (size_t)n);
	return 1;
}

/*
 * An active set that is the World runs on the World's team (as Go's
 * activeGroup says), once its pSync of words longs is as Go requires:
 * symmetric and aligned.
 */
static struct gsh_team *world_set(int start, int log_stride, int size, long *pSync, int words)
{
	if (start != 0 || size != gsh_fast.npes || (log_stride != 0 && size != 1) || ((uintptr_t)pSync & 7) != 0 ||
		!gsh_fast_target_pe(pSync, 8 * (size_t)words, gsh_fast.my_pe))
		return NULL;
	return &gsh_team_world;
}

int gsh_fast_fcollect_as(void *dest, const void *src, size_t nbytes, int start, int log_stride, int size, long *pSync)
{
	struct gsh_team *t = world_set(start, log_stride, size, pSync, SHMEM_COLLECT_SYNC_SIZE);
	return t && stage(t, dest, src, nbytes, 0, "shmem_fcollect");
}

int gsh_fast_alltoall_as(void *dest, const void *src, size_t nbytes, int start, int log_stride, int size, long *pSync)
{
	struct gsh_team *t = world_set(start, log_stride, size, pSync, SHMEM_ALLTOALL_SYNC_SIZE);
	return t && stage(t, dest, src, nbytes, nbytes, "shmem_alltoall");
}

int gsh_fast_fcollect(struct gsh_team *team, void *dest, const void *src, size_t nbytes)
{
	return stage(team, dest, src, nbytes, 0, "shmem_fcollect");
}

int gsh_fast_alltoall(struct gsh_team *team, void *dest, const void *src, size_t nbytes)
{
	return stage(team, dest, src, nbytes, nbytes, "shmem_alltoall");
}
