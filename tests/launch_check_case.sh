#!/bin/sh
# The case launch-check-misses-megatron-flags (2026-12-05) through the binary, as a user runs it:
# launch_check_case.sh RECIPEBENCH SOURCE. Each input's launch warnings at the recipe's field, --strict failing on
# them; the elastic srun input passes both ways. Prints what failed; exit 1 then.
set -u
rb=$1; d=$2/tests/data/cases/launch-check-misses-megatron-flags
fail() { echo "FAIL: $*"; exit 1; }
# expect FILE LINE...: validate warns each LINE (a fixed string) and exits 0; --strict exits 1.
expect() {
  f=$1; shift
  out=$("$rb" validate "$d/$f" 2>&1) || fail "$f: validate exit $?: $out"
  for want in "$@"; do echo "$out" | grep -qF "$f:$want" || fail "$f: no '$want' in: $out"; done
  "$rb" validate --strict "$d/$f" >/dev/null 2>&1; rc=$?
  test $rc -eq 1 || fail "$f: validate --strict exit $rc, expected 1"
}
expect mbs-seqlen.yaml \
  "32:24: warning: layout.rows_per_microbatch: 1, but the run command passes --micro-batch-size 4 (line 41)" \
  "17:15: warning: workload.row_tokens: 4096, but the run command passes --seq-length 2048 (line 42)" \
  "4:11: warning: model_params.config: the model's num_layers 32, but the run command passes --num-layers 16 (line 44)" \
  "4:11: warning: model_params.config: the model's num_experts 8, but the run command passes --num-experts 4 (line 45)" \
  "4:11: warning: model_params.config: the model's top_k (experts per token) 2, but the run command passes --moe-router-topk 1 (line 46)"
expect switch-absent.yaml \
  "30:22: warning: layout.sequence_parallel: true, but the run command does not pass --sequence-parallel (Megatron-LM: absent is off)"
expect env-vars.yaml \
  "23:7: warning: layout.tp: 2, but the run command passes --tensor-model-parallel-size \$TP (= 4) (line 41)" \
  "27:7: warning: layout.ep: 8, but the run command passes --expert-model-parallel-size \${EP} (= 4) (line 42)" \
  "19:17: warning: workload.global_batch: 256, but the run command passes --global-batch-size \$GBS (= 512) (line 44)"
expect vpp-layers-flag.yaml \
  "25:8: warning: layout.vpp: 1, but the run command passes --num-layers-per-virtual-pipeline-stage 4 (line 44): 32 layers / PP 1 / 4 = VPP 8"
expect torchtitan.yaml \
  "23:7: warning: layout.tp: 2, but the run command passes --parallelism.tensor_parallel_degree 4 (line 38)" \
  "27:7: warning: layout.ep: 8, but the run command passes --parallelism.expert_parallel_degree 2 (line 38)" \
  "19:17: warning: workload.global_batch: 256, but the run command passes --training.global_batch_size 64 (line 38)" \
  "17:15: warning: workload.row_tokens: 4096, but the run command passes --training.seq_len 8192 (line 38)"
expect arrays.yaml \
  "23:7: warning: layout.tp: 2, but the run command passes --tensor-model-parallel-size 4 (line 48)"
# torchrun's elastic --nnodes=1:2 (at most 2 nodes of 8 GPUs: the recipe's 16): no warning, --strict passes.
out=$("$rb" validate --strict "$d/srun-elastic.yaml" 2>&1) || fail "srun-elastic: --strict exit $?: $out"
echo "$out" | grep "warning" | grep -q "run command" && fail "srun-elastic: a warning: $out"
exit 0
