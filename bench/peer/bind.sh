#!/usr/bin/env bash
# bind.sh PROGRAM ARGS...: runs PROGRAM, an Open MPI PE, bound to one CPU:
# PE r to the r-th CPU this process may use, dealt round them again when
# the PEs outnumber them. It is the placement oshrun -cpubind gives
# goshmem's PEs, so that compare.sh places both sides alike.
set -euo pipefail
rank=${OMPI_COMM_WORLD_RANK:?bind.sh runs under Open MPI oshrun or mpirun}
list=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
cpus=()
IFS=, read -ra ranges <<<"$list"
for r in "${ranges[@]}"; do
	lo=${r%-*} hi=${r#*-}
	for ((c = lo; c <= hi; c++)); do cpus+=("$c"); done
done
exec taskset -c "${cpus[rank % ${#cpus[@]}]}" "$@"
