#!/usr/bin/env python3
"""Snapshot stall of the ftrt Python package against a plain torch copy.

Run under ft-launch (one node: an SMP and one trainer), FT_CAPTURE=sync or
lazy.  Registers --tensors tensors totalling --mib MiB, then --reps times:
a copy of every tensor into preallocated buffers (Tensor.copy_), and a
snapshot.  In sync mode the stall is snapshot()'s time; in lazy mode it is
snapshot() plus fence() after a compute of about a copy's length.  Prints
"result py_copy_s", "result py_stall_MODE_s" (medians) and
"ratio py_stall_MODE_vs_copy".  With --dcp, then --reps times
torch.distributed.checkpoint.async_save of the same tensors (into a
directory under TMPDIR, FileSystemWriter), timing how long the call blocks
the trainer: "result dcp_async_block_s" and "ratio py_stall_vs_dcp_async"
(this run's stall / that).  With --device cuda the tensors are in GPU
memory and the copy is into pinned host memory (non_blocking, then a
synchronize: cudaMemcpyAsync's device-to-host copy): it prints
"ratio py_cuda_memcpy_vs_stall_MODE" instead, the copy's time / the stall
(the fraction of the copy's bandwidth the snapshot reaches).
"""
import argparse
import os
import statistics
import time

import ftrt

ap = argparse.ArgumentParser()
ap.add_argument("--tensors", type=int, default=150)
ap.add_argument("--mib", type=int, default=256)
ap.add_argument("--reps", type=int, default=5)
ap.add_argument("--dcp", action="store_true")
ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
args = ap.parse_args()
ctx = ftrt.init()  # before torch: under a plain mpirun, rank 0 is the SMP
import torch  # noqa: E402

if args.device == "cuda" and not torch.cuda.is_available():
    ctx.finalize()
    raise SystemExit("py-stall.py --device cuda: torch "
                     f"{torch.__version__} sees no CUDA device")
torch.set_num_threads(1)
mode = os.environ.get("FT_CAPTURE", "sync")
elems = args.mib * 2**20 // 4
sizes = [elems // args.tensors + (i < elems % args.tensors)
         for i in range(args.tensors)]
cuda = args.device == "cuda"
state = [torch.full((n,), float(i), device=args.device)
         for i, n in enumerate(sizes)]
dst = [torch.empty(t.shape, dtype=t.dtype, pin_memory=cuda) for t in state]
for i, t in enumerate(state):
    ctx.register(f"t{i}", t, ftrt.KIND_PARAM)
a = torch.randn(256, 256)


def compute(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        a @ a


copies, stalls = [], []
for rep in range(args.reps):
    t0 = time.perf_counter()
    for d, t in zip(dst, state):
        d.copy_(t, non_blocking=cuda)
    if cuda:
        torch.cuda.synchronize()
    copies.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    ctx.snapshot(rep + 1)
    stall = time.perf_counter() - t0
    if mode == "lazy":
        compute(2 * copies[-1])
        t0 = time.perf_counter()
        ctx.fence()
        stall += time.perf_counter() - t0
    stalls.append(stall)
    ctx.wait_committed()
c, s = statistics.median(copies), statistics.median(stalls)
print(f"result py_copy_s {c:.4f}")
print(f"result py_stall_{mode}_s {s:.4f}")
if cuda:
    print(f"ratio py_cuda_memcpy_vs_stall_{mode} {c / s:.3f}", flush=True)
else:
    print(f"ratio py_stall_{mode}_vs_copy {s / c:.3f}", flush=True)


def dcp_blocking():
    """Median seconds dcp.async_save blocks for the same tensors, or why
    it could not run."""
    import shutil
    import tempfile
    try:
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint import FileSystemWriter
        dcp.async_save
    except (ImportError, AttributeError) as e:
        return None, f"no torch.distributed.checkpoint.async_save in torch {torch.__version__} ({e})"
    ftrt.init_process_group(ctx.comm)
    blocks = []
    for rep in range(args.reps):
        where = tempfile.mkdtemp(prefix="ftrt-dcp.")
        try:
            sd = {f"t{i}": t for i, t in enumerate(state)}
            t0 = time.perf_counter()
            fut = dcp.async_save(sd, storage_writer=FileSystemWriter(where))
            blocks.append(time.perf_counter() - t0)
            fut.result()
        finally:
            shutil.rmtree(where, ignore_errors=True)
    torch.distributed.destroy_process_group()
    return statistics.median(blocks), None


if args.dcp:
    b, why = dcp_blocking()
    if b is None:
        print(f"note dcp: {why}")
    else:
        print(f"result dcp_async_block_s {b:.4f}")
        print(f"ratio py_stall_vs_dcp_async {s / b:.3f}", flush=True)
ctx.finalize()
