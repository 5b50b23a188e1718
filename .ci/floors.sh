#!/bin/bash
# The lowest versions pyproject.toml declares, installed together (the test extras resolved around
# them), then the whole suite: `bash .ci/floors.sh` from the repository. Not part of .ci/run
# (it installs a second environment); run it when a floor changes.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${TMPDIR:-/tmp}/bpecli-floors-venv"
rm -rf "$venv"
python3 -m venv "$venv"
. "$venv/bin/activate"
pip install -q "typer==0.15.4" "rich==13.0.0" "regex==2023.3.22" "numpy==1.24.4" "tqdm==4.60.0" "pyarrow==14.0.0" -e ".[test]"
pip list 2>/dev/null | grep -iE "^(typer|click|rich|regex|numpy|tqdm|pyarrow) "
python -m pytest -q -p no:cacheprovider
