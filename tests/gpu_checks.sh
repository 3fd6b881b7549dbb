#!/usr/bin/env bash
# Everything that needs an NVIDIA GPU, in one go, for a lent GPU machine with no network:
# build in place, the GPU tests, the memory and race checkers, and (with --bench) the
# overhead benchmark. Logs and results go under $OUT (default: gpu-out).
#   bash tests/gpu_checks.sh [--bench PROTON_CASES DIAGNOSE_CASES [CASE:ID+ID,...]]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 TRITON_DEFAULT_FP_FUSION=1
python3 -m pip install --no-build-isolation --no-deps -e . > "$OUT/install.log" 2>&1 || { tail -30 "$OUT/install.log"; exit 1; }
if [ -d .whl ]; then  # packages the machine lacks (altair, anywidget, ipython), carried as wheels
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
if [ "${1:-}" = --bench ]; then
  python3 bench/overhead.py --cases all --proton "$2" --diagnose "$3" --scopes "${4:-}" --rounds 3 --iters 20 --out "$OUT/bench" 2>&1 | grep -v "^Warning (cta"
  exit
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
python3 -m pytest tests -m gpu -q -p no:cacheprovider -rs 2>&1 | tee "$OUT/gpu_tests.log" | tail -30
python3 tests/capture_raw_launch.py "$OUT/fixtures" 2>&1 | tail -3  # raw buffer fixture for the CPU tests
compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 3 python3 tests/sanitizer_check.py > "$OUT/memcheck.log" 2>&1
echo "memcheck exit status $?"; tail -12 "$OUT/memcheck.log"
compute-sanitizer --tool racecheck --report-api-errors no --error-exitcode 3 python3 tests/sanitizer_check.py --quick > "$OUT/racecheck.log" 2>&1
echo "racecheck exit status $?"; tail -5 "$OUT/racecheck.log"
compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 3 python3 tests/sanitizer_check.py --tier sass > "$OUT/sass_tier_memcheck.log" 2>&1
echo "sass tier memcheck exit status $?"; tail -8 "$OUT/sass_tier_memcheck.log"
compute-sanitizer --tool racecheck --report-api-errors no --error-exitcode 3 python3 tests/sanitizer_check.py --tier sass --quick > "$OUT/sass_tier_racecheck.log" 2>&1
echo "sass tier racecheck exit status $?"; tail -3 "$OUT/sass_tier_racecheck.log"
compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 3 python3 tests/sass_sanitizer_check.py > "$OUT/sass_memcheck.log" 2>&1
echo "SASS memcheck exit status $?"; tail -12 "$OUT/sass_memcheck.log"
compute-sanitizer --tool racecheck --report-api-errors no --error-exitcode 3 python3 tests/sass_sanitizer_check.py --quick > "$OUT/sass_racecheck.log" 2>&1
echo "SASS racecheck exit status $?"; tail -8 "$OUT/sass_racecheck.log"
