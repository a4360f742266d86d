#!/usr/bin/env bash
# Every command that regenerates the FL-R²SP paper's FL items, then the plots and the report.
# Usage: experiments/run_all.sh [smoke|laptop|paper] [seeds]   (default: laptop 0,1,2)
# Each script is resumable: finished runs are cached under $OUT/_runs and skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
SCALE="${1:-laptop}"
SEEDS="${2:-0,1,2}"
OUT="${OUT:-records/results}"
PY="${PYTHON:-.venv/bin/python}"
mkdir -p "$OUT/logs"
run() { echo "== $1"; "$PY" -m "experiments.flr2sp.$1" --scale "$SCALE" --seeds "$SEEDS" --out "$OUT" \
          2>&1 | tee "$OUT/logs/$1-$SCALE.log"; }

# Timing-only items (paper size at laptop and paper scale; seconds to minutes each).
run table5     # Table V: push/pull time, communication speedup (also feeds fig16, fig17, table4)
run fig16      # Fig. 16: Gantt charts of client phases
run fig17      # Fig. 17: server egress trace and peak ratio
run table2     # Table II: slowdown of 128 clients vs 1 client
run fig18      # Fig. 18: round time vs group size
# Real-training items (shrunk at laptop scale; see experiments/README.md).
run table4     # Table IV: per-round time and convergence time
run fig15      # Fig. 15: final accuracy per scheme, with/without filter, + FedBuff
run outliers   # outlier filter precision/recall and false-positive rate
run c_sweep    # round time and accuracy vs C
# The paper-setting scoring experiment (paper per-client setting at every scale but smoke;
# about ten CPU minutes per run, six runs): uncomment to include it.
# run outliers_scoring
# Paper-size Table IV / Fig. 15 (tabulates cached `run_parallel` runs only; never trains).
run paper_scale
# Plot step and report.
"$PY" -m experiments.flr2sp.plots --out "$OUT"
"$PY" -m experiments.report --out "$OUT"
