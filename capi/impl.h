/*
 * The internal layer of goshmem's C interface.
 *
 * shmem.h declares OpenSHMEM 1.5 for C; its typed families (every
 * shmem_TYPENAME_* routine) are generated into typed_gen.c, and each of
 * them is one call into the functions below with the element's kind and
 * size. The functions below decide, per call, between the fast path
 * (fast.c: the target PE's memory is mapped here, so the operation is a
 * copy or an atomic on that mapping, following the loopback provider's
 * shared-memory protocol) and the Go stack (the exported functions of
 * the cgo package, over whatever provider the job runs on).
 *
 * Nothing here is public: programs include shmem.h only.
 */
#ifndef GOSHMEM_IMPL_H
#define GOSHMEM_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "shmem.h"

/* Element kinds: with a size in bytes they say how to treat a value. */
enum gsh_kind {
	GSH_INT = 1,   /* signed integer: size 1, 2, 4, 8 */
	GSH_UINT,      /* unsigned integer: size 1, 2, 4, 8 */
	GSH_FLOAT,     /* float 4, double 8, long double 16 */
	GSH_COMPLEX    /* float _Complex 8, double _Complex 16 */
};

/* Atomic operations, fetching and not. */
enum gsh_amo {
	GSH_AMO_FETCH = 1,
	GSH_AMO_SET,
	GSH_AMO_CSWAP,
	GSH_AMO_SWAP,
	GSH_AMO_FINC,
	GSH_AMO_INC,
	GSH_AMO_FADD,
	GSH_AMO_ADD,
	GSH_AMO_FAND,
	GSH_AMO_AND,
	GSH_AMO_FOR,
	GSH_AMO_OR,
	GSH_AMO_FXOR,
	GSH_AMO_XOR
};

/* Reduction operators. */
enum gsh_op {
	GSH_OP_AND = 1,
	GSH_OP_OR,
	GSH_OP_XOR,
	GSH_OP_MAX,
	GSH_OP_MIN,
	GSH_OP_SUM,
	GSH_OP_PROD
};

/* Forms of the point-to-point wait and test routines. */
enum gsh_wait {
	GSH_WAIT_ONE = 0,  /* wait_until / test on one variable */
	GSH_WAIT_ALL = 1,
	GSH_WAIT_ANY = 2,
	GSH_WAIT_SOME = 3,
	GSH_WAIT_BLOCK = 8 /* or'ed in: wait (block) rather than test */
};

/*
 * Every routine below takes fn, the name of the public routine the
 * program called, so that an error (which most OpenSHMEM routines cannot
 * return) ends the job with a message naming that routine.
 *
 * Values travel as bits: the low size bytes of a uint64_t, in this host's
 * byte order, for every kind up to 8 bytes. Wider values (long double,
 * double _Complex) travel by pointer where a routine allows them.
 */

/*
 * Ends the job: nelems elements of esize bytes are more bytes than size_t
 * holds, so no buffer can be that long. It names fn, the count, and the
 * most elements of that size a call may name.
 */
void gsh_overflow(const char *fn, size_t nelems, size_t esize) __attribute__((noreturn, cold));

/*
 * nelems elements of esize bytes, in bytes, for the routines that take a
 * count of elements. A product size_t cannot hold would wrap to a short
 * transfer that returns as if it had worked; it ends the job instead.
 * With esize a constant this is one compare.
 */
static inline size_t gsh_bytes(size_t nelems, size_t esize, const char *fn)
{
	if (esize != 0 && nelems > SIZE_MAX / esize)
		gsh_overflow(fn, nelems, esize);
	return nelems * esize;
}

/* RMA. nbytes is the whole transfer; a zero-length transfer is a no-op. */
void gsh_put(shmem_ctx_t ctx, void *dest, const void *src, size_t nbytes, int pe, const char *fn);
void gsh_put_nbi(shmem_ctx_t ctx, void *dest, const void *src, size_t nbytes, int pe, const char *fn);
void gsh_get(shmem_ctx_t ctx, void *dest, const void *src, size_t nbytes, int pe, const char *fn);
void gsh_get_nbi(shmem_ctx_t ctx, void *dest, const void *src, size_t nbytes, int pe, const char *fn);
/*
 * Strided: dst and sst are strides in elements of esize bytes. A stride
 * and count whose span overflows size_t ends the job naming fn.
 */
void gsh_iput(shmem_ctx_t ctx, void *dest, const void *src, ptrdiff_t dst, ptrdiff_t sst,
	size_t nelems, size_t esize, int pe, const char *fn);
void gsh_iget(shmem_ctx_t ctx, void *dest, const void *src, ptrdiff_t dst, ptrdiff_t sst,
	size_t nelems, size_t esize, int pe, const char *fn);
/*
 * Blocks (1.6's ibput and ibget): nblocks blocks of bsize elements of
 * esize bytes, each block contiguous, block i at element i*dst of dest
 * and i*sst of src. A span that overflows size_t ends the job naming fn.
 */
void gsh_ibput(shmem_ctx_t ctx, void *dest, const void *src, ptrdiff_t dst, ptrdiff_t sst,
	size_t bsize, size_t nblocks, size_t esize, int pe, const char *fn);
void gsh_ibget(shmem_ctx_t ctx, void *dest, const void *src, ptrdiff_t dst, ptrdiff_t sst,
	size_t bsize, size_t nblocks, size_t esize, int pe, const char *fn);
/* Single elements of size bytes (1 to 16), by pointer to a local copy. */
void gsh_p(shmem_ctx_t ctx, void *dest, const void *value, size_t size, int pe, const char *fn);
void gsh_g(shmem_ctx_t ctx, void *result, const void *src, size_t size, int pe, const char *fn);

/*
 * Put-with-signal: nbytes from src to dest on pe, then the signal update
 * (sig_op SHMEM_SIGNAL_SET or SHMEM_SIGNAL_ADD) of *sig_addr on pe, which
 * a PE that sees the signal may rely on: the data arrived first.
 */
void gsh_put_signal(shmem_ctx_t ctx, void *dest, const void *src, size_t nbytes,
	uint64_t *sig_addr, uint64_t signal, int sig_op, int pe, int nbi, const char *fn);

/*
 * shmem_signal_set and shmem_signal_add: the signal update of
 * gsh_put_signal with no data, one atomic on *sig_addr on pe.
 */
void gsh_signal(shmem_ctx_t ctx, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe, const char *fn);

/*
 * Atomics on an element of kind and size (4 or 8) at dest on pe. operand
 * is the value (for INC and FINC: 1), compare is CSWAP's condition. The
 * result is the value dest held before, as bits (0 for the non-fetching
 * operations).
 */
uint64_t gsh_amo(shmem_ctx_t ctx, void *dest, int op, int kind, int size,
	uint64_t operand, uint64_t compare, int pe, const char *fn);
/* The non-blocking fetching forms: *fetch is written by the next quiet. */
void gsh_amo_nbi(shmem_ctx_t ctx, void *fetch, void *dest, int op, int kind, int size,
	uint64_t operand, uint64_t compare, int pe, const char *fn);

/*
 * Point-to-point synchronisation on local symmetric variables of kind
 * and size. mode is a gsh_wait form, with GSH_WAIT_BLOCK to wait rather
 * than test. status (may be NULL) excludes the elements whose entry is
 * nonzero; indices receives the satisfied indices of the SOME form.
 * values is NULL, or the vector forms' per-element values (nelems
 * elements of size bytes), used instead of value.
 *
 * A count whose arrays' bytes overflow size_t ends the job naming fn.
 *
 * Returns: ONE test: 1 if satisfied; ALL test: 1 if all are; ANY: the
 * index satisfied, or SIZE_MAX if none (test) or all are excluded; SOME:
 * how many indices it wrote (0 if none, test).
 */
size_t gsh_wait(int mode, void *ivars, size_t nelems, const int *status, size_t *indices,
	int kind, int size, int cmp, uint64_t value, const void *values, const char *fn);

/* Collectives on teams, in bytes. They return 0, or nonzero on error. */
int gsh_broadcast(shmem_team_t team, void *dest, const void *src, size_t nbytes, int root, const char *fn);
int gsh_collect(shmem_team_t team, void *dest, const void *src, size_t nbytes, const char *fn);
int gsh_fcollect(shmem_team_t team, void *dest, const void *src, size_t nbytes, const char *fn);
/* nbytes is what each PE sends to each other PE. */
int gsh_alltoall(shmem_team_t team, void *dest, const void *src, size_t nbytes, const char *fn);
int gsh_alltoalls(shmem_team_t team, void *dest, const void *src, ptrdiff_t dst, ptrdiff_t sst,
	size_t nelems, size_t esize, const char *fn);
/* nreduce elements of kind and size, operator op (a gsh_op). */
int gsh_reduce(shmem_team_t team, void *dest, const void *src, size_t nreduce,
	int op, int kind, int size, const char *fn);
/*
 * The sum scans of nelems elements of kind and size: inclusive, or with
 * exclusive set, exclusive.
 */
int gsh_sum_scan(shmem_team_t team, void *dest, const void *src, size_t nelems,
	int exclusive, int kind, int size, const char *fn);
/* acc[i] = acc[i] op in[i] for n long doubles; op is max, min, sum or prod. */
void gsh_combine_ld(void *acc, const void *in, size_t n, int op);

/*
 * The 1.4 active-set collectives (deprecated, still in 1.5): members
 * PE_start + i * 2^logPE_stride for i in [0, PE_size); pSync and pWrk as
 * the specification says (SHMEM_*_SYNC_SIZE, SHMEM_REDUCE_MIN_WRKDATA_SIZE).
 */
void gsh_barrier_as(int PE_start, int logPE_stride, int PE_size, long *pSync, const char *fn);
void gsh_broadcast_as(void *dest, const void *src, size_t nbytes, int PE_root,
	int PE_start, int logPE_stride, int PE_size, long *pSync, const char *fn);
void gsh_collect_as(void *dest, const void *src, size_t nbytes,
	int PE_start, int logPE_stride, int PE_size, long *pSync, const char *fn);
void gsh_fcollect_as(void *dest, const void *src, size_t nbytes,
	int PE_start, int logPE_stride, int PE_size, long *pSync, const char *fn);
void gsh_alltoall_as(void *dest, const void *src, size_t nbytes,
	int PE_start, int logPE_stride, int PE_size, long *pSync, const char *fn);
void gsh_alltoalls_as(void *dest, const void *src, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
	size_t esize, int PE_start, int logPE_stride, int PE_size, long *pSync, const char *fn);
void gsh_reduce_as(void *dest, const void *src, int nreduce, int op, int kind, int size,
	int PE_start, int logPE_stride, int PE_size, void *pWrk, long *pSync, const char *fn);

#endif
