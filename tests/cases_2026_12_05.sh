#!/bin/sh
# The cases of 2026-12-05 (issue 48) through the binary, as a user runs them: cases_2026_12_05.sh RECIPEBENCH SOURCE
# WORKDIR PART, PART one of report-layout, cpu-suggestions, cli-habits, predict-notes, cosmetic, mfu-printed,
# layout-pricing, predict-memory-measured, seed-page. Prints what failed;
# exit 1 then.
set -u
rb=$1; src=$2; work=$3; part=$4
cases=$src/tests/data/cases
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work"; mkdir -p "$work"

case $part in
report-layout)
  # report-reads-config-json-as-run-record: the documented layout (config.json beside the recipe) is ranked; so are
  # its variants: config.json in a sub-folder, a catalog file, a prediction and a stray JSON inside the walked folder.
  d=$cases/report-reads-config-json-as-run-record
  out=$("$rb" report "$d/recipes" --out "$work/board" --catalog "$d/my-catalog.yaml" 2>&1) || fail "report: $out"
  echo "$out" | grep -q '^ranked 1 entry in 1 group' || fail "report: $out"
  echo "$out" | grep -q 'note' && fail "a note for the recipe's own config.json: $out"
  cp -r "$d/recipes" "$work/recipes" && chmod -R u+w "$work/recipes"
  h=$work/recipes/deepseek-v3/h800
  mkdir "$h/hf" && mv "$h/config.json" "$h/hf/config.json"
  sed -i 's|config: config.json|config: hf/config.json|' "$h/dsv3-pp16-ep64-dp128.yaml"
  cp "$d/my-catalog.yaml" "$work/recipes/my-catalog.yaml"
  echo '{"schema": "recipebench-prediction/1", "step_seconds": 1}' > "$work/recipes/prediction.json"
  echo '{"vocab_size": 32000}' > "$work/recipes/tokenizer_config.json"
  echo 'lr: 0.0001' > "$work/recipes/train.yaml"
  out=$("$rb" report "$work/recipes" --out "$work/board2" --catalog "$d/my-catalog.yaml" 2>&1) || fail "variants: $out"
  echo "$out" | grep -q '^ranked 1 entry in 1 group' || fail "variants: $out"
  echo "$out" | grep -q "my-catalog.yaml: note: skipped, a hardware catalog, not a recipe (give it with --catalog)$" ||
    fail "catalog note: $out"
  echo "$out" | grep -q 'prediction.json: note: skipped, a "recipebench-prediction/1" document, not a run record$' ||
    fail "prediction note: $out"
  echo "$out" | grep -q 'tokenizer_config.json: note: skipped, not a run record (no "schema" key) nor a file a recipe names$' ||
    fail "stray JSON note: $out"
  echo "$out" | grep -q 'train.yaml: note: skipped, not a recipe' || fail "stray YAML note: $out"
  echo "$out" | grep -q 'hf/config.json' && fail "a note for the recipe's own hf/config.json: $out"
  # validate walks the same folder the same way: the catalog and the stray YAML are notes, the recipe passes.
  out=$("$rb" validate "$work/recipes" --catalog "$d/my-catalog.yaml" 2>&1) || fail "validate of the folder: $out"
  echo "$out" | grep -q '^1 recipe: 1 passed, 0 failed (0 errors)$' || fail "validate: $out"
  echo "$out" | grep -q "my-catalog.yaml: note: skipped, a hardware catalog" || fail "validate's catalog note: $out"
  # A folder of nothing but such files: nothing to rank (exit 2), as an empty folder.
  mkdir "$work/none" && cp "$work/recipes/prediction.json" "$work/recipes/train.yaml" "$work/none/"
  "$rb" report "$work/none" --out "$work/board3" >"$work/none.txt" 2>&1; rc=$?
  test $rc -eq 2 || fail "nothing to rank: exit $rc"
  grep -q 'no recipe or run record among the 2 files under the given paths; nothing written$' "$work/none.txt" ||
    fail "nothing to rank: $(cat "$work/none.txt")"
  # A broken run record is still refused (a record, not skipped).
  echo '{"schema": "recipebench-run-record/1"}' > "$work/recipes/broken.json"
  "$rb" report "$work/recipes" --out "$work/board4" --catalog "$d/my-catalog.yaml" >/dev/null 2>&1
  test $? -eq 1 || fail "a broken run record was not refused"
  ;;
cpu-suggestions)
  # predict-cpu-recipe-suggests-cuda: every command predict prints runs as printed (here: its dry run) on the machine
  # the recipe names; for a CPU recipe, --device cpu and "on this host's CPU".
  r=$src/tests/data/dist/tiny-tp2-pp2-ep2-dp2.yaml
  "$rb" predict "$r" >"$work/p.txt" 2>&1; rc=$?
  test $rc -eq 2 || fail "predict exit $rc: $(cat "$work/p.txt")"
  grep -q "profile one rank of each kind of this layout on this host's CPU (the recipe's device) (--profile RECORD):$" \
    "$work/p.txt" || fail "header: $(cat "$work/p.txt")"
  grep -q cuda "$work/p.txt" && fail "a CUDA suggestion for a CPU recipe: $(cat "$work/p.txt")"
  n=$(grep -c '^  recipebench run .* --device cpu ' "$work/p.txt")
  test "$n" -eq 2 || fail "$n commands: $(cat "$work/p.txt")"
  grep '^  recipebench run ' "$work/p.txt" | sed 's/#.*//; s/^  recipebench //' > "$work/cmds"
  while read -r cmd; do
    # shellcheck disable=SC2086
    "$rb" $cmd --dry-run >"$work/dry.txt" 2>&1 || fail "as printed (dry run): $cmd: $(cat "$work/dry.txt")"
  done < "$work/cmds"
  # A bad --layers is blamed on --layers, never on the rank.
  "$rb" run "$r" --emulate-rank 0 --layers 5 --steps 3 --window 1:2 --out "$work/x" >"$work/l.txt" 2>&1; rc=$?
  test $rc -eq 2 || fail "--layers 5: exit $rc"
  grep -q 'no such rank' "$work/l.txt" && fail "--layers 5 blamed on the rank: $(cat "$work/l.txt")"
  grep -q '^recipebench run: --layers: refused for this rank; nothing was run$' "$work/l.txt" ||
    fail "--layers 5: $(cat "$work/l.txt")"
  ;;
cli-habits)
  # plan-search-space-and-cli (the CLI part): a mistyped option named with the option it means; help SUBCOMMAND.
  "$rb" plan --model Qwen3.5-35B-A3B --gpu H100 --gpus 8 --global-batch 128 --row-tokens 8192 >"$work/o.txt" 2>&1
  test $? -eq 2 || fail "--gpus: exit"
  grep -q "^<command line>: error: plan: unknown option '--gpus' (did you mean '--count'?); its options: " "$work/o.txt" ||
    fail "--gpus: $(cat "$work/o.txt")"
  "$rb" plan --model Qwen3.5-35B-A3B --gpu H100 --count 8 --global-batch 128 --seq-length 8192 >"$work/o.txt" 2>&1
  grep -q "unknown option '--seq-length' (did you mean '--row-tokens'?)" "$work/o.txt" || fail "--seq-length: $(cat "$work/o.txt")"
  "$rb" validate --formt json x.yaml >"$work/o.txt" 2>&1
  grep -q "unknown option '--formt' (did you mean '--format'?)" "$work/o.txt" || fail "--formt: $(cat "$work/o.txt")"
  "$rb" help plan >"$work/h.txt" 2>&1 || fail "help plan: exit"
  grep -q -- '--row-tokens' "$work/h.txt" || fail "help plan: $(cat "$work/h.txt")"
  "$rb" help >"$work/h.txt" 2>&1 || fail "help: exit"
  grep -q 'recipebench help SUBCOMMAND' "$work/h.txt" || fail "help: $(cat "$work/h.txt")"
  "$rb" help plna >"$work/h.txt" 2>&1; test $? -eq 2 || fail "help plna: exit"
  grep -q "unknown subcommand 'plna' (did you mean 'plan'?)" "$work/h.txt" || fail "help plna: $(cat "$work/h.txt")"
  ;;
predict-notes)
  # predict-profile-count-and-hidden-notes: six profiles (as bench/predict-recorded.sh passes them) are "6
  # profile(s)" (the GPU scaling, said in "how obtained" operation by operation, is no profile); an achieved rate above the GPU's peak (the LM head's
  # backward) is printed as n/a, never as a rate.
  e=$src/reports/bench/h200-2026-12-02-emulate-profile/attune-tp2-pp8-ep8-vpp2-mt16k
  f=$src/reports/bench/h200-2026-12-03-predict/call2/seed-attune-48gpu-tp2-pp6-ep8
  p=""; for k in first middle last; do p="$p --profile $(ls "$e-$k-profile"/*.json) --profile $(ls "$f-$k"/*.json)"; done
  # shellcheck disable=SC2086
  "$rb" predict "$src/recipes/qwen3.5-397b-a17b/b200/attune-tp2-pp8-ep8-vpp2-mt16k.yaml" $p >"$work/p.txt" 2>&1 ||
    fail "predict: $(cat "$work/p.txt")"
  grep -q 'compute: 6 profile(s) on H200' "$work/p.txt" || fail "count: $(cat "$work/p.txt")"
  grep -q 'carried to B200 operation by operation .*one ratio of dense BF16 peaks would be x 0.440' "$work/p.txt" ||
    fail "scaling: $(cat "$work/p.txt")"
  grep -q '^    gated_deltanet at sequence tokens 8192: H200 0.0301 -> B200 0.0142 of peak: x 0.934$' "$work/p.txt" ||
    fail "per-operation line: $(cat "$work/p.txt")"
  line=$(grep "achieved TFLOP/s" "$work/p.txt")
  echo "$line" | grep -q 'n/a (' || fail "no implausible rate marked: $line"
  echo "$line" | grep -q "is implausible" || fail "no word on the implausible rate: $line"
  for v in $(echo "$line" | sed 's/([^)]*)//g' | grep -oE '[0-9]+'); do
    test "$v" -le 989 || fail "a rate above H200's 989 TFLOP/s printed as one: $line"
  done
  ;;
predict-memory-measured)
  # predict-cross-gpu-no-caveat: the seed's B200 recipe predicted from H200 profiles says how (scaled operation by
  # operation), what the pair was checked to give, and the recipe's own measured figures beside the prediction.
  # predict-no-memory-check: the seed's 48-GPU layout as a proposal with recompute full / none / selective: predict
  # runs validate's memory plan (fits at 163.5 GB; 310.5 and 307.3 GB do not fit, said beside the figures) and prices
  # the selective recompute's core_attn (docs/step-time.md, "Selective recompute"): a recompute time above 0 s, a
  # step between no recompute's and full recompute's, the module named in the assumptions.
  e=$src/reports/bench/h200-2026-12-02-emulate-profile/attune-tp2-pp8-ep8-vpp2-mt16k
  f=$src/reports/bench/h200-2026-12-03-predict/call2/seed-attune-48gpu-tp2-pp6-ep8
  p=""; for k in first middle last; do p="$p --profile $(ls "$e-$k-profile"/*.json) --profile $(ls "$f-$k"/*.json)"; done
  # shellcheck disable=SC2086
  "$rb" predict "$src/recipes/qwen3.5-397b-a17b/b200/attune-tp2-pp8-ep8-vpp2-mt16k.yaml" $p >"$work/s.txt" 2>&1 ||
    fail "predict seed: $(cat "$work/s.txt")"
  grep -q '^  how obtained: profiled on another GPU, scaled: profiles measured on H200, carried to B200' "$work/s.txt" ||
    fail "how obtained: $(cat "$work/s.txt")"
  grep -q "^  trust: checked: .* over 3 row(s): the seed.s three B200 rows" "$work/s.txt" || fail "trust: $(cat "$work/s.txt")"
  grep -qE '^  measured \(the recipe.s result, 2026-10-18\): 1,232.5 tokens/s/GPU, MFU 5.4%, \$3.21 per 1M tokens; the prediction is \+[0-9.]+% of it$' \
    "$work/s.txt" || fail "measured beside the prediction: $(cat "$work/s.txt")"
  d=$cases/predict-no-memory-check
  for r in 48gpu-full-recompute 48gpu-no-recompute 48gpu-selective; do
    # shellcheck disable=SC2086
    "$rb" predict "$d/$r.yaml" $p >"$work/$r.txt" 2>&1 || fail "predict $r: $(cat "$work/$r.txt")"
  done
  grep -q '^  memory (the torch backend.s plan, docs/memory-plan.md): peak 163.5 GB and reserve 16.1 GB (3.0 GB + 8% of the peak) of 180.0 GB: fits$' \
    "$work/48gpu-full-recompute.txt" || fail "full: $(grep memory "$work/48gpu-full-recompute.txt")"
  # Selective recompute (Megatron-LM's core_attn) frees the attention core's tensors of the 15 attention layers:
  # 3.2 GB less than none (issue 44), still far over.
  for r in "48gpu-no-recompute 310.5" "48gpu-selective 307.3"; do
    set -- $r
    grep -q "^  memory (the torch backend.s plan, docs/memory-plan.md): peak $2 GB .*: DOES NOT FIT; the figures below are of a run that would run out of memory$" \
      "$work/$1.txt" || fail "$1: $(grep memory "$work/$1.txt")"
  done
  grep '^  not modelled:' "$work/48gpu-selective.txt" | grep -q selective &&
    fail "selective named not modelled: $(grep '^  not modelled:' "$work/48gpu-selective.txt")"
  grep -qE 'of which recompute (0\.0*[1-9]|[1-9])' "$work/48gpu-selective.txt" ||
    fail "selective: no recompute time: $(grep 'of which' "$work/48gpu-selective.txt")"
  grep -q '^    - selective recompute: core_attn (the attention core.s share of attention' "$work/48gpu-selective.txt" ||
    fail "selective: its modules not named: $(cat "$work/48gpu-selective.txt")"
  tps() { sed -n 's/^  tokens\/s\/GPU  *\([0-9,.]*\)$/\1/p' "$work/$1.txt" | tr -d ,; }
  awk -v n="$(tps 48gpu-no-recompute)" -v s="$(tps 48gpu-selective)" -v f="$(tps 48gpu-full-recompute)" \
    'BEGIN { exit !(f < s && s < n) }' ||
    fail "selective not between full and none: $(tps 48gpu-full-recompute) $(tps 48gpu-selective) $(tps 48gpu-no-recompute)"
  ;;
cosmetic)
  # cosmetic-output: $ and GPU-hours below two decimals keep two significant digits; MI300X's link is Infinity Fabric.
  p35=$src/reports/bench/h200-2026-12-03-predict/call1/profile-2x8k
  "$rb" predict "$src/recipes/qwen3.5-35b-a3b/h200/proxy4l-1gpu-bf16.yaml" --profile "$(ls "$p35"/*.json)" \
    >"$work/p.txt" 2>&1 || fail "predict: $(cat "$work/p.txt")"
  grep -qE '^  \$ per 1M tokens +0\.0[0-9]{2}$' "$work/p.txt" || fail "\$: $(cat "$work/p.txt")"
  grep -qE '^  GPU-hours +0\.00[1-9][0-9]? ' "$work/p.txt" || fail "GPU-hours: $(cat "$work/p.txt")"
  "$rb" plan --model Qwen3.5-35B-A3B --gpu MI300X --count 16 --global-batch 128 --row-tokens 8192 \
    --profile "$(ls "$p35"/*.json)" --top 1 >"$work/m.txt" 2>&1 || fail "plan MI300X: $(cat "$work/m.txt")"
  grep -q 'network: Infinity Fabric: 448 GB/s per GPU one direction' "$work/m.txt" || fail "MI300X: $(cat "$work/m.txt")"
  grep -q 'NVLink' "$work/m.txt" && fail "MI300X link called NVLink: $(cat "$work/m.txt")"
  # compare and converge of one record with itself say so.
  rec=$cases/leaderboard-repeated-runs-mixed-commits/proxy4l-2gpu-dp2-bf16-20261130T000607Z.json
  "$rb" compare "$rec" "$rec" | grep -q '^warning: A and B are the same file (' || fail "compare of a file with itself"
  "$rb" converge "$rec" "$rec" | grep -q '^warning: A and B are the same file (' || fail "converge of a file with itself"
  ;;
mfu-printed)
  # mfu-differs-from-framework-mfu: import of a TorchTitan log prints the log's own MFU beside recipebench's 6N.
  d=$cases/mfu-differs-from-framework-mfu
  "$rb" import "$d/torchtitan-llama3-8b.log" --recipe "$d/llama31-8b-h100-fsdp8.yaml" --out "$work/runs" --steps 30 \
    --window 5:29 >"$work/i.txt" 2>&1 || fail "import: $(cat "$work/i.txt")"
  grep -qE '^window 5\.\.29: .*, MFU 29\.[0-9]% \(6N\)' "$work/i.txt" || fail "6N figure: $(cat "$work/i.txt")"
  grep -q "^  the log's own figures over the window: MFU 38.0%" "$work/i.txt" || fail "printed MFU: $(cat "$work/i.txt")"
  ;;
layout-pricing)
  # predict-unmodelled-layout-fields: validate warns at a label that contradicts the fields; predict's header shows
  # the layout the fields say, CP's exchange in the assumptions, flex priced by DeepEP's kernels' traffic and what
  # of it is not priced named (analytical mode: no profile needed for the collectives).
  d=$cases/predict-unmodelled-layout-fields
  "$rb" validate "$d/cp2-dp2.yaml" >"$work/v.txt" 2>&1 || fail "validate: $(cat "$work/v.txt")"
  grep -q 'cp2-dp2.yaml:56:10: warning: layout.label: "TP2 PP6 EP8 DP4": DP4 (layout.dp 2), no CP (layout.cp 2)' \
    "$work/v.txt" || fail "label warning: $(cat "$work/v.txt")"
  "$rb" predict "$d/cp2-dp2.yaml" >"$work/p.txt" 2>&1 || fail "predict: $(cat "$work/p.txt")"
  grep -q '^recipebench predict: .*(Qwen3.5-397B-A17B, TP2 PP6 CP2 EP8 DP2, 48 x B200); layout.label "TP2 PP6 EP8 DP4" disagrees' \
    "$work/p.txt" || fail "header: $(cat "$work/p.txt")"
  grep -q "CP 2: ring attention's exchange of keys and values" "$work/p.txt" || fail "CP assumption: $(cat "$work/p.txt")"
  "$rb" predict "$d/flex-deepep.yaml" >"$work/f.txt" 2>&1 || fail "predict flex: $(cat "$work/f.txt")"
  grep -q "EP dispatcher flex (Megatron-Core's MoEFlexTokenDispatcher with DeepEP's normal kernels" "$work/f.txt" ||
    fail "flex assumption: $(cat "$work/f.txt")"
  grep -q "^  not modelled: layout.dispatcher: flex (DeepEP's dispatch and combine are priced, see the assumptions" \
    "$work/f.txt" || fail "flex: $(cat "$work/f.txt")"
  ! grep -q "priced as alltoall" "$work/f.txt" || fail "flex priced as alltoall: $(cat "$work/f.txt")"
  # predicted-vs-measured-not-linked: compare takes plan's proposal beside the measured seed of the same layout.
  p=$cases/predicted-vs-measured-not-linked/plan-tp2-pp8-vpp2-ep8-dp4-split6-mt16k-recompute.yaml
  "$rb" compare "$src/recipes/qwen3.5-397b-a17b/b200/attune-tp2-pp8-ep8-vpp2-mt16k.yaml" "$p" >"$work/c.txt" 2>&1 ||
    fail "compare: $(cat "$work/c.txt")"
  grep -q '^note: B (.*) is a prediction (predicted 2026-12-05), not a measurement' "$work/c.txt" ||
    fail "compare note: $(cat "$work/c.txt")"
  grep -q '^prediction error: predicted / measured tokens/s/GPU - 1 = +80.3% (2,222.6 predicted, 1,232.5 measured' \
    "$work/c.txt" || fail "compare error: $(cat "$work/c.txt")"
  ;;
seed-page)
  # leaderboard-vs-seed-page: report of the seed's three recipes and an imported Megatron-LM log (its recipe's stack
  # names commit 5f2e1c9a): copies of the recipes byte for byte beside the page; "(cite)", "How to run" and the YAML
  # per recipe, and the YAML of the recipe the imported run was made from; the imported entry's commit is its stack's,
  # recipebench "Recorded by"; its window its own; a later
  # report over the output folder reads no copy as a recipe.
  d=$cases/leaderboard-vs-seed-page
  "$rb" import "$d/megatron-mixtral.log" --recipe "$d/mixtral-stack-commit.yaml" --out "$work/in" --steps 30 \
    --window 5:29 >"$work/i.txt" 2>&1 || fail "import: $(cat "$work/i.txt")"
  cp "$src"/recipes/qwen3.5-397b-a17b/b200/attune-*.yaml "$work/in/"
  "$rb" report "$work/in" --out "$work/board" >"$work/r.txt" 2>&1 || fail "report: $(cat "$work/r.txt")"
  h=$work/board/leaderboard.html
  for f in "$work"/in/attune-*.yaml; do
    cmp -s "$f" "$work/board/leaderboard-recipes/$(basename "$f").txt" || fail "no byte-for-byte copy of $f"
  done
  for what in '(cite)' '<h4>How to run</h4>' '<div class="notes">'; do
    [ "$(grep -o -- "$what" "$h" | wc -l)" = 3 ] || fail "$what: $(grep -c -- "$what" "$h") lines, expected 3 entries"
  done
  # The YAML of the three recipes and of the recipe the imported run was made from (issue 46 item 5).
  [ "$(grep -o -- 'schema_version: 1' "$h" | wc -l)" = 4 ] || fail "YAML: $(grep -o -- 'schema_version: 1' "$h" | wc -l) shown, expected 4"
  grep -q '<h4>Recipe it was made from</h4>' "$h" || fail "the imported run's recipe"
  grep -q '<dt>Trained by</dt><dd>Megatron-LM core_r0.12.0, commit 5f2e1c9a' "$h" || fail "Trained by"
  grep -q '<dt>Recorded by</dt><dd>recipebench ' "$h" || fail "Recorded by"
  grep -q '<code title="5f2e1c9a">5f2e1c9</code>' "$h" || fail "the imported entry's Commit cell"
  grep -q '(measured over steps 5..29)' "$h" || fail "the imported entry's own window"
  grep -q 'GPUs (measured, steps 5\.\.19)' "$h" && fail "a fixed window in the footer"
  # Again into the same folder, then a report over it: leaderboard.json is an earlier report, the copies are .txt.
  "$rb" report "$work/in" --out "$work/board" >"$work/r2.txt" 2>&1 || fail "report again: $(cat "$work/r2.txt")"
  "$rb" report "$work/board" --out "$work/b2" >"$work/r3.txt" 2>&1
  [ $? = 2 ] && grep -q 'no recipe or run record' "$work/r3.txt" || fail "report over the output: $(cat "$work/r3.txt")"
  ;;
*)
  fail "unknown part $part"
  ;;
esac
echo "ok: $part"
