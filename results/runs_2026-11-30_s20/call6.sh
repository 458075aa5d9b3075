#!/usr/bin/env bash
# Session 20, call 6 (device, nvidia-h200-x2, repository root, .peers carried), the tree of call 5: why the persistent
# grid is slower. ncu (full set, stall reasons) on uniform-bs12288 (384 rows a slice, the block_m 128 entry), the
# table's kernel on GPU 0, the persistent one (forced) on GPU 1.
nvidia-smi --query-gpu=uuid,name --format=csv >"$OUT/gpu.txt"
export GPU0="bash tools/device_agenda.sh ncu uniform:12288"
export GPU1="MOE_GATHER_SM90_FORCE=persistent=1 bash tools/device_agenda.sh ncu uniform:12288"
DEADLINE_S=300 bash tools/two_gpus.sh
cp -r /tmp/r "$OUT/r"
