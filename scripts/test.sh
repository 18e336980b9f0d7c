#!/usr/bin/env bash
# The test command (README, CI): the Rust tests, the generated code against its recorded
# digests, then the Python package built from this
# checkout as a wheel, installed into a fresh virtual environment, and its pytest tests;
# one closing summary line for both.
set -uo pipefail
cd "$(dirname "$0")/.."
log=$(mktemp)
cargo test --workspace 2>&1 | tee "$log"
cargo_rc=${PIPESTATUS[0]}
# The generated code (every example's and NPBench kernel's PTX bundle and CPU module) is
# exactly the recorded one: tests/bundles/golden.txt (scripts/bundles.py says how to
# update it when a change means to alter code).
cargo build -q -p appy-tools 2>&1 | tee -a "$log"
snap=$(mktemp -d)
{ python3 scripts/bundles.py snapshot "$snap" --appy target/debug/appy \
    && python3 scripts/bundles.py check tests/bundles/golden.txt "$snap"; } 2>&1 | tail -20 | tee -a "$log"
bundles_rc=${PIPESTATUS[0]}
rm -rf "$snap"
# The Rust embedding example (README, "Install"), built by `cargo test` above: an APPy
# softmax called on an ndarray matrix, checked against a plain Rust loop.
cargo run -q -p appy --example embed 2>&1 | tee -a "$log"
embed_rc=${PIPESTATUS[0]}
# The Python package as a user gets it: the wheel (scripts/wheel.sh), installed into a
# fresh virtual environment that cannot see this checkout (no system site-packages; run
# from outside the tree), and the package's pytest tests run against it there.
pip_log=$(mktemp)
whl_dir=$(mktemp -d)
venv=$(mktemp -d)/venv
{ bash scripts/wheel.sh "$whl_dir" \
    && python3 -m venv "$venv" \
    && "$venv/bin/python" -m pip install -q --disable-pip-version-check "$whl_dir"/appy_py-*.whl pytest; } >"$pip_log" 2>&1
pip_rc=$?
grep -E "^wheel: |^error|^Error|^💥" "$pip_log" || true
if [ "$pip_rc" != 0 ]; then tail -30 "$pip_log"; echo "building or installing the wheel failed" | tee -a "$log"; fi
root=$PWD
(cd "$(dirname "$venv")" && "$venv/bin/python" -m pytest -q -p no:cacheprovider \
    "$root/crates/appy-python/tests" "$root/tests/appy_repo/test_appy_repo.py") 2>&1 | tee -a "$log"
py_rc=${PIPESTATUS[0]}
rm -rf "$whl_dir" "$(dirname "$venv")"
# One closing line: cargo prints one `test result:` line per test binary, pytest one
# `N passed, M failed, K skipped in Ts` line.
awk '
  /^test result:/ { p += $4; f += $6; next }
  /[0-9]+ (passed|failed|skipped|error)/ && / in [0-9.]+s/ {
    for (i = 1; i < NF; i++) {
      n = $i + 0; w = $(i + 1); gsub(/[^a-z]/, "", w)
      if (w == "passed") p += n; else if (w == "failed" || w == "errors" || w == "error") f += n; else if (w == "skipped") s += n
    }
  }
  END { printf "all tests: %d passed, %d failed, %d skipped\n", p, f, s }' "$log"
if [ "$bundles_rc" != 0 ]; then echo "the generated code differs from tests/bundles/golden.txt"; fi
if [ "$embed_rc" != 0 ]; then echo "the Rust embedding example failed"; fi
[ "$cargo_rc" = 0 ] && [ "$bundles_rc" = 0 ] && [ "$embed_rc" = 0 ] && [ "$pip_rc" = 0 ] && [ "$py_rc" = 0 ]
