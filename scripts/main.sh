#!/usr/bin/env bash
# Install everything (into .venv) and run the main job: FL-R²SP in virtual time
# on scikit-learn's embedded digits data, 32 simulated clients in 4 groups,
# as a real `flwr run .` Flower simulation. Extra arguments go to `flwr run`,
# e.g.  bash scripts/main.sh --run-config "strategy='bsp'"
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
if ! .venv/bin/python -c "import fl_r2sp, flwr, torch" 2>/dev/null \
   || [ pyproject.toml -nt .venv/.installed ] || [ constraints.txt -nt .venv/.installed ]; then
  .venv/bin/pip install --quiet --upgrade pip
  .venv/bin/pip install --quiet -c constraints.txt -e ".[test]"
  touch .venv/.installed
fi
# A private Flower home (flwr writes config and a local SuperLink database there),
# no per-run reinstall of the app's dependencies, and a stop of the SuperLink that
# `flwr run` leaves running.
# flwr starts flower-superlink / flower-superexec by name: the venv's bin goes first on PATH.
export PATH="$PWD/.venv/bin:$PATH"
export FLWR_HOME="${FLWR_HOME:-$PWD/.flwr}"
export FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION=1
stop_superlink() { pkill -f -- "--database $FLWR_HOME/local-superlink" 2>/dev/null || true; }
trap stop_superlink EXIT
# Check the --run-config keys first: Flower's refusal of a bad key does not name it.
.venv/bin/python -m fl_r2sp.fl.flower.run_config_check "$@"
flwr run . --stream --federation-config "num-supernodes=32" "$@"
