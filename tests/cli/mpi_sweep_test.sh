#!/usr/bin/env bash
# `vlasim sweep` under mpirun (builds with VLASIM_WITH_MPI): a sweep spread over 2 or 3 ranks
# prints the same stdout and writes byte-identical files to a serial sweep's, with as many
# values as ranks times a number, with a remainder, and with fewer values than ranks; a sweep
# refused before it starts, or stopped by an error at a value, exits non-zero with its message
# printed once, and no run hangs (each is under a timeout).
# Without a launcher, neither a sweep nor another command initialises MPI (MPI_INIT_TRAP, a
# library whose MPI_Init aborts, is preloaded to catch it).
# Usage: mpi_sweep_test.sh VLASIM_BINARY SOURCE_DIR MPI_INIT_TRAP
set -u
bin=$(realpath "$1"); src=$(realpath "$2"); trap_lib=$(realpath "$3")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
passed=0; failed=0
check() {  # check NAME CONDITION...
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $name"; fi
}

export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1
# Open MPI on one machine without a network, as any user (root included): shared memory and
# self transports only, more ranks than cores allowed, no binding, and no single-copy (CMA)
# transfers, which containers often forbid (they would print a warning).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_hwloc_base_binding_policy=none
command -v mpirun >/dev/null || { echo "FAILED: mpirun not found (Debian: openmpi-bin)"; exit 1; }

# Where the small pi0's prefix is cut on this machine's two cores: cuts 0 to 5 run, 6 and 7
# are past the model's 6 prefix blocks and make refused rows of their own.
scenario=$src/scenarios/validation/split1_async.yaml
key=models.0.partition.params.after_block

# run_sweep NAME RANKS VALUES [OPTIONS...]: sweeps in $tmp/NAME (RANKS 0: without mpirun),
# writing its files to out/ there (the same relative path in every run, so that the "wrote"
# lines of stdout match); stdout to NAME/stdout, stderr to NAME/stderr, exit status to rc.
run_sweep() {
  local name=$1 ranks=$2 values=$3; shift 3
  mkdir -p "$tmp/$name"
  local launch=()
  [[ $ranks -gt 0 ]] && launch=(mpirun -n "$ranks")
  (cd "$tmp/$name" && timeout 60 "${launch[@]}" "$bin" sweep "$scenario" --set "$key=$values" -o out "$@" \
     >stdout 2>stderr)
  rc=$?
}

# same_sweep SERIAL OTHER: identical stdout and an identical set of byte-identical files.
same_sweep() {
  local a=$tmp/$1 b=$tmp/$2
  check "$1: wrote files" test -s "$a/out/sweep.csv" -a -s "$a/out/sweep.md"
  check "$2: stdout equals the serial sweep's" cmp -s "$a/stdout" "$b/stdout"
  check "$2: the same files as the serial sweep" \
    test "$(cd "$a/out" && ls | sort)" == "$(cd "$b/out" && ls | sort)"
  for f in "$a"/out/*; do
    check "$2: $(basename "$f") byte-identical to the serial sweep's" cmp -s "$f" "$b/out/$(basename "$f")"
  done
}

run_sweep serial8 0 0:7
check "serial sweep exits 0 (got $rc)" test "$rc" -eq 0
check "serial sweep writes sweep.csv, sweep.md" test -s "$tmp/serial8/out/sweep.csv" -a -s "$tmp/serial8/out/sweep.md"
check "serial sweep has refused rows" grep -q "refused" "$tmp/serial8/out/sweep.md"
check "serial sweep has a best value" grep -q "^best $key for throughput: " "$tmp/serial8/stdout"

run_sweep mpi2 2 0:7
check "2 ranks, 8 values: exit 0 (got $rc)" test "$rc" -eq 0
same_sweep serial8 mpi2
run_sweep mpi3 3 0:7
check "3 ranks, 8 values: exit 0 (got $rc)" test "$rc" -eq 0
same_sweep serial8 mpi3

# Fewer values than ranks: rank 2 has none.
run_sweep serial2 0 2,7
run_sweep mpi3few 3 2,7
check "3 ranks, 2 values: exit 0 (got $rc)" test "$rc" -eq 0
same_sweep serial2 mpi3few

# -q prints the best value only, once.
run_sweep serial2q 0 2,7 -q
run_sweep mpi2q 2 2,7 -q
check "2 ranks, quiet: exit 0 (got $rc)" test "$rc" -eq 0
same_sweep serial2q mpi2q

# Refused before it starts (the whole sweep's work): every rank exits 2, the message once,
# no files.
msg="the sweep would simulate up to"
run_sweep serialbig 0 0:7 --max-requests 100
check "serial: too much work exits 2 (got $rc)" test "$rc" -eq 2
run_sweep mpibig 2 0:7 --max-requests 100
check "2 ranks: too much work exits 2 (got $rc)" test "$rc" -eq 2
check "2 ranks: too much work is said once" test "$(grep -c -- "$msg" "$tmp/mpibig/stderr")" -eq 1
check "2 ranks: the same message as serial" \
  grep -qxF -- "$(grep -- "$msg" "$tmp/serialbig/stderr")" "$tmp/mpibig/stderr"
check "2 ranks: no files when refused" test ! -e "$tmp/mpibig/out"

# Stopped at a value (no such --memory-device: the first value that runs stops the sweep).
msg="key '--memory-device': no device 'nope' in the scenario"
run_sweep serialdev 0 0:7 --memory-device nope
check "serial: unknown memory device exits 2 (got $rc)" test "$rc" -eq 2
run_sweep mpidev 3 0:7 --memory-device nope
check "3 ranks: unknown memory device exits 2 (got $rc)" test "$rc" -eq 2
check "3 ranks: unknown memory device is said once" test "$(grep -c -- "$msg" "$tmp/mpidev/stderr")" -eq 1
check "3 ranks: the same message as serial" \
  grep -qxF -- "$(grep -- "$msg" "$tmp/serialdev/stderr")" "$tmp/mpidev/stderr"

# Without mpirun, no command initialises MPI; with a launcher's environment, sweep does (the
# trap catches it: it would abort).
(cd "$tmp" && LD_PRELOAD=$trap_lib timeout 60 "$bin" sweep "$scenario" --set "$key=2,7" -q >trap_sweep 2>&1)
check "plain sweep does not initialise MPI (exit $?)" test $? -eq 0
LD_PRELOAD=$trap_lib timeout 60 "$bin" simulate "$src/scenarios/default.yaml" -q >"$tmp/trap_sim" 2>&1
check "simulate does not initialise MPI (exit $?)" test $? -eq 0
(cd "$tmp" && OMPI_COMM_WORLD_SIZE=1 OMPI_COMM_WORLD_RANK=0 LD_PRELOAD=$trap_lib timeout 60 \
   "$bin" sweep "$scenario" --set "$key=2,7" -q >trap_launched 2>&1) 2>/dev/null  # bash: "Aborted"
check "the trap catches a sweep under a launcher" grep -q "mpi_init_trap: MPI_Init" "$tmp/trap_launched"

# Command-line errors under mpirun are said once too: one the sweep finds, one of the options.
run_sweep mpigoal 2 0:7 --goal speed
check "2 ranks: unknown goal exits 2 (got $rc)" test "$rc" -eq 2
check "2 ranks: unknown goal is said once" test "$(grep -c "unknown goal 'speed'" "$tmp/mpigoal/stderr")" -eq 1
run_sweep mpicap 2 0:7 --memory-cap-gb nan
check "2 ranks: a bad option exits 2 (got $rc)" test "$rc" -eq 2
check "2 ranks: a bad option is said once" test "$(grep -c -e "--memory-cap-gb: must be a number" "$tmp/mpicap/stderr")" -eq 1

echo "mpi_sweep_test: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
