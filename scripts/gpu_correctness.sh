#!/usr/bin/env bash
# The correctness checks of a GPU machine that has the NVIDIA driver, Python and NumPy
# but no compiler toolchain: the package built on the build machine is unpacked there.
#
# On the build machine (after scripts/setup.sh and scripts/fetch-libdevice.sh):
#   bash scripts/gpu_correctness.sh pack        # .dev/pkg.tar.xz: the installed package, stripped
# On the GPU machine, in a copy of the repository with .dev/:
#   bash scripts/gpu_correctness.sh check [OUTDIR]
#
# `check` runs, each with its own log in OUTDIR (default /tmp/appy-gpu-check), the CPU
# fuzzer in the background while the GPU steps run:
#   1. the package's pytest tests (the GPU ones run there, Ctrl-C in a host loop too);
#   2. the GPU compile cache: the quickstart in a fresh process with an empty cache, then
#      again with the cache it left (the second must print nothing and hit);
#   3. the whole-program fuzzer on the GPU (WHOLEPROG_GPU programs, default 1000);
#   4. the whole-program fuzzer on the CPU back end on every core (WHOLEPROG_CPU
#      programs, default 10000), with LLVM's OpenMP runtime from .dev/ when present.
# The last lines summarise each step; the exit status is non-zero if any failed.
set -uo pipefail
cd "$(dirname "$0")/.."

pack() {
    local site
    site=$(python3 -c 'import appy, os; print(os.path.dirname(os.path.dirname(appy.__file__)))')
    local tmp
    tmp=$(mktemp -d)
    mkdir -p "$tmp/appy"
    cp "$site"/appy/*.py "$site"/appy/*.pyi "$site"/appy/py.typed "$site"/appy/*.so "$tmp/appy/"
    strip --strip-unneeded "$tmp"/appy/*.so
    mkdir -p .dev
    tar cJf .dev/pkg.tar.xz -C "$tmp" appy
    # LLVM's OpenMP runtime (the CPU back end's parallel loops).
    for lib in /usr/lib/llvm-22/lib/libomp.so.5 /usr/lib/llvm-22/lib/libomp.so; do
        if [ -e "$lib" ]; then cp -L "$lib" .dev/libomp.so.5; break; fi
    done
    rm -rf "$tmp"
    ls -l .dev/pkg.tar.xz .dev/libomp.so.5 2>/dev/null
}

setup_site() {
    mkdir -p /tmp/appy-site
    [ -d /tmp/appy-site/appy ] || tar xJf .dev/pkg.tar.xz -C /tmp/appy-site
    export PYTHONPATH="/tmp/appy-site${PYTHONPATH:+:$PYTHONPATH}"
    export PYTHONUNBUFFERED=1
    if [ -e .dev/libomp.so.5 ]; then export APPY_LIBOMP="$PWD/.dev/libomp.so.5"; fi
}

# The CPU fuzzer in the background (its own process session, so that it outlives the
# command that starts it); `wait-cpu` waits for it.
start_cpu() {
    local out=$1
    mkdir -p "$out"
    local jobs=$(( $(nproc) * 3 / 4 ))
    echo "$jobs" > "$out/wholeprog-cpu.jobs"
    setsid bash -c "python3 tests/wholeprog/fuzz.py --device cpu --seed 2 --count ${WHOLEPROG_CPU:-10000} --jobs $jobs \
        --threads 2 --keep '$out/fails-cpu' --quiet > '$out/wholeprog-cpu.txt' 2>&1; echo \$? > '$out/wholeprog-cpu.rc'" \
        < /dev/null > /dev/null 2>&1 &
}

wait_cpu() {
    local out=$1 limit=${2:-560} t=0
    while [ ! -e "$out/wholeprog-cpu.rc" ] && [ "$t" -lt "$limit" ]; do sleep 10; t=$((t + 10)); done
    if [ -e "$out/wholeprog-cpu.rc" ]; then
        echo "$(tail -1 "$out/wholeprog-cpu.txt") [cpu, $(cat "$out/wholeprog-cpu.jobs") jobs] (rc $(cat "$out/wholeprog-cpu.rc"))" | tee -a "$out/summary.txt"
        [ "$(cat "$out/wholeprog-cpu.rc")" = 0 ]
    else
        echo "cpu fuzzer still running: $(tail -c 300 "$out/wholeprog-cpu.txt")"
        return 3
    fi
}

check_gpu() {
    local out=$1
    mkdir -p "$out"
    nvidia-smi -L | tee "$out/gpu.txt"
    python3 -c 'import appy, numpy; print("appy", appy.__file__, "gpu", appy.gpu_available(), "numpy", numpy.__version__)' | tee -a "$out/gpu.txt"
    local status=0 summary=""

    # 1. The package's tests (GPU tests included; the fuzzer's CI slice is step 3's).
    # -rfE names each failure in the summary; a test that hangs dumps its stack after 120 s.
    python3 -m pytest -q -rfE -p no:cacheprovider -o faulthandler_timeout=120 crates/appy-python/tests \
        -k "not wholeprog" 2>&1 | tee "$out/pytest.txt"
    local rc=${PIPESTATUS[0]}
    summary+="pytest: $(tail -1 "$out/pytest.txt") (rc $rc)"$'\n'
    [ "$rc" = 0 ] || status=1

    # 2. The GPU compile cache across processes.
    local cache
    cache=$(mktemp -d)
    {
        for k in cold warm warm; do
            echo "== $k"
            APPY_CACHE_DIR=$cache APPY_DEVICE=gpu APPY_LOG=warn /usr/bin/time -f "%e s" python3 examples/quickstart.py 2>&1
        done
    } | tee "$out/cache.txt"
    if grep -q "appy cache" "$out/cache.txt"; then
        summary+="gpu cache: FAILED (a cache warning was printed)"$'\n'
        status=1
    else
        summary+="gpu cache: no warnings; times $(grep -E '^[0-9.]+ s$' "$out/cache.txt" | tr '\n' ' ')"$'\n'
    fi
    rm -rf "$cache"

    # 3. The whole-program fuzzer on the GPU.
    python3 tests/wholeprog/fuzz.py --device gpu --seed 1 --count "${WHOLEPROG_GPU:-1000}" --jobs 4 \
        --keep "$out/fails-gpu" --quiet 2>&1 | tee "$out/wholeprog-gpu.txt"
    rc=${PIPESTATUS[0]}
    summary+="$(tail -1 "$out/wholeprog-gpu.txt") [gpu] (rc $rc)"$'\n'
    [ "$rc" = 0 ] || status=1

    echo "----"
    printf '%s' "$summary" | tee -a "$out/summary.txt"
    return $status
}

check() {
    local out=${1:-/tmp/appy-gpu-check}
    setup_site
    start_cpu "$out"
    check_gpu "$out"
    local s=$?
    wait_cpu "$out" 100000 || s=1
    return $s
}

case "${1:-}" in
    pack) pack ;;
    check) shift; check "$@" ;;
    # The same in steps, for machines that limit one command's time: start the CPU
    # fuzzer, run the GPU checks, then wait for the CPU fuzzer (as often as needed).
    start-cpu) setup_site; start_cpu "${2:-/tmp/appy-gpu-check}" ;;
    check-gpu) setup_site; check_gpu "${2:-/tmp/appy-gpu-check}" ;;
    wait-cpu) wait_cpu "${2:-/tmp/appy-gpu-check}" "${3:-560}" ;;
    *) echo "usage: $0 pack | check [OUTDIR] | start-cpu [OUTDIR] | check-gpu [OUTDIR] | wait-cpu [OUTDIR] [SECONDS]" >&2; exit 2 ;;
esac
