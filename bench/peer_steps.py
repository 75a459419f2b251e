#!/usr/bin/env python3
# One line per training step of the Hugging Face transformers peer (../shared/peer/peer_hf.py), for recipebench's
# command backend (docs/command-backend.md). peer_hf.py itself prints only `RESULT {json}` after its last step; this
# wrapper runs it unchanged (runpy, so its timing is untouched), then prints the per-step times and losses it kept
# in `times` and `losses`, one line each:
#   peer step <i> time_s <seconds, repr> loss <loss, repr> tokens <rows x seq> memory_gb <GB, repr>
# read by the regex log format of recipes/qwen3.5-35b-a3b/h200/peer-hf-1gpu-bf16.yaml. memory_gb is the run's
# peak of torch.cuda.max_memory_allocated() in GB (1e9 bytes), read in this process after peer_hf.py ends: peer_hf.py
# keeps no per-step peak, so every line carries the run's (its RESULT line's peak_mem_gb); no CUDA, no field.
# Usage: peer_steps.py PATH/TO/peer_hf.py [peer_hf.py's arguments...]
import runpy
import sys

if len(sys.argv) < 2:
    sys.exit("usage: peer_steps.py PATH/TO/peer_hf.py [arguments...]")
script = sys.argv[1]
sys.argv = [script] + sys.argv[2:]
peer = runpy.run_path(script, run_name="__main__")
tokens = peer["a"].rows * peer["a"].seq
torch = sys.modules.get("torch")
memory = ""
if torch is not None and torch.cuda.is_available():
    memory = f" memory_gb {torch.cuda.max_memory_allocated() / 1e9!r}"
for i, (seconds, loss) in enumerate(zip(peer["times"], peer["losses"])):
    print(f"peer step {i} time_s {seconds!r} loss {loss!r} tokens {tokens}{memory}", flush=True)
