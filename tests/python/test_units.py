"""Python-level units of the ftrt package that need no MPI job: the error
mapping, the tensor rules checked before ft_register, generator states as
bytes, any optimizer's state and Statefuls through a snapshot and a restore
simulated in memory.  Run by tests/python/run.sh (pytest)."""
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
        self._packers, self._held = [], []
        self.seen = []
        self.fences = 0

    def register(self, name, obj, kind=ftrt.KIND_PARAM, global_offset=None,
                 global_size=None):
        self._describe(name, obj)
        assert name not in [n for n, *_ in self.seen], name
        self.seen.append((name, obj, kind, global_offset, global_size))
        return name

    def fence(self):
        self.fences += 1

    def snap(self):
        """What ft_snapshot copies: every registered buffer, after packing."""
        for p in self._packers:
            p.pack()
        return [_copy(obj) for _, obj, *_ in self.seen]

    def put_back(self, saved):
        """What ft_restore does: the saved bytes into every buffer, then
        the packers' unpack."""
        for (_, obj, *_), old in zip(self.seen, saved):
            if isinstance(obj, torch.Tensor):
                with torch.no_grad():
                    obj.copy_(old)
            else:
                obj[...] = old
        for p in self._packers:
            p.unpack()


def _copy(obj):
    return obj.detach().clone() if isinstance(obj, torch.Tensor) else obj.copy()


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


def test_an_error_survives_pickling():
    import pickle
    e = pickle.loads(pickle.dumps(ftrt.NoSnapshot(-6, "ft_restore", "why")))
    assert type(e) is ftrt.NoSnapshot and e.status == -6 and str(e).endswith(": why")


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


OPTIMIZERS = [
    (torch.optim.SGD, {"momentum": 0.9}),
    (torch.optim.SGD, {"momentum": 0.9, "dampening": 0.1, "weight_decay": 0.01}),
    (torch.optim.SGD, {"momentum": 0.9, "nesterov": True}),
    (torch.optim.SGD, {}),
    (torch.optim.Adam, {}),
    (torch.optim.Adam, {"amsgrad": True}),
    (torch.optim.AdamW, {"weight_decay": 0.1}),
    (torch.optim.Adagrad, {"initial_accumulator_value": 0.1}),
    (torch.optim.RMSprop, {"momentum": 0.5, "centered": True}),
    (torch.optim.Adadelta, {}),
    (torch.optim.Adamax, {}),
    (torch.optim.NAdam, {}),
    (torch.optim.RAdam, {}),
    (torch.optim.ASGD, {}),
    (torch.optim.Rprop, {}),
]


def _ids(c):
    return c[0].__name__ + "".join(f"-{k}" for k in c[1])


def _params_and_state(model, opt):
    out = [p.detach().clone() for p in model.parameters()]
    for p in model.parameters():
        for k, v in sorted(opt.state[p].items()):
            out.append(v.detach().clone() if isinstance(v, torch.Tensor)
                       else torch.tensor(float(v if v is not None else -1)))
    return out


def _same(a, b):
    return len(a) == len(b) and all(
        x.dtype == y.dtype and torch.equal(x.reshape(-1), y.reshape(-1))
        for x, y in zip(a, b))


@pytest.mark.parametrize("cls,kw", OPTIMIZERS, ids=[_ids(c) for c in OPTIMIZERS])
def test_any_optimizer_registered_gives_the_same_bits(cls, kw):
    """Registered before its first step and snapshotted after every step,
    an optimizer computes what the same optimizer does unregistered."""
    m1, m2 = _model(), _model()
    o1, o2 = cls(m1.parameters(), lr=0.01, **kw), cls(m2.parameters(), lr=0.01, **kw)
    ctx = FakeCtx()
    names = ctx.register_optimizer(o2)
    params = list(m2.parameters())
    # the first step is a fresh optimizer's (Adagrad makes its state at once)
    assert all(len(o2.state[p]) == len(o1.state[q])
               for p, q in zip(params, m1.parameters()))
    assert all(n.startswith("optim.") for n in names)
    ctx.snap()
    for _ in range(3):
        _train(m1, o1, steps=1)
        _train(m2, o2, steps=1)
        ctx.snap()
        assert _same(_params_and_state(m1, o1), _params_and_state(m2, o2))
    # from the first snapshot on, the optimizer updates the registered tensors
    regs = {id(obj) for _, obj, *_ in ctx.seen}
    for p in params:
        for v in o2.state[p].values():
            if isinstance(v, torch.Tensor) and v.dim() > 0:
                assert id(v) in regs


@pytest.mark.parametrize("cls,kw", OPTIMIZERS, ids=[_ids(c) for c in OPTIMIZERS])
def test_any_optimizer_resumes_bit_for_bit(cls, kw):
    """Snapshot after 2 steps, go on to 4, restore, go on to 4 again: the
    same bits as the first time; a restore to before the first step leaves
    the optimizer as fresh as it was."""
    m = _model()
    o = cls(m.parameters(), lr=0.01, **kw)
    ctx = FakeCtx()
    ctx.register_model(m)
    ctx.register_optimizer(o)
    fresh = ctx.snap()
    g = torch.Generator().manual_seed(5)
    batches = [torch.randn(4, 5, generator=g) for _ in range(4)]

    def step(x):
        o.zero_grad()
        m(x).pow(2).sum().backward()
        o.step()
    for x in batches[:2]:
        step(x)
    saved = ctx.snap()
    for x in batches[2:]:
        step(x)
    first = _params_and_state(m, o)
    ctx.put_back(saved)
    for x in batches[2:]:
        step(x)
    assert _same(first, _params_and_state(m, o))
    ctx.put_back(fresh)
    fresh_opt = cls(_model().parameters(), lr=0.01, **kw)
    assert all(len(o.state[p]) == len(fresh_opt.state[q]) for p, q in
               zip(m.parameters(), fresh_opt.param_groups[0]["params"]))
    step(batches[0])
    m0 = _model()
    o0 = cls(m0.parameters(), lr=0.01, **kw)
    o0.zero_grad()
    m0(batches[0]).pow(2).sum().backward()
    o0.step()
    assert _same(_params_and_state(m0, o0), _params_and_state(m, o))


def test_a_scheduled_learning_rate_is_restored():
    m = _model()
    o = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(o, step_size=1, gamma=0.5)
    ctx = FakeCtx()
    ctx.register_optimizer(o)
    ctx.register_stateful("sched", sched)
    _train(m, o, steps=1)
    sched.step()
    saved = ctx.snap()
    for _ in range(3):
        _train(m, o, steps=1)
        sched.step()
    assert o.param_groups[0]["lr"] == 0.1 * 0.5 ** 4
    ctx.put_back(saved)
    assert o.param_groups[0]["lr"] == 0.05
    assert sched.last_epoch == 1 and sched.get_last_lr() == [0.05]
    sched.step()
    assert o.param_groups[0]["lr"] == 0.025


def test_optimizers_that_cannot_be_registered_say_why():
    m = _model()
    with pytest.raises(ftrt.Error, match="one step on zeros.*failed"):
        FakeCtx().register_optimizer(torch.optim.LBFGS(m.parameters()))
    with pytest.raises(ftrt.Error, match="not a torch.optim.Optimizer"):
        FakeCtx().register_optimizer(object())


def test_an_optimizer_that_has_stepped_is_adopted_as_it_is():
    m1, m2 = _model(), _model()
    o1, o2 = torch.optim.Adam(m1.parameters()), torch.optim.Adam(m2.parameters())
    _train(m1, o1, steps=2)
    _train(m2, o2, steps=2)
    ctx = FakeCtx()
    ctx.register_optimizer(o2)
    saved = ctx.snap()
    _train(m1, o1, steps=1)
    _train(m2, o2, steps=1)
    assert _same(_params_and_state(m1, o1), _params_and_state(m2, o2))
    ctx.put_back(saved)
    assert all(float(o2.state[p]["step"]) == 2.0 for p in m2.parameters())


def test_an_optimizer_whose_state_changes_shape_is_refused_at_the_snapshot():
    m = _model()
    o = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    ctx = FakeCtx()
    ctx.register_optimizer(o)
    _train(m, o, steps=1)
    p = next(m.parameters())
    o.state[p]["momentum_buffer"] = torch.zeros(3)
    with pytest.raises(ftrt.Error, match="not a torch.float32 tensor of shape"):
        ctx.snap()


class Position:
    """A script's own small state, floats included."""

    def __init__(self):
        self.epoch, self.offset, self.best = 0, 0, float("inf")

    def state_dict(self):
        return {"epoch": self.epoch, "offset": self.offset, "best": self.best}

    def load_state_dict(self, d):
        self.epoch, self.offset, self.best = d["epoch"], d["offset"], d["best"]


def test_a_stateful_object_round_trips():
    pos = Position()
    ctx = FakeCtx()
    assert ctx.register_stateful("pos", pos) == "stateful.pos"
    pos.epoch, pos.offset, pos.best = 3, 1234, 0.1 + 0.2
    saved = ctx.snap()
    pos.epoch, pos.offset, pos.best = 9, 0, 5.0
    ctx.put_back(saved)
    assert (pos.epoch, pos.offset, pos.best) == (3, 1234, 0.1 + 0.2)


def test_a_stateful_that_outgrows_its_capacity_is_refused_with_the_size_to_use():
    pos = Position()
    ctx = FakeCtx()
    ctx.register_stateful("pos", pos, capacity=4096)
    saved = ctx.snap()
    pos.offset = list(range(10000))
    with pytest.raises(ftrt.Error, match=r"more than the 4096 registered: "
                       r"register it with capacity=\d+"):
        ctx.snap()
    pos.offset = 7
    ctx.put_back(saved)
    assert pos.offset == 0
    with pytest.raises(ftrt.Error, match="has no state_dict"):
        FakeCtx().register_stateful("x", object())
    with pytest.raises(ftrt.Error, match="more than the 10 registered"):
        FakeCtx().register_stateful("small", Position(), capacity=10)


def test_restored_plain_bytes_build_no_other_class():
    import pickle
    from ftrt import state
    assert state._loads(pickle.dumps({"a": [1, 2.5, None]})) == {"a": [1, 2.5, None]}
    with pytest.raises(pickle.UnpicklingError, match="is not restored"):
        state._loads(pickle.dumps(Position()))
    # tensors and arrays in a state_dict come back equal, dtype and all
    d = {"g": torch.Generator().manual_seed(3).get_state(),
         "h": torch.arange(6, dtype=torch.float64).reshape(2, 3),
         "e": torch.zeros(0, 2), "n": np.arange(4, dtype=np.int16)}
    back = state._loads(state._dumps(d))
    for k in ("g", "h", "e"):
        assert back[k].dtype == d[k].dtype and torch.equal(back[k], d[k])
    assert back["n"].dtype == np.int16 and np.array_equal(back["n"], d["n"])


def test_a_changed_optimizer_is_refused_not_left_unprotected():
    m, extra = _model(), torch.nn.Linear(2, 2)
    o = torch.optim.Adam(m.parameters(), lr=0.02)
    ctx = FakeCtx()
    ctx.register_optimizer(o)
    ctx.snap()
    o.add_param_group({"params": extra.parameters(), "lr": 0.5})
    with pytest.raises(ftrt.Error, match="param groups of Adam changed"):
        ctx.snap()


def test_hyperparameters_follow_load_state_dict():
    """load_state_dict() replaces the param group dicts: the lr snapshotted
    and restored is the one the optimizer uses afterwards."""
    m = _model()
    o = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    ctx = FakeCtx()
    ctx.register_optimizer(o)
    _train(m, o, steps=1)
    o.load_state_dict(o.state_dict())
    o.param_groups[0]["lr"] = 0.05
    saved = ctx.snap()
    o.param_groups[0]["lr"] = 0.2
    ctx.put_back(saved)
    assert o.param_groups[0]["lr"] == 0.05


class Holder:
    def __init__(self, d):
        self.d = d

    def state_dict(self):
        return self.d

    def load_state_dict(self, d):
        self.d = d


def test_a_stateful_that_could_not_be_restored_is_refused_when_packed():
    import collections
    import fractions
    for bad in (collections.deque([1]), fractions.Fraction(1, 3), Position()):
        with pytest.raises(ftrt.Error, match="holds what ftrt does not restore"):
            FakeCtx().register_stateful("x", Holder({"v": bad}))
    h = Holder({"v": 1})
    ctx = FakeCtx()
    ctx.register_stateful("h", h)
    h.d = {"v": collections.deque([1])}
    with pytest.raises(ftrt.Error, match="does not restore"):
        ctx.snap()


def test_stateful_scalars_keep_their_shape_and_type():
    h = Holder({"t0": torch.tensor(1.5), "n0": np.float64(2.5),
                "a0": np.array(3, dtype=np.int32), "size": torch.Size([2, 3])})
    ctx = FakeCtx()
    ctx.register_stateful("h", h)
    saved = ctx.snap()
    want = dict(h.d)
    h.d = {}
    ctx.put_back(saved)
    assert h.d["t0"].shape == () and h.d["t0"].item() == 1.5
    assert type(h.d["n0"]) is np.float64 and h.d["n0"] == 2.5
    assert h.d["a0"].shape == () and h.d["a0"].dtype == np.int32
    assert type(h.d["size"]) is torch.Size and h.d["size"] == want["size"]


def test_an_int_counter_refuses_what_it_would_not_keep():
    ctx = FakeCtx()
    c = ctx.counters(step=0, loss=0.0)
    with pytest.raises(ValueError, match="holds int64"):
        c.step = 2.75
    c.step = 3.0
    c.loss = 2
    assert (c.step, c.loss) == (3, 2.0)
    with pytest.raises(ftrt.Error, match="an int or a float"):
        FakeCtx().counters(flag=True)
    with pytest.raises(ftrt.Error, match="an int or a float"):
        FakeCtx().counters(best=torch.tensor(1.5))


def test_float_counters():
    ctx = FakeCtx()
    c = ctx.counters(step=0, lr=0.1, best=float("inf"))
    assert [n for n, *_ in ctx.seen] == ["counters", "counters.f64"]
    c.lr *= 0.5
    c.step += 1
    assert c.as_dict() == {"step": 1, "lr": 0.05, "best": float("inf")}
    assert c.farray.tolist() == [0.05, float("inf")]


def test_counters():
    c = ftrt.Counters(["step", "batch"])
    c.step += 5
    c.batch = 7
    assert (c.step, c.batch) == (5, 7) and c.array.tolist() == [5, 7]
    with pytest.raises(AttributeError, match="no counter named 'epoch'"):
        c.epoch = 1
