#!/usr/bin/env bash
# One call on a lent GPU machine (one GPU, 16 CPU cores), sized to end within 9 minutes:
#   * bench/gpu_check.py on the GPU, on the cores the CPU runs leave (4 with both architectures, 10 with
#     one; the figures the README and issues name);
#   * at the same time, on other cores, the real-data translation preset `multi30k_cpu` with
#     3 repeats × the architectures of CPU_ARCHS × 2 directions (en→de, de→en) on the CPU, one core per
#     run (MIA_DEVICE=cpu, OMP_NUM_THREADS=1: each run's wall time is a one-core time on an otherwise
#     idle core), then `python -m core compare --repeats 3` per direction from the shared cache.
#
#   bench/device_session.sh MULTI30K_DIR OUT_DIR [--tiny]
#
# CPU_ARCHS (default "ffnn rnn") picks the architectures of the CPU runs: with one, 6 runs take
# cores 0-5 and gpu_check gets the other 10 (its paper step trains six models side by side, one
# worker process each), and the compare step is left out (it needs both).
# PY names the Python (default: python3; the device image's holds torch). --tiny shrinks every
# run (a few records, one epoch) to check the wiring on any machine in a minute: nothing it
# prints is a measurement. Everything lands in OUT_DIR: gpu_check.json/.log, compare_SRCTGT.json,
# m30k_runs.tgz (each run's JSON and log) and times.tsv (run, wall s, user s, sys s, rc).
set -u
M30K=${1:?usage: device_session.sh MULTI30K_DIR OUT_DIR [--tiny]}
OUT=${2:?usage: device_session.sh MULTI30K_DIR OUT_DIR [--tiny]}
TINY=${3:-}
PY=${PY:-python3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 2
mkdir -p "$OUT"
WORK=$(mktemp -d /tmp/device_session.XXXXXX)
export MIA_CACHE_DIR="$WORK/cache" PYTHONUNBUFFERED=1
RUNS="$WORK/runs"; mkdir -p "$RUNS"
CPU_LIMIT_S=440; CHECK_BUDGET_S=400; CHECK_LIMIT_S=520
TINY_SET=()
if [ "$TINY" = "--tiny" ]; then
  CPU_LIMIT_S=120; CHECK_LIMIT_S=300
  TINY_SET=(--set n_train=24 --set n_eval=12 --set epochs=1 --set n_shadows=1 --set "attack_epochs="
            --set emb=8 --set hidden=8 --set bleu_sentences=4 --set n_examples=1)
fi
NCORES=$(nproc)
CPU_ARCHS=${CPU_ARCHS:-"ffnn rnn"}
N_CPU_RUNS=$((6 * $(echo $CPU_ARCHS | wc -w)))
CHECK_CORES="$N_CPU_RUNS-15"; [ "$N_CPU_RUNS" -gt 12 ] && CHECK_CORES="12-15"
pin() {  # pin to cores "$1" where taskset exists and the machine has them
  if command -v taskset >/dev/null && [ "$NCORES" -ge 16 ]; then taskset -c "$1" "${@:2}"; else "${@:2}"; fi
}
SEEDS=$($PY -c "from core.analyses.repeats import repeat_seed; print(*[repeat_seed(0, r) for r in range(3)])") || exit 2
echo "host $(hostname) · $NCORES cores · commit ${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo "?")} · seeds $SEEDS"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || true

CHECK_ARGS=(--multi30k "$M30K" --budget-s "$CHECK_BUDGET_S" --json "$OUT/gpu_check.json")
[ "$TINY" = "--tiny" ] && CHECK_ARGS+=(--tiny)
( pin "$CHECK_CORES" timeout "$CHECK_LIMIT_S" "$PY" bench/gpu_check.py "${CHECK_ARGS[@]}" >"$OUT/gpu_check.log" 2>&1;
  echo "gpu_check rc $?" >>"$OUT/gpu_check.log" ) &
CHECK_PID=$!

core=0
printf 'run\twall_s\tuser_s\tsys_s\trc\n' >"$OUT/times.tsv"
for pair in en:de de:en; do
  src=${pair%:*}; tgt=${pair#*:}
  for arch in $CPU_ARCHS; do
    r=0
    for seed in $SEEDS; do
      name="${src}${tgt}_${arch}_r${r}"
      (
        TIMEFORMAT="%R	%U	%S"
        { time pin "$core" env MIA_DEVICE=cpu OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 timeout "$CPU_LIMIT_S" \
            "$PY" -m core run --task translation --arch "$arch" --preset multi30k_cpu --set "data_dir=$M30K" \
            --set "src_lang=$src" --set "tgt_lang=$tgt" --set "seed=$seed" "${TINY_SET[@]}" --quiet \
            --out "$RUNS/$name.json" >"$RUNS/$name.log" 2>&1; echo "rc $?" >"$RUNS/$name.rc"; } 2>"$RUNS/$name.time"
        printf '%s\t%s\t%s\n' "$name" "$(cat "$RUNS/$name.time")" "$(cut -d' ' -f2 "$RUNS/$name.rc")" >>"$OUT/times.tsv"
      ) &
      core=$((core + 1)); r=$((r + 1))
    done
  done
done
wait $(jobs -p | grep -v "^$CHECK_PID$") 2>/dev/null
echo "cpu runs done: $(date +%T)"
for pair in en:de de:en; do
  [ "$CPU_ARCHS" = "ffnn rnn" ] || break
  src=${pair%:*}; tgt=${pair#*:}
  MIA_DEVICE=cpu OMP_NUM_THREADS=4 timeout 45 "$PY" -m core compare --task translation --preset multi30k_cpu \
    --set "data_dir=$M30K" --set "src_lang=$src" --set "tgt_lang=$tgt" "${TINY_SET[@]}" --repeats 3 --quiet \
    --out "$OUT/compare_${src}${tgt}.json" >"$RUNS/compare_${src}${tgt}.log" 2>&1
  echo "compare $src→$tgt rc $?"
done
tar -czf "$OUT/m30k_runs.tgz" -C "$WORK" runs
wait "$CHECK_PID"
tail -n 40 "$OUT/gpu_check.log"
cat "$OUT/times.tsv"
rm -rf "$WORK"
