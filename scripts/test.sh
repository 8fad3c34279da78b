#!/usr/bin/env bash
# Install dependencies, build, and run every test:
#   1. unit tests (cmocka) and integration tests (pytest + curl against the demo server; among
#      them every shell example of README.md and docs/, tests/integration/test_doc_examples.py),
#      then the API reference (Doxygen over include/inferserve.h and .hpp, warnings as errors:
#      an undocumented public function, parameter or return value fails it; counts as one test);
#   2. the production recipe, scripts/pgo.sh (LTO and a profile-guided build, warnings as
#      errors; counts as one test), and the integration tests again against its demo;
#   3. the unit and integration tests on an ASan+UBSan build (leaks fail the run: LeakSanitizer
#      is on);
#   4. a short soak of the ASan demo under mixed load and attacks (scripts/soak.sh; SOAK_SECONDS,
#      default 45; skip: SOAK_SECONDS=0);
#   5. the unit tests on a ThreadSanitizer build (worker threads, completions from any thread),
#      then, if STORM_SECONDS is set (default 0: off), a storm of that many seconds against the
#      TSan demo (scripts/storm.sh: --threads 2, repository churn, stats, SSE, gzip, shm shrinks);
#   6. every libFuzzer target for a short while on its seed corpus (skip: FUZZ_SECONDS=0).
# Ends with one line "N passed, N failed" and exits non-zero when anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
FUZZ_SECONDS=${FUZZ_SECONDS:-20}
SOAK_SECONDS=${SOAK_SECONDS:-45}
STORM_SECONDS=${STORM_SECONDS:-0}
PY=/usr/bin/python3 # Debian's python3-* packages are for this interpreter
passed=0
failed=0
failures=()

scripts/install-deps.sh || { echo "0 passed, 1 failed"; exit 1; }

count_meson() { # $1 = build dir, $2 = label
  local log="$1/meson-logs/testlog.json" p f
  p=$(grep -c '"result": "OK"' "$log" 2>/dev/null)
  f=$(grep -c '"result": "\(FAIL\|TIMEOUT\|ERROR\)"' "$log" 2>/dev/null)
  passed=$((passed + p)); failed=$((failed + f))
  [ "$f" -eq 0 ] || failures+=("$2: $f unit test(s)")
}

count_pytest() { # $1 = junit xml, $2 = label
  local x="$1" t f e s
  if [ ! -f "$x" ]; then failed=$((failed + 1)); failures+=("$2: pytest did not run"); return; fi
  read -r t f e s < <($PY - "$x" <<'PYEOF'
import sys, xml.etree.ElementTree as ET
r = ET.parse(sys.argv[1]).getroot()
suites = [r] if r.tag == "testsuite" else r.findall("testsuite")
g = lambda k: sum(int(s.get(k, 0)) for s in suites)
print(g("tests"), g("failures"), g("errors"), g("skipped"))
PYEOF
)
  passed=$((passed + t - f - e - s)); failed=$((failed + f + e))
  [ $((f + e)) -eq 0 ] || failures+=("$2: $((f + e)) integration test(s)")
}

run_suite() { # $1 = build dir, $2 = label
  local dir=$1 label=$2
  meson test -C "$dir" --suite unit --print-errorlogs --num-processes 2 || true
  count_meson "$dir" "$label"
  INFERSERVE_DEMO="$ROOT/$dir/examples/demo/inferserve-demo" \
    $PY -m pytest -q -p no:cacheprovider --junitxml="$dir/integration.xml" tests/integration || true
  count_pytest "$dir/integration.xml" "$label"
}

build_or_fail() { # $1 = dir, $2 = label, rest = meson options
  local dir=$1 label=$2; shift 2
  if ! scripts/build.sh "$dir" "$@"; then
    failed=$((failed + 1)); failures+=("$label: build failed"); return 1
  fi
}

# 1. a release build, as users build it, with warnings as errors (-Wall -Wextra -Werror: CI
#    only; the default leaves -Werror off so that a newer compiler never breaks a user's build)
if build_or_fail build "release build" --buildtype=release -Dwerror=true -Dtests=enabled \
    -Dtorch=enabled; then
  run_suite build "build"
  # the API reference, in the same build (-Dwerror=true makes Doxygen's warnings errors)
  if meson configure build -Ddocs=enabled >/dev/null && ninja -C build docs; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1)); failures+=("api reference: undocumented or badly documented API (ninja -C build docs)")
  fi
fi

# 2. the production recipe (scripts/pgo.sh: LTO and a profile of the demo's training mix) builds
# with warnings as errors, and its demo answers the whole integration suite as the plain one.
rm -rf build-pgo
if scripts/pgo.sh build-pgo -Dwerror=true; then
  passed=$((passed + 1))
  INFERSERVE_DEMO="$ROOT/build-pgo/examples/demo/inferserve-demo" \
    $PY -m pytest -q -p no:cacheprovider --junitxml=build-pgo/integration.xml tests/integration || true
  count_pytest build-pgo/integration.xml "pgo"
else
  failed=$((failed + 1)); failures+=("profile-guided build (scripts/pgo.sh)")
fi

# 3. ASan + UBSan (UBSan aborts on the first report; LeakSanitizer makes a leaking demo exit non-zero)
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
if build_or_fail build-asan "asan build" -Dwerror=true -Db_sanitize=address,undefined \
    -Db_lundef=false; then
  run_suite build-asan "asan"
  # 4. the soak: counts as one test
  if [ "$SOAK_SECONDS" != 0 ]; then
    if BUILD_DIR=build-asan scripts/soak.sh "$SOAK_SECONDS"; then
      passed=$((passed + 1))
    else
      failed=$((failed + 1)); failures+=("soak")
    fi
  fi
fi

# 5. ThreadSanitizer: the unit tests (the scheduler's drive worker threads and completions from
#    threads of their own through a real core)
unset ASAN_OPTIONS UBSAN_OPTIONS
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
if build_or_fail build-tsan "tsan build" -Dwerror=true -Db_sanitize=thread -Db_lundef=false; then
  meson test -C build-tsan --suite unit --print-errorlogs --num-processes 2 || true
  count_meson build-tsan "tsan"
  # the storm: counts as one test (every report collected, not the first only)
  if [ "$STORM_SECONDS" != 0 ]; then
    if TSAN_OPTIONS=halt_on_error=0:second_deadlock_stack=1 BUILD_DIR=build-tsan \
        scripts/storm.sh "$STORM_SECONDS"; then
      passed=$((passed + 1))
    else
      failed=$((failed + 1)); failures+=("storm")
    fi
  fi
fi
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1

# 6. fuzz targets, a short while each on their seed corpora
if [ "$FUZZ_SECONDS" != 0 ]; then
  if CC=clang build_or_fail build-fuzz "fuzz build" -Dwerror=true -Dfuzz=true -Dtests=disabled \
      -Db_sanitize=address,undefined -Db_lundef=false -Dc_args=-fsanitize=fuzzer-no-link; then
    for target in build-fuzz/fuzz/fuzz_*; do
      [ -f "$target" ] && [ -x "$target" ] || continue
      name=$(basename "$target")
      corpus="fuzz/corpus/${name#fuzz_}"
      work=$(mktemp -d)
      [ -d "$corpus" ] && cp -r "$corpus"/. "$work"/
      dict="fuzz/${name#fuzz_}.dict"
      extra=()
      [ -f "$dict" ] && extra+=("-dict=$dict")
      if "$target" "${extra[@]}" -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=4096 \
          -print_final_stats=0 "$work" >"$work.log" 2>&1; then
        passed=$((passed + 1)); echo "fuzz $name: ok ($(grep -c . "$work.log") log lines)"
      else
        failed=$((failed + 1)); failures+=("fuzz $name"); tail -n 40 "$work.log"
      fi
      rm -rf "$work" "$work.log"
    done
  fi
fi

for f in "${failures[@]}"; do echo "FAILED: $f"; done
echo "test.sh took ${SECONDS}s"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
