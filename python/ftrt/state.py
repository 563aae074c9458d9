"""State that is not one fixed tensor: any torch optimizer's, objects with
``state_dict()``/``load_state_dict()`` (DCP's ``Stateful``), and the
Python numbers both carry.  Each kind is a *packer*: it owns registered
buffers, ``pack()`` runs just before every snapshot, ``unpack()`` just
after a successful restore (``Context`` calls them in registration order).
"""
import io
import pickle
import struct
import sys

from . import (KIND_OPTIM, KIND_OTHER, _FT_EINVAL, _FT_ERANGE, _FT_ESTATE,
               _is_dtensor, _is_tensor)
from ._lib import Error

# ---- Python numbers in a fixed table of (tag, 8 bytes) entries ----

_NONE, _BOOL, _INT, _FLOAT = 0, 1, 2, 3


def is_number(v):
    return v is None or isinstance(v, (bool, int, float))


class Scalars:
    """A fixed list of Python numbers (None, bool, int64, float64) read and
    written through getter/setter pairs, as one int64 array of (tag,
    payload) pairs: exact for every int64 and double, None included."""

    def __init__(self, np):
        self.np = np
        self.entries = []   # (what, get, set)
        self.array = None

    def add(self, what, get, set_):
        self.entries.append((what, get, set_))

    def freeze(self):
        self.array = self.np.zeros(max(2 * len(self.entries), 2),
                                   dtype=self.np.int64)
        return self.array

    def pack(self):
        a = self.array
        for i, (what, get, _) in enumerate(self.entries):
            v = get()
            if hasattr(v, "item") and getattr(v, "ndim", 1) == 0:
                v = v.item()     # a 0-d tensor or numpy scalar
            if v is None:
                a[2 * i], a[2 * i + 1] = _NONE, 0
            elif isinstance(v, bool):
                a[2 * i], a[2 * i + 1] = _BOOL, int(v)
            elif isinstance(v, int):
                if not -2**63 <= v < 2**63:
                    raise Error(_FT_ERANGE, "ft_snapshot",
                                f"{what} = {v} does not fit in 64 bits")
                a[2 * i], a[2 * i + 1] = _INT, v
            elif isinstance(v, float):
                a[2 * i] = _FLOAT
                a[2 * i + 1] = struct.unpack("<q", struct.pack("<d", v))[0]
            else:
                raise Error(_FT_EINVAL, "ft_snapshot",
                            f"{what} became a {type(v).__name__}; it was a "
                            "number when registered")

    def unpack(self):
        a = self.array
        for i, (_, _, set_) in enumerate(self.entries):
            tag, raw = int(a[2 * i]), int(a[2 * i + 1])
            if tag == _NONE:
                v = None
            elif tag == _BOOL:
                v = bool(raw)
            elif tag == _INT:
                v = raw
            else:
                v = struct.unpack("<d", struct.pack("<q", raw))[0]
            set_(v)


def _assign(container, key):
    """A setter that keeps a 0-d tensor a tensor (fill_), else assigns."""
    def set_(v):
        old = container[key]
        if hasattr(old, "fill_") and getattr(old, "ndim", 1) == 0 and v is not None:
            old.fill_(v)
        else:
            container[key] = v
    return set_


# ---- any torch optimizer ----

class OptimizerState:
    """Any torch.optim optimizer's state, protected without changing a bit
    of what it computes.

    Before registration closes, one throw-away step per parameter shape, on
    zeros, with the same hyperparameters, shows what the optimizer keeps
    per parameter (exp_avg, momentum_buffer, sum, step...).  Buffers of
    those shapes are registered, but the optimizer's state stays empty, so
    its first real step is a fresh optimizer's.  At each snapshot a
    parameter's state, once the optimizer has made it, is adopted: copied
    into the registered buffers, which then replace the optimizer's own
    tensors (updated in place from there on; copied again only if the
    optimizer replaces one).  A registered flag per parameter says whether
    it has state, so a restore to a version before its first step empties
    it again.  Python numbers in the state and the param groups' numeric
    hyperparameters (lr, momentum, betas... as a scheduler changes them)
    are packed into a table at each snapshot."""

    def __init__(self, ctx, optimizer, prefix, global_offset, global_size):
        import numpy as np
        import torch
        self.torch, self.np, self.ctx, self.opt = torch, np, ctx, optimizer
        what = f"register_optimizer({type(optimizer).__name__})"
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise Error(_FT_EINVAL, what, "not a torch.optim.Optimizer")
        self.params = [p for g in optimizer.param_groups for p in g["params"]]
        groups = [g for g in optimizer.param_groups for _ in g["params"]]
        self.names = []
        self.slots = []      # per parameter: {key: registered tensor}
        self.numbers = []    # per parameter: [keys holding Python numbers]
        pools = {}           # (dtype, device) -> [(i, key)] of 0-d tensors
        layouts = {}
        for i, (p, g) in enumerate(zip(self.params, groups)):
            sig = (id(g), tuple(p.shape), p.dtype, p.device)
            if sig not in layouts:
                layouts[sig] = self._probe(what, p, g)
            slots, numbers = {}, []
            for key, spec in layouts[sig]:
                if spec is None:
                    numbers.append(key)
                    continue
                shape, dtype, device, dt = spec
                if len(shape) == 0 and dt is None:
                    pools.setdefault((dtype, device), []).append((i, key))
                    continue
                t = torch.zeros(shape, dtype=dtype, device=device)
                kw = {}
                if dt is not None:   # a DTensor's state: a DTensor over t
                    t = _dtensor_over(t, dt)
                elif global_size is not None and t.numel() == p.numel():
                    kw = {"global_offset": global_offset,
                          "global_size": global_size}
                self.names.append(ctx.register(f"{prefix}.{i}.{key}", t,
                                               KIND_OPTIM, **kw))
                slots[key] = t
            self.slots.append(slots)
            self.numbers.append(numbers)
        # 0-d tensors (Adam's step...): one registered tensor per dtype,
        # each parameter's a view of one element of it.
        for n, ((dtype, device), where) in enumerate(sorted(
                pools.items(), key=lambda kv: str(kv[0]))):
            pool = torch.zeros(len(where), dtype=dtype, device=device)
            suffix = "steps" if n == 0 else f"steps{n}"
            self.names.append(ctx.register(f"{prefix}.{suffix}", pool,
                                           KIND_OPTIM))
            for j, (i, key) in enumerate(where):
                self.slots[i][key] = pool[j]
        self.has_state = np.zeros(max(len(self.params), 1), dtype=np.int64)
        self.names.append(ctx.register(f"{prefix}.has_state", self.has_state,
                                       KIND_OTHER))
        self.table = Scalars(np)
        self.layout = self._groups()
        for gi, group in enumerate(optimizer.param_groups):
            for key in sorted(k for k in group if k != "params"):
                self._add_hyper(gi, key)
        for i, numbers in enumerate(self.numbers):
            for key in numbers:
                self.table.add(f"optimizer state {i}.{key}",
                               self._state_get(i, key), self._state_set(i, key))
        self.names.append(ctx.register(f"{prefix}.numbers", self.table.freeze(),
                                       KIND_OTHER))
        # State made before registration (Adagrad's in its constructor, or
        # steps already taken) is adopted now.
        self._adopt_all(fence=False)

    def _probe(self, what, p, group):
        """[(key, (shape, dtype, device) or None for a number)] of the state
        one step on zeros makes, in the optimizer's order."""
        torch = self.torch
        q = torch.zeros_like(p, requires_grad=True)
        q.grad = torch.zeros_like(p)
        hyper = {k: v for k, v in group.items() if k != "params"}
        try:
            probe = type(self.opt)([dict(hyper, params=[q])])
            probe.step()
        except Exception as e:
            raise Error(_FT_EINVAL, what, "one step on zeros, to learn the "
                        f"shape of its state, failed ({type(e).__name__}: "
                        f"{e}); register its state tensors with register() "
                        "once they exist") from None
        out = []
        for key, v in probe.state[q].items():
            if _is_dtensor(v):
                lt = v._local_tensor
                out.append((key, (tuple(lt.shape), lt.dtype, lt.device,
                                  (v.device_mesh, v.placements, v.shape,
                                   v.stride()))))
            elif _is_tensor(v):
                out.append((key, (tuple(v.shape), v.dtype, v.device, None)))
            elif is_number(v):
                out.append((key, None))
            else:
                raise Error(_FT_EINVAL, what, f"its state {key!r} is a "
                            f"{type(v).__name__}, neither a tensor nor a number")
        return out

    def _groups(self):
        """The param groups' shape: which parameters each holds, by id."""
        return [[id(p) for p in g["params"]] for g in self.opt.param_groups]

    def _add_hyper(self, gi, key):
        # The group is looked up at each use: load_state_dict() replaces
        # the group dicts with new ones.
        opt = self.opt
        v = opt.param_groups[gi][key]
        where = f"param_groups[{gi}][{key!r}]"
        if is_number(v) or (_is_tensor(v) and v.ndim == 0):
            self.table.add(where, lambda: opt.param_groups[gi][key],
                           lambda x: _assign(opt.param_groups[gi], key)(x))
        elif isinstance(v, (tuple, list)) and all(
                isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
            n, kind = len(v), type(v)
            for j in range(n):
                def get(j=j):
                    cur = opt.param_groups[gi][key]
                    if not isinstance(cur, (tuple, list)) or len(cur) != n:
                        raise Error(_FT_EINVAL, "ft_snapshot", f"{where} is "
                                    f"no longer a sequence of {n} numbers")
                    return cur[j]

                def set_(x, j=j):
                    group = opt.param_groups[gi]
                    cur = list(group[key])
                    cur[j] = x
                    group[key] = kind(cur)
                self.table.add(f"{where}[{j}]", get, set_)
        # strings and other objects are configuration, not state

    def _state_get(self, i, key):
        def get():
            if not self.has_state[i]:
                return None
            return self.opt.state[self.params[i]][key]
        return get

    def _state_set(self, i, key):
        def set_(v):
            if self.has_state[i]:
                self.opt.state[self.params[i]][key] = v
        return set_

    def pack(self):
        self._check_groups("ft_snapshot")
        self._adopt_all(fence=True)
        self.table.pack()

    def _check_groups(self, what):
        if self._groups() != self.layout:
            raise Error(_FT_ESTATE, what, f"the param groups of "
                        f"{type(self.opt).__name__} changed after "
                        "register_optimizer() (add_param_group, or a "
                        "group's parameters replaced): its new parameters "
                        "would not be protected; register the optimizer "
                        "once its groups are final")

    def _adopt_all(self, fence):
        """Every parameter's state that the optimizer has made goes into
        the registered buffers, which take the place of its own tensors."""
        for i, p in enumerate(self.params):
            st = self.opt.state.get(p)
            if not st:
                continue
            slots = self.slots[i]
            what = f"optimizer {type(self.opt).__name__}, parameter {i}"
            want = set(slots) | set(self.numbers[i])
            if set(k for k, v in st.items() if v is not None or k in want) != want:
                raise Error(_FT_EINVAL, "ft_snapshot", f"{what}: its state "
                            f"holds {sorted(st)}, not the {sorted(want)} "
                            "seen when it was registered")
            for key, slot in slots.items():
                cur = st[key]
                if cur is slot:
                    continue
                if not _is_tensor(cur) or cur.shape != slot.shape \
                        or cur.dtype != slot.dtype:
                    raise Error(_FT_EINVAL, "ft_snapshot", f"{what}: state "
                                f"{key!r} is not a {slot.dtype} tensor of "
                                f"shape {tuple(slot.shape)} as registered")
                if fence:   # a lazy copy may still read the slots
                    self.ctx.fence()
                    fence = False
                with self.torch.no_grad():
                    slot.copy_(cur)
                st[key] = slot
            self.has_state[i] = 1

    def unpack(self):
        self._check_groups("ft_restore")
        for i, p in enumerate(self.params):
            if self.has_state[i]:
                st = self.opt.state[p]
                for key, slot in self.slots[i].items():
                    st[key] = slot
                for key in self.numbers[i]:
                    st.setdefault(key, None)
            else:
                self.opt.state.pop(p, None)
        self.table.unpack()


# ---- objects with state_dict() / load_state_dict() ----

class StatefulState:
    """obj.state_dict() serialised into a registered buffer of fixed
    capacity at each snapshot, given back to obj.load_state_dict() after a
    restore.  For small state (a scheduler, a data loader's position, the
    user's own): the bytes are copied at every snapshot."""

    def __init__(self, ctx, name, obj, capacity):
        import numpy as np
        what = f"register_stateful({name!r})"
        for m in ("state_dict", "load_state_dict"):
            if not callable(getattr(obj, m, None)):
                raise Error(_FT_EINVAL, what, f"a {type(obj).__name__} has no "
                            f"{m}() (a Stateful has state_dict() and "
                            "load_state_dict())")
        if capacity < 1:
            raise Error(_FT_EINVAL, what, f"capacity {capacity} must be > 0")
        self.obj, self.name, self.capacity, self.np = obj, name, capacity, np
        self.buf = np.zeros(8 + capacity, dtype=np.uint8)
        self.names = [ctx.register(f"stateful.{name}", self.buf, KIND_OTHER)]
        self.pack()      # fails now, not at the first snapshot, if too big

    def pack(self):
        data = _dumps(self.obj.state_dict())
        try:   # what could not be restored is refused now, not at restore
            _loads(data)
        except (pickle.UnpicklingError, TypeError, ValueError) as e:
            raise Error(_FT_EINVAL, "ft_snapshot", f"the state_dict() of "
                        f"{self.name!r} holds what ftrt does not restore "
                        f"({e}): only numbers, strings, bytes, lists, tuples, "
                        "dicts, tensors and numpy arrays") from None
        if len(data) > self.capacity:
            raise Error(_FT_ERANGE, "ft_snapshot", f"the state of "
                        f"{self.name!r} is {len(data)} bytes, more than the "
                        f"{self.capacity} registered: register it with "
                        f"capacity={2 * len(data)} or more")
        self.buf[:8] = self.np.frombuffer(struct.pack("<Q", len(data)),
                                          dtype=self.np.uint8)
        self.buf[8:8 + len(data)] = self.np.frombuffer(data, dtype=self.np.uint8)

    def unpack(self):
        n = struct.unpack("<Q", self.buf[:8].tobytes())[0]
        if not 0 < n <= self.capacity:
            raise Error(_FT_EINVAL, "ft_restore", f"the restored state of "
                        f"{self.name!r} says it is {n} bytes (capacity "
                        f"{self.capacity})")
        self.obj.load_state_dict(_loads(self.buf[8:8 + n].tobytes()))


class _Blob:
    """A tensor or numpy array as (kind, dtype, shape, bytes), so that the
    pickled state holds builtin types and this class only."""

    def __init__(self, kind, dtype, shape, data):
        self.kind, self.dtype, self.shape, self.data = kind, dtype, shape, data

    def __reduce__(self):
        return (_Blob, (self.kind, self.dtype, self.shape, self.data))


def _encode(v):
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(v, torch.Size):
        return _Blob("size", "", tuple(v), b"")
    if torch is not None and isinstance(v, torch.Tensor):
        t = v.detach().cpu().contiguous()
        return _Blob("torch", str(t.dtype).replace("torch.", ""),
                     tuple(t.shape),
                     t.reshape(-1).view(torch.uint8).numpy().tobytes()
                     if t.numel() else b"")
    if type(v).__module__ == "numpy" and hasattr(v, "dtype"):
        import numpy as np
        a = np.asarray(v).copy(order="C")
        kind = "npscalar" if isinstance(v, np.generic) else "numpy"
        return _Blob(kind, a.dtype.str, a.shape, a.tobytes())
    if isinstance(v, dict):
        return type(v)((k, _encode(x)) for k, x in v.items())
    if isinstance(v, (list, tuple)):
        return type(v)(_encode(x) for x in v)
    return v


def _decode(v):
    if isinstance(v, _Blob):
        import numpy as np
        if v.kind == "size":
            import torch
            return torch.Size(v.shape)
        if v.kind in ("numpy", "npscalar"):
            a = np.frombuffer(v.data, dtype=np.dtype(v.dtype)).reshape(
                v.shape).copy()
            return a[()] if v.kind == "npscalar" else a
        import torch
        dtype = getattr(torch, v.dtype)
        raw = torch.from_numpy(np.frombuffer(v.data, dtype=np.uint8).copy())
        return raw.view(dtype).reshape(v.shape) if raw.numel() else \
            torch.empty(v.shape, dtype=dtype)
    if isinstance(v, dict):
        return type(v)((k, _decode(x)) for k, x in v.items())
    if isinstance(v, (list, tuple)):
        return type(v)(_decode(x) for x in v)
    return v


def _dumps(state):
    return pickle.dumps(_encode(state), protocol=4)


class _Plain(pickle.Unpickler):
    """Only builtin containers and numbers, and _Blob: restored bytes
    build no object of another class."""
    ok = {"builtins": {"dict", "list", "tuple", "set", "frozenset", "int",
                       "float", "complex", "bool", "str", "bytes",
                       "bytearray"},
          "collections": {"OrderedDict"},
          __name__: {"_Blob"}}

    def find_class(self, module, name):
        if name in self.ok.get(module, ()):
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not restored")


def _loads(data):
    return _decode(_Plain(io.BytesIO(data)).load())


def _dtensor_over(local, spec):
    """A DTensor whose local shard is the tensor local itself (updates of
    one are updates of the other), placed as spec says."""
    from torch.distributed.tensor import DTensor
    mesh, placements, shape, stride = spec
    d = DTensor.from_local(local, mesh, placements, run_check=False,
                           shape=shape, stride=stride)
    if d._local_tensor.data_ptr() != local.data_ptr():
        raise Error(_FT_EINVAL, "register_optimizer", "DTensor.from_local "
                    "copied the shard: its state cannot be registered")
    return d
