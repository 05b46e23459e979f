#!/usr/bin/env bash
# What a session with a GPU checks, in one device run of about 8 minutes (docs/gpu.md, "Checking on
# hardware"). Run from the repository root on the GPU machine:
#
#     OUT=/tmp/out bash benchmarks/gpu_check.sh [BOX_TESTS BOX_CHECK]
#
# The GPU machine reaches nothing outside, so the session carries two ignored folders along:
# .data (corpus/gutenberg-1M.txt.xz, corpus/gutenberg-10M.txt.xz, sts-dev/stsb.dev.tsv; or set
# SCBOW_DATA) and .whl (a numpy<2.5 wheel for the machine's Python: numba-cuda 0.30.4 cannot compile
# with numpy 2.5).
# Steps, each in its own time box, everything into $OUT: the environment; with the machine's numpy
# 2.5, the one-line error of `train --device cuda`, then the wheel put ahead of it; tests/test_cuda.py
# (not slow) on the hardware; benchmarks/gpu_check.py (the 30-sentence corpus and --lr 1e30 on both
# devices, 1M and 10M with the defaults on 16 CPU threads and on the GPU) into $OUT/gpu_check.json.
# The boxes are seconds (default 150 and 270: the whole script stays under 10 minutes).
set -u
export PYTHONUNBUFFERED=1
ROOT=$(pwd)
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
BT=${1:-150}
BC=${2:-270}
export SCBOW_DATA=${SCBOW_DATA:-$ROOT/.data}
export PYTHONPATH=$ROOT${PYTHONPATH:+:$PYTHONPATH}
log() { echo "[$(date +%T) +$SECONDS s] $*"; }
{
log env
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
python3 - <<'P'
import importlib.metadata as m
for n in ("numba", "numba-cuda", "numpy", "click", "llvmlite", "cuda-bindings", "pytest"):
    try:
        print(n, m.version(n))
    except Exception as e:
        print(n, "missing", e)
P
nproc
ls -la "$SCBOW_DATA/corpus" "$SCBOW_DATA/sts-dev" 2>&1
log numpy
python3 - <<'P' > /tmp/tiny.txt
import sys
sys.path.insert(0, "tests")
from conftest import synthetic_text
print(synthetic_text(n_docs=3, sents_per_doc=10, seed=3))
P
if python3 -c "import numpy, sys; sys.exit(0 if tuple(map(int, numpy.__version__.split('.')[:2])) >= (2, 5) else 1)"; then
    echo "numpy >= 2.5: what train --device cuda says (one Error line, exit 1):"
    timeout 60 python3 -m scbow train /tmp/tiny.txt --min-count 1 --device cuda -o /tmp/m-np25 2>&1 | tail -3
    echo "rc=${PIPESTATUS[0]}"
    wheel=$(ls "$ROOT"/.whl/numpy-*.whl 2>/dev/null | head -1)
    if [ -n "$wheel" ]; then
        python3 -m pip install -q --no-deps --no-index --target /tmp/np "$wheel" 2>&1 | tail -2
        export PYTHONPATH=/tmp/np:$PYTHONPATH
    else
        echo "no numpy wheel in .whl: the CUDA steps below will fail"
    fi
fi
python3 -c "import numpy; print('numpy', numpy.__version__)"
python3 -c "import scbow.training.backends.cuda as c; print('cuda_problem:', c.cuda_problem())"
log smoke
timeout 60 python3 -m scbow train /tmp/tiny.txt --min-count 1 --device cuda --dim 8 --word-dim 4 -o /tmp/m-tiny 2>&1 | tail -4
echo "smoke rc=${PIPESTATUS[0]}"
log tests
timeout "$BT" python3 -m pytest tests/test_cuda.py -q -rfEs -m "not slow" -p no:cacheprovider \
    --junitxml="$OUT/test_cuda.xml" 2>&1 | tail -30
echo "tests rc=${PIPESTATUS[0]}"
log check
timeout "$BC" python3 -m benchmarks.run gpu_check --out "$OUT/gpu_check.json" --threads 16 2>&1 | tail -30
echo "check rc=${PIPESTATUS[0]}"
log end
} 2>&1 | tee "$OUT/gpu_check.log"
