#!/usr/bin/env bash
# make colab-check: the course under the versions a Colab runtime ships, on this machine's CPU.
#   1. .venv-colab-RUNTIME from requirements-colab-RUNTIME.txt (RUNTIME: gpu or tpu; the TPU list has no TensorFlow);
#   2. course_utils installed from WHEEL as the notebooks' install cell does (plain pip install, no upgrade flags),
#      failing when that changes any package the list installed (Colab's numpy, ipywidgets, jax must stay);
#   3. every notebook (or those named after the wheel) at COURSE_SIZE=smoke in that environment's kernel, run by
#      RUNNER (a Python with nbclient: the course's .venv) into build/colab-check/RUNTIME; an error cell fails it.
# Usage: tools/colab_check.sh RUNTIME WHEEL RUNNER [notebooks/NN_name.ipynb ...]
# PIP_SOURCE (e.g. "--no-index --find-links wheelhouse") is passed to pip: offline after the first set-up.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 3 ] || { echo "usage: tools/colab_check.sh RUNTIME WHEEL RUNNER [notebook ...]" >&2; exit 2; }
runtime=$1 wheel=$2 runner=$3
shift 3
case "$runtime" in gpu|tpu) ;; *) echo "RUNTIME must be gpu or tpu; got '$runtime'" >&2; exit 2 ;; esac
[ -f "$wheel" ] || { echo "WHEEL: no such file '$wheel' (make colab-bundle writes it)" >&2; exit 2; }
[ -x "$runner" ] || { echo "RUNNER: '$runner' is not an executable Python (make setup builds .venv)" >&2; exit 2; }
venv=.venv-colab-$runtime out=build/colab-check/$runtime
pip=("$venv/bin/python" -m pip --disable-pip-version-check)
read -r -a source <<< "${PIP_SOURCE:-}"
start=$(date +%s)

test -x "$venv/bin/python" || python3 -m venv "$venv"
"${pip[@]}" install --quiet "${source[@]}" -r "requirements-colab-$runtime.txt"
"${pip[@]}" uninstall --quiet --yes course_utils 2>/dev/null || true
"${pip[@]}" freeze --exclude-editable | sort > "$venv/colab-freeze.txt"
"${pip[@]}" install --quiet "${source[@]}" "$wheel"  # the install cell's command, with the uploaded wheel
changed=$("${pip[@]}" freeze --exclude-editable | sort | grep -v '^course[-_]utils[=@ ]' \
          | diff "$venv/colab-freeze.txt" - || true)
if [ -n "$changed" ]; then
  echo "installing course_utils changed what Colab ships (its requirements must be looser):" >&2
  echo "$changed" >&2
  exit 1
fi
"$venv/bin/python" -m ipykernel install --sys-prefix --name "colab-$runtime" \
  --display-name "Python 3 (Colab $runtime versions)" >/dev/null
mkdir -p "$out"
"${pip[@]}" freeze > "$out/versions.txt"
echo "set-up of $venv: $(( $(date +%s) - start )) s"
COURSE_SIZE=smoke JUPYTER_PATH="$PWD/$venv/share/jupyter" \
  "$runner" tools/run_course.py --kernel "colab-$runtime" --out "$out" --timeout 900 "$@"
