#!/usr/bin/env bash
# A MAG-shaped chunked dataset through ginex, end to end (issue #31): the
# typed chunked import, derive-features, R-GCN trained out of core under
# --memory inside a memory cgroup whose limit (= --memory) includes the page
# cache (dropped first), predict under the same cap, and the chunked export
# of the imported store compared with the dataset. Needs root (cgroup v1),
# about 25 GB of disk in $WORK and a release build with the train feature:
#   cargo build --release -p ginex-cli --features train && bash tools/hetero-ooc.sh
# Not part of the check. Results: docs/lab/performance-journal.md, "MAG-shaped, out of core".
set -euo pipefail
cd "$(dirname "$0")/.."
COMMIT=$(git rev-parse --short HEAD)
export PATH="$(realpath "${BIN:-target/release}"):$PATH"
B=${WORK:-../ginex-hetero-ooc}
mkdir -p "$B" && cd "$B"
MIB=${MIB:-1792}; MEM=${MIB}MiB; MEM_BYTES=$((MIB << 20))
t() { local name=$1; shift; /usr/bin/time -f "TIME $name: %e s, peak RSS %M KiB" "$@"; }
rm -rf s0 c1 s1 c2 s2 s3 ckpt pred.npy
echo "commit $COMMIT, machine: $(nproc) cores, $(free -g | awk '/Mem/{print $2}') GiB, load $(cut -d' ' -f1-3 /proc/loadavg)"
t gen ginex gen --hetero --nodes 5000000 --avg-degree 12 --dim 256 --classes 16 --seed 5 --quiet --out s0
t export0 ginex-export dgl s0 --out c1 --quiet
rm -rf s0
t import ginex-import dgl c1/metadata.json --num-classes 16 --out s1 --memory 2GiB --quiet
t export1 ginex-export dgl s1 --out c2 --quiet
# The data files byte for byte; metadata.json but its graph_name (the
# store directory's name).
diff -r -x metadata.json c1 c2
diff <(grep -v graph_name c1/metadata.json) <(grep -v graph_name c2/metadata.json)
echo "ROUND TRIP: the chunked export of the imported store equals the dataset (graph_name aside)"
rm -rf c1 c2
t derive-a ginex derive-features s1 --type author --from paper --via writes --out s2 --memory 1GiB
t derive-f ginex derive-features s2 --type field --from paper --via has_topic --out s3 --memory 1GiB
rm -rf s1 s2
ginex-dump s3 | head -40
du -b s3/features.pages
CG=/sys/fs/cgroup/memory/ginex-mag
rmdir $CG 2>/dev/null || true; mkdir $CG
echo $MEM_BYTES > $CG/memory.limit_in_bytes
echo 0 > $CG/memory.swappiness || true
sync; echo 3 > /proc/sys/vm/drop_caches
t train sh -c "echo \$\$ > $CG/cgroup.procs; exec ginex train s3 --model rgcn --fanouts 10,5 --batch-size 1000 --hidden 64 --epochs 2 --max-batches 150 --memory $MEM --checkpoint ckpt --report train.json"
echo "cgroup max usage $(cat $CG/memory.max_usage_in_bytes) bytes, failcnt $(cat $CG/memory.failcnt)"
seq 0 20 1999999 > pred_nodes.txt   # 100k papers (ids 0..2M are the paper type)
sync; echo 3 > /proc/sys/vm/drop_caches
echo 0 > $CG/memory.max_usage_in_bytes || true
t predict sh -c "echo \$\$ > $CG/cgroup.procs; exec ginex predict s3 --checkpoint ckpt --memory $MEM --nodes pred_nodes.txt --out pred.npy"
echo "cgroup max usage $(cat $CG/memory.max_usage_in_bytes) bytes"
ls -la pred.npy
rm -rf s3 ckpt pred.npy pred_nodes.txt
rmdir $CG
