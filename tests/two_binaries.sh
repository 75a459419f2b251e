#!/bin/sh
# The two binaries (docs/architecture.md, "Two binaries"): `recipebench` links no libtorch; `run` of a torch recipe
# becomes `recipebench-torch` beside it and trains; a dry run and a recipe that fails validation stay in the
# torch-less binary (its dry run equals the torch binary's, line for line; the failure is told once); alone, without
# its sibling, it refuses a torch run at exit 2 and says why. Usage: two_binaries.sh RECIPEBENCH SOURCE_DIR WORK_DIR
set -u
rb=$1 src=$2 d=$3
rm -rf "$d"; mkdir -p "$d/alone"
fail() { echo "$*"; exit 1; }
ldd "$rb" | grep -q 'libtorch' && fail "$rb links libtorch: $(ldd "$rb" | grep libtorch)"
tiny=$src/recipes/examples/qwen3.5-tiny-cpu.yaml
torch=$(dirname "$rb")/recipebench-torch
if [ -x "$torch" ]; then
  ldd "$torch" | grep -q 'libtorch' || fail "$torch does not link libtorch"
  "$rb" run "$tiny" --dry-run > "$d/dry-lean.txt" 2>&1 || fail "dry run: exit $?: $(cat "$d/dry-lean.txt")"
  "$torch" run "$tiny" --dry-run > "$d/dry-torch.txt" 2>&1 || fail "torch dry run: exit $?"
  # The host's available memory moves between the two calls: its lines are left out of the comparison.
  for f in lean torch; do grep -v 'available memory\|to spare' "$d/dry-$f.txt" > "$d/dry-$f.kept"; done
  [ "$(wc -l < "$d/dry-lean.kept")" -gt 10 ] || fail "the dry run is short: $(cat "$d/dry-lean.txt")"
  cmp -s "$d/dry-lean.kept" "$d/dry-torch.kept" || fail "the dry runs differ: $(diff "$d/dry-lean.kept" "$d/dry-torch.kept")"
  # A real run through the hand-off: 3 steps of one layer, a complete record.
  "$rb" run "$tiny" --steps 3 --window 1:2 --layers 1 --out "$d/runs" > "$d/run.txt" 2>&1 ||
    fail "run: exit $?: $(tail -5 "$d/run.txt")"
  grep -q '"status": "complete"' "$d"/runs/*.json || fail "no complete record: $(ls "$d/runs")"
  # A recipe that fails validation: reported by this binary, once.
  sed 's/^\( *tp:\) *[0-9]*/\1 3/' "$tiny" > "$d/bad.yaml"
  rc=0; "$rb" run "$d/bad.yaml" > "$d/bad.txt" 2>&1 || rc=$?
  [ "$rc" -eq 1 ] || fail "bad recipe: exit $rc, expected 1: $(cat "$d/bad.txt")"
  n=$(grep -c 'failed validation' "$d/bad.txt")
  [ "$n" -eq 1 ] || fail "bad recipe: 'failed validation' told $n times: $(cat "$d/bad.txt")"
fi
cp "$rb" "$d/alone/recipebench"
rc=0; out=$("$d/alone/recipebench" run "$tiny" --steps 3 --window 1:2 --out "$d/alone/runs" 2>&1) || rc=$?
[ "$rc" -eq 2 ] || fail "alone: exit $rc, expected 2: $out"
echo "$out" | grep -q "no backend 'torch' in this build (available: command); recipebench-torch, which runs it, is not beside this binary" ||
  fail "alone: $out"
[ ! -e "$d/alone/runs" ] || [ -z "$(ls "$d/alone/runs")" ] || fail "alone: a record was written"
"$d/alone/recipebench" run "$tiny" --dry-run > /dev/null 2>&1 || fail "alone: the dry run failed"
echo "recipebench links no libtorch; run hands a torch recipe to recipebench-torch; alone it refuses at exit 2"
