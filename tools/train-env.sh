# Sourced (`. tools/train-env.sh`) by the training scripts (citeseer.sh,
# labor-accuracy.sh, link-citeseer.sh, link-mrr.sh), from the repository
# root: one libtorch thread unless OMP_NUM_THREADS says otherwise (more
# oversubscribe a small machine), the ginex binaries in GINEX_BIN (else
# target/release, else target/debug) and libtorch's environment
# (tools/setup-libtorch.sh, unless the caller set it up already).
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
if [ -z "${GINEX_BIN:-}" ]; then
  GINEX_BIN=target/release
  [ -x "$GINEX_BIN/ginex" ] || GINEX_BIN=target/debug
fi
[ -n "${LIBTORCH_USE_PYTORCH:-}" ] || eval "$(bash tools/setup-libtorch.sh --env)"

# import_citeseer DATA STORE: the Citeseer arrays of DATA (edges, features,
# labels, train/valid/test ids as .npy) as an undirected store at STORE,
# unless it is there already.
import_citeseer() {
  [ -d "$2" ] && return 0
  "$GINEX_BIN/ginex-import" files --edges "$1/edges.npy" --features "$1/features.npy" \
    --labels "$1/labels.npy" --train-ids "$1/train.npy" --valid-ids "$1/valid.npy" \
    --test-ids "$1/test.npy" --undirected --quiet --out "$2" >/dev/null
}
