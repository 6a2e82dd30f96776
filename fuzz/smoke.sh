#!/usr/bin/env bash
# Short fuzz smoke run on the stable toolchain: builds the targets with the
# instrumentation cargo-fuzz uses (stable codegen flags only; no sanitizer,
# which needs nightly) and runs each for a bounded time from a small seed
# corpus. Exits non-zero if any target crashes.
#   fuzz/smoke.sh [SECONDS_PER_TARGET]   (default 10)
set -euo pipefail
cd "$(dirname "$0")"
SECONDS_PER_TARGET="${1:-10}"
TARGETS=(header manifest segment_table tables runtime_record ncache_list)

export RUSTFLAGS="--cfg fuzzing -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table -Cllvm-args=-sanitizer-coverage-trace-compares -Cdebug-assertions -Coverflow-checks"
# An explicit --target keeps the instrumentation off build scripts and
# proc macros (as cargo-fuzz does).
HOST="$(rustc -vV | sed -n 's/^host: //p')"
cargo build --release --quiet --target-dir target --target "$HOST" --bins
BIN="target/$HOST/release"

corpus_root="$(mktemp -d)"
trap 'rm -rf "$corpus_root"' EXIT
# Seeds: valid files from the golden fixture store.
fixture=../tests/fixtures/v1-small
for t in "${TARGETS[@]}"; do
  mkdir -p "$corpus_root/$t"
done
if [ -d "$fixture" ]; then
  head -c 64 "$fixture/labels" > "$corpus_root/header/labels-header"
  head -c 64 "$fixture/MANIFEST" > "$corpus_root/header/manifest-header"
  tail -c +65 "$fixture/MANIFEST" > "$corpus_root/manifest/payload"
  tail -c +65 "$fixture/splits" > "$corpus_root/tables/splits"
fi
printf 'GXRC' > "$corpus_root/runtime_record/magic"

for t in "${TARGETS[@]}"; do
  echo "fuzz smoke: $t (${SECONDS_PER_TARGET}s)"
  mkdir -p artifacts/"$t"
  "$BIN/$t" "$corpus_root/$t" -max_total_time="$SECONDS_PER_TARGET" -print_final_stats=0 \
      -artifact_prefix="artifacts/$t/" 2>&1 | grep -E '^(#[0-9]+ +DONE|==|SUMMARY|Done)' || true
  if ls artifacts/"$t"/crash-* >/dev/null 2>&1; then
    echo "fuzz smoke: $t crashed; inputs in fuzz/artifacts/$t/" >&2
    exit 1
  fi
done
echo "fuzz smoke: all targets ran without crashes"
