#!/usr/bin/env bash
# The headline sweep, unattended: Fig. 15 and Table IV at the `converge` scale (BSP and FL-R²SP
# with and without the filter, ASP, FedAsync, FedBuff; seeds 0-2), then the C sweep, the outlier
# table, robustness and outliers_scoring, all from ONE committed code version.
#
#   scripts/sweep_headline.sh COMMIT [WORKDIR]
#   e.g.  nohup scripts/sweep_headline.sh 1a2b3c4 > /dev/null 2>&1 &
#
# It makes (or reuses) a clean detached worktree of COMMIT at WORKDIR (default: a sibling of
# this checkout, ../sweep-<commit>), and runs every item there at `nice -n 19` into the
# worktree's own records/results (run cache: records/results/_runs, ignored by git). Each item
# runs seed by seed (--seeds 0, then 0,1, then 0,1,2): the runs already cached are skipped, so
# every pass writes the item's record for the seeds done so far, and REPORT.md and the docs'
# generated blocks are rebuilt in the worktree after it: results are published as they finish.
# A stopped sweep loses at most the run in flight; start the same command again to resume.
# Commit the records from the worktree (git -C WORKDIR switch -c <branch>; git add records
# REPORT.md ...). Log: WORKDIR/sweep.log (one line per run: [k/n], time left).
#
# Environment: PYTHON (default: this checkout's .venv/bin/python), FL_R2SP_DATA (default:
# ../shared/data beside this checkout), WORKERS (process-executor workers per run, default 2),
# CACHE (the run cache, default: ../sweep-cache beside this checkout, shared by every sweep
# worktree: a run is keyed by its configuration and code version, so a sweep from a later
# commit with the same engine code reuses the runs of an earlier one), SEEDS (default 0,1,2),
# ITEMS (default when unset: all, in the order above; empty: none, a check of the worktree and
# the environment only).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
commit="${1:?usage: scripts/sweep_headline.sh COMMIT [WORKDIR]}"
sha="$(git -C "$here" rev-parse --verify "$commit^{commit}")"
work="${2:-$(dirname "$here")/sweep-${sha:0:7}}"
py="${PYTHON:-$here/.venv/bin/python}"
export FL_R2SP_DATA="${FL_R2SP_DATA:-$(dirname "$here")/shared/data}"
workers="${WORKERS:-2}"
seeds="${SEEDS:-0,1,2}"
# Fig. 15 before Table IV: Table IV reads the filter-off pair from the cache only (Fig. 15 runs it).
items="${ITEMS-fig15 table4 c_sweep outliers robustness outliers_scoring}"

[ -x "$py" ] || { echo "no Python at $py (set PYTHON)" >&2; exit 2; }
[ -d "$FL_R2SP_DATA/cifar10" ] || { echo "no CIFAR-10 under $FL_R2SP_DATA (set FL_R2SP_DATA)" >&2; exit 2; }
if [ ! -e "$work" ]; then
  git -C "$here" worktree add --detach "$work" "$sha" >/dev/null
fi
[ "$(git -C "$work" rev-parse HEAD)" = "$sha" ] || { echo "$work is not at $sha" >&2; exit 2; }
# Only the records and the documents' generated blocks (rewritten by each publish) may differ
# from the commit: runs of edited code would not be recorded.
if [ -n "$(git -C "$work" status --porcelain -- fl_r2sp experiments ':!*.md')" ]; then
  echo "$work has edits under fl_r2sp/ or experiments/: use a clean worktree" >&2; exit 2
fi
cd "$work"
cache="${CACHE:-$(dirname "$here")/sweep-cache}"
mkdir -p "$cache" records/results
if [ ! -e records/results/_runs ]; then ln -s "$cache" records/results/_runs; fi
export PYTHONPATH="$work" OMP_NUM_THREADS=1
log="$work/sweep.log"
say() { echo "[$(date -u +%FT%TZ)] $*" | tee -a "$log"; }

scale_of() {  # the scale each item runs at
  case "$1" in
    robustness) echo laptop ;;          # digits, its own sizes
    outliers_scoring) echo paper ;;     # the paper's per-client setting, always
    *) echo converge ;;
  esac
}

publish() {
  nice -n 19 "$py" -m experiments.report --out records/results >>"$log" 2>&1 \
    || say "report rebuild failed (see above); the records are kept"
}

say "sweep of $sha in $work: items [$items], seeds $seeds, $workers workers, data $FL_R2SP_DATA, run cache $(readlink -f records/results/_runs)"
for item in $items; do
  done_seeds=""
  for seed in ${seeds//,/ }; do
    done_seeds="${done_seeds:+$done_seeds,}$seed"
    say "$item: seeds $done_seeds"
    nice -n 19 "$py" -m "experiments.flr2sp.$item" --scale "$(scale_of "$item")" \
      --seeds "$done_seeds" --out records/results \
      --executor processes --executor-workers "$workers" >>"$log" 2>&1 \
      || { say "$item failed at seeds $done_seeds (see $log)"; exit 1; }
    publish
    say "$item: seeds $done_seeds recorded (records/results/$item, REPORT.md)"
  done
done
say "sweep done: commit the records from $work"
