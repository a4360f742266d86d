#!/usr/bin/env bash
# Every GPU check in one budgeted script, for a short loan of a GPU machine.
#
#   OUT=/tmp/gpu-out scripts/gpu_checks.sh        # GPU machine: budget 480 s, run under a 540 s limit
#   OUT=/tmp/gpu-out ONLY=cells BUDGET=540 scripts/gpu_checks.sh   # a second call: the cells only
#   OUT=/tmp/gpu-out DEVICE=cpu SCALE=smoke BENCH_DATA=synthetic STRETCH=4 BUDGET=1800 \
#     scripts/gpu_checks.sh   # CPU dry run (tests/scripts/test_gpu_checks.py)
#
# The default budget (480 s) fits one 600 s device call with room left, of a 15-minute loan,
# for a rerun of the stages that failed (ONLY="NAME ..."; a name also selects NAME-*).
# Stages in priority order; each is bounded by its own limit and by the budget left (minus
# 30 s to pack the results); one that does not fit is logged as skipped, a failing one is
# logged and the next one runs:
#   env                   40  nvidia-smi, versions, CIFAR-10 (and, at paper scale, Speech
#                             Commands) decoded once into the cache
#   a. cluster mode on CUDA: python -m fl_r2sp.cluster, mlp-wide on synthetic data, 4 workers
#      sharing the GPU, CLUSTER_ITERS (30) iterations each, one stage per run:
#   cluster-bsp           45  BSP, 1 PS
#   cluster-bsp-cpu       45  the same run on the CPU (BSP's final parameters are compared)
#   cluster-r2sp          45  R2SP, 1 PS
#   cluster-selective     45  selective reduce
#   cluster-dssync        45  DS-Sync, 2 racks
#   cluster-osp           45  OSP, 1 PS
#   cluster-table         20  experiments.common.cluster_cuda: $OUT/cluster_cuda.json (exit,
#                             it/s, BSP's largest parameter difference against the CPU run)
#   cuda-tests            40  pytest -m cuda: BSP equals one-process SGD on CUDA (needs pytest;
#                             on a machine without CUDA the test is skipped)
#   b. the batched executor's kernels (bench_executor.py, against the large-batch limit loop):
#   kernels-cnn           70  CNN, 128 clients x tau 100: grouped, bmm, graphs, bmm+graphs
#   kernels-resnet20      80  ResNet20, 128 clients x tau 20, the same variants
#   kernels-tolerance     60  serial (CPU) vs batched, 16 clients x tau 20, twice, per variant
#   kernels-compile       90  torch.compile variants (compile, bmm+compile, reduce-overhead)
#   c. federated paper-size cells (run_parallel, batched on $DEVICE, into the run cache):
#   cells-nofilter        the missing seeds: bsp-nofilter 2, fl-r2sp-nofilter 1 and 2
#   cells-filter          candidate default filter (relative + warm-up) and the oracle, 3 seeds
#   cells-asp-fedbuff     ASP and FedBuff, 3 seeds
#   cells-resnet20-lstm   ResNet20 and LSTM, BSP and FL-R2SP, seed 0, CELL_ROUNDS (5) rounds
#                         (at smoke scale every cell trains the smoke model, mlp)
# Needs: python3 with torch, numpy, pillow, scikit-learn; CIFAR-10 (and Speech Commands'
# sc_v002_logmel98x40_jpeg.npz) where fl_r2sp.datasets looks: $FL_R2SP_DATA or data/.
# Results ($OUT, at most 8 files): checks.txt (every stage's log), cluster_cuda.json,
# results.tgz[.part-*] (the run cache _runs/ and the cluster run folders without parameters).
set -u
OUT=${OUT:?set OUT to the output folder}
DEVICE=${DEVICE:-cuda}
SCALE=${SCALE:-paper}
BUDGET=${BUDGET:-480}
PY=${PY:-python3}
JOBS=${JOBS:-6}
ONLY=${ONLY:-}
BENCH_DATA=${BENCH_DATA:-cifar10}
CLUSTER_ITERS=${CLUSTER_ITERS:-30}
CELL_ROUNDS=${CELL_ROUNDS:-5}
STRETCH=${STRETCH:-1}  # stage limits x STRETCH (the CPU dry run: a slow machine)
RESERVE=30
start=$(date +%s)
export CUBLAS_WORKSPACE_CONFIG=:4096:8 FL_R2SP_PROGRESS=1 PYTHONUNBUFFERED=1 MPLBACKEND=Agg OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
export FL_R2SP_CACHE=${FL_R2SP_CACHE:-/tmp/fl_r2sp_cache}
mkdir -p "$OUT"
RES=$(mktemp -d)
log="$OUT/checks.txt"
left() { echo $((BUDGET - ($(date +%s) - start))); }
chosen() {  # is stage $1 selected by ONLY (empty: every stage)?
  [ -z "$ONLY" ] && return 0
  local w
  for w in $ONLY; do [[ $1 == "$w" || $1 == "$w"-* ]] && return 0; done
  return 1
}
stage() {  # stage NAME SECONDS CMD...: CMD for at most SECONDS, never past the budget
  local name=$1 secs=$2 room; shift 2
  chosen "$name" || return 0
  secs=$(( secs * STRETCH ))
  room=$(( $(left) - RESERVE ))
  [ "$room" -lt "$secs" ] && secs=$room
  if [ "$secs" -lt 10 ]; then
    echo "=== $name: skipped, $(left)s of budget left ===" >>"$log"
    return 0
  fi
  echo "=== $name (limit ${secs}s, $(left)s of budget left) ===" >>"$log"
  timeout --kill-after=5 "$secs" "$@" >>"$log" 2>&1
  echo "=== $name: exit $? after $(( $(date +%s) - start ))s ===" >>"$log"
}

kws=""
[ "$SCALE" = paper ] && kws="l(\"kws\", \"train\"); l(\"kws\", \"test\"); print(\"kws decoded\");"
decode="from fl_r2sp.datasets import load_dataset as l; l(\"cifar10\", \"train\"); \
l(\"cifar10\", \"test\"); print(\"cifar10 decoded\"); $kws"
[ "$BENCH_DATA" = cifar10 ] || decode="print(\"no data decoded: BENCH_DATA=$BENCH_DATA\")"
ONLY="" stage env 40 bash -c "nvidia-smi -L; $PY -c 'import sys, torch, numpy; print(sys.version); \
print(torch.__version__, torch.cuda.is_available(), numpy.__version__)'; $PY -c '$decode'"

# a. Cluster mode on CUDA: one short run per scheme family, 4 workers sharing the device.
cluster=(-m fl_r2sp.cluster --workers 4 --model mlp-wide --dataset synthetic
  --iterations "$CLUSTER_ITERS" --seed 0)
ps=(--servers 1 --eval-samples 0 --no-plots --progress 0)
stage cluster-bsp 45 $PY "${cluster[@]}" "${ps[@]}" --scheme bsp --devices "$DEVICE" \
  --run-dir "$RES/cluster/bsp"
stage cluster-bsp-cpu 45 $PY "${cluster[@]}" "${ps[@]}" --scheme bsp --devices cpu \
  --run-dir "$RES/cluster/bsp-cpu"
stage cluster-r2sp 45 $PY "${cluster[@]}" "${ps[@]}" --scheme r2sp --devices "$DEVICE" \
  --run-dir "$RES/cluster/r2sp"
stage cluster-selective 45 $PY "${cluster[@]}" --scheme selective --devices "$DEVICE" \
  --run-dir "$RES/cluster/selective"
stage cluster-dssync 45 $PY "${cluster[@]}" --scheme dssync --racks 0,1/2,3 --devices "$DEVICE" \
  --run-dir "$RES/cluster/dssync"
stage cluster-osp 45 $PY "${cluster[@]}" "${ps[@]}" --scheme osp --devices "$DEVICE" \
  --run-dir "$RES/cluster/osp"
stage cluster-table 20 $PY -m experiments.common.cluster_cuda --checks "$log" \
  --runs "$RES/cluster" --dest "$OUT/cluster_cuda.json"
stage cuda-tests 40 $PY -m pytest -q -p no:cacheprovider -m cuda -rs \
  tests/cluster/runtime/ps/test_run.py

# b. The batched executor's kernel variants against the large-batch loop on the same device.
# Smoke sizes come last on each command line, so they override (tau given as --iterations,
# never --full, which would reset tau to 100 after parsing); on a CPU they also keep to one
# worker process, no warm-up round and a small limit batch.
kern_small=(); compile_kernels=(compile bmm+compile reduce-overhead)
[ "$SCALE" = smoke ] && compile_kernels=(compile) &&
  kern_small=(--clients 4 --iterations 2 --workers 1 --warm-rounds 0 --limit-batch 64)
kern=(--backends batched --warm-rounds 1 --ulp-clients 0 --memory-clients --data "$BENCH_DATA")
variants=(--kernels grouped bmm graphs bmm+graphs)
stage kernels-cnn 70 $PY benchmarks/bench_executor.py --device "$DEVICE" "${kern[@]}" \
  "${variants[@]}" --iterations 100 --limit-batch 4096 "${kern_small[@]}"
stage kernels-resnet20 80 $PY benchmarks/bench_executor.py --device "$DEVICE" "${kern[@]}" \
  --model resnet20 "${variants[@]}" --iterations 20 --limit-batch 1024 "${kern_small[@]}"
stage kernels-tolerance 60 $PY benchmarks/bench_executor.py --device "$DEVICE" \
  --backends serial batched "${variants[@]}" --clients 16 --iterations 20 --repeat 2 \
  --ulp-clients 4 --memory-clients --data "$BENCH_DATA" "${kern_small[@]}"
stage kernels-compile 90 $PY benchmarks/bench_executor.py --device "$DEVICE" "${kern[@]}" \
  --kernels "${compile_kernels[@]}" --iterations 100 --limit-batch 4096 "${kern_small[@]}"

# c. Federated paper-size cells, whatever budget is left, in priority order.
rp="$PY -m experiments.flr2sp.run_parallel --scale $SCALE --executor batched \
--compute-device $DEVICE --out $RES"
cnn="--models cnn" big="--models resnet20,lstm"
[ "$SCALE" = smoke ] && cnn="" big=""
both='wait -n; r=$?; wait -n; exit $((r | $?))'  # two run_parallel side by side: fail if either does
stage cells-nofilter 600 bash -c "$rp $cnn --seeds 2 --schemes bsp-nofilter --jobs 1 & \
$rp $cnn --seeds 1,2 --schemes fl-r2sp-nofilter --jobs 2 & $both"
stage cells-filter 600 $rp $cnn --seeds 0,1,2 --schemes fl-r2sp-relative-warmup,fl-r2sp-oracle \
  --jobs "$JOBS"
stage cells-asp-fedbuff 600 $rp $cnn --seeds 0,1,2 --schemes asp,fedbuff --jobs "$JOBS"
stage cells-resnet20-lstm 600 $rp $big --seeds 0 --schemes bsp,fl-r2sp --rounds "$CELL_ROUNDS" \
  --jobs 4

# The run cache and the cluster run folders, without the parameters (megabytes per run).
(cd "$RES" && tar czf "$OUT/results.tgz" --exclude=final_params.pt .)
if [ "$(stat -c %s "$OUT/results.tgz")" -gt 15000000 ]; then
  split -b 15000000 "$OUT/results.tgz" "$OUT/results.tgz.part-" && rm "$OUT/results.tgz"
fi
echo "total $(( $(date +%s) - start ))s" >>"$log"
