/*
 * The window path's table and its slow part (see window.h): filling the
 * table at shmem_init, and the call into Go when a put's stores need a
 * notice or the link went down, per providers/ntbring/PROTOCOL.md.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "window.h"
#include "_cgo_export.h"

struct gsh_win_map gsh_win;

const struct gsh_win_map *gsh_win_table(void)
{
	return &gsh_win;
}

static unsigned long noticed, redone;

void gsh_win_counts(struct gsh_win_counts *c)
{
	c->noticed = __atomic_load_n(&noticed, __ATOMIC_RELAXED);
	c->redone = __atomic_load_n(&redone, __ATOMIC_RELAXED);
}

int gsh_win_landed(int seg, int wpe, size_t off, size_t n, const char *fn)
{
	if (gshgo_win_landed(seg, wpe, off, n, (char *)fn)) {
		__atomic_fetch_add(&noticed, 1, __ATOMIC_RELAXED);
		return 1;
	}
	__atomic_fetch_add(&redone, 1, __ATOMIC_RELAXED);
	return 0;
}

/* The table being filled by the Go side, committed whole. */
static struct gsh_win_map pending;

static void drop(struct gsh_win_map *m)
{
	for (int i = 0; i < m->nseg; i++)
		free(m->seg[i].peer);
	free(m->up);
	free(m->notice);
	free(m->acked);
	memset(m, 0, sizeof *m);
}

int gsh_win_begin(int npes, const char *protocol, int version, size_t max)
{
	if (strcmp(protocol, "goshmem-ntbring-direct") != 0 || version != GSH_WIN_VERSION)
		return 1;
	if (npes < 1 || max == 0)
		return 1;
	memset(&pending, 0, sizeof pending);
	pending.npes = npes;
	pending.max = max;
	pending.up = calloc((size_t)npes, sizeof *pending.up);
	pending.notice = calloc((size_t)npes, sizeof *pending.notice);
	pending.acked = calloc((size_t)npes, sizeof *pending.acked);
	return pending.up == NULL || pending.notice == NULL || pending.acked == NULL;
}

int gsh_win_add_link(int pe, uintptr_t words, uintptr_t acked)
{
	if (pe < 0 || pe >= pending.npes || words == 0 || acked == 0 || (words & 63) != 0 || (acked & 3) != 0)
		return 1;
	pending.up[pe] = (const uint32_t *)(words + GSH_WIN_UP);
	pending.notice[pe] = (const uint32_t *)(words + GSH_WIN_NOTICE);
	pending.acked[pe] = (const uint32_t *)acked;
	return 0;
}

int gsh_win_add_seg(uintptr_t base, uintptr_t size, uintptr_t start, const uintptr_t *peer)
{
	if (pending.nseg == GSH_FAST_SEGS)
		return 1;
	struct gsh_win_seg *s = &pending.seg[pending.nseg];
	s->peer = malloc((size_t)pending.npes * sizeof *s->peer);
	if (s->peer == NULL)
		return 1;
	for (int pe = 0; pe < pending.npes; pe++)
		s->peer[pe] = pending.up[pe] ? peer[pe] : 0;
	s->base = base;
	s->size = size;
	s->start = start;
	pending.nseg++;
	return 0;
}

int gsh_win_commit(void)
{
	if (pending.nseg == 0) {
		drop(&pending);
		return 1;
	}
	pending.on = 1;
	gsh_win = pending;
	memset(&pending, 0, sizeof pending);
	return 0;
}

void gsh_win_abort(void)
{
	drop(&pending);
}

/*
 * GOSHMEM_C_WINDOW off leaves puts to window-reached PEs to Go: to
 * measure what the window saves, and to test C writers against Go ones.
 * On (the default) uses it where the provider offers it.
 */
void gsh_win_init(void)
{
	if (!gsh_settings.window_on || gsh_fast.on)
		return;
	gshgo_win_map();
}

/* Off before Go unmaps anything. */
void gsh_win_fini(void)
{
	struct gsh_win_map old = gsh_win;
	memset(&gsh_win, 0, sizeof gsh_win);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	drop(&old);
}
