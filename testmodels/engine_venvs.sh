#!/usr/bin/env bash
# The earlier engine releases, each in its own pinned venv (git-ignored), for the support-table generators
# (rules/data/gen/) and tests/test_engine_versions.py:
#   bash testmodels/engine_venvs.sh            # .venvs/ort-1.20 and .venvs/openvino-2024.6
#   bash testmodels/engine_venvs.sh ort-1.20   # one of them
# Pinned by testmodels/requirements/NAME.txt; a venv that already has every pin is left as it is.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
export PIP_DISABLE_PIP_VERSION_CHECK=1
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(ort-1.20 openvino-2024.6)
for name in "${names[@]}"; do
    req=$here/requirements/$name.txt
    venv=$root/.venvs/$name
    [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
    want=$(grep -oE '^[A-Za-z0-9_.-]+==[^ ]+' "$req" | tr 'A-Z_' 'a-z-' | sort)
    have=$("$venv/bin/pip" freeze 2>/dev/null | tr 'A-Z_' 'a-z-' | sort)
    if [ -n "$(comm -23 <(echo "$want") <(echo "$have"))" ]; then
        "$venv/bin/pip" install -q -r "$req"
    fi
    echo "$name: $("$venv/bin/python" -c 'import sys; print(sys.prefix)')"
done
