#!/usr/bin/env bash
# Builds, on this CPU machine, everything the GPU check runs, and packs it into a kit that runs
# on a bare GPU machine (one with a driver, CUDA 13's cuBLASLt and nothing of vlasim's Debian
# dependencies) from any folder:
#   scripts/gpu_kit.sh DIR       # e.g. out/gpu_kit: writes DIR/ and DIR.tar.gz
# DIR/ holds:
#   bin/      vlasim (without Open MPI), cuda_probe_test (the CUDA tests), bench_cuda
#   lib/      libvlasim_cuda_executor.so (sm_90 SASS plus PTX, so another GPU JIT-compiles it) and
#             the Debian libraries they load: their ldd closure less glibc, libstdc++, libgcc and
#             CUDA's own libraries, which the GPU machine has
#   share/vlasim/{cards,catalog,kernel_fit}/   the data the binaries read (found beside bin/)
#   scenarios/gpu_check/ (and systems/, default.yaml), scripts/gpu_check.sh, gpu_check_report.py,
#             torch_trace_pi0.py: what the check runs
#   env.sh    sourced by the check: PATH, LD_LIBRARY_PATH (the kit's lib/, then the folder of the
#             machine's libcublasLt.so.13, searched for), VLASIM_DATA_DIR
#   MANIFEST  the commit, the build options, each file's size
# DIR.tar.gz is what travels (the device tool carries at most 64 MiB with the working tree):
# `scripts/gpu_check.sh --kit DIR.tar.gz` unpacks it there.
# BUILD_DIR (default build-kit/): the tree built; configured here (Release, CUDA, no Open MPI)
# unless it is configured already (then it must be Release with CUDA, tests and benchmarks).
# Exits 1 with the reason when a step fails or the kit exceeds KIT_MAX_MB (default 40) packed.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
[[ $# -eq 1 && $1 != -* ]] || { echo "usage: scripts/gpu_kit.sh DIR   (writes DIR/ and DIR.tar.gz)" >&2; exit 2; }
kit=$1
build=${BUILD_DIR:-$here/build-kit}
max_mb=${KIT_MAX_MB:-40}
fail() { echo "gpu_kit: $*" >&2; exit 1; }

command -v nvcc >/dev/null || [[ -x /usr/local/cuda/bin/nvcc ]] \
  || fail "nvcc is not installed: the CUDA executor cannot be built here"
export PATH=$PATH:/usr/local/cuda/bin
"$here/scripts/install_packages.sh" $(grep -v '^#' "$here/scripts/packages.txt")

# A tree configured already (the test command's build/, say) is used as it is, when it is a
# Release build with CUDA; the kit then takes its vlasim_nompi (the command without Open MPI)
# where the tree has MPI. Otherwise the tree is configured here: Release, CUDA, no Open MPI.
mkdir -p "$build"
cache=$build/CMakeCache.txt
if [[ -f $cache ]]; then
  grep -q '^VLASIM_WITH_CUDA:BOOL=ON$' "$cache" || fail "$build was configured without CUDA (VLASIM_WITH_CUDA=OFF)"
  grep -q '^CMAKE_BUILD_TYPE:STRING=Release$' "$cache" || fail "$build is not a Release build"
  echo "gpu_kit: building in $build (configured already; its options kept)"
  cmake -S "$here" -B "$build" > "$build/kit_configure.log" 2>&1 \
    || { tail -30 "$build/kit_configure.log"; fail "configure failed"; }
else
  echo "gpu_kit: configuring $build (Release, CUDA sm_90 + PTX, without Open MPI)"
  cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=${VLASIM_UNITY:-ON} \
        -DVLASIM_WITH_CUDA=ON -DVLASIM_WITH_MPI=OFF -DVLASIM_BUILD_TESTS=ON -DVLASIM_BUILD_BENCHMARKS=ON -DVLASIM_PYTHON=OFF \
        > "$build/kit_configure.log" 2>&1 || { tail -30 "$build/kit_configure.log"; fail "configure failed"; }
fi
grep -q '^VLASIM_WITH_MPI:BOOL=ON$' "$cache" && cli=vlasim_nompi || cli=vlasim
grep -q '^VLASIM_BUILD_TESTS:BOOL=ON$' "$cache" && grep -q '^VLASIM_BUILD_BENCHMARKS:BOOL=ON$' "$cache" \
  || fail "$build was configured without the tests or the benchmarks (the kit carries the CUDA tests and bench_cuda)"
cmake --build "$build" -j "$(nproc)" --target $cli vlasim_cuda_module cuda_probe_test bench_cuda \
  > "$build/kit_build.log" 2>&1 || { tail -40 "$build/kit_build.log"; fail "build failed ($build/kit_build.log)"; }

rm -rf "$kit" "$kit.tar.gz"
mkdir -p "$kit/bin" "$kit/lib" "$kit/share/vlasim" "$kit/scripts" "$kit/scenarios"
install -m 755 "$build/$cli" "$kit/bin/vlasim"
install -m 755 "$build/tests/cuda/cuda_probe_test" "$build/benchmarks/executors/bench_cuda" "$kit/bin/"
install -m 755 "$build/libvlasim_cuda_executor.so" "$kit/lib/"
strip --strip-unneeded "$kit"/bin/* "$kit"/lib/*.so
cp -r "$here/models/cards" "$here/sim/catalog" "$here/sim/kernel_fit" "$kit/share/vlasim/"
cp -r "$here/scenarios/gpu_check" "$here/scenarios/systems" "$here/scenarios/default.yaml" "$kit/scenarios/"
install -m 755 "$here/scripts/gpu_check.sh" "$here/scripts/gpu_check_report.py" "$here/scripts/torch_trace_pi0.py" \
  "$kit/scripts/"

# The runtime closure, less what the GPU machine provides (scripts/gpu_kit_provided.txt).
stems=$(grep -v '^#' "$here/scripts/gpu_kit_provided.txt" | tr -s ' \n' '|' | sed 's/^|//; s/|$//')
provided="^($stems)\.so"
declare -A seen=()
for f in "$kit"/bin/* "$kit"/lib/libvlasim_cuda_executor.so; do
  while read -r name _ path _; do
    name=$(basename "$name")
    [[ $name == *.so* ]] || continue
    [[ $name =~ $provided ]] && continue
    [[ -n ${seen[$name]:-} ]] && continue
    [[ $path == /* && -e $path ]] || fail "$(basename "$f") needs $name, which is not installed here"
    seen[$name]=1
    cp -L "$path" "$kit/lib/$name"   # by the name the loader asks for (libblas.so.3 through its alternative)
  done < <(ldd "$f")
done
strip --strip-unneeded "$kit"/lib/*.so* 2>/dev/null || true

cat > "$kit/env.sh" <<'ENV'
# Sourced by scripts/gpu_check.sh --kit (or by hand: `. KIT/env.sh`): the kit's programs, its
# libraries before the machine's, its data, and the machine's cuBLASLt (CUDA 13), searched for in
# the loader's cache, the CUDA toolkit and the Python packages (torch's wheels ship it).
kit_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export PATH="$kit_dir/bin:$PATH"
export VLASIM_DATA_DIR="$kit_dir/share/vlasim"
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1
cublas_dir=$(ldconfig -p 2>/dev/null | awk '/libcublasLt\.so\.13 /{print $NF; exit}' | xargs -r dirname)
if [[ -z $cublas_dir ]]; then
  for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda-13*/lib64 \
           /usr/lib/x86_64-linux-gnu; do
    [[ -e $d/libcublasLt.so.13 ]] && { cublas_dir=$d; break; }
  done
fi
if [[ -z $cublas_dir ]] && command -v python3 >/dev/null; then
  cublas_dir=$(python3 - 2>/dev/null <<'PY'
import glob, os, site, sys
roots = site.getsitepackages() + [site.getusersitepackages()] + sys.path
for r in roots:
    for p in glob.glob(os.path.join(r, "nvidia", "cu*", "lib", "libcublasLt.so.13")) + \
             glob.glob(os.path.join(r, "nvidia", "cublas", "lib", "libcublasLt.so.13")) + \
             glob.glob(os.path.join(r, "torch", "lib", "libcublasLt.so.13")):
        print(os.path.dirname(p)); sys.exit()
PY
)
fi
export VLASIM_KIT_CUBLAS_DIR="$cublas_dir"
export LD_LIBRARY_PATH="$kit_dir/lib${cublas_dir:+:$cublas_dir}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
ENV

{
  echo "vlasim GPU kit"
  echo "commit: $(git -C "$here" rev-parse HEAD 2>/dev/null || echo unknown)$(git -C "$here" diff --quiet 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "built: $(date -u +%Y-%m-%dT%H:%MZ) on $(uname -m), $(nvcc --version | tail -1)"
  echo "options: Release, CUDA_ARCHITECTURES 90 (sm_90 SASS + compute_90 PTX), VLASIM_WITH_MPI=OFF"
  echo "files:"
  (cd "$kit" && find . -type f -printf '%s %p\n' | sort -k2)
} > "$kit/MANIFEST"

tar -C "$(dirname "$kit")" -czf "$kit.tar.gz" "$(basename "$kit")"
unpacked=$(du -sm "$kit" | cut -f1)
packed=$(( ($(stat -c %s "$kit.tar.gz") + 1048575) / 1048576 ))
echo "gpu_kit: $kit ($unpacked MB) and $kit.tar.gz ($packed MB packed)"
(( packed <= max_mb )) || fail "the packed kit is $packed MB, over KIT_MAX_MB=$max_mb"
