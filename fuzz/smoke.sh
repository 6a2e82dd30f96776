#!/usr/bin/env bash
# Fuzz smoke run on the stable toolchain.
#
#   fuzz/smoke.sh [SECONDS_PER_TARGET] [TARGET...]
#
# Builds the fuzz targets (release) with the coverage instrumentation
# cargo-fuzz uses, minus what needs nightly (-Zsanitizer=address), then runs
# each target (default: all) for SECONDS_PER_TARGET seconds (default 10)
# from a seed corpus made of the golden fixtures in tests/fixtures/.
# Prints the coverage reached per target; exits non-zero if any target
# crashes (panic, failed assertion, timeout, out-of-memory). Crashing inputs
# are kept in fuzz/artifacts/<target>/.
#
# Environment:
#   GINEX_FUZZ_CORPUS   keep the corpus in this directory (e.g. fuzz/corpus)
#                       instead of a temporary one, so long runs build on it
#   GINEX_FUZZ_TARGET_DIR  cargo target directory (default fuzz/target)
set -euo pipefail
cd "$(dirname "$0")"
fuzz_dir="$(pwd)"

seconds="${1:-10}"
shift || true
all_targets=(header manifest segment_table tables edge_splits runtime_record ncache_list
  npy_header npz_directory dgl_metadata text_edges checkpoint_meta)
if [ $# -gt 0 ]; then targets=("$@"); else targets=("${all_targets[@]}"); fi
case "$seconds" in '' | *[!0-9]*)
  echo "usage: fuzz/smoke.sh [SECONDS_PER_TARGET] [TARGET...]" >&2
  exit 2
  ;;
esac

# The instrumentation of `cargo fuzz build` (sancov with inline 8-bit
# counters, PC table and comparison tracing; debug assertions and overflow
# checks on). All of these are stable codegen options.
export RUSTFLAGS="--cfg fuzzing -Cpasses=sancov-module \
-Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
-Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares \
-Cdebug-assertions -Coverflow-checks"
# An explicit --target keeps the instrumentation off build scripts and proc
# macros (as cargo-fuzz does).
host="$(rustc -vV | sed -n 's/^host: //p')"
target_dir="${GINEX_FUZZ_TARGET_DIR:-$fuzz_dir/target}"
start=$SECONDS
cargo build --release --quiet --target-dir "$target_dir" --target "$host" \
  $(printf -- '--bin %s ' "${targets[@]}")
echo "fuzz smoke: built in $((SECONDS - start)) s"
bin="$target_dir/$host/release"

if [ -n "${GINEX_FUZZ_CORPUS:-}" ]; then
  corpus_root="$GINEX_FUZZ_CORPUS"
  mkdir -p "$corpus_root"
  logs="$(mktemp -d)"
  trap 'rm -rf "$logs"' EXIT
else
  corpus_root="$(mktemp -d)"
  logs="$corpus_root/logs"
  trap 'rm -rf "$corpus_root"' EXIT
fi
mkdir -p "$logs"
for t in "${all_targets[@]}"; do mkdir -p "$corpus_root/$t"; done

# ---- seeds: valid inputs in each target's input format, from the fixtures
byte() { printf "\\$(printf '%03o' "$1")"; } # one raw byte, 0..=255
payload() { tail -c +$(($2 + 1)) "$1"; }     # file bytes after a header of $2
for fixture in ../tests/fixtures/v1-*; do
  [ -f "$fixture/MANIFEST" ] || continue
  name="$(basename "$fixture")"
  for f in "$fixture"/*; do
    head -c 64 "$f" >"$corpus_root/header/$name-$(basename "$f")"
  done
  payload "$fixture/MANIFEST" 64 >"$corpus_root/manifest/$name"
  # manifest.md: payload offsets 0 (N) and 24 (num_classes).
  read -r nodes < <(payload "$fixture/MANIFEST" 64 | od -An -tu8 -N8)
  read -r classes < <(payload "$fixture/MANIFEST" 64 | od -An -tu4 -j24 -N4)
  # segment_table: [n] [target 16] [n degrees] [indices.seg payload]
  mapfile -t indptr < <(payload "$fixture/indptr" 64 | od -An -v -tu8 -w8)
  small=1
  [ "$nodes" -le 255 ] || small=0
  for ((v = 0; small && v < nodes; v++)); do
    [ $((${indptr[v + 1]} - ${indptr[v]})) -le 255 ] || small=0
  done
  if [ "$small" = 1 ]; then
    {
      byte "$nodes"
      byte 16
      for ((v = 0; v < nodes; v++)); do byte $((${indptr[v + 1]} - ${indptr[v]})); done
      payload "$fixture/indices.seg" 64
    } >"$corpus_root/segment_table/$name"
  fi
  # tables: [num_nodes] [num_classes] [payload]
  for table in labels splits orig_ids; do
    if [ -f "$fixture/$table" ] && [ "$nodes" -le 255 ] && [ "$classes" -le 255 ]; then
      { byte "$nodes"; byte "$classes"; payload "$fixture/$table" 64; } \
        >"$corpus_root/tables/$name-$table"
    fi
  done
done
printf 'GXRC' >"$corpus_root/runtime_record/magic"
# edge_splits: [num_nodes] [payload], the worked example of format/edge-splits.md.
{
  byte 4
  printf '\1\0\0\0\0\0\0\0'
  head -c 16 /dev/zero
  printf '\1\0\0\0\0\0\0\0\1\0\0\0\0\0\0\0'
  printf '\1\0\0\0\0\0\0\0\2\0\0\0\1\0\0\0'
  for v in 0 1 2 3 1 2 0 3; do byte "$v"; head -c 7 /dev/zero; done
} >"$corpus_root/edge_splits/example"

# Import decoders (issue 14): a .npy header, .npz archives (when `zip` is
# installed), a DGL metadata document and text edge lists.
npy_seed() { # descr shape data-bytes...
  local dict
  dict="$(printf "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" "$1" "$2")"
  printf '\x93NUMPY\x01\x00'
  byte 118
  byte 0
  printf '%-117s\n' "$dict"
}
npy_seed '<f4' '(3, 2)' >"$corpus_root/npy_header/f4"
npy_seed '<i8' '(2, 7)' >"$corpus_root/npy_header/i8"
npy_seed '|b1' '(6,)' >"$corpus_root/npy_header/b1"
if command -v zip >/dev/null; then
  zdir="$(mktemp -d)"
  { npy_seed '<i8' '(2, 1)'; printf '\0\0\0\0\0\0\0\0\1\0\0\0\0\0\0\0'; } >"$zdir/edge_index.npy"
  npy_seed '<f4' '(0,)' >"$zdir/node_feat.npy"
  (cd "$zdir" && zip -q -X -0 stored.npz edge_index.npy node_feat.npy &&
    zip -q -X -9 deflated.npz edge_index.npy node_feat.npy)
  cp "$zdir/stored.npz" "$zdir/deflated.npz" "$corpus_root/npz_directory/"
  rm -rf "$zdir"
fi
cat >"$corpus_root/dgl_metadata/small.json" <<'JSON'
{"graph_name": "g", "node_type": ["n"], "num_nodes_per_chunk": [[3]],
 "edge_type": ["n:e:n"], "num_edges_per_chunk": [[1]],
 "edges": {"n:e:n": {"format": {"name": "csv", "delimiter": " "}, "data": ["metadata.json"]}},
 "node_data": {"n": {"feat": {"format": {"name": "numpy"}, "data": ["metadata.json"]}}}}
JSON
cat >"$corpus_root/checkpoint_meta/meta.json" <<'JSON'
{"format": 2, "epoch": 4, "epochs": 10, "model": "sage", "hidden": 16, "layers": 2,
 "best_epoch": 3, "best_valid_acc": 0.71, "best_test_acc": null, "evals_since_best": 1,
 "complete": false, "stopped_early": false, "fanouts": [10, 5], "store_manifest_crc": 123}
JSON
# Format 3: the weights record and the run identity (a CRC-32 of the
# identity keys: the fuzzer finds the mutations that keep it matching
# through its comparison tracing).
cat >"$corpus_root/checkpoint_meta/meta3.json" <<'JSON'
{"format": 3, "epoch": 2, "model": "sage", "hidden": 8, "layers": 2, "seed": 1,
 "store_manifest_crc": 7, "store_nodes": 40, "in_dim": 3, "classes": 2,
 "weights": {"bytes": 4096, "crc32": 3735928559}, "run_identity": 0,
 "best_epoch": 1, "complete": false}
JSON
cat >"$corpus_root/checkpoint_meta/weights-only.json" <<'JSON'
{"epoch": 1, "weights": {"bytes": 0, "crc32": 0}}
JSON
printf 'epoch-00004\n' >"$corpus_root/checkpoint_meta/LATEST"
printf 'src,dst\n0,1\n1,2\n' >"$corpus_root/text_edges/csv"
printf '\xef\xbb\xbf# comment\n%% mm\n0\t1\t0.5\r\n2\t3\n' >"$corpus_root/text_edges/tsv"
printf '\x41src dst\n-1 2\n99999999999999999999999999999999999999 1\n' >"$corpus_root/text_edges/fixed"

# ---- run
failed=()
for t in "${targets[@]}"; do
  mkdir -p "artifacts/$t"
  log="$logs/$t.log"
  status=0
  "$bin/$t" "$corpus_root/$t" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="artifacts/$t/" \
    >"$log" 2>&1 || status=$?
  first="$(grep -m1 -oE 'INITED cov: [0-9]+' "$log" | grep -oE '[0-9]+$' || echo '?')"
  last="$(grep -oE '(cov: [0-9]+)' "$log" | tail -n1 | grep -oE '[0-9]+$' || echo '?')"
  runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")"
  corp="$(grep -oE 'corp: [0-9]+/[0-9]+[kKMGb]*' "$log" | tail -n1 | cut -d' ' -f2)"
  if [ "$status" -ne 0 ]; then
    echo "fuzz smoke: $t FAILED (exit $status); inputs in fuzz/artifacts/$t/" >&2
    grep -E -A25 '^==[0-9]+== ERROR|panicked at|^SUMMARY' "$log" | head -n 60 >&2 || tail -n 40 "$log" >&2
    failed+=("$t")
  else
    echo "fuzz smoke: $t ok: ${runs:-?} runs in ${seconds} s, cov $first -> $last, corpus ${corp:-?}"
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz smoke: crashed: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz smoke: all ${#targets[@]} targets ran without crashes"
