//go:build cgo

package pmix

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <errno.h>

// The few PMIx types the client needs, declared here so that building
// needs no PMIx header: the layout is OpenPMIx's (stable since v2, and
// checked against pmix.h by a test where the header is installed).
typedef int gs_status_t;
typedef struct {
	char nspace[256];
	uint32_t rank;
} gs_proc_t;
typedef struct {
	uint16_t type;
	union {
		bool flag;
		char *string;
		uint16_t uint16;
		uint32_t uint32;
		uint64_t uint64;
		int integer;
		size_t size;
		struct { void *a; void *b; char c; } widest; // pmix_envar_t
	} data;
} gs_value_t;
typedef struct {
	char key[512];
	uint32_t flags;
	gs_value_t value;
} gs_info_t;

enum {
	GS_SUCCESS = 0,
	GS_ERR_TIMEOUT = -24,
	GS_ERR_NOT_FOUND = -46,
	// Not PMIx codes: the library is not loaded, or a value was of a
	// type the client did not ask for.
	GS_ERR_NOT_LOADED = -100001,
	GS_ERR_TYPE = -100002,
	GS_ERR_NOMEM = -100003,
};

#define GS_BOOL 1
#define GS_STRING 3
#define GS_SIZE 4
#define GS_INT 6
#define GS_UINT16 13
#define GS_UINT32 14
#define GS_UINT64 15
#define GS_PROC_RANK 40
#define GS_GLOBAL 3
#define GS_RANK_WILDCARD (UINT32_MAX - 1)

typedef void (*gs_op_cbfunc_t)(gs_status_t, void *);

static struct {
	void *h;
	gs_status_t (*init)(gs_proc_t *, gs_info_t *, size_t);
	gs_status_t (*finalize)(const gs_info_t *, size_t);
	gs_status_t (*abort)(int, const char *, gs_proc_t *, size_t);
	gs_status_t (*put)(uint8_t, const char *, gs_value_t *);
	gs_status_t (*commit)(void);
	gs_status_t (*fence_nb)(const gs_proc_t *, size_t, const gs_info_t *, size_t, gs_op_cbfunc_t, void *);
	gs_status_t (*get)(const gs_proc_t *, const char *, const gs_info_t *, size_t, gs_value_t **);
	void (*value_destruct)(gs_value_t *);
	const char *(*error_string)(gs_status_t);
	const char *(*get_version)(void);
} gs;

static gs_proc_t gs_me;

// gs_load opens the library; on failure it returns dlerror's text, which
// the caller frees.
static char *gs_load(_GoString_ name) {
	char path[4096];
	size_t n = _GoStringLen(name);
	if (n >= sizeof path) {
		return strdup("library name too long");
	}
	memcpy(path, _GoStringPtr(name), n);
	path[n] = 0;
	if (gs.h != NULL) {
		return NULL;
	}
	// RTLD_GLOBAL: the library's own plugins resolve its symbols.
	void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
	if (h == NULL) {
		const char *e = dlerror();
		return strdup(e != NULL ? e : "dlopen failed");
	}
#define GS_SYM(field, sym) \
	if ((*(void **)&gs.field = dlsym(h, sym)) == NULL) { \
		char *e = strdup("the library has no " sym); \
		dlclose(h); \
		memset(&gs, 0, sizeof gs); \
		return e; \
	}
	GS_SYM(init, "PMIx_Init")
	GS_SYM(finalize, "PMIx_Finalize")
	GS_SYM(abort, "PMIx_Abort")
	GS_SYM(put, "PMIx_Put")
	GS_SYM(commit, "PMIx_Commit")
	GS_SYM(fence_nb, "PMIx_Fence_nb")
	GS_SYM(get, "PMIx_Get")
	GS_SYM(value_destruct, "PMIx_Value_destruct")
	GS_SYM(error_string, "PMIx_Error_string")
	GS_SYM(get_version, "PMIx_Get_version")
#undef GS_SYM
	gs.h = h;
	return NULL;
}

static void gs_free(char *p) { free(p); }

static const char *gs_version(void) {
	return gs.h != NULL ? gs.get_version() : "";
}

static const char *gs_error(gs_status_t rc) {
	switch (rc) {
	case GS_ERR_NOT_LOADED: return "libpmix is not loaded";
	case GS_ERR_TYPE: return "the value has another type";
	case GS_ERR_NOMEM: return "out of memory";
	}
	if (gs.h == NULL) {
		return "unknown status";
	}
	const char *s = gs.error_string(rc);
	return s != NULL ? s : "unknown status";
}

static gs_status_t gs_init(void) {
	if (gs.h == NULL) return GS_ERR_NOT_LOADED;
	return gs.init(&gs_me, NULL, 0);
}

static uint32_t gs_rank(void) { return gs_me.rank; }
static const char *gs_nspace(void) { return gs_me.nspace; }

static void gs_info_key(gs_info_t *info, const char *key) {
	memset(info, 0, sizeof *info);
	strncpy(info->key, key, sizeof info->key - 1);
}

// gs_get looks key up for rank (GS_RANK_WILDCARD: the job's own) of this
// process's namespace, waiting at most timeout seconds for the server.
static gs_status_t gs_get(uint32_t rank, const char *key, int timeout, gs_value_t **out) {
	if (gs.h == NULL) return GS_ERR_NOT_LOADED;
	gs_proc_t p;
	memset(&p, 0, sizeof p);
	memcpy(p.nspace, gs_me.nspace, sizeof p.nspace);
	p.rank = rank;
	gs_info_t info;
	gs_info_key(&info, "pmix.timeout");
	info.value.type = GS_INT;
	info.value.data.integer = timeout;
	return gs.get(&p, key, &info, 1, out);
}

static void gs_release(gs_value_t *v) {
	gs.value_destruct(v);
	free(v);
}

// gs_get_go is gs_get for a key given as a Go string: a value, or an
// error, never GS_SUCCESS without one.
static gs_status_t gs_get_go(uint32_t rank, _GoString_ gkey, int timeout, gs_value_t **v) {
	char key[512];
	size_t n = _GoStringLen(gkey);
	if (n >= sizeof key) return GS_ERR_NOT_FOUND;
	memcpy(key, _GoStringPtr(gkey), n);
	key[n] = 0;
	gs_status_t rc = gs_get(rank, key, timeout, v);
	if (rc == GS_SUCCESS && *v == NULL) return GS_ERR_NOT_FOUND;
	return rc;
}

static gs_status_t gs_get_uint(uint32_t rank, _GoString_ gkey, int timeout, uint64_t *out) {
	gs_value_t *v = NULL;
	gs_status_t rc = gs_get_go(rank, gkey, timeout, &v);
	if (rc != GS_SUCCESS) return rc;
	switch (v->type) {
	case GS_UINT16: *out = v->data.uint16; break;
	case GS_UINT32: case GS_PROC_RANK: *out = v->data.uint32; break;
	case GS_UINT64: *out = v->data.uint64; break;
	case GS_SIZE: *out = v->data.size; break;
	case GS_INT:
		if (v->data.integer < 0) rc = GS_ERR_TYPE;
		else *out = (uint64_t)v->data.integer;
		break;
	default: rc = GS_ERR_TYPE;
	}
	gs_release(v);
	return rc;
}

// gs_get_string returns a copy of a string value, which the caller frees.
static gs_status_t gs_get_string(uint32_t rank, _GoString_ gkey, int timeout, char **out) {
	gs_value_t *v = NULL;
	gs_status_t rc = gs_get_go(rank, gkey, timeout, &v);
	if (rc != GS_SUCCESS) return rc;
	if (v->type != GS_STRING || v->data.string == NULL) {
		rc = GS_ERR_TYPE;
	} else if ((*out = strdup(v->data.string)) == NULL) {
		rc = GS_ERR_NOMEM;
	}
	gs_release(v);
	return rc;
}

static gs_status_t gs_put_string(_GoString_ gkey, _GoString_ gval) {
	if (gs.h == NULL) return GS_ERR_NOT_LOADED;
	char key[512];
	size_t n = _GoStringLen(gkey);
	if (n >= sizeof key) return GS_ERR_TYPE;
	memcpy(key, _GoStringPtr(gkey), n);
	key[n] = 0;
	size_t vn = _GoStringLen(gval);
	char *s = malloc(vn + 1);
	if (s == NULL) return GS_ERR_NOMEM;
	memcpy(s, _GoStringPtr(gval), vn);
	s[vn] = 0;
	gs_value_t v;
	memset(&v, 0, sizeof v);
	v.type = GS_STRING;
	v.data.string = s;
	// PMIx_Put copies the value.
	gs_status_t rc = gs.put(GS_GLOBAL, key, &v);
	memset(s, 0, vn);
	free(s);
	return rc;
}

static gs_status_t gs_commit(void) {
	if (gs.h == NULL) return GS_ERR_NOT_LOADED;
	return gs.commit();
}

// A fence's completion, shared with the library's callback. When the
// waiter gives up first, the callback frees it.
typedef struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int done, abandoned;
	gs_status_t rc;
} gs_wait_t;

static void gs_fence_done(gs_status_t rc, void *arg) {
	gs_wait_t *w = arg;
	pthread_mutex_lock(&w->mu);
	if (w->abandoned) {
		pthread_mutex_unlock(&w->mu);
		pthread_mutex_destroy(&w->mu);
		pthread_cond_destroy(&w->cv);
		free(w);
		return;
	}
	w->rc = rc;
	w->done = 1;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

// gs_fence waits at most timeout seconds for every process of the job to
// reach the fence, collecting what each put.
static gs_status_t gs_fence(int timeout) {
	if (gs.h == NULL) return GS_ERR_NOT_LOADED;
	gs_proc_t p;
	memset(&p, 0, sizeof p);
	memcpy(p.nspace, gs_me.nspace, sizeof p.nspace);
	p.rank = GS_RANK_WILDCARD;
	gs_info_t info[2];
	gs_info_key(&info[0], "pmix.collect");
	info[0].value.type = GS_BOOL;
	info[0].value.data.flag = true;
	gs_info_key(&info[1], "pmix.timeout");
	info[1].value.type = GS_INT;
	info[1].value.data.integer = timeout;
	gs_wait_t *w = calloc(1, sizeof *w);
	if (w == NULL) return GS_ERR_NOMEM;
	pthread_mutex_init(&w->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cv, &ca);
	pthread_condattr_destroy(&ca);
	gs_status_t rc = gs.fence_nb(&p, 1, info, 2, gs_fence_done, w);
	if (rc != GS_SUCCESS) {
		pthread_mutex_destroy(&w->mu);
		pthread_cond_destroy(&w->cv);
		free(w);
		return rc;
	}
	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += timeout;
	pthread_mutex_lock(&w->mu);
	while (!w->done) {
		if (pthread_cond_timedwait(&w->cv, &w->mu, &until) == ETIMEDOUT && !w->done) {
			w->abandoned = 1;
			pthread_mutex_unlock(&w->mu);
			return GS_ERR_TIMEOUT;
		}
	}
	rc = w->rc;
	pthread_mutex_unlock(&w->mu);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
	free(w);
	return rc;
}

static gs_status_t gs_abort(int status, _GoString_ gmsg) {
	if (gs.h == NULL) return GS_ERR_NOT_LOADED;
	char msg[1024];
	size_t n = _GoStringLen(gmsg);
	if (n >= sizeof msg) n = sizeof msg - 1;
	memcpy(msg, _GoStringPtr(gmsg), n);
	msg[n] = 0;
	return gs.abort(status, msg, NULL, 0);
}

static gs_status_t gs_finalize(void) {
	if (gs.h == NULL) return GS_ERR_NOT_LOADED;
	return gs.finalize(NULL, 0);
}

static size_t gs_sizeof_proc(void) { return sizeof(gs_proc_t); }
static size_t gs_sizeof_value(void) { return sizeof(gs_value_t); }
static size_t gs_sizeof_info(void) { return sizeof(gs_info_t); }
*/
import "C"

import "sync"

// cgoBuilt: this build can load libpmix.
const cgoBuilt = true

var loadOnce struct {
	sync.Once
	err error
}

// load opens the library name once per process.
func load(name string) error {
	loadOnce.Do(func() {
		if e := C.gs_load(name); e != nil {
			loadOnce.err = &LibError{Name: name, Reason: C.GoString(e)}
			C.gs_free(e)
		}
	})
	return loadOnce.err
}

func libVersion() string { return C.GoString(C.gs_version()) }

func statusText(rc C.gs_status_t) string { return C.GoString(C.gs_error(rc)) }

func status(rc C.gs_status_t) error {
	if rc == C.GS_SUCCESS {
		return nil
	}
	return &StatusError{Code: int(rc), Text: statusText(rc)}
}

func libInit() (nspace string, rank uint32, err error) {
	if err := status(C.gs_init()); err != nil {
		return "", 0, err
	}
	return C.GoString(C.gs_nspace()), uint32(C.gs_rank()), nil
}

func libGetUint(rank uint32, key string, timeout int) (uint64, error) {
	var v C.uint64_t
	if err := status(C.gs_get_uint(C.uint32_t(rank), key, C.int(timeout), &v)); err != nil {
		return 0, err
	}
	return uint64(v), nil
}

func libGetString(rank uint32, key string, timeout int) (string, error) {
	var p *C.char
	if err := status(C.gs_get_string(C.uint32_t(rank), key, C.int(timeout), &p)); err != nil {
		return "", err
	}
	s := C.GoString(p)
	C.gs_free(p)
	return s, nil
}

func libPut(key, value string) error { return status(C.gs_put_string(key, value)) }
func libCommit() error               { return status(C.gs_commit()) }
func libFence(timeout int) error     { return status(C.gs_fence(C.int(timeout))) }
func libAbort(st int, msg string) error {
	return status(C.gs_abort(C.int(st), msg))
}
func libFinalize() error { return status(C.gs_finalize()) }

// layout is the size of the PMIx structures as this build declares them.
func layout() (proc, value, info int) {
	return int(C.gs_sizeof_proc()), int(C.gs_sizeof_value()), int(C.gs_sizeof_info())
}

const rankWildcard = uint32(C.GS_RANK_WILDCARD)
