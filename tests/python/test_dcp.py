"""torch.distributed.checkpoint through ftrt's storage (ftrt.dcp), in a
real job: tests/python/run.sh runs it under mpirun -np 3 (an SMP and two
trainers) on a torch with DCP and FSDP2.  The tests run in file order and
share one context (registration before the first snapshot)."""
import pytest
import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import (get_state_dict,
                                                     set_state_dict)

import ftrt
import ftrt.dcp

S = {}


@pytest.fixture(scope="module")
def ctx():
    c = ftrt.init()
    ftrt.init_process_group(c.comm)
    yield c
    dist.destroy_process_group()
    c.finalize()


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Linear(8, 3))


def _step(m, opt, seed):
    g = torch.Generator().manual_seed(seed)
    opt.zero_grad()
    m(torch.randn(4, 6, generator=g)).pow(2).sum().backward()
    for p in m.parameters():   # data parallel: the same gradients everywhere
        if not hasattr(p, "full_tensor"):
            dist.all_reduce(p.grad)
    opt.step()


def _full(m, opt):
    out = [p.detach().full_tensor() if hasattr(p, "full_tensor")
           else p.detach().clone() for p in m.parameters()]
    for p in m.parameters():
        for k, v in sorted(opt.state[p].items()):
            out.append(v.full_tensor() if hasattr(v, "full_tensor") else v.clone())
    return out


def test_register_the_arena(ctx):
    assert ctx.size == 2
    S["arena"] = ftrt.dcp.Arena(ctx, 1 << 20)
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.device_mesh import init_device_mesh
    S["m"] = m = _model()
    mesh = init_device_mesh("cpu", (ctx.size,))
    for layer in m:
        fully_shard(layer, mesh=mesh)
    fully_shard(m, mesh=mesh)
    # its DTensor shards registered too (each a slice of its global tensor)
    assert ctx.register_model(m)[0] == "model.0.weight"
    S["opt"] = torch.optim.Adam(m.parameters(), lr=0.05)


def test_load_before_any_save_is_nosnapshot(ctx):
    m, opt = S["m"], S["opt"]
    msd, osd = get_state_dict(m, opt)
    # DCP wraps what the reader raised, on every trainer (a BaseException)
    with pytest.raises(BaseException, match="FT_ENOSNAPSHOT"):
        dcp.load({"model": msd, "optim": osd},
                 storage_reader=ftrt.dcp.Reader(S["arena"]))


def test_save_then_load_gives_back_every_byte(ctx):
    m, opt = S["m"], S["opt"]
    for seed in (1, 2):
        _step(m, opt, seed)
    msd, osd = get_state_dict(m, opt)
    dcp.save({"model": msd, "optim": osd, "extra": {"step": 2, "lr": 0.5}},
             checkpoint_id=2, storage_writer=ftrt.dcp.Writer(S["arena"]))
    assert ctx.wait_committed() >= 1
    S["want"] = want = _full(m, opt)
    _step(m, opt, 3)
    assert not all(torch.equal(a, b) for a, b in zip(want, _full(m, opt)))
    msd, osd = get_state_dict(m, opt)
    state = {"model": msd, "optim": osd, "extra": {"step": 0, "lr": 0.0}}
    reader = ftrt.dcp.Reader(S["arena"])
    dcp.load(state, storage_reader=reader)
    set_state_dict(m, opt, model_state_dict=state["model"],
                   optim_state_dict=state["optim"])
    assert reader.step == 2
    assert state["extra"] == {"step": 2, "lr": 0.5}
    got = _full(m, opt)
    assert len(got) == len(want) and all(torch.equal(a, b) for a, b in zip(want, got))


def test_load_resharded_into_an_unsharded_model(ctx):
    """Saved from FSDP2 shards (half the rows on each trainer), loaded into
    a whole model on each: every trainer reads the other's share too."""
    m = _model()
    opt = torch.optim.Adam(m.parameters(), lr=0.05)
    _step(m, opt, 9)   # the optimizer's state exists, of the right shapes
    msd, osd = get_state_dict(m, opt)
    state = {"model": msd, "optim": osd}
    dcp.load(state, storage_reader=ftrt.dcp.Reader(S["arena"]))
    set_state_dict(m, opt, model_state_dict=state["model"],
                   optim_state_dict=state["optim"])
    got = _full(m, opt)
    want = S["want"]
    assert len(got) == len(want) and all(torch.equal(a, b) for a, b in zip(want, got))


def test_an_arena_too_small_is_refused_on_every_trainer(ctx):
    big = {"w": torch.zeros(1 << 19)}   # 2 MiB, the shares are 512 KiB
    with pytest.raises(BaseException, match="too small for its items|could not write"):
        dcp.save(big, checkpoint_id=7, storage_writer=ftrt.dcp.Writer(S["arena"]))


def test_async_save_is_refused_with_what_to_use(ctx):
    fut = dcp.async_save({"w": torch.zeros(4)}, checkpoint_id=8,
                         storage_writer=ftrt.dcp.Writer(S["arena"]))
    with pytest.raises(BaseException, match="use dcp.save"):
        fut.result()


def _save(value, step):
    dcp.save({"w": torch.full((6,), float(value))}, checkpoint_id=step,
             storage_writer=ftrt.dcp.Writer(S["arena"]))
    S["arena"].ctx.wait_committed()   # a load restores the newest committed


def test_a_reader_used_again_restores_anew(ctx):
    reader = ftrt.dcp.Reader(S["arena"])
    _save(20, 20)
    t = {"w": torch.zeros(6)}
    dcp.load(t, storage_reader=reader)
    assert reader.step == 20 and t["w"].tolist() == [20.0] * 6
    _save(21, 21)
    dcp.load(t, storage_reader=reader)
    assert reader.step == 21 and t["w"].tolist() == [21.0] * 6


def test_a_load_after_a_plain_snapshot_is_refused(ctx):
    assert ctx.snapshot(30) is True
    ctx.fence()
    ctx.wait_committed()
    with pytest.raises(BaseException, match="would mix two steps"):
        dcp.load({"w": torch.zeros(6)}, storage_reader=ftrt.dcp.Reader(S["arena"]))


def test_a_checkpoint_id_other_than_the_newest_is_refused(ctx):
    _save(31, 31)
    with pytest.raises(BaseException, match="checkpoint_id 5 asked for"):
        dcp.load({"w": torch.zeros(6)}, checkpoint_id=5,
                 storage_reader=ftrt.dcp.Reader(S["arena"]))
    with pytest.raises(BaseException, match="needs checkpoint_id"):
        dcp.save({"w": torch.zeros(6)}, storage_writer=ftrt.dcp.Writer(S["arena"]))

