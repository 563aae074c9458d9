"""The ftrt package against a real libftrt job: 2 ranks under mpirun (one
node: its SMP and one trainer), a private store.  tests/python/run.sh runs
it in sync and lazy capture.  The tests run in file order and share one
context: every registration comes before the first snapshot, as the C API
asks.  On rank 0 the fixture's ftrt.init() becomes the SMP and never
returns."""
import random

import numpy as np
import pytest
import torch

import ftrt

S = {}


@pytest.fixture(scope="module")
def ctx():
    c = ftrt.init()
    yield c
    c.finalize()


def test_init_returns_the_trainers_comm(ctx):
    from mpi4py import MPI
    assert isinstance(ctx.comm, MPI.Intracomm)
    assert (ctx.rank, ctx.size) == (0, 1)  # the other rank is the SMP
    assert ctx.comm.allreduce(1) == 1


def test_an_mpi_error_on_the_comm_raises(ctx):
    # mpi4py makes MPI errors return (and raise); ft_init's own splits run
    # with errors fatal, and the trainers' comm must get the handler back
    # (split while it was fatal, a bad send would end the job)
    from mpi4py import MPI
    with pytest.raises(MPI.Exception) as e:
        ctx.comm.send(1, dest=ctx.size)
    assert e.value.Get_error_class() == MPI.ERR_RANK


def test_register_what_a_loop_holds(ctx):
    torch.manual_seed(0)
    S["model"] = m = torch.nn.Sequential(torch.nn.Linear(6, 8),
                                         torch.nn.BatchNorm1d(8),
                                         torch.nn.Linear(8, 3))
    S["opt"] = opt = torch.optim.Adam(m.parameters(), lr=0.05)
    names = ctx.register_model(m)
    # parameters, then the BatchNorm's buffers (running stats, batch count)
    assert names[:2] == ["model.0.weight", "model.0.bias"]
    assert "model.1.running_mean" in names and "model.1.num_batches_tracked" in names
    S["onames"] = ctx.register_optimizer(opt)
    # another optimizer, its scheduler, and a small object of the script's
    S["m2"] = m2 = torch.nn.Linear(6, 2)
    S["sgd"] = sgd = torch.optim.SGD(m2.parameters(), lr=0.1, momentum=0.9)
    S["sched"] = torch.optim.lr_scheduler.ExponentialLR(sgd, gamma=0.5)
    ctx.register_model(m2, prefix="m2")
    ctx.register_optimizer(sgd, prefix="sgd")
    assert ctx.register_stateful("sched", S["sched"]) == "stateful.sched"
    ctx.register_rng()
    S["c"] = ctx.counters(step=0, batch=0, lr=0.5)
    S["shard"] = torch.arange(10, dtype=torch.float32)
    ctx.register("shard", S["shard"], ftrt.KIND_OTHER, global_offset=0,
                 global_size=10)


def test_duplicate_name_is_refused_by_libftrt(ctx):
    with pytest.raises(ftrt.Error) as e:
        ctx.register("model.0.weight", torch.zeros(3))
    assert e.value.name == "FT_EINVAL" and e.value.status == -1
    assert "already registered" in str(e.value)


def test_slice_outside_its_global_tensor_is_refused(ctx):
    with pytest.raises(ftrt.Error) as e:
        ctx.register("bad-slice", torch.zeros(4), global_offset=8, global_size=10)
    assert e.value.name == "FT_ERANGE"


def test_more_buffers_than_the_old_fixed_table(ctx):
    # 300 more, past the 256 a rank the library once held: every one is
    # registered (and snapshotted and restored by the tests below).
    keep = []
    for i in range(300):
        a = np.full(1, i, np.int64)
        keep.append(a)
        ctx.register(f"small{i}", a, ftrt.KIND_OTHER)
    assert len(ctx._regs) >= 300
    S["small"] = keep


def test_restore_with_nothing_committed_is_nosnapshot(ctx):
    with pytest.raises(ftrt.NoSnapshot) as e:
        ctx.restore()
    assert e.value.name == "FT_ENOSNAPSHOT"


def _step(m, opt):
    x = torch.randn(4, 6)
    opt.zero_grad()
    m(x).pow(2).sum().backward()
    opt.step()
    if m is S["model"]:   # the SGD model steps with it, and its scheduler
        _step(S["m2"], S["sgd"])
        S["sched"].step()


def _sgd_state():
    return [t.clone() for p in S["m2"].parameters()
            for t in S["sgd"].state[p].values()] + \
        [p.detach().clone() for p in S["m2"].parameters()]


def test_snapshot_then_restore_gives_back_every_byte(ctx):
    m, opt, c = S["model"], S["opt"], S["c"]
    _step(m, opt)
    with ctx.update(5):   # fence, then snapshot(5) on exit
        _step(m, opt)
        c.step, c.batch, c.lr = 5, 42, 0.25
    assert ctx.wait_committed() >= 1
    want = {k: v.clone() for k, v in m.state_dict().items()}
    want_opt = [t.clone() for p in m.parameters() for t in opt.state[p].values()]
    want_sgd, want_lr = _sgd_state(), S["sgd"].param_groups[0]["lr"]
    assert len(want_sgd) == 4 and want_lr == 0.1 * 0.5 ** 2
    draws = (torch.rand(3), np.random.rand(3), random.random())
    for _ in range(2):
        _step(m, opt)     # moves params, moments, BatchNorm stats, RNGs
    c.step, c.batch, c.lr = 9, 0, 1.0
    S["shard"].fill_(-1)
    assert ctx.restore() == 5
    for k, v in m.state_dict().items():
        assert torch.equal(v, want[k]), k
    got_opt = [t for p in m.parameters() for t in opt.state[p].values()]
    assert all(torch.equal(a, b) for a, b in zip(want_opt, got_opt))
    assert (c.step, c.batch, c.lr) == (5, 42, 0.25)
    got_sgd = _sgd_state()
    assert all(torch.equal(a, b) for a, b in zip(want_sgd, got_sgd))
    assert S["sgd"].param_groups[0]["lr"] == want_lr
    assert S["sched"].last_epoch == 2
    assert torch.equal(S["shard"], torch.arange(10, dtype=torch.float32))
    again = (torch.rand(3), np.random.rand(3), random.random())
    assert torch.equal(draws[0], again[0]) and np.array_equal(draws[1], again[1])
    assert draws[2] == again[2]


def test_register_after_the_first_snapshot_is_refused(ctx):
    with pytest.raises(ftrt.Error) as e:
        ctx.register("late", torch.zeros(2))
    assert e.value.name == "FT_ESTATE" and "registration is closed" in str(e.value)


def test_a_tensor_whose_storage_was_replaced_is_refused(ctx):
    p = S["model"][0].weight
    old = p.data
    p.data = old.clone()
    with pytest.raises(ftrt.Error) as e:
        ctx.snapshot(6)
    assert e.value.name == "FT_ESTATE" and "'model.0.weight'" in str(e.value)
    p.data = old
    # a module whose parameter is replaced by another object (assign=True)
    lin = S["model"][2]
    kept = lin.weight
    lin.weight = torch.nn.Parameter(kept.detach().clone())
    with pytest.raises(ftrt.Error) as e:
        ctx.snapshot(6)
    assert e.value.name == "FT_ESTATE" and "'model.2.weight' was replaced" in str(e.value)
    lin.weight = kept
    assert ctx.snapshot(6) is True
    ctx.fence()
    assert ctx.wait_committed() >= 2
