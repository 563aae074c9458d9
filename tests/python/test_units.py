"""Python-level units of the ftrt package that need no MPI job: the error
mapping, the tensor rules checked before ft_register, generator states as
bytes, eager Adam state.  Run by tests/python/run.sh (pytest)."""
import random

import numpy as np
import pytest
import torch

import ftrt
from ftrt import _lib


class FakeCtx(ftrt.Context):
    """A Context whose registrations stop before libftrt (no MPI job)."""

    def __init__(self):
        self._h, self.comm, self.rank, self.size = None, None, 0, 1
        self._regs, self._rng, self._frozen = {}, None, False
        self.seen = []

    def register(self, name, obj, kind=ftrt.KIND_PARAM, global_offset=None,
                 global_size=None):
        self._describe(name, obj)
        self.seen.append((name, obj, kind, global_offset, global_size))
        return name


def test_every_status_has_a_name_and_message():
    for status in range(0, -19, -1):
        assert _lib.err_name(status).startswith("FT_")
        assert _lib.strerror(status) != "unknown error"
    assert _lib.err_name(-6) == "FT_ENOSNAPSHOT"
    assert _lib.err_name(-1000) == "FT_UNKNOWN"


def test_check_raises_the_class_of_the_status():
    assert _lib.check(0, "x") == 0
    with pytest.raises(ftrt.NoSnapshot) as e:
        _lib.check(-6, "ft_restore")
    assert isinstance(e.value, ftrt.Error)
    assert e.value.name == "FT_ENOSNAPSHOT" and e.value.status == -6
    assert str(e.value) == "ft_restore: FT_ENOSNAPSHOT: no committed snapshot to restore"
    with pytest.raises(ftrt.Error) as e:
        _lib.check(-9, "ft_init", "why")
    assert type(e.value) is ftrt.Error
    assert str(e.value).endswith("store belongs to another job or layout: why")
    assert issubclass(ftrt.Busy, ftrt.Error) and issubclass(ftrt.TimedOut, ftrt.Error)


def test_non_contiguous_tensor_is_refused():
    ctx = FakeCtx()
    t = torch.zeros(4, 6).t()
    with pytest.raises(ftrt.Error) as e:
        ctx.register("t", t)
    assert e.value.name == "FT_EINVAL" and "not contiguous" in str(e.value)
    ctx.register("ok", torch.zeros(4, 6))


def test_sparse_tensor_and_foreign_objects_are_refused():
    ctx = FakeCtx()
    with pytest.raises(ftrt.Error, match="sparse"):
        ctx.register("s", torch.zeros(3, 3).to_sparse())
    with pytest.raises(ftrt.Error, match="neither a torch tensor nor a numpy array"):
        ctx.register("l", [1, 2, 3])
    with pytest.raises(ftrt.Error, match="C-contiguous"):
        ctx.register("a", np.zeros((4, 4))[:, 1])


def test_meta_device_tensor_is_refused():
    ctx = FakeCtx()
    with pytest.raises(ftrt.Error, match="device 'meta'"):
        ctx.register("m", torch.empty(3, device="meta"))


def test_long_names_are_shortened_the_same_way_every_time():
    long = "model." + "blocks.0." * 10 + "weight"
    a, b = ftrt._short_name(long), ftrt._short_name(long)
    assert a == b and len(a.encode()) <= ftrt.NAME_MAX and a.startswith("model.")
    assert ftrt._short_name(long + "x") != a
    assert ftrt._short_name("short") == "short"


def _rng_parts():
    return [ftrt._TorchRng(torch), ftrt._NumpyRng(np), ftrt._PythonRng(np)]


@pytest.mark.parametrize("gauss", [False, True])
def test_rng_states_round_trip_through_bytes(gauss):
    torch.manual_seed(3)
    np.random.seed(3)
    random.seed(3)
    if gauss:  # the cached second normal is part of numpy's and random's state
        np.random.standard_normal()
        random.gauss(0, 1)
    parts = _rng_parts()
    bufs = [np.zeros(p.nbytes, np.uint8) for p in parts]
    for p, b in zip(parts, bufs):
        p.pack(b)
    want = (torch.rand(5), np.random.standard_normal(3), random.gauss(0, 1),
            random.random())
    torch.rand(100)
    np.random.rand(100)
    random.random()
    for p, b in zip(parts, bufs):
        p.unpack(b)
    got = (torch.rand(5), np.random.standard_normal(3), random.gauss(0, 1),
           random.random())
    assert torch.equal(want[0], got[0])
    assert np.array_equal(want[1], got[1])
    assert want[2:] == got[2:]


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.ReLU(),
                               torch.nn.Linear(7, 2))


def _train(model, opt, steps=3):
    g = torch.Generator().manual_seed(1)
    for _ in range(steps):
        x = torch.randn(4, 5, generator=g)
        opt.zero_grad()
        model(x).pow(2).sum().backward()
        opt.step()


@pytest.mark.parametrize("cls,kw", [(torch.optim.Adam, {}),
                                    (torch.optim.AdamW, {"weight_decay": 0.1}),
                                    (torch.optim.Adam, {"amsgrad": True})])
def test_eager_adam_state_gives_the_same_bits(cls, kw):
    m1, m2 = _model(), _model()
    o1, o2 = cls(m1.parameters(), lr=0.01, **kw), cls(m2.parameters(), lr=0.01, **kw)
    ctx = FakeCtx()
    names = ctx.register_optimizer(o2)
    params = list(m2.parameters())
    # registered before any step: every moment, and one buffer of steps
    assert all(len(o2.state[p]) == (4 if kw.get("amsgrad") else 3) for p in params)
    assert names[-1] == "optim.steps"
    assert len(names) == len(params) * (3 if kw.get("amsgrad") else 2) + 1
    assert all(kind == ftrt.KIND_OPTIM for _, _, kind, _, _ in ctx.seen)
    steps = ctx.seen[-1][1]
    _train(m1, o1)
    _train(m2, o2)
    for a, b in zip(m1.parameters(), m2.parameters()):
        assert torch.equal(a, b)
    for a, b in zip(m1.parameters(), params):
        for key in o1.state[a]:
            assert torch.equal(o1.state[a][key].reshape(-1), o2.state[b][key].reshape(-1)), key
    # the registered tensors are the ones the optimizer updated, in place
    assert steps.tolist() == [3.0] * len(params)
    assert ctx.seen[0][1] is o2.state[params[0]]["exp_avg"]


def test_other_optimizers_are_refused_with_a_message():
    m = _model()
    with pytest.raises(ftrt.Error, match="SGD is not known"):
        FakeCtx().register_optimizer(torch.optim.SGD(m.parameters(), lr=0.1))


def test_counters():
    c = ftrt.Counters(["step", "batch"])
    c.step += 5
    c.batch = 7
    assert (c.step, c.batch) == (5, 7) and c.array.tolist() == [5, 7]
    with pytest.raises(AttributeError, match="no counter named 'epoch'"):
        c.epoch = 1
