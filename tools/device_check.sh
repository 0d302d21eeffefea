#!/usr/bin/env bash
# The course on a CUDA machine, in one go (about 10 minutes on one recent GPU):
#   1. install the pinned stack with CUDA wheels into .venv-gpu (skipped with --preinstalled, for an image
#      that already holds torch/jax, or with --dry-run);
#   2. execute every notebook at gpu size into OUT/build (COURSE_SIZE=gpu; ci with --dry-run) and record each one's
#      minutes in OUT/gpu-minutes.json, and off --dry-run in ./gpu-minutes.json too, one entry per device: the
#      README course map's GPU column (tools/gpu_minutes.py; commit the file after the run);
#   3. run `make bench`'s benchmarks into OUT/bench.json (skipped with --skip-bench);
#   4. run `python -m course_utils.migrate assess` on the course CNN and on the transformer block into
#      OUT/assess/{cnn,transformer} (skipped with --skip-assess);
#   5. write OUT/summary.md: device, versions, minutes per notebook, the headline figures, and each assessed
#      model's gain, interval and decision.
# Usage: tools/device_check.sh [--dry-run] [--preinstalled] [--skip-bench] [--skip-assess] [--budget SECONDS]
#                              [--notebooks "00_measuring 02_operator_fusion"] [OUT]
# --notebooks takes course notebooks' names or paths of other notebooks (name.ipynb).
# --dry-run rehearses steps 2-4 on a CPU with the local .venv at ci size (or $COURSE_SIZE, e.g. smoke in the tests).
# --budget (default 600) bounds steps 2-4 together: the notebooks get 60% of it, the benchmarks and the
# assessments share the rest; a step cut short keeps what it finished. The script exits 1 when a notebook or benchmark failed or was cut.
set -euo pipefail
cd "$(dirname "$0")/.."

dry_run=0 preinstalled=0 skip_bench=0 skip_assess=0 notebooks="" out="" budget=600
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) dry_run=1 ;;
    --preinstalled) preinstalled=1 ;;
    --skip-bench) skip_bench=1 ;;
    --skip-assess) skip_assess=1 ;;
    --notebooks) notebooks="$2"; shift ;;
    --budget) budget="$2"; shift ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) out="$1" ;;
  esac
  shift
done
out="${out:-build/device}"
mkdir -p "$out"
start=$(date +%s)

if [ "$dry_run" = 1 ]; then
  python=.venv/bin/python; size=${COURSE_SIZE:-ci}
  [ -x "$python" ] || { echo "--dry-run needs the local .venv: run make setup first" >&2; exit 1; }
elif [ "$preinstalled" = 1 ]; then
  python=$(command -v python3); size=gpu
  "$python" -m pip install --quiet --no-deps --no-build-isolation -e . 2>/dev/null || export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
else
  size=gpu
  command -v nvidia-smi >/dev/null || { echo "no nvidia-smi: this is not a CUDA machine (use --dry-run)" >&2; exit 1; }
  python3 -m venv .venv-gpu
  python=.venv-gpu/bin/python
  "$python" -m pip install --quiet --upgrade pip
  # The same pins as requirements.txt, with the CUDA builds of the frameworks (tools/gpu_requirements.py).
  python3 tools/gpu_requirements.py requirements.txt > "$out/requirements-gpu.txt"
  "$python" -m pip install --quiet -r "$out/requirements-gpu.txt"
  "$python" -m pip install --quiet --no-deps --no-build-isolation -e .
fi
"$python" -m ipykernel install --sys-prefix --name eager-to-compiled --display-name "Python 3 (Eager to Compiled)" >/dev/null

{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo "no GPU (dry run)"; } > "$out/device.txt"

selected=()
for name in $notebooks; do  # a course notebook's name, or a path ending .ipynb (the tests' small one)
  case "$name" in *.ipynb) selected+=("$name") ;; *) selected+=("notebooks/$name.ipynb") ;; esac
done
failed=()
notebook_budget=$(( budget * 6 / 10 ))
COURSE_SIZE=$size timeout --signal=INT --kill-after=30 "$notebook_budget" \
  "$python" tools/run_course.py --kernel eager-to-compiled --out "$out/build" --timeout 600 "${selected[@]}" \
  > >(tee "$out/notebooks.log") 2>&1 || failed+=("notebooks (exit $?; see $out/notebooks.log)")
record=()
[ "$dry_run" = 1 ] || record=(--into gpu-minutes.json)
if [ -f "$out/build/summary.json" ]; then
  "$python" tools/gpu_minutes.py --out "$out" --size "$size" "${record[@]}" || failed+=("gpu-minutes.json (exit $?)")
fi

if [ "$skip_bench" = 0 ]; then
  bench_budget=$(( budget - ($(date +%s) - start) ))
  [ "$skip_assess" = 1 ] || bench_budget=$(( bench_budget / 2 ))
  if [ "$bench_budget" -lt 60 ]; then
    failed+=("benchmarks (not run: the budget of ${budget} s was spent)")
  else
    COURSE_SIZE=$size timeout --signal=INT --kill-after=30 "$bench_budget" \
      "$python" benchmarks/run_all.py --out "$out/bench.json" > "$out/bench.log" 2>&1 \
      || failed+=("benchmarks (exit $?; see $out/bench.log)")
  fi
fi

if [ "$skip_assess" = 0 ]; then
  # The migration decision on two different models, measured on this device (issue 29).
  for pair in "cnn:cnn_batches:cnn" "transformer:token_batches:transformer"; do
    IFS=: read -r make_model make_batches name <<< "$pair"
    assess_budget=$(( budget - ($(date +%s) - start) ))
    if [ "$assess_budget" -lt 60 ]; then
      failed+=("assess $name (not run: the budget of ${budget} s was spent)")
      continue
    fi
    # the examples' GPU sizes (notebook 07's sizes table has the CNN's; the transformer's are these)
    if [ "$name" = cnn ]; then sized=(--batches-arg batch=128); else
      sized=(--model-arg vocab=4096 --model-arg dim=512 --model-arg heads=8 --model-arg length=512
             --batches-arg vocab=4096 --batches-arg length=512 --batches-arg batch=32); fi
    COURSE_SIZE=$size timeout --signal=INT --kill-after=30 "$assess_budget" \
      "$python" -m course_utils.migrate assess --model "course_utils.migrate.examples:$make_model" \
      --batches "course_utils.migrate.examples:$make_batches" --processes 5 --steps 50 "${sized[@]}" \
      --out "$out/assess/$name" > "$out/assess-$name.log" 2>&1 \
      || failed+=("assess $name (exit $?; see $out/assess-$name.log)")
  done
fi

printf '%s\n' "${failed[@]}" > "$out/failed.txt"
"$python" tools/device_summary.py --out "$out" --seconds "$(( $(date +%s) - start ))"
echo "device check written to $out (summary.md, build/, bench.json, assess/)"
if [ "${#failed[@]}" -gt 0 ]; then
  printf 'FAILED: %s\n' "${failed[@]}" >&2
  exit 1
fi
