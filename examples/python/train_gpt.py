#!/usr/bin/env python3
"""A small character-level GPT trained data-parallel under ftrt.

    ft-launch --nodes 4 -- python3 examples/python/train_gpt.py --steps 40

Every trainer holds the whole model; gradients are averaged with
torch.distributed (gloo) over the trainers' communicator, by hand, or with
--ddp by torch's DistributedDataParallel wrapped around the model (ftrt
registers the wrapped model's parameters, the same tensors).  With --sharded,
Adam's state is ZeRO-1 style: each trainer keeps only its slice of a flat
parameter vector's exp_avg/exp_avg_sq (and updates only that slice of the
parameters, then all-gathers them); those slices are registered as slices of
global tensors, so a job that shrinks gets them re-sliced by ftrt.

With --fsdp, the model is sharded by FSDP2 (fully_shard, one block at a
time): parameters and optimizer state are DTensor shards, which ftrt
registers as slices of their global tensors, so a job that shrinks gets
them re-sliced as well.  --optimizer picks another torch optimizer (ftrt
protects any), --lr-gamma adds an ExponentialLR scheduler, registered as a
Stateful.  --dcp saves model and optimizer with
torch.distributed.checkpoint through ftrt.dcp (DCP reshards on load).

Deterministic given --seed and the number of trainers: prints one
"step N loss X" line per step (the mean over trainers), "fresh start" or
"resumed from step S", and at the end "digest HEX", a SHA-256 of the whole
training state (parameters, the optimizer's state, the learning rate), the
same however many times the job failed and resumed.  --digest-at N also prints
"digest-at N HEX" after step N, or right after a restore of step N.

--no-ftrt runs the same training without ftrt (under plain mpirun, every
rank a trainer, gloo over MPI_COMM_WORLD): the same losses and digest.
--timing prints "time N steps S s median step M s" on rank 0 for the steps
after the first --timing-skip (5) of this run, start-up and warm-up left out
(ft-bench's py_train_vs_plain).  --stamps prints "stamp step N T" (the wall
clock) after each step.

--device cuda trains on the GPU (each trainer on the GPU of its rank among
the host's trainers, modulo the GPUs it sees; deterministic kernels):
parameters and optimizer state are CUDA tensors, registered as device memory
(a libftrt built with CUDA), the CUDA generator is registered with the
others, and the gradients are averaged over NCCL (--backend nccl, the
default there; NCCL wants a GPU of its own for each trainer: with fewer
GPUs than a host's trainers it is refused, give --backend gloo, which
FSDP2 cannot use).  A resumed run gives the same bits as long as NCCL sums
in the same order: with 2 trainers always, with more on the same GPUs and
links (a spare of another layout may make NCCL pick another order).

--torchft trains the same model under torchft instead of ftrt, for ft-bench's
downtime_vs_torchft: each process is a replica group of one, started with
torchrun beside torchft's lighthouse (REPLICA_GROUP_ID, NUM_REPLICA_GROUPS and
TORCHFT_LIGHTHOUSE in the environment), its DDP over the current quorum.
"""
import argparse
import hashlib
import random
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


def parse():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--snapshot-every", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--block", type=int, default=32)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--text", default="/usr/share/common-licenses/GPL-3")
    ap.add_argument("--optimizer", default="adam",
                    choices=["adam", "adamw", "sgd", "adagrad", "rmsprop"],
                    help="any torch optimizer is protected (sgd: momentum 0.9)")
    ap.add_argument("--lr-gamma", type=float, default=None,
                    help="an ExponentialLR scheduler stepping every step")
    ap.add_argument("--fsdp", action="store_true",
                    help="FSDP2 (fully_shard): parameters and optimizer "
                    "state are DTensor shards")
    ap.add_argument("--dcp", action="store_true",
                    help="save and load model and optimizer with "
                    "torch.distributed.checkpoint through ftrt.dcp")
    ap.add_argument("--dcp-mib", type=int, default=16,
                    help="--dcp: the arena, MiB for all trainers")
    ap.add_argument("--ddp", action="store_true",
                    help="DistributedDataParallel averages the gradients")
    ap.add_argument("--sharded", action="store_true",
                    help="ZeRO-1: each trainer holds its slice of Adam's state")
    ap.add_argument("--digest-at", type=int, default=-1)
    ap.add_argument("--no-ftrt", action="store_true")
    ap.add_argument("--timing", action="store_true",
                    help="print 'time N steps S s median step M s' for the "
                    "steps after the first --timing-skip")
    ap.add_argument("--timing-skip", type=int, default=5)
    ap.add_argument("--stamps", action="store_true",
                    help="print 'stamp step N T' (T: the wall clock) after "
                    "each step")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                    help="where the model trains (cuda: a GPU a trainer)")
    ap.add_argument("--backend", choices=["gloo", "nccl"], default=None,
                    help="torch.distributed's backend (default: nccl with "
                    "--device cuda, else gloo)")
    ap.add_argument("--torchft", action="store_true",
                    help="train under torchft instead of ftrt (ft-bench's "
                    "downtime_vs_torchft): a replica group of one process, "
                    "started without mpirun")
    ap.add_argument("--torchft-hold", metavar="STEP:FILE", default=None,
                    help="--torchft: after step STEP, write FILE and wait "
                    "to be killed")
    ap.add_argument("--torchft-stop", metavar="FILE", default=None,
                    help="--torchft: end once FILE exists")
    a = ap.parse_args()
    # Refused before ftrt.init(), so that every process says it and exits.
    if a.dcp and (a.sharded or a.no_ftrt):
        ap.error("--dcp saves through ftrt, unsharded or with --fsdp")
    if a.fsdp and a.sharded:
        ap.error("--fsdp and --sharded are two ways to shard: pick one")
    if a.ddp and (a.fsdp or a.sharded):
        ap.error("--ddp keeps the whole model on every trainer: not with "
                 "--fsdp or --sharded")
    if a.torchft and (a.fsdp or a.sharded or a.dcp or a.ddp or a.no_ftrt):
        ap.error("--torchft trains with torchft's own DDP, alone")
    if (a.torchft_hold or a.torchft_stop) and not a.torchft:
        ap.error("--torchft-hold and --torchft-stop are for --torchft")
    if a.device == "cuda":
        if a.sharded or a.dcp or a.torchft:
            ap.error("--device cuda: not with --sharded, --dcp or --torchft "
                     "(they keep their state in host memory)")
        if a.fsdp and a.backend == "gloo":
            ap.error("--fsdp --device cuda needs --backend nccl (gloo has no "
                     "reduce-scatter of CUDA tensors)")
        if not torch.cuda.is_available():
            ap.error(f"--device cuda: torch {torch.__version__} sees no "
                     "CUDA device")
    if a.backend is None:
        a.backend = "nccl" if a.device == "cuda" else "gloo"
    elif a.backend == "nccl" and a.device != "cuda":
        ap.error("--backend nccl reduces CUDA tensors: give --device cuda")
    return a


args = parse()
if args.device == "cuda":
    # cuBLAS's deterministic mode needs its workspace fixed before its first
    # call; the same bits after a resume need deterministic kernels.
    import os
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True)

# ---- ftrt: under ft-launch each node's SMP is a process of ft-smp and the
# ---- script runs on the trainers only, so init() may come after imports.
# ---- (Under a plain mpirun the first rank of each node becomes its SMP
# ---- here and never returns: that SMP then holds torch too.)
if args.torchft:
    # torchft's own set-up: each process is a replica group of one, told
    # its place and its lighthouse by the environment (REPLICA_GROUP_ID,
    # NUM_REPLICA_GROUPS, TORCHFT_LIGHTHOUSE, MASTER_ADDR/PORT, RANK,
    # WORLD_SIZE), as torchft's own DDP example is.
    import os
    ctx = comm = None
    rank = int(os.environ["REPLICA_GROUP_ID"])
    world = int(os.environ["NUM_REPLICA_GROUPS"])
elif args.no_ftrt:
    from mpi4py import MPI
    ctx, comm = None, MPI.COMM_WORLD
else:
    import ftrt
    ctx = ftrt.init()
    comm = ctx.comm

torch.set_num_threads(1)
if comm is not None:
    rank, world = comm.Get_rank(), comm.Get_size()
    if args.no_ftrt:
        from ftrt import init_process_group
    else:
        init_process_group = ftrt.init_process_group
    if args.device == "cuda":
        # this trainer's place among the host's trainers picks its GPU
        from mpi4py import MPI
        host = comm.Split_type(MPI.COMM_TYPE_SHARED)
        local, here = host.Get_rank(), host.Get_size()
        host.Free()
        if args.backend == "nccl" and here > torch.cuda.device_count():
            if ctx is not None:
                ctx.finalize()
            sys.exit(f"train_gpt.py: {here} trainers on this host, "
                     f"{torch.cuda.device_count()} GPU(s): NCCL wants a GPU "
                     "a trainer (give --backend gloo, or fewer trainers)")
        torch.cuda.set_device(local % torch.cuda.device_count())
    init_process_group(comm, backend=args.backend)  # over exactly the trainers
device = torch.device(args.device, torch.cuda.current_device()) \
    if args.device == "cuda" else torch.device("cpu")


# ---- the model ----

class Block(nn.Module):
    def __init__(self, d, heads, dropout):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.out = nn.Linear(4 * d, d)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2)
                   for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / (d // self.heads) ** 0.5
        mask = torch.ones(t, t, dtype=torch.bool,
                          device=x.device).triu(1)  # not a buffer
        att = self.drop(att.masked_fill(mask, float("-inf")).softmax(-1))
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.drop(self.proj(y))
        return x + self.drop(self.out(F.gelu(self.fc(self.ln2(x)))))


class GPT(nn.Module):
    def __init__(self, vocab, block, d, heads, layers, dropout):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(block, d)
        self.blocks = nn.Sequential(*[Block(d, heads, dropout)
                                      for _ in range(layers)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        t = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(t, device=idx.device))
        return self.head(self.ln(self.blocks(x)))


text = open(args.text, encoding="utf-8", errors="replace").read()
chars = sorted(set(text))
data = torch.tensor([chars.index(c) for c in text], dtype=torch.long,
                    device=device)

torch.manual_seed(args.seed)           # the same initial model everywhere
model = GPT(len(chars), args.block, args.d_model, args.heads, args.layers,
            args.dropout).to(device)
if args.fsdp:
    # FSDP2: every block, then the whole model, sharded row-wise (Shard(0))
    # over the trainers; it averages the gradients itself.
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    mesh = init_device_mesh(args.device, (world,))
    for blk in model.blocks:
        fully_shard(blk, mesh=mesh)
    fully_shard(model, mesh=mesh)
net = model  # what the forward pass runs
if args.ddp:
    # DDP: rank 0's parameters broadcast (the same initial model anyway),
    # gradients averaged in buckets during backward.  By default DDP
    # rebuilds its buckets after its first step, in the order the gradients
    # came; a resumed process's first step would sum in the first layout,
    # and over more than 2 trainers gloo's ring then adds in another order:
    # other bits than the run that did not fail.  find_unused_parameters
    # keeps the first layout for good (DDP never rebuilds it then).
    net = nn.parallel.DistributedDataParallel(
        model, find_unused_parameters=True,
        device_ids=[device.index] if args.device == "cuda" else None)
if args.torchft:
    # torchft's DDP: the gradients averaged over the replica groups of the
    # current quorum; a replica that joins heals from a peer's state_dict.
    from datetime import timedelta
    import torchft
    manager = torchft.Manager(
        pg=torchft.ProcessGroupGloo(timeout=timedelta(seconds=5)),
        min_replica_size=1, replica_id=f"train_gpt_{rank}",
        load_state_dict=lambda sd: (model.load_state_dict(sd["model"]),
                                    opt.load_state_dict(sd["optim"])),
        state_dict=lambda: {"model": model.state_dict(),
                            "optim": opt.state_dict()},
        hostname=os.environ["MASTER_ADDR"], timeout=timedelta(seconds=30))
    net = torchft.DistributedDataParallel(manager, model)
params = [p for p in model.parameters()]
# Each trainer draws its own batches and dropout masks.
torch.manual_seed(args.seed * 1000 + rank + 1)
np.random.seed(args.seed * 1000 + rank + 1)
random.seed(args.seed * 1000 + rank + 1)

# ---- data-parallel plumbing ----

sizes = [p.numel() for p in params]
total = sum(sizes)
if args.sharded:
    # One flat vector holds every parameter (the parameters become views of
    # it); this trainer owns elements [lo, hi) and Adam's state for them.
    flat = torch.cat([p.data.reshape(-1) for p in params])
    off = 0
    for p, n in zip(params, sizes):
        p.data = flat[off:off + n].view_as(p)
        off += n
    counts = [total // world + (r < total % world) for r in range(world)]
    lo = sum(counts[:rank])
    hi = lo + counts[rank]
    shard = nn.Parameter(flat[lo:hi])  # a view: updates land in flat
    trained = [shard]
else:
    trained = params
OPTIMIZERS = {"adam": (torch.optim.Adam, {}),
              "adamw": (torch.optim.AdamW, {"weight_decay": 0.01}),
              "sgd": (torch.optim.SGD, {"momentum": 0.9}),
              "adagrad": (torch.optim.Adagrad, {}),
              "rmsprop": (torch.optim.RMSprop, {"momentum": 0.5})}
cls, kw = OPTIMIZERS[args.optimizer]
opt = cls(trained, lr=args.lr, **kw)
if args.torchft:
    opt = torchft.Optimizer(manager, opt)  # commits only what the quorum did
sched = None
if args.lr_gamma is not None:
    sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=args.lr_gamma)


def average_gradients():
    if args.fsdp or args.ddp:
        return   # fully_shard's reduce-scatter, or DDP, has averaged them
    g = torch.cat([p.grad.reshape(-1) for p in params])
    dist.all_reduce(g)
    g /= world
    if args.sharded:
        shard.grad = g[lo:hi].clone()
    else:
        off = 0
        for p, n in zip(params, sizes):
            p.grad.copy_(g[off:off + n].view_as(p))
            off += n


def gather_params():
    """Sharded: every trainer's updated slice into everyone's flat vector."""
    from mpi4py import MPI
    buf = flat.numpy()
    displs = [sum(counts[:r]) for r in range(world)]
    comm.Allgatherv(MPI.IN_PLACE, [buf, counts, displs, MPI.FLOAT])


def whole(t):
    """A tensor's global value: an FSDP2 DTensor gathered (collective)."""
    t = t.detach()
    return (t.full_tensor() if hasattr(t, "full_tensor") else t).cpu()


def global_state():
    """The whole training state, the same bytes however many trainers: the
    parameters, every optimizer state tensor (sharded ones gathered), its
    numbers (Adam's step...) and the learning rate."""
    parts = [torch.cat([whole(p).reshape(-1) for p in params]).numpy()]
    keys = sorted(opt.state[trained[0]]) if opt.state[trained[0]] else []
    for key in keys:
        vals = [opt.state[p][key] for p in trained]
        if all(torch.is_tensor(v) and v.dim() > 0 for v in vals):
            mine = np.concatenate([whole(v).reshape(-1).numpy() for v in vals])
            parts.append(np.concatenate(comm.allgather(mine))
                         if args.sharded else mine)
        else:
            parts.append(np.array([float(v) for v in vals], np.float64))
    parts.append(np.array([g["lr"] for g in opt.param_groups], np.float64))
    return parts


def digest():
    h = hashlib.sha256()
    for a in global_state():
        h.update(np.ascontiguousarray(a).tobytes())
    mine = h.hexdigest()
    if comm is None:
        return mine   # torchft: this replica's own
    every = comm.allgather(mine)  # collective on every trainer
    if any(d != mine for d in every):
        sys.exit(f"train_gpt: the trainers do not hold the same state: {every}")
    return mine


def batch():
    ix = np.random.randint(0, len(data) - args.block - 1, size=args.batch)
    x = torch.stack([data[i:i + args.block] for i in ix])
    y = torch.stack([data[i + 1:i + 1 + args.block] for i in ix])
    return x, y


# ---- registration and restore: the lines ftrt asks for ----

def dcp_state():
    from torch.distributed.checkpoint.state_dict import get_state_dict
    msd, osd = get_state_dict(model, opt)
    return {"model": msd, "optim": osd}


if ctx is not None:
    if args.dcp:
        # DCP saves and loads model and optimizer (resharding on load);
        # ftrt's arena holds what it saves.
        import ftrt.dcp
        import torch.distributed.checkpoint as dcp
        arena = ftrt.dcp.Arena(ctx, args.dcp_mib << 20)
    elif args.sharded:
        # This trainer's slices of the global parameter vector and of Adam's
        # moments: ftrt re-slices them when the job restarts smaller.
        ctx.register("params", flat[lo:hi], ftrt.KIND_PARAM,
                     global_offset=lo, global_size=total)
        ctx.register_optimizer(opt, global_offset=lo, global_size=total)
    else:
        ctx.register_model(model)
        ctx.register_optimizer(opt)   # any torch optimizer
    if sched is not None:
        ctx.register_stateful("sched", sched)  # its state_dict, each snapshot
    ctx.register_rng()                # torch, numpy and Python generators
    counters = ctx.counters(step=0)
    try:
        if args.dcp:
            reader = ftrt.dcp.Reader(arena)
            reader.read_metadata()   # restore(): NoSnapshot on a fresh start
            state = dcp_state()
            dcp.load(state, storage_reader=reader)
            from torch.distributed.checkpoint.state_dict import set_state_dict
            set_state_dict(model, opt, model_state_dict=state["model"],
                           optim_state_dict=state["optim"])
            step = reader.step
        else:
            step = ctx.restore()
        if rank == 0:
            print(f"resumed from step {step}", flush=True)
        if args.sharded:
            gather_params()  # every trainer's slice -> the whole model
        if step == args.digest_at:  # the state as restored, before a step
            d = digest()
            if rank == 0:
                print(f"digest-at {step} {d}", flush=True)
    except ftrt.NoSnapshot:
        if rank == 0:
            print("fresh start", flush=True)
else:
    class _Plain:
        step = 0
    counters = _Plain()
    if rank == 0 and not args.torchft:
        print("fresh start (no ftrt)", flush=True)

if rank == 0:
    print(f"model {args.layers} layers d={args.d_model} params {total} "
          f"tensors {len(params)} trainers {world}"
          f"{' sharded' if args.sharded else ''}"
          f"{' fsdp' if args.fsdp else ''}"
          f"{' ddp' if args.ddp else ''}"
          f"{' dcp' if args.dcp else ''}", flush=True)

# ---- the loop ----

ends = [time.perf_counter()]  # the loop's start, then each step's end
model.train()
while args.torchft:
    # torchft: zero_grad() asks for a quorum, step() commits if every
    # replica of it averaged its gradients; a healed replica takes the
    # step of its peers.
    if args.torchft_stop and os.path.exists(args.torchft_stop):
        break
    opt.zero_grad()
    x, y = batch()
    loss = F.cross_entropy(net(x).view(-1, len(chars)), y.view(-1))
    loss.backward()
    opt.step()
    nxt = manager.current_step()
    if nxt == counters.step:
        continue   # not committed: the step is taken again
    counters.step = nxt
    print(f"step {nxt} loss {loss.item():.6f} replicas "
          f"{manager.num_participants()}", flush=True)
    if args.stamps:
        print(f"stamp step {nxt} {time.time():.3f}", flush=True)
    if args.torchft_hold and nxt == int(args.torchft_hold.split(":")[0]):
        open(args.torchft_hold.split(":", 1)[1], "w").close()
        import signal
        signal.pause()   # until the host is killed
    if nxt >= args.steps and not args.torchft_stop:
        break
while not args.torchft and counters.step < args.steps:
    x, y = batch()
    loss = F.cross_entropy(net(x).view(-1, len(chars)), y.view(-1))
    for p in params:
        p.grad = None
    loss.backward()
    average_gradients()
    nxt = counters.step + 1
    if ctx is not None and args.dcp:
        ctx.fence()
        opt.step()
        if sched is not None:
            sched.step()
        counters.step = nxt
        if nxt % args.snapshot_every == 0:
            dcp.save(dcp_state(), checkpoint_id=nxt,
                     storage_writer=ftrt.dcp.Writer(arena))
    elif ctx is not None:
        with ctx.update(nxt, snapshot=nxt % args.snapshot_every == 0):
            opt.step()
            if sched is not None:
                sched.step()
            if args.sharded:
                gather_params()
            counters.step = nxt
    else:
        opt.step()
        if sched is not None:
            sched.step()
        if args.sharded:
            gather_params()
        counters.step = nxt
    total_loss = comm.allreduce(loss.item())
    if rank == 0:
        print(f"step {nxt} loss {total_loss / world:.6f}", flush=True)
        if args.stamps:
            print(f"stamp step {nxt} {time.time():.3f}", flush=True)
    if nxt == args.digest_at:
        d = digest()
        if rank == 0:
            print(f"digest-at {nxt} {d}", flush=True)
    ends.append(time.perf_counter())

if args.timing and rank == 0:
    t = ends[min(args.timing_skip, len(ends) - 1):]
    steps = sorted(b - a for a, b in zip(t, t[1:])) or [0.0]
    print(f"time {len(t) - 1} steps {t[-1] - t[0]:.3f} s median step "
          f"{steps[len(steps) // 2]:.4f} s", flush=True)
d = digest()
if rank == 0 or args.torchft:
    print(f"digest {d}", flush=True)
if args.torchft:
    manager.shutdown()
else:
    dist.destroy_process_group()
if ctx is not None:
    ctx.finalize()
