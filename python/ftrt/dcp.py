"""torch.distributed.checkpoint (DCP) storage in ftrt's protected memory.

    arena = ftrt.dcp.Arena(ctx, capacity)   # before the first snapshot
    dcp.save(state, checkpoint_id=step, storage_writer=ftrt.dcp.Writer(arena))
    dcp.load(state, storage_reader=ftrt.dcp.Reader(arena))

dcp.async_save is refused (it saves from a thread, and ftrt's snapshot is
collective over MPI from the main thread); FT_CAPTURE=lazy makes dcp.save's
snapshot asynchronous instead.

The arena is one registered byte buffer per trainer: trainer r of w holds
bytes [r*C//w, (r+1)*C//w) of a global arena of C = ``capacity`` bytes,
registered as that slice of it, so a job that shrinks gets the arena
re-sliced over its trainers like any sharded tensor.  A save writes each
trainer's items into its share, with a record of where each lies (the
coordinator's also holds DCP's metadata), then takes an ftrt snapshot
labelled with the checkpoint id (the step): the save returns once the
snapshot is taken (committed when ``ctx.wait_committed()`` says so).  A load
restores the newest committed snapshot (ctx.restore(), which fills every
other registered buffer too), then reads the items DCP's planner asks for
from whichever trainers now hold them, so DCP reshards on load: onto fewer
trainers, or another sharding.  Every call here is collective over the
trainers, as dcp.save and dcp.load are.
"""
import io
import pickle
import struct

import torch
from torch.distributed.checkpoint import (Metadata, StorageReader,
                                          StorageWriter)
from torch.distributed.checkpoint.metadata import (
    BytesStorageMetadata, ChunkStorageMetadata, MetadataIndex,
    TensorProperties, TensorStorageMetadata)
from torch.distributed.checkpoint.planner import LoadItemType, WriteItemType
from torch.distributed.checkpoint.storage import WriteResult

from . import KIND_OTHER, _FT_EINVAL, _FT_ERANGE, _FT_ESTATE
from ._lib import Error
from .state import _Plain

_MAGIC = b"FTRTDCP1"
_HEAD = struct.Struct("<8sQQ")   # magic, record offset, record length


class Arena:
    """The registered buffer a Writer fills and a Reader reads (kind
    OTHER: copied before ft_snapshot returns, lazy capture or not)."""

    def __init__(self, ctx, capacity, name="dcp"):
        if ctx.size > capacity:
            raise Error(_FT_EINVAL, "ftrt.dcp.Arena", f"capacity {capacity} "
                        f"bytes is less than one per trainer ({ctx.size})")
        self.ctx, self.capacity = ctx, capacity
        self.lo, self.hi = _share(capacity, ctx.rank, ctx.size)
        self.buf = torch.zeros(self.hi - self.lo, dtype=torch.uint8)
        ctx.register(name, self.buf, KIND_OTHER, global_offset=self.lo,
                     global_size=capacity)

    # Every trainer's pieces of global ranges, exchanged (collective).
    def fetch(self, ranges):
        """The bytes of each global range [a, b) in ranges, from whichever
        trainers hold them now.  Collective: every trainer calls it, each
        with its own list."""
        comm = self.ctx.comm
        wanted = comm.allgather(ranges)
        out = []
        for peer_ranges in wanted:   # what each peer wants from my share
            mine = []
            for a, b in peer_ranges:
                lo, hi = max(a, self.lo), min(b, self.hi)
                mine.append((lo, self.buf[lo - self.lo:hi - self.lo].numpy()
                             .tobytes()) if lo < hi else None)
            out.append(mine)
        got = comm.alltoall(out)
        result = []
        for k, (a, b) in enumerate(ranges):
            piece = bytearray(b - a)
            filled = 0
            for peer in got:
                if peer[k] is not None:
                    lo, data = peer[k]
                    piece[lo - a:lo - a + len(data)] = data
                    filled += len(data)
            if filled != b - a:
                raise Error(_FT_ESTATE, "ftrt.dcp", f"bytes [{a}, {b}) of the "
                            f"arena: {filled} found on the trainers")
            result.append(bytes(piece))
        return result


def _share(capacity, rank, world):
    return capacity * rank // world, capacity * (rank + 1) // world


def _done(value):
    f = torch.futures.Future()
    f.set_result(value)
    return f


class Writer(StorageWriter):
    """A DCP StorageWriter into an ftrt Arena; the checkpoint_id given to
    dcp.save is the snapshot's step (an int; None: one more than the last)."""

    def __init__(self, arena):
        super().__init__()
        self.arena = arena
        self.coordinator = False
        self.step = None

    def reset(self, checkpoint_id=None):
        # (dcp.save calls it only when given a checkpoint_id)
        self.step = None if checkpoint_id is None else int(checkpoint_id)

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id):
        try:
            return checkpoint_id is None or int(checkpoint_id) >= 0
        except (TypeError, ValueError):
            return False

    def set_up_storage_writer(self, is_coordinator, *args, **kwargs):
        self.coordinator = is_coordinator

    def prepare_local_plan(self, plan):
        return plan

    def prepare_global_plan(self, plans):
        return plans

    def storage_meta(self):
        return None

    def write_data(self, plan, planner):
        import threading
        if threading.current_thread() is not threading.main_thread():
            # every trainer's save runs in a thread alike: all refuse here
            raise Error(_FT_EINVAL, "ftrt.dcp.Writer", "dcp.async_save "
                        "saves from a thread of its own, and an ftrt "
                        "snapshot is collective over MPI from the main "
                        "thread: use dcp.save (with FT_CAPTURE=lazy the "
                        "copy goes on while training does)")
        if self.step is None:   # the same on every trainer: all refuse
            raise Error(_FT_EINVAL, "ftrt.dcp.Writer", "dcp.save needs "
                        "checkpoint_id=STEP: the step the snapshot is "
                        "labelled with")
        ctx = self.arena.ctx
        results = ctx._agreed("ftrt.dcp.Writer",
                              lambda: self._write(plan, planner),
                              "write its items: nothing was snapshotted")
        ctx.snapshot(self.step)
        return _done(results)

    def _write(self, plan, planner):
        a = self.arena
        size = a.hi - a.lo
        pos = _HEAD.size
        index, results = {}, []
        for item in plan.items:
            data = planner.resolve_data(item)
            if item.type == WriteItemType.BYTE_IO:
                raw, desc = data.getvalue(), None
                src = torch.frombuffer(bytearray(raw), dtype=torch.uint8) \
                    if raw else None
            else:
                t = data.detach().cpu().contiguous()
                src = t.reshape(-1).view(torch.uint8) if t.numel() else None
                desc = (str(t.dtype).replace("torch.", ""), tuple(t.shape))
            n = 0 if src is None else src.numel()
            if pos + n > size:
                raise Error(_FT_ERANGE, "ftrt.dcp.Writer", f"trainer "
                            f"{a.ctx.rank}'s share of the arena is {size} "
                            f"bytes, too small for its items: give the Arena "
                            f"a capacity of {2 * a.capacity} or more")
            if n:
                a.buf[pos:pos + n].copy_(src)
            key = (item.index.fqn, tuple(item.index.offset or ()))
            index[key] = (a.lo + pos, n, desc)
            results.append(WriteResult(index=item.index, size_in_bytes=n,
                                       storage_data=None))
            pos += n
        meta = None
        if self.coordinator:
            m = getattr(planner, "metadata", None)
            if m is None:
                raise Error(_FT_EINVAL, "ftrt.dcp.Writer", "the save planner "
                            "keeps no .metadata (DefaultSavePlanner does)")
            meta = _plain_metadata(m)
        record = pickle.dumps({"world": a.ctx.size, "rank": a.ctx.rank,
                               "step": self.step, "index": index,
                               "metadata": meta}, protocol=4)
        if pos + len(record) > size:
            raise Error(_FT_ERANGE, "ftrt.dcp.Writer", f"trainer "
                        f"{a.ctx.rank}'s share of the arena ({size} bytes) "
                        f"has no room for its record: give the Arena a "
                        f"capacity of {2 * a.capacity} or more")
        a.buf[pos:pos + len(record)] = torch.frombuffer(
            bytearray(record), dtype=torch.uint8)
        head = _HEAD.pack(_MAGIC, pos, len(record))
        a.buf[:_HEAD.size] = torch.frombuffer(bytearray(head), dtype=torch.uint8)
        return results

    def finish(self, metadata, results):
        pass   # the snapshot was taken when every trainer had written


class Reader(StorageReader):
    """A DCP StorageReader from an ftrt Arena: the newest committed snapshot
    (restored on the first read_metadata), resharded as DCP's planner asks."""

    def __init__(self, arena):
        super().__init__()
        self.arena = arena
        self.index = self.metadata = None
        self.step = self.want = None
        self.used = False

    def reset(self, checkpoint_id=None):
        # (dcp.load calls it only when given a checkpoint_id)
        self.want = None if checkpoint_id is None else int(checkpoint_id)

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id):
        return Writer.validate_checkpoint_id(checkpoint_id)

    def read_metadata(self, *args, **kwargs):
        # A read_metadata() before dcp.load (to learn of a fresh start) is
        # kept for that load; a load after a load restores anew.
        if self.index is not None and not self.used:
            return self.metadata
        self.index = self.metadata = None
        self.used = False
        a = self.arena
        self.step = a.ctx.restore()    # raises NoSnapshot on every trainer
        # Every trainer reads every record (the same fetches on each: they
        # are collective).  Trainer 0's share begins the arena, and its
        # record says how many trainers wrote.
        first = self._records([0], None)[0]
        world = first["world"]
        records = [first] + self._records(range(1, world), world)
        steps = sorted({rec["step"] for rec in records})
        if steps != [self.step]:
            raise Error(_FT_ESTATE, "ftrt.dcp.Reader", f"the newest committed "
                        f"snapshot is of step {self.step}, but the DCP "
                        f"checkpoint in it is of step(s) "
                        f"{', '.join(map(str, steps))}: that snapshot was not "
                        "taken by one dcp.save through ftrt.dcp.Writer (a "
                        "ctx.snapshot() after it, or a save that failed), and "
                        "loading it would mix two steps")
        if self.want is not None and self.want != self.step:
            raise Error(_FT_ESTATE, "ftrt.dcp.Reader", f"checkpoint_id "
                        f"{self.want} asked for, but the newest committed "
                        f"snapshot is of step {self.step} (ftrt keeps the "
                        "newest only)")
        self.index = {}
        for rec in records:
            self.index.update(rec["index"])
        self.metadata = _metadata_of(records[0]["metadata"])
        return self.metadata

    def _records(self, ranks, world):
        a = self.arena
        starts = [_share(a.capacity, r, world or 1)[0] for r in ranks]
        heads = a.fetch([(s, s + _HEAD.size) for s in starts])
        spans = []
        for r, s, head in zip(ranks, starts, heads):
            magic, off, n = _HEAD.unpack(head)
            if magic != _MAGIC:
                raise Error(_FT_ESTATE, "ftrt.dcp.Reader", f"the share of "
                            f"trainer {r} in the restored arena holds no "
                            "checkpoint (no dcp.save through ftrt.dcp.Writer "
                            "was snapshotted)")
            spans.append((s + off, s + off + n))
        return [_Plain(io.BytesIO(raw)).load() for raw in a.fetch(spans)]

    def set_up_storage_reader(self, metadata, is_coordinator, *args, **kwargs):
        pass

    def prepare_local_plan(self, plan):
        return plan

    def prepare_global_plan(self, plans):
        return plans

    def read_data(self, plan, planner):
        where, missing = [], None
        for req in plan.items:
            key = (req.storage_index.fqn, tuple(req.storage_index.offset or ()))
            if key not in self.index:
                missing = missing or key
                continue
            where.append(self.index[key])
        # the fetch is collective: every trainer takes part, then all learn
        # whether one of them asked for what is not there
        datas = self.arena.fetch([(off, off + n) for off, n, _ in where])
        from mpi4py import MPI
        ctx = self.arena.ctx
        bad = ctx.comm.allreduce(ctx.rank if missing else -1, op=MPI.MAX)
        if missing:
            raise Error(_FT_ESTATE, "ftrt.dcp.Reader", f"{missing[0]} at "
                        f"{missing[1]} is not in the checkpoint")
        if bad >= 0:
            raise Error(_FT_ESTATE, "ftrt.dcp.Reader", f"trainer {bad} asked "
                        "for an item that is not in the checkpoint (see its "
                        "message)")
        self.used = True
        for req, (_, _, desc), raw in zip(plan.items, where, datas):
            if req.type == LoadItemType.BYTE_IO:
                planner.load_bytes(req, io.BytesIO(raw))
                continue
            dtype = getattr(torch, desc[0], None)
            if not isinstance(dtype, torch.dtype):
                raise Error(_FT_ESTATE, "ftrt.dcp.Reader", f"the record names "
                            f"{desc[0]!r}, not a torch dtype")
            t = torch.frombuffer(bytearray(raw), dtype=torch.uint8) \
                .view(dtype).reshape(desc[1]) if raw else \
                torch.empty(desc[1], dtype=dtype)
            for dim, (o, n) in enumerate(zip(req.storage_offsets, req.lengths)):
                t = t.narrow(dim, o, n)
            target = planner.resolve_tensor(req).detach()
            target.copy_(t)
            planner.commit_tensor(req, target)
        return _done(None)


# ---- DCP's metadata as builtin values, and back ----

def _plain_metadata(m):
    sd = {}
    for fqn, md in m.state_dict_metadata.items():
        if isinstance(md, BytesStorageMetadata):
            sd[fqn] = ("bytes",)
        else:
            sd[fqn] = ("tensor", str(md.properties.dtype).replace("torch.", ""),
                       tuple(md.size),
                       [(tuple(c.offsets), tuple(c.sizes)) for c in md.chunks])
    return {"state_dict": sd, "planner_data": m.planner_data}


def _dtype(name):
    d = getattr(torch, name, None)
    if not isinstance(d, torch.dtype):
        raise Error(_FT_ESTATE, "ftrt.dcp.Reader", f"the metadata names "
                    f"{name!r}, not a torch dtype")
    return d


def _metadata_of(plain):
    if plain is None:
        raise Error(_FT_ESTATE, "ftrt.dcp.Reader", "trainer 0's record holds "
                    "no metadata")
    sd = {}
    for fqn, v in plain["state_dict"].items():
        if v[0] == "bytes":
            sd[fqn] = BytesStorageMetadata()
        else:
            sd[fqn] = TensorStorageMetadata(
                properties=TensorProperties(dtype=_dtype(v[1])),
                size=torch.Size(v[2]),
                chunks=[ChunkStorageMetadata(offsets=torch.Size(o),
                                             sizes=torch.Size(s))
                        for o, s in v[3]])
    return Metadata(state_dict_metadata=sd,
                    planner_data=plain["planner_data"])


__all__ = ["Arena", "Writer", "Reader", "MetadataIndex"]
