/*
 * Every reduction of the specification's table, in both forms: the team
 * routines (shmem_TYPENAME_OP_reduce) on SHMEM_TEAM_WORLD and the 1.4
 * active-set routines (shmem_TYPENAME_OP_to_all) on every PE and on the
 * even PEs, long double included; and an active-set reduction whose pWrk
 * is SHMEM_REDUCE_MIN_WRKDATA_SIZE elements whatever it reduces, as the
 * NAS Parallel Benchmarks' integer sort passes it, which must not be
 * written past.
 */
#include <complex.h>
#include <string.h>

#include "check.h"

#define N 37 /* elements a reduction, not a power of two */

static long pSync[2][SHMEM_REDUCE_SYNC_SIZE];
static int me, npes;
static int calls;

/* The value PE p contributes at element i: small, so products of every
 * PE's fit every type and floating-point results are exact. */
static long val(int p, int i) { return (p + i) % 3 + 1; }

/* The expected result of op over the members (start, every 2^log, size). */
static long fold(char op, int start, int log, int size, int i)
{
	long acc = val(start, i);
	for (int r = 1; r < size; r++) {
		long v = val(start + (r << log), i);
		switch (op) {
		case '&': acc &= v; break;
		case '|': acc |= v; break;
		case '^': acc ^= v; break;
		case '>': acc = v > acc ? v : acc; break;
		case '<': acc = v < acc ? v : acc; break;
		case '+': acc += v; break;
		case '*': acc *= v; break;
		}
	}
	return acc;
}

/* One team reduction of TYPE on SHMEM_TEAM_WORLD, out of place and in place. */
#define TEAM(TYPE, NAME, OPNAME, OP) do { \
	TYPE *s = shmem_malloc(N * sizeof(TYPE)), *d = shmem_malloc(N * sizeof(TYPE)); \
	for (int i = 0; i < N; i++) s[i] = (TYPE)val(me, i); \
	CHECK(shmem_##NAME##_##OPNAME##_reduce(SHMEM_TEAM_WORLD, d, s, N) == 0, #NAME " " #OPNAME "_reduce"); \
	for (int i = 0; i < N; i++) \
		CHECK(d[i] == (TYPE)fold(OP, 0, 0, npes, i), #NAME " " #OPNAME "_reduce element %d", i); \
	CHECK(shmem_##NAME##_##OPNAME##_reduce(SHMEM_TEAM_WORLD, s, s, N) == 0, #NAME " " #OPNAME "_reduce in place"); \
	for (int i = 0; i < N; i++) \
		CHECK(s[i] == (TYPE)fold(OP, 0, 0, npes, i), #NAME " " #OPNAME "_reduce in place element %d", i); \
	shmem_free(d); shmem_free(s); \
} while (0)

/* One active-set reduction of TYPE over (start, log, size), pWrk as
 * large as the spec asks. */
#define SET(TYPE, NAME, OPNAME, OP, START, LOG, SIZE) do { \
	TYPE *s = shmem_malloc(N * sizeof(TYPE)), *d = shmem_malloc(N * sizeof(TYPE)); \
	TYPE *w = shmem_malloc((N / 2 + 1 + SHMEM_REDUCE_MIN_WRKDATA_SIZE) * sizeof(TYPE)); \
	for (int i = 0; i < N; i++) s[i] = (TYPE)val(me, i); \
	if ((me - (START)) % (1 << (LOG)) == 0 && me >= (START) && (me - (START)) >> (LOG) < (SIZE)) { \
		shmem_##NAME##_##OPNAME##_to_all(d, s, N, START, LOG, SIZE, w, pSync[calls++ % 2]); \
		for (int i = 0; i < N; i++) \
			CHECK(d[i] == (TYPE)fold(OP, START, LOG, SIZE, i), #NAME " " #OPNAME "_to_all (%d, %d, %d) element %d", START, LOG, SIZE, i); \
	} \
	shmem_barrier_all(); \
	shmem_free(w); shmem_free(d); shmem_free(s); \
} while (0)

#define BOTH(TYPE, NAME, OPNAME, OP) do { \
	TEAM(TYPE, NAME, OPNAME, OP); \
	SET(TYPE, NAME, OPNAME, OP, 0, 0, npes); \
	SET(TYPE, NAME, OPNAME, OP, 0, 1, (npes + 1) / 2); \
} while (0)

#define SETS(TYPE, NAME, OPNAME, OP) do { \
	SET(TYPE, NAME, OPNAME, OP, 0, 0, npes); \
	SET(TYPE, NAME, OPNAME, OP, 0, 1, (npes + 1) / 2); \
} while (0)

/* The 1.4 table's bitwise types have no team routines of their own. */
#define BITWISE(TYPE, NAME) do { SETS(TYPE, NAME, and, '&'); SETS(TYPE, NAME, or, '|'); SETS(TYPE, NAME, xor, '^'); } while (0)
#define ORDERED(TYPE, NAME) do { BOTH(TYPE, NAME, max, '>'); BOTH(TYPE, NAME, min, '<'); } while (0)
#define ARITH(TYPE, NAME) do { BOTH(TYPE, NAME, sum, '+'); BOTH(TYPE, NAME, prod, '*'); } while (0)

/* The team forms' other types: those the 1.4 table lacks. */
#define TEAM_ARITH(TYPE, NAME) do { \
	TEAM(TYPE, NAME, max, '>'); TEAM(TYPE, NAME, min, '<'); \
	TEAM(TYPE, NAME, sum, '+'); TEAM(TYPE, NAME, prod, '*'); \
} while (0)
#define TEAM_INT(TYPE, NAME) do { \
	TEAM(TYPE, NAME, and, '&'); TEAM(TYPE, NAME, or, '|'); TEAM(TYPE, NAME, xor, '^'); \
	TEAM_ARITH(TYPE, NAME); \
} while (0)

int main(void)
{
	shmem_init();
	me = shmem_my_pe();
	npes = shmem_n_pes();
	for (int k = 0; k < SHMEM_REDUCE_SYNC_SIZE; k++)
		pSync[0][k] = pSync[1][k] = SHMEM_SYNC_VALUE;
	shmem_barrier_all();

	/* The 1.4 table: both forms. */
	BITWISE(short, short); BITWISE(int, int); BITWISE(long, long); BITWISE(long long, longlong);
	ORDERED(short, short); ORDERED(int, int); ORDERED(long, long); ORDERED(long long, longlong);
	ORDERED(float, float); ORDERED(double, double); ORDERED(long double, longdouble);
	ARITH(short, short); ARITH(int, int); ARITH(long, long); ARITH(long long, longlong);
	ARITH(float, float); ARITH(double, double); ARITH(long double, longdouble);
	ARITH(float _Complex, complexf); ARITH(double _Complex, complexd);

	/* The team routines' other types. */
	TEAM_ARITH(char, char); TEAM_ARITH(signed char, schar); TEAM_ARITH(ptrdiff_t, ptrdiff);
	TEAM_INT(unsigned char, uchar);
	TEAM_INT(unsigned short, ushort); TEAM_INT(unsigned int, uint); TEAM_INT(unsigned long, ulong);
	TEAM_INT(unsigned long long, ulonglong); TEAM_INT(int8_t, int8); TEAM_INT(int16_t, int16);
	TEAM_INT(int32_t, int32); TEAM_INT(int64_t, int64); TEAM_INT(uint8_t, uint8);
	TEAM_INT(uint16_t, uint16); TEAM_INT(uint32_t, uint32); TEAM_INT(uint64_t, uint64);
	TEAM_INT(size_t, size);

	/* pWrk of SHMEM_REDUCE_MIN_WRKDATA_SIZE ints for 1029 of them, with a
	 * guard after it: nothing past pWrk may change. */
	enum { NRED = 1029, GUARD = 4096 };
	int *src = shmem_malloc(NRED * sizeof(int)), *dst = shmem_malloc(NRED * sizeof(int));
	int *wrk = shmem_malloc((SHMEM_REDUCE_MIN_WRKDATA_SIZE + GUARD) * sizeof(int));
	for (int i = 0; i < NRED; i++)
		src[i] = me + i;
	for (int i = 0; i < SHMEM_REDUCE_MIN_WRKDATA_SIZE + GUARD; i++)
		wrk[i] = -12345;
	shmem_barrier_all();
	shmem_int_sum_to_all(dst, src, NRED, 0, 0, npes, wrk, pSync[0]);
	shmem_barrier_all();
	if (npes > 2 && me % 2 == 0)
		shmem_int_sum_to_all(dst, src, NRED, 0, 1, (npes + 1) / 2, wrk, pSync[1]);
	else
		for (int i = 0; i < NRED; i++)
			dst[i] = npes * i + npes * (npes - 1) / 2;
	int evens = (npes + 1) / 2, esum = 0;
	for (int p = 0; p < npes; p += 2)
		esum += p;
	for (int i = 0; i < NRED; i++) {
		int want = npes > 2 && me % 2 == 0 ? evens * i + esum : npes * i + npes * (npes - 1) / 2;
		CHECK(dst[i] == want, "sum_to_all of %d ints, element %d: %d, want %d", NRED, i, dst[i], want);
	}
	for (int i = SHMEM_REDUCE_MIN_WRKDATA_SIZE; i < SHMEM_REDUCE_MIN_WRKDATA_SIZE + GUARD; i++)
		CHECK(wrk[i] == -12345, "the word %d past pWrk's %d ints was written", i, SHMEM_REDUCE_MIN_WRKDATA_SIZE);

	for (int k = 0; k < SHMEM_REDUCE_SYNC_SIZE; k++)
		CHECK(pSync[0][k] == SHMEM_SYNC_VALUE && pSync[1][k] == SHMEM_SYNC_VALUE, "pSync word %d is back at SHMEM_SYNC_VALUE", k);
	shmem_barrier_all();
	printf("reduce ok %d\n", me);
	shmem_finalize();
	return 0;
}
