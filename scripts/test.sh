#!/usr/bin/env bash
# The test command (README, CI): the Rust tests, then the Python package built from this
# checkout, installed, and its pytest tests; one closing summary line for both.
set -uo pipefail
cd "$(dirname "$0")/.."
log=$(mktemp)
cargo test --workspace 2>&1 | tee "$log"
cargo_rc=${PIPESTATUS[0]}
pip_log=$(mktemp)
python3 -m pip install -q --no-build-isolation ./crates/appy-python >"$pip_log" 2>&1
pip_rc=$?
grep -v "Running pip as the 'root' user" "$pip_log" || true
if [ "$pip_rc" != 0 ]; then echo "pip install ./crates/appy-python failed" | tee -a "$log"; fi
python3 -m pytest -q crates/appy-python/tests tests/appy_repo/test_appy_repo.py 2>&1 | tee -a "$log"
py_rc=${PIPESTATUS[0]}
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
[ "$cargo_rc" = 0 ] && [ "$pip_rc" = 0 ] && [ "$py_rc" = 0 ]
