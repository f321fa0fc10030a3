#!/usr/bin/env bash
# Fuzz one parser longer than CTest does:  scripts/fuzz.sh TARGET [SECONDS] [BUILD_DIR]
#   TARGET: npy tns tns_cache tucker_model pltf_model cli eig_args sh_image mif image_probe seeds_file
#           (or "all")
#   SECONDS: per target (default 300); BUILD_DIR: default build/ (configured with TK_FUZZ on)
# The fuzzers are built first (target tk_fuzzers).  The inputs found are kept in
# BUILD_DIR/Testing/fuzz/long/TARGET/corpus and reused by the next run; a crash, leak,
# timeout or broken invariant stops the run and names the saved input: fix the parser,
# then copy that input to Testing/fuzz/regressions/TARGET/ (the replay tests cover it).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
targets=(npy tns tns_cache tucker_model pltf_model cli eig_args sh_image mif image_probe seeds_file)
if [ $# -lt 1 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
    sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
target=$1
seconds=${2:-300}
build=${3:-$root/build}
case " ${targets[*]} all " in *" $target "*) ;; *) echo "fuzz.sh: unknown target '$target' (${targets[*]} or all)" >&2; exit 2 ;; esac
[[ $seconds =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: SECONDS must be a positive integer, got '$seconds'" >&2; exit 2; }
if [ ! -f "$build/CMakeCache.txt" ]; then
    echo "fuzz.sh: $build is not a configured build directory (cmake -S . -B build first)" >&2
    exit 2
fi
if ! grep -q '^TK_FUZZ:BOOL=ON' "$build/CMakeCache.txt"; then
    echo "fuzz.sh: $build has TK_FUZZ off (no clang with libFuzzer?): install clang and libclang-rt-14-dev" >&2
    echo "         (scripts/setup.sh lists them), then reconfigure with -DTK_FUZZ=ON" >&2
    exit 2
fi
cmake --build "$build" --target tk_fuzzers -j "$(nproc 2>/dev/null || echo 2)"
[ "$target" = all ] && run=("${targets[@]}") || run=("$target")
for t in "${run[@]}"; do
    fuzzer="$build/Testing/fuzz/libfuzzer/fuzz_$t"
    if [ ! -x "$fuzzer" ]; then
        echo "fuzz.sh: $fuzzer was not built (sh_image needs ITK)" >&2
        [ "$target" = all ] && continue || exit 1
    fi
    dict="$root/Testing/fuzz/dict/$t.dict"
    limit=""
    [ "$t" = sh_image ] && limit=physical
    echo "== fuzz_$t for ${seconds}s"
    cmake -DFUZZER="$fuzzer" -DSECONDS="$seconds" -DSEED=0 -DWORK="$build/Testing/fuzz/long/$t" -DKEEP=1 \
          -DCORPUS="$root/Testing/fuzz/corpus/$t" -DREGRESSIONS="$root/Testing/fuzz/regressions/$t" \
          -DDICT="$([ -f "$dict" ] && echo "$dict")" -DMALLOC_LIMIT_MB="$limit" \
          -P "$root/Testing/fuzz/run_fuzzer.cmake"
done
