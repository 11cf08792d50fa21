#!/usr/bin/env bash
# results.sh: runs bench/compare.sh in each mode of RESULTS_MODES and
# writes the results page, RESULTS_OUT (docs/results.md), from the tables
# it prints: a header naming the date, the commit, the CPU model, the CPU
# count, the kernel, the Go version and the load average, then one
# section per mode. docs/measuring.md, "Regenerating the results page".
#
# Environment: RESULTS_MODES (loopback tcp c-loopback c-go c-go-loopback),
# RESULTS_OUT (docs/results.md), RESULTS_INSTALL (0: a mode that needs
# Open MPI's OSHMEM for its peer column, loopback, tcp or c-loopback, is
# skipped, and the page says so, where Open MPI's oshcc and oshrun are not
# on PATH; 1 lets compare.sh install Debian's openmpi-bin and
# libopenmpi-dev as it does when run alone). Everything compare.sh reads
# (ROUNDS, ITERS, TESTS, SIZES, COLL_TESTS, COLL_SIZES, MORE_PES,
# TARGETS, FLOOR_TARGETS, BIND, PROVIDER) passes through to every mode;
# OUT is set per mode, under bin/results/.
# It is a benchmark: run it on a quiet machine. With the defaults it
# takes about an hour on 2 CPUs.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

modes=${RESULTS_MODES:-loopback tcp c-loopback c-go c-go-loopback}
page=${RESULTS_OUT:-docs/results.md}
install=${RESULTS_INSTALL:-0}

# have_openmpi: whether Open MPI's oshcc and oshrun are on PATH, outside
# goshmem's own wrappers in ./bin.
have_openmpi() {
	local cmd p found
	for cmd in oshcc oshrun; do
		found=0
		for p in $(type -ap "$cmd" 2>/dev/null); do
			case "$(cd "$(dirname "$p")" && pwd)" in
			"$root/bin") ;;
			*) found=1; break ;;
			esac
		done
		[ "$found" = 1 ] || return 1
	done
}

# describe MODE: what the mode sets side by side, for its section.
describe() {
	case "$1" in
	loopback) echo "Open MPI's OSHMEM over UCX shared memory against the Go shmemperf over loopback, on one host." ;;
	tcp) echo "Open MPI's OSHMEM with UCX_TLS=tcp,self against the Go shmemperf over tcp, with the floor of a round trip over loopback TCP." ;;
	c-loopback) echo "bench/peer/shmemperf.c built by Open MPI's oshcc (over UCX shared memory) against the same program built by goshmem's oshcc (over loopback)." ;;
	c-go) echo "goshmem's Go shmemperf against bench/peer/shmemperf.c built by goshmem's oshcc, both over ${PROVIDER:-tcp}: what the C interface costs." ;;
	c-go-loopback) echo "The same as c-go over loopback: every collective of the C program against the Go one." ;;
	*) echo "bench/compare.sh $1." ;;
	esac
}

cpu=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo 2>/dev/null | head -1)
[ -n "$cpu" ] || cpu=$(uname -m)
ncpu=$(getconf _NPROCESSORS_ONLN 2>/dev/null || nproc)
kernel="$(uname -s) $(uname -r)"
gover=$(go env GOVERSION 2>/dev/null || go version)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
	commit="$commit, with uncommitted changes"
fi
openmpi="not installed"
if have_openmpi; then
	openmpi=$(ompi_info --version 2>/dev/null | sed -n '1s/^Open MPI v*//p' || true)
	[ -n "$openmpi" ] || openmpi="installed"
fi
load=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)

body=$(mktemp)
trap 'rm -f "$body"' EXIT
for mode in $modes; do
	{
		echo
		echo "## $mode"
		echo
		describe "$mode"
		echo
	} >>"$body"
	case "$mode" in
	loopback | tcp | c-loopback)
		if [ "$install" != 1 ] && ! have_openmpi; then
			echo "results: $mode skipped: Open MPI's oshcc and oshrun are not on PATH (RESULTS_INSTALL=1 installs them)" >&2
			echo "Not measured: Open MPI's OSHMEM, the peer of this mode, is not installed on this machine." >>"$body"
			continue
		fi
		;;
	esac
	out="$root/bin/results/$mode"
	echo "results: bench/compare.sh $mode" >&2
	status=0
	OUT="$out" bench/compare.sh "$mode" >/dev/null || status=$?
	if [ ! -s "$out/table.txt" ]; then
		echo "Not measured: bench/compare.sh $mode failed (exit status $status) before printing its table." >>"$body"
		continue
	fi
	{
		echo '```'
		cat "$out/table.txt"
		echo '```'
		if [ "$status" != 0 ]; then
			echo
			echo "bench/compare.sh exited with status $status: a target above is missed, or a collective was computed wrongly."
		fi
	} >>"$body"
done

settings=""
for v in ROUNDS ITERS TESTS SIZES COLL_TESTS COLL_SIZES MORE_PES TARGETS FLOOR_TARGETS BIND PROVIDER; do
	if [ -n "${!v+set}" ]; then
		settings="$settings $v=${!v:-''}"
	fi
done
[ -n "$settings" ] || settings=" none (compare.sh's defaults)"

mkdir -p "$(dirname "$page")"
{
	echo "# Results"
	echo
	echo "The tables bench/compare.sh printed, one run of \`bench/results.sh\` on one machine:"
	echo "medians of alternating rounds, ratio = ours / peer."
	echo "How they are measured and how to read them: [measuring.md](measuring.md)."
	echo
	echo "| | |"
	echo "|---|---|"
	echo "| date | $(date -u +%Y-%m-%dT%H:%MZ) |"
	echo "| commit | $commit |"
	echo "| CPU | $cpu |"
	echo "| CPUs | $ncpu |"
	echo "| kernel | $kernel |"
	echo "| Go | $gover |"
	echo "| Open MPI | $openmpi |"
	echo "| load average at the start | $load |"
	echo "| settings |$settings |"
	cat "$body"
} >"$page"
echo "results: wrote $page" >&2
