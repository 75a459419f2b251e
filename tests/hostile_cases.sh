#!/bin/sh
# The hostile inputs of 2026-12-05 (issue 49) through the binary, as a user meets them: each case's input and the
# located message or exit status it must give. Usage: hostile_cases.sh RECIPEBENCH SOURCE_DIR WORK_DIR CASE
set -u
rb=$1 src=$2 d=$3 case=$4
data="$src/tests/data/cases/hostile-2026-12-05"
profile="$src/reports/bench/h200-2026-12-03-predict/call1/profile-2x8k/base-2x8k-20261203T082524Z.json"
mb4="$src/bench/predict-shapes/mb4-8k.yaml"
rm -rf "$d"; mkdir -p "$d"
fail() { echo "$case: $*"; exit 1; }
# cpu_mark: sets `cpu` to the CPU milliseconds (user + system) of this shell's finished children so far. The cost
# bounds below are CPU time, which a loaded machine (CI's 2 cores running other tests) does not stretch as it does
# wall time. `times` runs in this shell, not a subshell: a subshell's `times` counts only its own children.
cpu_mark() {
  times > "$d/.times"
  cpu=$(awk 'NR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/); print int((u[1] * 60 + u[2] + s[1] * 60 + s[2]) * 1000) }' "$d/.times")
}
# expect RC NEEDLE CMD...: runs CMD, requires exit RC and a line of its output (stdout and stderr) equal to NEEDLE.
expect() {
  want_rc=$1 needle=$2; shift 2
  rc=0; out=$(timeout 60 "$@" 2>&1) || rc=$?
  [ "$rc" -eq "$want_rc" ] || fail "exit $rc, expected $want_rc: $* -> $(echo "$out" | head -3)"
  printf '%s\n' "$out" | grep -qxF -- "$needle" || fail "no line '$needle' from $*: $(echo "$out" | head -5)"
}

case $case in
report-segv)  # the log's loss of 1e16 is refused where it is read; report refuses (never crashes on) the records
  expect 1 "  $data/report-segv/loss-1e16.log:4:1: error: megatron step line: loss 1e+16, expected a finite loss within +-1e6 nats per token" \
    "$rb" import "$data/report-segv/loss-1e16.log" --recipe "$data/report-segv/rec.yaml" --out "$d/runs"
  for f in flat-1e16 span-inf; do
    rc=0; out=$(timeout 60 "$rb" report "$data/report-segv/$f.json" --out "$d/board-$f" 2>&1) || rc=$?
    [ "$rc" -lt 128 ] || fail "report $f.json killed by signal $((rc - 128))"
    echo "$out" | grep -q "$f.json: error: steps\[0\].loss: " || fail "report $f.json: $out"
  done ;;
import-step-figures)  # every figure of a step line by the rule report applies to the record, located at the line
  re='regex:^peer step (?<step>[0-9]+) time_s (?<seconds>[0-9.e+-]+) loss (?<loss>[0-9.e+-]+) tokens (?<tokens>[0-9]+)( memory_gb (?<memory_gb>[0-9.e+-]+))?$'
  run() { expect 1 "  $data/import-step-figures/$1:$2: error: $3" "$rb" import "$data/import-step-figures/$1" \
      --recipe "$data/import-step-figures/rec.yaml" --out "$d/$1" --log-format "$4"; }
  run mg-neg-gradnorm.log 4:1 'megatron step line: grad norm -1, expected a finite number >= 0' megatron
  run mg-neg-lr.log 4:1 'megatron step line: learning rate -1e-06, expected a finite number >= 0' megatron
  run tt-mem-huge.log 3:1 'torchtitan step line: peak memory inf, expected 0 to 2^50 bytes (1 PiB)' torchtitan
  run re-mem-neg.log 4:1 'regex step line: peak memory -5e+09, expected 0 to 2^50 bytes (1 PiB)' "$re"
  run tt-tps-zero.log 3:1 'torchtitan step line: tokens/s/GPU 0, expected a rate > 0 (the step time is derived from it)' torchtitan
  run tt-tps-tiny.log 3:1 'torchtitan step line: a step time derived from tokens / (tokens/s/GPU x GPUs) of 3.2768e+10, expected a finite time > 0 s and at most 1e6 s' torchtitan
  run hf-tokens-2p62.log 3:1 'hf step line: tokens 4.611686018427388e+18, expected 1 to 2^40 (1099511627776) tokens' hf
  run mg-huge-gb.log 4:1 'megatron step line: tokens (global batch x row tokens) 1.888946593147858e+22, expected 1 to 2^40 (1099511627776) tokens' megatron
  ;;
converge)  # a failed run is no evidence; 2 steps fail; a record against itself is said so and written nowhere
  c="$data/converge"
  expect 1 "$c/candidate-failed-at-step4.json: error: status: failed (error at step 4: loss is NaN at step 4), expected a complete run" \
    "$rb" converge "$c/reference.json" "$c/candidate-failed-at-step4.json"
  expect 1 "$c/candidate-2-steps.json: error: status: emulated, expected a complete run" \
    "$rb" converge "$c/reference.json" "$c/candidate-2-steps.json"
  cp "$c/recipe.yaml" "$d/recipe.yaml"
  before=$(md5sum < "$d/recipe.yaml")
  expect 0 "warning: the candidate is the reference's own file: a run against itself always agrees (nothing written into a recipe)" \
    "$rb" converge "$c/reference.json" "$c/reference.json" --write-recipe "$d/recipe.yaml"
  [ "$(md5sum < "$d/recipe.yaml")" = "$before" ] || fail "the recipe was written from a run against itself" ;;
out-folder)  # one output-folder rule for every command that writes, checked before any work
  want=', expected a folder of your own (not a file, device, kernel or system folder)'
  expect 2 "<command line>: error: --out: /usr/share/rb-plan: inside a system folder$want" \
    "$rb" plan --model Qwen3.5-35B-A3B --gpu H200 --count 8 --global-batch 64 --row-tokens 8192 --profile "$profile" --out /usr/share/rb-plan
  expect 2 "<command line>: error: --out: /usr/lib/rb-runs: inside a system folder$want" \
    "$rb" import "$data/report-segv/loss-1e16.log" --recipe "$data/report-segv/rec.yaml" --out /usr/lib/rb-runs
  expect 2 "<command line>: error: --out: /etc/rb-runs: inside a system folder$want" \
    "$rb" run "$src/recipes/examples/qwen3.5-tiny-cpu.yaml" --out /etc/rb-runs
  : > "$d/afile.txt"
  expect 2 "<command line>: error: --out: $d/afile.txt (a regular file)$want" \
    "$rb" plan --model Qwen3.5-35B-A3B --gpu H200 --count 8 --global-batch 64 --row-tokens 8192 --profile "$profile" --out "$d/afile.txt"
  echo "$out" | grep -q 'layouts considered' && fail "plan searched before refusing --out"
  for p in /usr/share/rb-plan /usr/lib/rb-runs /etc/rb-runs; do [ ! -e "$p" ] || fail "$p written"; done ;;
stack-factor)  # a stack factor within 0.01 to 100, else a usage error before anything runs
  for sf in 1e-300 1e308 2.2e-308; do
    expect 2 "<command line>: error: --stack-factor: $sf, expected a finite number from 0.01 to 100" "$rb" predict "$mb4" --profile "$profile" --stack-factor "$sf"
  done
  # The fuzz bench's finding (reports/bench/fuzz-2026-12-05-all-surfaces, seed-1/finding-2.args): a factor in range
  # that times the step past physics is refused at the factor, with or without a profile, in either format.
  past=', expected a factor at which the step takes no less than the work at the GPU'"'"'s peak (a predicted MFU of'
  for p in "" "--profile=$profile"; do
    for f in text json; do
      rc=0; out=$("$rb" predict "$mb4" $p --stack-factor 0.01 --format $f 2>&1) || rc=$?
      [ "$rc" -eq 1 ] || fail "predict --stack-factor 0.01 $p --format $f: exit $rc"
      line=$(echo "$out" | grep 'error:')
      case $line in "<command line>: error: --stack-factor: 0.01$past"*) ;; *) fail "$p $f: $line" ;; esac
    done
  done ;;
catalog)  # a catalog's figures in physical ranges, located; names of printable ASCII
  c="$data/catalog"
  expect 2 "$c/flops-tiny.yaml:5:23: error: gpus[0].bf16_dense_flops: 1e-300, expected 1e12 to 1e17 FLOP/s (1 TFLOP/s to 100 PFLOP/s, one GPU's dense peak)" \
    "$rb" validate "$c/zz.yaml" --catalog "$c/flops-tiny.yaml"
  expect 2 "$c/bw-tiny.yaml:7:35: error: gpus[0].memory_bandwidth_bytes_per_s: 1e-300, expected 1e11 to 1e15 bytes/s (100 GB/s to 1 PB/s of one GPU's memory bandwidth)" \
    "$rb" validate "$c/zz.yaml" --catalog "$c/bw-tiny.yaml"
  expect 2 "$c/mem-tiny.yaml:6:19: error: gpus[0].memory_bytes: 1e-300, expected 1e9 to 1e13 bytes (1 GB to 10 TB of one GPU's memory)" \
    "$rb" validate "$c/zz.yaml" --catalog "$c/mem-tiny.yaml"
  expect 2 "$c/price-huge.yaml:18:19: error: instances[0].usd_per_hour: 1e308, expected \$0.01 to \$100,000 per hour for one instance (one node)" \
    "$rb" validate "$c/zz.yaml" --catalog "$c/price-huge.yaml"
  expect 0 "1 recipe: 1 passed, 0 failed (0 errors)" "$rb" validate "$c/zz.yaml" --catalog "$c/ok.yaml" ;;
config)  # config.json faults found where the config is read, located, characters escaped
  expect 1 "$data/kv3-of-4.json:1:316: error: num_key_value_heads: 3, expected a divisor of num_attention_heads (4)" \
    "$rb" models --config "$data/kv3-of-4.json"
  # found by the fuzz harness's config surface (tests/data/cases/fuzz/surfaces-2026-12-05): the line starts with its place
  cut="$src/tests/data/cases/fuzz/surfaces-2026-12-05/config-cut.json"
  expect 1 "$cut:7:19: error: malformed JSON (syntax error while parsing object - unexpected end of input; expected '}'), expected well-formed JSON" \
    "$rb" models --config "$cut" ;;
plan-names)  # one file per ranked layout: exact max tokens in the name, never one layout's file over another's
  out=$(timeout 100 "$rb" plan --model Qwen3.5-35B-A3B --gpu H200 --count 8 --global-batch 64 --row-tokens 100 \
    --profile "$profile" --top 10 --out "$d/out") || fail "plan exit $?"
  [ "$(echo "$out" | grep -c ' wrote ')" -eq 10 ] || fail "$(echo "$out" | grep -c ' wrote ') wrote lines"
  [ "$(ls "$d/out" | wc -l)" -eq 10 ] || fail "$(ls "$d/out" | wc -l) files for 10 layouts: $(ls "$d/out")"
  ! ls "$d/out" | grep -q 'mt0k' || fail "a file named mt0k" ;;
sigterm)  # import honours SIGTERM between lines: 2,000 lines of a slow pattern (~2 ms each, under PCRE2's match limit
  # the import sets: 15 'a's would hit it and be a line error) end within a second of it
  { head -3 "$data/peer-regex.log"; i=0; while [ $i -lt 2000 ]; do echo 'aaaaaaaaaaaaaa!'; i=$((i + 1)); done
    tail -n +4 "$data/peer-regex.log"; } > "$d/slow.log"
  p='regex:^(?:a|a)*b|^peer step (?<step>[0-9]+) time_s (?<seconds>[0-9.e+-]+) loss (?<loss>[0-9.e+-]+) tokens (?<tokens>[0-9]+)$'
  "$rb" import "$d/slow.log" --recipe "$data/peer-rec.yaml" --out "$d/runs" --log-format "$p" > "$d/out.txt" 2>&1 &
  pid=$!; sleep 1; kill -TERM $pid; t0=$(date +%s%N)
  wait $pid; rc=$?; ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  [ "$ms" -lt 1500 ] || fail "import ended ${ms} ms after SIGTERM (exit $rc)"
  [ "$rc" -ne 0 ] || fail "import exit 0 after SIGTERM"
  [ -z "$(ls "$d/runs" 2>/dev/null)" ] || fail "a record was written: $(ls "$d/runs")" ;;
launch)  # the launch check reads the command as the shell splits it, and names the flag's own file line
  for f in in-string heredoc echo repeat-last-wins plus-sign; do
    expect 0 "1 recipe: 1 passed, 0 failed (0 errors)" "$rb" validate --strict "$data/launch-quoted/$f.yaml"
  done
  w="error: layout.tp: 2, but the run command passes --tensor-model-parallel-size 4"
  expect 1 "$data/launch-lines/folded.yaml:61:7: $w (line 169), expected layout.tp as the command ran it, or a run command that matches the recipe" \
    "$rb" validate --strict "$data/launch-lines/folded.yaml"
  expect 1 "$data/launch-lines/double-quoted.yaml:61:7: $w (line 146), expected layout.tp as the command ran it, or a run command that matches the recipe" \
    "$rb" validate --strict "$data/launch-lines/double-quoted.yaml"
  # The fuzz bench's finding (reports/bench/fuzz-2026-12-05-all-surfaces, seed-2/finding-2.yaml, 10 MB: generated
  # here): one 10 MB line in run: took 5.55 s of CPU and 500 MB in the launch check. The schema bounds run: at 1 MiB,
  # refused before the check reads a word; a block just under the bound is read whole in bounded memory.
  seed="$src/recipes/qwen3.5-397b-a17b/b200/attune-tp2-pp8-ep8-vpp2-mt16k.yaml"
  big() {  # big NAME COUNT WORD [SEP]: COUNT copies of WORD (SEP between, default a blank) on one line after a flag
    awk -v n="$2" -v w="$3" -v sep="${4- }" '{print} /--debug-train-only/ {printf "    "; for (i = 0; i < n; i++) printf "%s%s", w, sep; print " \\"}' \
      "$seed" > "$d/$1.yaml"
  }
  limit='characters, expected at most 1048576 characters (1 MiB): a launch script, not data (the launch check reads every word of it)'
  for v in "flags 1500000 --lr_1 _" "brace 1100000 x" "quotes 200000 a_\"b\" _" "dollars 120000 \$(a)_\${b} _"; do
    set -- $v
    big "big-$1" "$2" "$(echo "$3" | tr _ ' ')" "$(echo "${4-}" | tr _ ' ')"
    rc=0; out=$( (ulimit -v 1000000; timeout 30 "$rb" validate "$d/big-$1.yaml") 2>&1) || rc=$?
    [ "$rc" -eq 1 ] || fail "big-$1: exit $rc: $(echo "$out" | head -c 300)"
    echo "$out" | grep -q "^$d/big-$1.yaml:146:6: error: run: a string of [0-9]* $limit\$" || fail "big-$1: $(echo "$out" | head -c 300)"
  done
  big under-limit 140000 "--lr 1"
  rc=0; out=$( (ulimit -v 1000000; timeout 30 "$rb" validate "$d/under-limit.yaml") 2>&1) || rc=$?
  [ "$rc" -eq 0 ] || fail "a run block under 1 MiB: exit $rc: $(echo "$out" | head -c 300)" ;;
plan-unpredicted)  # layouts that fit the memory but cannot be predicted: counted apart with why, never blamed on memory
  mid="$src/reports/bench/h200-2026-12-02-emulate-profile/attune-tp2-pp8-ep8-vpp2-mt16k-middle-profile/attune-tp2-pp8-ep8-vpp2-mt16k-20261202T210849Z.json"
  why="the profile never measured embedding, which this layout's chunk runs: add a profile of a rank that holds it"
  rc=0; out=$(timeout 60 "$rb" plan --model Qwen3.5-397B-A17B --gpu B200 --count 64 --global-batch 128 --row-tokens 8192 \
    --top 1 --profile "$mid" 2>&1) || rc=$?
  [ "$rc" -eq 1 ] || fail "exit $rc: $(echo "$out" | head -3)"
  echo "$out" | grep -qF "2257 pass the layout check, 596 fit 180 GB by the memory plan" || fail "counts: $(echo "$out" | sed -n 2p)"
  echo "$out" | grep -qF "; 0 of them predicted, 596 not: $why; searched in" || fail "no reason: $(echo "$out" | sed -n 2p)"
  echo "$out" | grep -qxF "  no layout serves this request: none of the 596 layouts that fit the memory could be predicted; why, most frequent first:" \
    || fail "$(echo "$out" | tail -2)"
  echo "$out" | grep -qxF "    $why (596 layouts)" || fail "$(echo "$out" | tail -1)"
  ! echo "$out" | grep -q "none fits the GPU's memory" || fail "the memory blamed"
  c="$data/plan-unpredicted"
  expect 2 "$c/catalog-net-tiny.yaml:21:25: error: instances[0].network_bits_per_s: number 1e-300, expected one of these forms: 0 (unknown); 1e9 to 1e14 bits/s (1 Gbit/s to 100 Tbit/s for one node)" \
    "$rb" plan --model Qwen3.5-35B-A3B --gpu ZZ100 --count 64 --global-batch 256 --row-tokens 8192 --profile "$profile" \
    --top 1 --catalog "$c/catalog-net-tiny.yaml"
  rc=0; out=$(timeout 60 "$rb" plan --model Qwen3.5-35B-A3B --gpu ZZ100 --count 64 --global-batch 256 --row-tokens 8192 \
    --profile "$profile" --top 1 --catalog "$c/catalog-ok.yaml" 2>&1) || rc=$?
  [ "$rc" -eq 0 ] || fail "catalog-ok: exit $rc"
  echo "$out" | grep -q "2623 fit 141 GB by the memory plan .*(0 more fit only inside it); searched in" || fail "$(echo "$out" | sed -n 2p)" ;;
usage)  # one form for every ranged option; an empty value shown; compare's refusal located
  u="$data/usage"
  P="--model Qwen3.5-35B-A3B --gpu H200 --global-batch 64 --row-tokens 8192 --profile $profile --top 1"
  # shellcheck disable=SC2086
  { expect 2 "<command line>: error: --count: 0, expected an integer from 1 to 131072" "$rb" plan $P --count 0
    expect 2 "<command line>: error: --top: 0, expected an integer from 1 to 1000" "$rb" plan $P --count 8 --top 0
    expect 2 "<command line>: error: --per-node: 0, expected an integer from 1 to 1024" "$rb" plan $P --count 8 --per-node 0
    expect 2 "<command line>: error: --global-batch: '1.5' is not an integer, expected an integer from 1 to 1099511627776" \
      "$rb" plan --model Qwen3.5-35B-A3B --gpu H200 --count 8 --global-batch 1.5 --row-tokens 8192
    expect 2 "<command line>: error: --memory-reserve: -1, expected a finite number from 0 to 10000" "$rb" plan $P --count 8 --memory-reserve -1
    expect 2 "<command line>: error: --count: 8 GPUs, expected whole nodes of 3 GPUs (--per-node): 6, 9, ...; or --per-node with a divisor of 8 (2, 4, 8)" \
      "$rb" plan $P --count 8 --per-node 3; }
  expect 2 "<command line>: error: --memory-reserve: -1, expected a finite number from 0 to 10000" "$rb" validate "$u/tiny.yaml" --memory-reserve -1
  expect 2 "<command line>: error: --min-steps: 1, expected an integer from 2 to 1099511627776" \
    "$rb" converge "$u/run-record.json" "$u/run-record.json" --min-steps 1
  rc=0; out=$(timeout 60 "$rb" plan --model Qwen3.5-35B-A3B --gpu '' --count 8 --global-batch 64 --row-tokens 8192 2>&1) || rc=$?
  [ "$rc" -eq 2 ] || fail "--gpu '': exit $rc"
  echo "$out" | grep -qF "<command line>: error: --gpu: '' (empty), expected a GPU of the catalog (" || fail "--gpu '': $out"
  expect 1 "$u/tiny.yaml:14:9: error: result: none (status proposed), expected a recipe with a result (status measured), a proposed recipe with a prediction block (plan --out), or a run record of a complete run" \
    "$rb" compare "$u/tiny.yaml" "$u/run-record.json"
  rc=0; out=$(timeout 60 "$rb" run "$u/tiny-tp2-pp2-ep2-dp2.yaml" --emulate-rank 0 --layers 3 --steps 3 --window 1:2 \
    --out "$d/runs" 2>&1) || rc=$?
  [ "$rc" -eq 2 ] || fail "--layers 3: exit $rc"
  [ "$out" = "<command line>: error: --layers: 3, expected with --emulate-rank, layers of rank 0's pipeline stage 0: 1 to 2 (each of its 1 virtual stages keeps one at least)
recipebench run: --layers: refused for this rank; nothing was run" ] || fail "--layers 3: $out" ;;
predict-profiles)  # every --profile accounted for: another model's named, a file given twice read once, a leaderboard refused
  # The fuzz bench's profile surface (2026-12-06): the pipeline's first stage of the 4-layer proxy (no attention layer)
  # times a one-stage layout: refused at the profile, not behind "recipebench predict: error:".
  stage0="$src/reports/bench/h200-2026-12-03-predict/call1/two-pp2-rank0/proxy4l-2gpu-pp2-bf16-20261203T082749Z.json"
  expect 1 "$stage0: error: the profile never measured attention, which this layout's chunk runs: add a profile of a rank that holds it" \
    "$rb" predict "$mb4" --profile "$stage0"
  first="$src/reports/bench/h200-2026-12-02-emulate-profile/attune-tp2-pp8-ep8-vpp2-mt16k-first-profile/attune-tp2-pp8-ep8-vpp2-mt16k-20261202T210818Z.json"
  rc=0; out=$(timeout 60 "$rb" predict "$mb4" --profile "$profile" --profile "$first" 2>&1) || rc=$?
  [ "$rc" -eq 0 ] || fail "another model's profile beside: exit $rc"
  echo "$out" | grep -qxF "$first: warning: model: a profile of Qwen3.5-397B-A17B, not of Qwen3.5-35B-A3B, expected a profile of the model predicted (this one is not used)" \
    || fail "another model's profile not named: $(echo "$out" | head -2)"
  echo "$out" | grep -qF "compute: 1 profile(s) on H200 (Qwen3.5-35B-A3B)" || fail "count: $(echo "$out" | grep 'profile(s)')"
  rc=0; out=$(timeout 60 "$rb" predict "$mb4" --profile "$profile" --profile "$profile" 2>&1) || rc=$?
  [ "$rc" -eq 0 ] || fail "twice: exit $rc"
  echo "$out" | grep -qxF "$profile: warning: given twice, expected each profile once (read once)" || fail "twice: $(echo "$out" | head -2)"
  echo "$out" | grep -qF "compute: 1 profile(s) on H200" || fail "twice counted: $(echo "$out" | grep 'profile(s)')"
  lb="$data/predict-profiles/leaderboard.json"
  expect 1 "$lb: error: schema: a leaderboard (the output of an earlier report), expected a run record (\"recipebench-run-record/1\")" \
    "$rb" predict "$mb4" --profile "$lb"
  expect 1 "$lb: error: schema: a leaderboard (the output of an earlier report), expected a run record (\"recipebench-run-record/1\")" \
    "$rb" converge "$lb" "$lb" ;;
regex-limit)  # a match PCRE2 gives up on is a line error at its line, never "not a step line"; milliseconds a line
  r="$data/regex-limit"
  hit="regex step line: the pattern hit PCRE2's match limit (100000) on this line, expected a pattern that matches in bounded time (no nested or adjacent quantifiers over the same characters, e.g. (?: |\\s)*)"
  p1='regex:^peer step (?<step>[0-9]+) time_s (?<seconds>[0-9.e+-]+) loss (?<loss>[0-9.e+-]+) tokens (?<tokens>[0-9]+)(?:(?: |\s)*x)?\s*$'
  expect 1 "  $r/trailing-blanks.log:11:1: error: $hit" \
    "$rb" import "$r/trailing-blanks.log" --recipe "$r/rec.yaml" --out "$d/a" --log-format "$p1"
  expect 1 "$r/trailing-blanks.log: error: the log has 1 line(s) recipebench cannot read:" \
    "$rb" import "$r/trailing-blanks.log" --recipe "$r/rec.yaml" --out "$d/a2" --log-format "$p1"
  p2='regex:^(?:a|a)*b|^peer step (?<step>[0-9]+) time_s (?<seconds>[0-9.e+-]+) loss (?<loss>[0-9.e+-]+) tokens (?<tokens>[0-9]+)$'
  cpu_mark; t0=$cpu
  expect 1 "  $r/evil-lines.log:4:1: error: $hit" "$rb" import "$r/evil-lines.log" --recipe "$r/rec.yaml" --out "$d/b" --log-format "$p2"
  cpu_mark; ms=$((cpu - t0))
  [ "$ms" -lt 5000 ] || fail "100 pathological lines took $ms ms of CPU" ;;
bounded)  # the largest global batch, plan's GPU bound and 2^20 layers: answers or refusals in seconds, flat memory
  # predict-plan-memory-per-microbatch: 2^31 - 1 rows on one GPU (the schema's largest batch), under 512 MB.
  sed "s/global_batch: 4/global_batch: 2147483647/" "$mb4" > "$d/gb.yaml"
  cpu_mark; t0=$cpu
  rc=0; out=$( (ulimit -v 2000000; timeout 30 "$rb" predict "$d/gb.yaml" --profile "$profile") 2>&1) || rc=$?
  cpu_mark; ms=$((cpu - t0))
  [ "$rc" -eq 0 ] || fail "predict at 2^31 - 1 rows: exit $rc: $(echo "$out" | tail -2)"
  echo "$out" | grep -q '^  step time  *308148684.318 s (predicted' || fail "step: $(echo "$out" | grep 'step time')"
  [ "$ms" -lt 5000 ] || fail "predict at 2^31 - 1 rows took $ms ms of CPU"
  rc=0; out=$( (ulimit -v 2000000; timeout 30 "$rb" plan --model Qwen3.5-35B-A3B --gpu H200 --count 8 \
    --global-batch 1099511627776 --row-tokens 8192 --profile "$profile" --top 1) 2>&1) || rc=$?
  [ "$rc" -eq 0 ] || fail "plan --global-batch 2^40: exit $rc: $(echo "$out" | tail -2)"
  # plan-count-limit-takes-minutes: above 131,072 GPUs, refused at once.
  expect 2 "<command line>: error: --count: 1048576, expected an integer from 1 to 131072" "$rb" plan --model Qwen3.5-397B-A17B --gpu B200 \
    --count 1048576 --global-batch 1048576 --row-tokens 8192 --profile "$profile"
  # run-model-config-refusal-quadratic: 2^20 layers refused with the layers that fit, by bisection (was hours).
  cpu_mark; t0=$cpu
  rc=0; out=$(timeout 30 "$rb" run "$src/recipes/examples/qwen3.5-tiny-cpu.yaml" --model-config "$data/bounded/config-1048576-layers.json" \
    --steps 3 --window 1:2 --out "$d/runs" 2>&1) || rc=$?
  cpu_mark; ms=$((cpu - t0))
  [ "$rc" -eq 1 ] || fail "2^20 layers: exit $rc: $out"
  echo "$out" | grep -qE "^recipebench run: bench.device cpu: the memory plan's peak is 10,895.7 GB per rank, more than the .* GB this host has available; --layers [0-9]+ fits \(its plan needs .* GB\); nothing was run$" \
    || fail "2^20 layers: $out"
  [ "$ms" -lt 5000 ] || fail "2^20 layers refused after $ms ms of CPU" ;;
*) fail "no such case" ;;
esac
echo "$case: ok"
