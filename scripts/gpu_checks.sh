#!/usr/bin/env bash
# Every GPU check of the federated executor in one go, for a short loan of a GPU machine.
#
#   OUT=/tmp/gpu-out scripts/gpu_checks.sh            # on the GPU machine (budget 480 s)
#   OUT=/tmp/gpu-out DEVICE=cpu SCALE=smoke BUDGET=300 scripts/gpu_checks.sh   # dry run here
#
# Stages (each bounded by `timeout`; a failing stage is logged and the next one runs):
#   0  environment, data decoded once into the cache, a smoke run of the batched executor
#   1  bench_executor: limit (one large-batch loop on the same GPU) vs batched, CNN, 128
#      clients x tau 100, and peak memory for 128 / 1,000 clients
#   2  tolerance and rerun determinism: serial (CPU) vs batched, 16 clients x tau 20, twice
#   3  ResNet20 cost of a paper-size round (128 clients x tau 100), batched
#   4  paper-size runs into the experiments' run cache, until the budget is spent:
#      Fig. 15 / Table IV CNN seed 0 (BSP, FL-R2SP, both without the filter) beside the
#      outlier-scoring runs (2 partition modes x 3 seeds)
# Needs: python3 with torch, numpy, pillow, scikit-learn; CIFAR-10 in $FL_R2SP_DATA/cifar10.
# Results: $OUT/checks.txt (stages 0-3), $OUT/runs.log (stage 4), $OUT/results.tgz[.part-*].
set -u
OUT=${OUT:?set OUT to the output folder}
DEVICE=${DEVICE:-cuda}
SCALE=${SCALE:-paper}
BUDGET=${BUDGET:-480}
PY=${PY:-python3}
JOBS=${JOBS:-6}
start=$(date +%s)
export CUBLAS_WORKSPACE_CONFIG=:4096:8 FL_R2SP_PROGRESS=1 PYTHONUNBUFFERED=1 MPLBACKEND=Agg OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
export FL_R2SP_CACHE=${FL_R2SP_CACHE:-/tmp/fl_r2sp_cache}
mkdir -p "$OUT"
RES=$(mktemp -d)
log="$OUT/checks.txt"
left() { echo $((BUDGET - ($(date +%s) - start))); }
stage() {  # stage NAME SECONDS CMD...
  local name=$1 secs=$2; shift 2
  echo "=== $name (limit ${secs}s, $(left)s of budget left) ===" >>"$log"
  timeout --kill-after=5 "$secs" "$@" >>"$log" 2>&1
  echo "=== $name: exit $? after $(( $(date +%s) - start ))s ===" >>"$log"
}
small=()
[ "$SCALE" = smoke ] && small=(--clients 8 --iterations 2 --memory-clients 8 16)

stage env 120 bash -c "nvidia-smi -L; $PY -c 'import sys, torch, numpy; print(sys.version); \
print(torch.__version__, torch.cuda.is_available(), numpy.__version__)'; \
$PY -c 'from fl_r2sp.datasets import load_dataset as l; l(\"cifar10\", \"train\"); \
l(\"cifar10\", \"test\"); print(\"cifar10 decoded\")' && \
$PY -m experiments.flr2sp.run_parallel --scale smoke --seeds 0 --schemes fl-r2sp --jobs 1 \
--executor batched --compute-device $DEVICE --out $RES/smoke"
stage bench 200 $PY benchmarks/bench_executor.py --device "$DEVICE" --backends batched --full \
  --limit-batch 4096 --ulp-clients 0 --data cifar10 "${small[@]}"
stage tolerance 120 $PY benchmarks/bench_executor.py --device "$DEVICE" --backends serial batched \
  --clients 16 --iterations 20 --repeat 2 --ulp-clients 4 --memory-clients --data cifar10
stage resnet20 120 $PY benchmarks/bench_executor.py --device "$DEVICE" --backends batched \
  --model resnet20 --full --limit-batch 1024 --ulp-clients 0 --memory-clients --data cifar10 \
  "${small[@]}"

# Stage 4: whatever budget is left, minus time to pack the results.
wall=$(( $(left) - 30 ))
if [ "$wall" -gt 30 ]; then
  common=(--scale "$SCALE" --executor batched --compute-device "$DEVICE" --out "$RES")
  $PY -m experiments.flr2sp.run_parallel "${common[@]}" --models cnn --seeds 0 \
    --schemes bsp,fl-r2sp,bsp-nofilter,fl-r2sp-nofilter --jobs 4 --wall-limit "$wall" \
    >"$OUT/runs.log" 2>&1 &
  $PY -m experiments.flr2sp.run_parallel "${common[@]}" --seeds 0,1,2 --schemes "" \
    --scoring paper,paper-strict --jobs $((JOBS - 4 > 0 ? JOBS - 4 : 1)) --wall-limit "$wall" \
    >"$OUT/scoring.log" 2>&1 &
  wait
fi
(cd "$RES" && tar czf "$OUT/results.tgz" --exclude=smoke .)
if [ "$(stat -c %s "$OUT/results.tgz")" -gt 15000000 ]; then
  split -b 15000000 "$OUT/results.tgz" "$OUT/results.tgz.part-" && rm "$OUT/results.tgz"
fi
echo "total $(( $(date +%s) - start ))s" >>"$log"
