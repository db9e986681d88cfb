#!/usr/bin/env bash
# The findings device call (bench/device_findings.py says what it runs): on one GPU machine (16 cores) the
# translation preset multi30k_gpu en→de for both architectures + the CUDA-relevant tests on the GPU, and the
# Findings table's F1 quick runs (6 repeats per architecture) on the other cores, then compare + findings
# from their shared cache; hard budget 520 s, at most 8 files in OUT_DIR.
#
#   bench/device_session_findings.sh MULTI30K_DIR OUT_DIR [--tiny] [more bench/device_findings.py options]
#
# When the repository root holds .whl/ (wheels the device image lacks, carried by the caller) they are
# installed into /tmp/site first, as the device run of 2026-11-26-c did. PY names the Python (default python3).
set -u
M30K=${1:?usage: device_session_findings.sh MULTI30K_DIR OUT_DIR [--tiny] [options]}
OUT=${2:?usage: device_session_findings.sh MULTI30K_DIR OUT_DIR [--tiny] [options]}
shift 2
PY=${PY:-python3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 2
mkdir -p "$OUT"
if compgen -G ".whl/*.whl" >/dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
missing=$("$PY" -c "
import importlib.util as u
print(' '.join(m for m in ('torch', 'numpy', 'scipy', 'sklearn', 'diskcache', 'safetensors', 'sacrebleu', 'opacus')
               if u.find_spec(m) is None))" 2>&1) || missing="python: $missing"
if [ -n "$missing" ]; then
  echo "error: $PY cannot import: $missing (carry their wheels in .whl/)" >&2
  exit 2
fi
exec "$PY" bench/device_findings.py --multi30k "$M30K" --out "$OUT" "$@"
