#!/usr/bin/env bash
# Rebuild the optimum-intel VLM corpus and its engine truth, one command:  bash testmodels/vlm/build.sh
# 1. .venvs/optimum_intel (pins: testmodels/pipelines/requirements/optimum_intel.txt; torch first, so pip takes
#    the CPU wheel on this machine's disk);
# 2. optimum_intel_vlm.py exports every arch of archs_a (and records the pinned venv's refusal of archs_b's)
#    into testmodels/vlm/optimum_intel/<arch>/ + _variants/, build.json;
# 3. truth_optimum_intel.py runs every healthy folder and seed -> testmodels/vlm/truth.json;
# 4. archs_b's archs are exported and run in archs_b.VENV (optimum-intel 2.2.0 caps them below
#    transformers 5.5.4): made from testmodels/pipelines/requirements/optimum_intel_tf457.txt when that exists.
# VLM_ONLY_A=1 stops after step 3. Offline throughout (HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE). Never imports graphlint.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"
export PIP_DISABLE_PIP_VERSION_CHECK=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONHASHSEED=0

venv() {  # venv NAME: create/refresh .venvs/NAME from its requirements file
  local req=testmodels/pipelines/requirements/$1.txt v=.venvs/$1
  [ -x "$v/bin/python" ] || python3 -m venv "$v"
  local torch; torch=$(grep -E '^torch==' "$req" || true)
  [ -z "$torch" ] || "$v/bin/pip" install -q "$torch"
  "$v/bin/pip" install -q -r "$req"
}

venv optimum_intel
start=$(date +%s)
.venvs/optimum_intel/bin/python -m testmodels.vlm.optimum_intel_vlm testmodels/vlm/optimum_intel
echo "build: $(( $(date +%s) - start )) s" >&2
start=$(date +%s)
.venvs/optimum_intel/bin/python -m testmodels.vlm.truth_optimum_intel
echo "truth: $(( $(date +%s) - start )) s" >&2

[ -z "${VLM_ONLY_A:-}" ] || exit 0  # VLM_ONLY_A=1: archs_a's folders and truth only
bvenv=$(sed -n 's/^VENV = "\(.*\)"$/\1/p' testmodels/vlm/archs_b.py 2>/dev/null || true)
if [ -n "$bvenv" ]; then
  name=$(basename "$bvenv")
  [ ! -f "testmodels/pipelines/requirements/$name.txt" ] || venv "$name"
  if [ -x "$bvenv/bin/python" ]; then
    "$bvenv/bin/python" -m testmodels.vlm.archs_b testmodels/vlm/optimum_intel
    "$bvenv/bin/python" -m testmodels.vlm.truth_b
  else
    echo "archs_b: $bvenv is missing (no requirements/$name.txt): its folders and truth were not rebuilt" >&2
  fi
fi
