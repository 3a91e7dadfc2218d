#!/usr/bin/env bash
# Rebuild one export pipeline's committed models with the real tool, in its own pinned venv:
#   bash testmodels/pipelines/build.sh NAME      # NAME: a testmodels/pipelines/NAME.py script
# The venv is .venvs/NAME (git-ignored), pinned by requirements/NAME.txt. torch, where a pipeline
# needs it, is installed first, so pip takes the CPU wheel on this machine's disk, never a CUDA build.
# The script writes testmodels/pipelines/NAME/ (models) and testmodels/pipelines/NAME.toml (manifest).
set -euo pipefail
name=$1
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
req=$here/requirements/$name.txt
venv=$root/.venvs/$name
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
export PIP_DISABLE_PIP_VERSION_CHECK=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
torch=$(grep -E '^torch==' "$req" || true)
[ -z "$torch" ] || "$venv/bin/pip" install -q "$torch"
"$venv/bin/pip" install -q -r "$req"
cd "$root"
"$venv/bin/python" -m "testmodels.pipelines.$name" "$here/$name"
