#!/usr/bin/env bash
# compare.sh loopback|tcp|c-loopback|c-go|c-go-loopback: runs two
# OpenSHMEM implementations of the same micro-benchmarks alternately, 3
# rounds each: the point-to-point tests on 2 PEs, and the barriers, syncs
# and collectives, each in its active-set and its team form, on 2, 4 and
# 8 PEs; then prints per test and size the peer's median, ours, their
# ratio (ours over the peer's) and whether the target is met. A team
# routine the peer lacks (Open MPI's OSHMEM has no teams) is set beside
# the peer's active-set routine of the same collective, in a row named
# team_NAME/NAME; a second table below sets each of our team routines
# beside our own active-set routine of the same collective.
#
#   loopback:   Open MPI's OSHMEM (bench/peer/shmemperf.c) over UCX shared
#               memory against goshmem's Go shmemperf over the loopback
#               provider
#   tcp:        the peer with UCX_TLS=tcp,self, ours over the tcp provider
#   c-loopback: the same C program, bench/peer/shmemperf.c, compiled twice:
#               with Open MPI's oshcc (the peer, over UCX shared memory)
#               and with goshmem's ./bin/oshcc (ours, over loopback), so C
#               programs are measured against C programs
#   c-go:       goshmem against itself over PROVIDER (tcp unless set): the
#               Go shmemperf is the peer, the C program built with
#               ./bin/oshcc is ours, so the ratio is what the C interface
#               costs a C program
#   c-go-loopback: c-go over the loopback provider, every collective of
#               the C program against the same collective of the Go one
#
# Environment: ROUNDS (3), ITERS (100000), TESTS (the tests on 2 PEs at
# SIZES: the point-to-point ones by default; empty for none), SIZES
# (8:4M), COLL_TESTS (the tests on 2 PEs and on each of MORE_PES at
# COLL_SIZES: every barrier, sync and collective by default; empty for
# none), COLL_SIZES (8,4K,64K,1M), MORE_PES (the larger jobs, "4 8"; empty
# for none), OUT (where the JSON lines, the table and the plot go;
# bin/compare-MODE), TARGETS (ratio targets, see shmemperf -targets; the
# loopback and tcp defaults are the project's), FLOOR_TARGETS (tcp: how
# far above the floor, Go's own where measured, each one-word latency may be, in us), BIND (1 binds every PE of both sides
# to one CPU, PE r to CPU r mod CPUs, as oshrun -cpubind does; 0 leaves
# placement to the kernel; share, c-go's default, leaves it to oshrun's
# default, --bind-to share, both sides being goshmem's; 1 for loopback,
# c-loopback and c-go-loopback, where an unbound 4-PE job on 2 CPUs runs
# in one of two speeds by where the PEs first land, 0 for tcp, as the
# peer's UCX measurements were).
# For tcp it also measures, each round, the floor under any round trip over
# TCP on this host (bench/peer/tcpfloor.c: two C processes bouncing 8 bytes,
# each polling its socket) and prints its median below the table, and the
# same round trip between two Go processes (bench/gofloor: one runtime
# processor each, raw non-blocking system calls, nothing else), which is
# what the Go runtime alone adds to the floor.
# It installs Debian's openmpi-bin and libopenmpi-dev if Open MPI's oshcc is
# missing. goshmem's own wrappers are ./bin/oshcc and ./bin/oshrun, called
# by path; Open MPI's are found on PATH outside ./bin.
# It is a benchmark: run it on a quiet machine.
set -euo pipefail

mode=${1:-}
case "$mode" in
loopback | c-loopback) ucx_tls=${UCX_TLS:-shm,self}; ours_provider=loopback ;;
tcp) ucx_tls=tcp,self; ours_provider=tcp ;;
c-go) ucx_tls=""; ours_provider=${PROVIDER:-tcp} ;;
c-go-loopback) ucx_tls=""; ours_provider=loopback ;;
*) echo "usage: $0 loopback|tcp|c-loopback|c-go|c-go-loopback" >&2; exit 2 ;;
esac
# c_ours: ours is the C program built with ./bin/oshcc; go_peer: the peer
# is the Go shmemperf, goshmem's too.
c_ours=0 go_peer=0
case "$mode" in
c-loopback) c_ours=1 ;;
c-go | c-go-loopback) c_ours=1 go_peer=1 ;;
esac

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# openmpi NAME: Open MPI's command NAME from PATH, skipping goshmem's
# wrappers of the same name in ./bin.
openmpi() {
	local p
	for p in $(type -ap "$1" 2>/dev/null); do
		case "$(cd "$(dirname "$p")" && pwd)" in
		"$root/bin") ;;
		*) echo "$p"; return 0 ;;
		esac
	done
	return 1
}
rounds=${ROUNDS:-3}
iters=${ITERS:-100000}
sizes=${SIZES:-8:4M}
amo_tests=fadd32_lat,finc32_lat,cswap32_lat,fadd_lat,finc_lat,cswap_lat
tests=${TESTS-put_lat,get_lat,put_bw,get_bw,put_rate,$amo_tests,add_rate}
coll_tests=${COLL_TESTS-barrier,sync_all,set_barrier,set_sync,team_sync,bcast_lat,team_bcast_lat,fcollect_lat,team_fcollect_lat,collect_lat,team_collect_lat,alltoall_lat,team_alltoall_lat,alltoalls_lat,team_alltoalls_lat,reduce_lat,team_reduce_lat}
coll_sizes=${COLL_SIZES:-8,4K,64K,1M}
out=${OUT:-$root/bin/compare-$mode}
default_targets=""
case "$mode" in
loopback)
	default_targets="put_lat:8=1.0,get_lat:8=1.0,put_rate:8=1.0,fadd_lat:8=1.0,cswap_lat:8=1.0,put_bw:4M=0.95,barrier@2=1.0,barrier@4=1.0,barrier@8=1.0,reduce_lat:8@8=1.0,team_reduce_lat:8@8=1.0"
	;;
c-loopback)
	default_targets="put_lat:8=1.0,get_lat:8=1.0,put_rate:8=1.0,fadd_lat:8=1.0,cswap_lat:8=1.0,put_bw:4M=0.95,barrier@2=1.0,barrier@4=1.0,barrier@8=1.0"
	;;
tcp)
	# Every get size and every fetching AMO at most UCX's latency; the
	# 8-byte latencies against Go's own floor too, FLOOR_TARGETS below.
	default_targets="get_lat=1.0,fadd32_lat=1.0,finc32_lat=1.0,cswap32_lat=1.0,fadd_lat=1.0,finc_lat=1.0,cswap_lat=1.0,put_rate:8=10,put_bw:1M=2,put_bw:4M=2"
	;;
c-go)
	# C programs get what Go programs get, within 10 %.
	default_targets="put_lat:8=1.1,put_lat:4M=1.1,put_bw:8=0.9,put_bw:4M=0.9"
	;;
esac
targets=${TARGETS-$default_targets}
case "$mode" in
loopback | c-loopback | c-go-loopback) bind=${BIND:-1} ;;
c-go) bind=${BIND:-share} ;;
*) bind=${BIND:-0} ;;
esac
peer_bind=(--bind-to none)
case "$bind" in
1)
	peer_bind+=(bench/peer/bind.sh)
	ours_bind=(-cpubind)
	;;
0) ours_bind=(--bind-to none) ;;
share) ours_bind=(--bind-to share) ;;
*) echo "compare: BIND=$bind is not 1, 0 or share" >&2; exit 2 ;;
esac

if [ "$go_peer" = 0 ] && { ! openmpi oshcc >/dev/null || ! openmpi oshrun >/dev/null; }; then
	echo "compare: Open MPI's oshcc not found; installing Debian's openmpi-bin and libopenmpi-dev" >&2
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo=sudo
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq openmpi-bin libopenmpi-dev >/dev/null
fi

mkdir -p "$out" bin
echo "compare: building the peer and goshmem" >&2
go build -o bin/ ./cmd/oshrun ./cmd/shmemperf ./cmd/provinfo
if [ "$c_ours" = 1 ]; then
	go build -o bin/ ./cmd/oshcc
	mkdir -p lib
	go build -buildmode=c-shared -o lib/libgoshmem.so ./capi
	rm -f lib/libgoshmem.h # cgo's export header: the C interface is include/shmem.h
	./bin/oshcc -O2 -o bin/shmemperf-c bench/peer/shmemperf.c
fi
if [ "$go_peer" = 0 ]; then
	"$(openmpi oshcc)" -O2 -o bin/shmemperf-peer bench/peer/shmemperf.c
fi
if [ "$mode" = tcp ]; then
	cc -O2 -o bin/tcpfloor bench/peer/tcpfloor.c
	go build -o bin/ ./bench/gofloor
fi

have_ours=1
if ! ./bin/provinfo -p "$ours_provider" >/dev/null 2>&1; then
	have_ours=0
	echo "compare: goshmem has no provider named $ours_provider in this tree (./bin/provinfo lists those it has);" \
		"measuring the peer alone, ours shows as -" >&2
fi

# Open MPI refuses to run as root without both of these.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
peer() { # peer NPES ARGS...
	local n=$1
	shift
	if [ "$go_peer" = 1 ]; then
		# The Go program, named apart from the C one over the same provider.
		GOSHMEM_PROVIDER=$ours_provider ./bin/oshrun "${ours_bind[@]}" -np "$n" ./bin/shmemperf -iters "$iters" -json "$@" |
			sed "s/\"provider\":\"$ours_provider\"/\"provider\":\"go($ours_provider)\"/"
		return
	fi
	# osc/rdma's cleanup crashes in shmem_finalize with Debian's defaults.
	"$(openmpi oshrun)" --oversubscribe --mca osc ^rdma -x UCX_TLS="$ucx_tls" -np "$n" "${peer_bind[@]}" \
		./bin/shmemperf-peer -label "oshmem-ucx($ucx_tls)" -iters "$iters" -json "$@"
}
ours() { # ours NPES ARGS...
	local n=$1
	shift
	[ "$have_ours" = 1 ] || return 0
	if [ "$c_ours" = 1 ]; then
		GOSHMEM_PROVIDER=$ours_provider ./bin/oshrun "${ours_bind[@]}" -np "$n" \
			./bin/shmemperf-c -label "c($ours_provider)" -iters "$iters" -json "$@"
	else
		GOSHMEM_PROVIDER=$ours_provider ./bin/oshrun "${ours_bind[@]}" -np "$n" ./bin/shmemperf -iters "$iters" -json "$@"
	fi
}

: >"$out/peer.jsonl"
: >"$out/ours.jsonl"
: >"$out/floor.jsonl"
: >"$out/gofloor.jsonl"
loads="" # the load average as each round began: timings mean little without it
for r in $(seq "$rounds"); do
	echo "compare: round $r of $rounds" >&2
	loads="$loads $(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo ?)"
	if [ -n "$tests" ]; then
		peer 2 -test "$tests" -sizes "$sizes" >>"$out/peer.jsonl"
		ours 2 -test "$tests" -sizes "$sizes" >>"$out/ours.jsonl"
	fi
	if [ "$mode" = tcp ]; then
		./bin/tcpfloor -iters "$iters" -json >>"$out/floor.jsonl"
		./bin/gofloor -iters "$iters" -json >>"$out/gofloor.jsonl"
	fi
	[ -n "$coll_tests" ] || continue
	for n in 2 ${MORE_PES-4 8}; do
		peer "$n" -test "$coll_tests" -sizes "$coll_sizes" >>"$out/peer.jsonl"
		ours "$n" -test "$coll_tests" -sizes "$coll_sizes" >>"$out/ours.jsonl"
	done
done

echo "# bench/compare.sh $mode: $rounds rounds, medians, PEs bound to CPUs: $bind; ratio = ours / peer; $(date -u +%Y-%m-%dT%H:%MZ); load average as each round began:$loads" | tee "$out/table.txt"
median_latency() { # median_latency FILE: the median latency_us of its JSON lines, or nothing
	[ -s "$1" ] || return 0
	sed -n 's/.*"latency_us":\([0-9.]*\).*/\1/p' "$1" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'
}
floor=$(median_latency "$out/floor.jsonl")
gofloor=$(median_latency "$out/gofloor.jsonl")
# above_floor: beside the ratio of each latency of one word on 2 PEs (8
# bytes, and 4 for the 32-bit atomics), ours less the floor, and whether it
# is within FLOOR_TARGETS (TEST=US above the floor, separated by commas);
# the floor is Go's own (bench/gofloor) where it was measured, since a Go
# provider cannot go below it, else the C one. The lines from the first
# note on pass as they are.
floor_targets=${FLOOR_TARGETS-$([ "$mode" != tcp ] || echo "get_lat=0.5,fadd32_lat=0.5,fadd_lat=0.5,cswap32_lat=0.5,cswap_lat=0.5,put_lat=0.9")}
ref_floor=${gofloor:-$floor}
above_floor() {
	awk -v floor="$ref_floor" -v targets="$floor_targets" '
	BEGIN {
		n = split(targets, t, ",")
		for (i = 1; i <= n; i++) if (split(t[i], kv, "=") == 2) limit[kv[1]] = kv[2]
	}
	/^# / { rest = 1 } # the notes and the table of our own forms, below the comparison
	rest { print; next }
	floor != "" && $1 == "test" && match($0, / ratio/) {
		cut = RSTART + RLENGTH - 1
		print substr($0, 1, cut) sprintf("%-21s", "  above floor") substr($0, cut + 1)
		next
	}
	floor == "" || !match($0, / [0-9.]+x/) { print; next }
	{
		cut = RSTART + RLENGTH - 1
		col = sprintf("%21s", "")
		if ($1 ~ /_lat$/ && $2 == 2 && ($3 == 8 || $3 == 4 && $1 ~ /32_lat$/) && $4 == "us" && $6 ~ /^[0-9.]+$/) {
			d = $6 - floor
			col = sprintf("%+7.2f floor", d)
			if ($1 in limit) col = col sprintf(" %s", d <= limit[$1] + 0 ? "met" : "MISSED")
			col = sprintf("%-21s", "  " col)
			if ($1 in limit && d > limit[$1] + 0) missed = 1
		}
		print substr($0, 1, cut) col substr($0, cut + 1)
	}
	END { exit missed }'
}
status=0
./bin/shmemperf -compare "$out/peer.jsonl,$out/ours.jsonl" -targets "$targets" | above_floor | tee -a "$out/table.txt" || status=$?
if [ -n "$floor" ]; then
	echo "# floor: an 8-byte round trip over loopback TCP between two C processes polling their sockets: $floor us (median of $rounds)" |
		tee -a "$out/table.txt"
	echo "# beside the ratio, ours less the $([ -n "$gofloor" ] && echo "go floor" || echo floor), in us, against FLOOR_TARGETS ($floor_targets)" |
		tee -a "$out/table.txt"
fi
if [ -n "$floor" ] && [ -n "$gofloor" ]; then
	echo "# go floor: the same round trip between two Go processes, one runtime processor each, polling with raw system calls: $gofloor us" \
		"(median of $rounds), $(awk -v g="$gofloor" -v c="$floor" 'BEGIN {printf "%+.2f", g - c}') us above the floor" |
		tee -a "$out/table.txt"
fi
files="$out/peer.jsonl"
[ "$have_ours" = 0 ] || files="$files,$out/ours.jsonl"
./bin/shmemperf -plot "$out/compare.svg" -from "$files"
./bin/shmemperf -plot "$out/compare.png" -from "$files"
echo "compare: table $out/table.txt, plot $out/compare.svg and .png" >&2
exit "$status"
