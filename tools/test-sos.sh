#!/usr/bin/env bash
# Builds the OpenSHMEM community test suite (tests-sos) with goshmem's
# oshcc/oshc++ and runs every program of test/unit, test/apps and
# test/shmemx under oshrun, unmodified.
#
#   tools/test-sos.sh SOS_DIR [NP ...]      (default NP: 2 3 4)
#
# Environment: PROVIDER (GOSHMEM_PROVIDER for the jobs, default: automatic),
# TIMEOUT (per run, default 120s), BIN (where oshcc, oshc++ and oshrun are,
# default ./bin), OUT (build directory, default a temporary one), ONLY (a
# regular expression: run only the programs it matches), SOSFLAGS (more
# compiler flags, such as -DENABLE_DEPRECATED_TESTS).
#
# A run passes when the program exits 0. A program that says it needs
# another PE count ("Requires ...", "requires ...") and exits 0 is counted
# as skipped at that count. The last line is "N passed, M failed": a
# program passes when it built and passed at every count it ran at.
set -uo pipefail

if [ $# -lt 1 ] || [ ! -d "$1/test/unit" ]; then
	echo "usage: $0 SOS_DIR [NP ...]  (SOS_DIR holds test/unit)" >&2
	exit 2
fi
sos=$(cd "$1" && pwd)
shift
nps=("$@")
[ ${#nps[@]} -gt 0 ] || nps=(2 3 4)
bin=$(cd "${BIN:-bin}" && pwd) || { echo "$0: no BIN directory; run make build" >&2; exit 2; }
for t in oshcc oshc++ oshrun; do
	[ -x "$bin/$t" ] || { echo "$0: $bin/$t is missing; run make build" >&2; exit 2; }
done
timeout_s=${TIMEOUT:-120s}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
only=${ONLY:-}
cflags=(-O2 -I "$sos/test/include" -pthread ${SOSFLAGS:-})

# Each program is "name|sources|wrapper|extra flags".
programs=()
add() { programs+=("$1|$2|$3|${4:-}"); }
for f in "$sos"/test/unit/*.c; do
	b=$(basename "$f" .c)
	case "$b" in
	mt_lock) continue ;; # a part of mt_lock_test
	mt_lock_test) add "$b" "$f $sos/test/unit/mt_lock.c" oshcc ;;
	*) add "$b" "$f" oshcc ;;
	esac
done
add query_thread_funneled "$sos/test/unit/query_thread.c" oshcc -DENABLE_THREADS
for f in "$sos"/test/unit/*.cpp; do add "$(basename "$f" .cpp)" "$f" oshc++; done
for f in "$sos"/test/apps/*.c; do add "apps/$(basename "$f" .c)" "$f" oshcc; done
# test/shmemx: the programs of its SHMEMX_TESTS, written for Sandia
# OpenSHMEM's shmemx_ names (shmem_ct needs Portals 4 counters and is
# not one of them).
if [ -d "$sos/test/shmemx" ]; then
	for f in "$sos"/test/shmemx/*.c; do
		b=$(basename "$f" .c)
		[ "$b" = shmem_ct ] && continue
		add "shmemx/$b" "$f" oshcc
	done
	for f in "$sos"/test/shmemx/*.cpp; do add "shmemx/$(basename "$f" .cpp)" "$f" oshc++; done
fi

build() {
	local name=$1 srcs=$2 cc=$3
	shift 3
	local exe="$out/${name//\//_}"
	# shellcheck disable=SC2086
	if "$bin/$cc" "${cflags[@]}" "$@" $srcs -o "$exe" -lm >"$exe.build.log" 2>&1; then
		echo ok
	else
		echo build
	fi
}

runone() {
	local exe=$1 np=$2 log=$3
	local env=()
	[ -n "${PROVIDER:-}" ] && env+=(GOSHMEM_PROVIDER="$PROVIDER")
	env "${env[@]}" timeout -k 10s "$timeout_s" "$bin/oshrun" -np "$np" "$exe" >"$log" 2>&1
	local rc=$?
	if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		echo timeout
	elif [ $rc -ne 0 ]; then
		echo "FAIL($rc)"
	elif grep -qiE '(^|[^a-z])requires|needs? (at least|more|an even)' "$log"; then
		echo skip
	else
		echo pass
	fi
}

# Every program is built first, as many compilers at once as there are
# CPUs (the runs that follow use them all anyway); each build's outcome
# is left in $exe.build.st for the table.
ncc=$(nproc 2>/dev/null || echo 2)
for p in "${programs[@]}"; do
	IFS='|' read -r name srcs cc extra <<<"$p"
	if [ -n "$only" ] && ! [[ $name =~ $only ]]; then continue; fi
	while [ "$(jobs -rp | wc -l)" -ge "$ncc" ]; do wait -n; done
	# shellcheck disable=SC2086
	(build "$name" "$srcs" "$cc" $extra >"$out/${name//\//_}.build.st") &
done
wait

passed=0 failed=0 skipped=0
failures=()
printf '%-40s' program
for np in "${nps[@]}"; do printf ' %-10s' "np=$np"; done
echo
for p in "${programs[@]}"; do
	IFS='|' read -r name srcs cc extra <<<"$p"
	if [ -n "$only" ] && ! [[ $name =~ $only ]]; then continue; fi
	printf '%-40s' "$name"
	exe="$out/${name//\//_}"
	st=$(cat "$exe.build.st" 2>/dev/null)
	if [ "$st" != ok ]; then
		for np in "${nps[@]}"; do printf ' %-10s' build; done
		echo
		failed=$((failed + 1))
		failures+=("$name: does not build (see $exe.build.log)")
		continue
	fi
	ok=1 ran=0
	for np in "${nps[@]}"; do
		r=$(runone "$exe" "$np" "$exe.np$np.log")
		printf ' %-10s' "$r"
		case "$r" in
		pass) ran=1 ;;
		skip) ;;
		*) ok=0; failures+=("$name at $np PEs: $r (see $exe.np$np.log)") ;;
		esac
	done
	echo
	if [ $ok -eq 0 ]; then
		failed=$((failed + 1))
	elif [ $ran -eq 0 ]; then
		skipped=$((skipped + 1))
	else
		passed=$((passed + 1))
	fi
done
echo
if [ ${#failures[@]} -gt 0 ]; then
	echo "failures:"
	printf '  %s\n' "${failures[@]}"
fi
echo "logs and programs in $out"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
