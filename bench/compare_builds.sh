#!/usr/bin/env bash
# Traced kernel time of this tree beside another build's, one case at a time, the two back
# to back on one GPU: differences of a few points between builds show only side by side.
# OTHER is a tree holding native/ gwatch_nb/ bench/ examples/ of the other build, e.g.
#   git archive REV native gwatch_nb bench examples | tar -x -C .cmp/old
# (made where git is, then carried to the GPU machine with this tree).
#   bash bench/compare_builds.sh OTHER CASE...      (lines also go to $OUT/compare.txt)
set -u
cd "$(dirname "$0")/.."
OTHER=$1
shift
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 TRITON_DEFAULT_FP_FUSION=1
INC=$(python3 -c "import sysconfig; print(sysconfig.get_paths()['include'])")
SUF=$(python3 -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
for tree in "$OTHER" .; do  # both built the same way, in place
  gcc -O2 -std=c99 -shared -fPIC -I"$tree/native" -I"$INC" "$tree"/native/*.c -o "$tree/gwatch_nb/_native$SUF" ||
    { echo "building $tree failed"; exit 1; }
done
for case in "$@"; do
  for build in "$OTHER" .; do
    label=$([ "$build" = . ] && echo this || echo other)
    PYTHONPATH="$build${PYTHONPATH:+:$PYTHONPATH}" python3 "$build/bench/overhead.py" --cases "$case" --proton none \
      --rounds 3 --iters 20 --out "$OUT/compare-$label-$case" 2>/dev/null |
      grep -E "^$case +gwatch" | sed "s/^/$label /" | tee -a "$OUT/compare.txt"
  done
done
