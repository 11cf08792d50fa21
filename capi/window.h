/*
 * The window path: small puts to PEs whose memory this process reaches
 * through a link's memory window (ntbring's neighbour hosts), done in C
 * without entering Go, as providers/ntbring/PROTOCOL.md says: store
 * through the window, a full barrier, then a look at the link's words;
 * only when a landed notice must follow (none of this host's is still on
 * its way) or the link went down does C call into Go, once, for that.
 *
 * The runtime (runtime.c) asks gsh_win_put in put, put_nbi and p after
 * the loopback fast path (fast.h) declined, and only while the default
 * context's queue is empty, so a store never overtakes an operation
 * queued before it. A put done here is complete when it returns: quiet
 * and fence owe it nothing more than the barrier it ends with.
 */
#ifndef GOSHMEM_WINDOW_H
#define GOSHMEM_WINDOW_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "handles.h"
#include "fast.h"

/*
 * The protocol's words (PROTOCOL.md, version GSH_WIN_VERSION): offsets in
 * a link's words, each a 32-bit word. providers/ntbring's tests compare
 * these with the Go provider's.
 */
#define GSH_WIN_VERSION 1
#define GSH_WIN_UP 0
#define GSH_WIN_NOTICE 64

/*
 * One symmetric segment: this PE's part programs may name at base, size
 * bytes, which is byte start onwards of the provider's region; peer[pe]
 * the address, in the window onto pe's part, of the byte at base's
 * offset, 0 where pe has no window here.
 */
struct gsh_win_seg {
	uintptr_t base;
	uintptr_t size;
	uintptr_t start;
	uintptr_t *peer;
};

/*
 * The table, filled at shmem_init (gsh_win_init) from shmem.World's
 * WindowMap and read-only until shmem_finalize clears it. up[pe],
 * notice[pe] and acked[pe] are the words of the link to pe; NULL where
 * pe is not reached through a window.
 */
struct gsh_win_map {
	struct gsh_win_seg seg[GSH_FAST_SEGS];
	int nseg;
	int on;
	size_t max; /* the largest put done by stores */
	int npes;
	const uint32_t **up, **notice, **acked;
};

extern struct gsh_win_map gsh_win __attribute__((visibility("hidden")));
const struct gsh_win_map *gsh_win_table(void);

/*
 * How often a put's stores were followed by a call into Go: for a notice
 * (noticed), or to be redone because the link went down (redone). Puts
 * done by stores alone are not counted: that path stays a few
 * instructions. For tests.
 */
struct gsh_win_counts {
	unsigned long noticed, redone;
};
void gsh_win_counts(struct gsh_win_counts *c);

/*
 * The slow part of a put whose stores are in: a notice, or the link went
 * down. It returns nonzero when the put is complete; zero when it must be
 * done again through Go.
 */
int gsh_win_landed(int seg, int wpe, size_t off, size_t n, const char *fn);

/*
 * A put of n bytes from src to the symmetric dest on pe (a rank of ctx's
 * team) by stores through pe's window, where the table allows it. It
 * returns nonzero when the put is complete, zero when it was not done
 * (or must be done again) by the caller's usual path. value: the put is
 * one element of n bytes (shmem_p), stored with one access when aligned.
 */
static inline int gsh_win_put(shmem_ctx_t ctx, void *dest, const void *src, size_t n, int pe, int value,
	const char *fn)
{
	if (__builtin_expect(!gsh_win.on, 1) || n > gsh_win.max)
		return 0;
	int w = gsh_ctx_world_pe(ctx, pe);
	if (w < 0)
		return 0;
	int si = 0;
	const struct gsh_win_seg *s = &gsh_win.seg[0];
	uintptr_t off = (uintptr_t)dest - s->base;
	if (__builtin_expect(!(off < s->size && n <= s->size - off), 0)) {
		for (si = 1; si < gsh_win.nseg; si++) {
			s = &gsh_win.seg[si];
			off = (uintptr_t)dest - s->base;
			if (off < s->size && n <= s->size - off)
				break;
		}
		if (si == gsh_win.nseg)
			return 0;
	}
	uintptr_t peer = s->peer[w];
	const uint32_t *up = gsh_win.up[w];
	if (!peer || !up || !__atomic_load_n(up, __ATOMIC_RELAXED))
		return 0;
	void *t = (void *)(peer + off);
	if (value && ((uintptr_t)t & (n - 1)) == 0) {
		switch (n) {
		case 1: __atomic_store_n((uint8_t *)t, *(const uint8_t *)src, __ATOMIC_RELAXED); break;
		case 2: { uint16_t x; memcpy(&x, src, 2); __atomic_store_n((uint16_t *)t, x, __ATOMIC_RELAXED); break; }
		case 4: { uint32_t x; memcpy(&x, src, 4); __atomic_store_n((uint32_t *)t, x, __ATOMIC_RELAXED); break; }
		case 8: { uint64_t x; memcpy(&x, src, 8); __atomic_store_n((uint64_t *)t, x, __ATOMIC_RELAXED); break; }
		default: memcpy(t, src, n);
		}
	} else {
		memcpy(t, src, n);
	}
	/* The stores before the looks (PROTOCOL.md, "A put by stores", step 3). */
	gsh_fast_mb();
	uint32_t notice = __atomic_load_n(gsh_win.notice[w], __ATOMIC_RELAXED);
	uint32_t acked = __atomic_load_n(gsh_win.acked[w], __ATOMIC_RELAXED);
	if (__builtin_expect(__atomic_load_n(up, __ATOMIC_RELAXED) && notice != 0 && (int32_t)(acked - notice) < 0, 1))
		return 1;
	return gsh_win_landed(si, w, s->start + off, n, fn);
}

/*
 * Life cycle: gsh_win_init at the end of shmem_init (after gsh_fast_init:
 * the window path stays off where the loopback one is on),
 * gsh_win_fini at the start of shmem_finalize.
 */
void gsh_win_init(void);
void gsh_win_fini(void);

/* The Go side's half of gsh_win_init (windowmap.go) hands the map over. */
int gsh_win_begin(int npes, const char *protocol, int version, size_t max);
int gsh_win_add_link(int pe, uintptr_t words, uintptr_t acked);
int gsh_win_add_seg(uintptr_t base, uintptr_t size, uintptr_t start, const uintptr_t *peer);
int gsh_win_commit(void);
void gsh_win_abort(void);

#endif
