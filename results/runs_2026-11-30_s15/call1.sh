#!/usr/bin/env bash
# Session 15, call 1 (device, repository root, .peers carried with ../shared/tools/peer_bench.py copied into it):
# the peer's timing here against the anchors' (peer_probe.py, then the anchors' own script on the same uniform batch
# sizes), and a case's timing under sustained load from rest (warm_probe.py, with nvidia-smi sampling every 100 ms).
nvidia-smi --query-gpu=uuid,name,clocks.sm,clocks.max.sm,power.limit --format=csv >"$OUT/gpu.txt"
C=uniform-bs128,uniform-bs640,uniform-bs2048,uniform-bs3584,uniform-bs4096,uniform-bs8192,uniform-bs31744,zipf-bs2048,zipf-bs31744
GPU0="python3 results/runs_2026-11-30_s15/peer_probe.py $C > /tmp/r/g0/peer_probe.log 2>&1; cat /tmp/r/g0/peer_probe.log
PEER_VARIANT=hopper_bf16x python3 .peers/peer_bench.py uniform 128,640,2048,3584,4096,8192,31744 > /tmp/r/g0/peer_bench.log 2>&1; tail -12 /tmp/r/g0/peer_bench.log
(nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv -lms 100 > /tmp/r/g0/smi_trace.csv & p=\$!; python3 results/runs_2026-11-30_s15/warm_probe.py uniform-bs8192,zipf-bs21504,uniform-bs2560,uniform-bs31744 4 > /tmp/r/g0/warm.log 2>&1; kill \$p); cat /tmp/r/g0/warm.log" DEADLINE_S=400 bash tools/two_gpus.sh
cp -r /tmp/r "$OUT/r"
