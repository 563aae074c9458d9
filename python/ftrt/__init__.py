"""ftrt: in-memory fault tolerance for MPI training jobs, from Python.

A thin layer over libftrt (include/ftrt.h), names mapping one to one:
``init`` is ft_init, ``Context.register``/``snapshot``/``fence``/
``wait_committed``/``restore``/``finalize`` are the calls of the same name,
and every status other than FT_OK is raised as ``ftrt.Error`` carrying the
C status, its name (``err.name == "FT_ENOSNAPSHOT"``) and message.

On top of the raw calls, what a PyTorch training loop holds is registered
in place (no copy but ftrt's own at snapshot time): a model's parameters and
buffers, any optimizer's state, torch's, numpy's and Python's global RNG
states, and counters (int or float); objects with state_dict() and
load_state_dict() (an LR scheduler, a data loader's position) are
serialised at each snapshot.

    import torch
    import ftrt
    ctx = ftrt.init()                  # under ft-launch: anywhere, every trainer
    ftrt.init_process_group(ctx.comm)  # gloo over exactly the trainers
    ...model, optimizer...
    ctx.register_model(model)
    ctx.register_optimizer(optimizer)  # any torch.optim optimizer
    ctx.register_stateful("sched", scheduler)
    ctx.register_rng()
    counters = ctx.counters(step=0)
    try:
        ctx.restore()                  # fills all of it, RNGs included
    except ftrt.NoSnapshot:
        pass                           # a fresh start
    while counters.step < steps:
        ...forward, backward...
        with ctx.update(counters.step + 1):   # fence(); then snapshot()
            optimizer.step()
            counters.step += 1
    ctx.finalize()
"""
import atexit
import ctypes
import hashlib
import numbers
import os
import random as _pyrandom
import sys

from ._lib import Busy, Error, NoSnapshot, TimedOut, BufOpts, check, lib
from ._lib import err_name, strerror
from .persisted import PersistedState, load_persisted

__all__ = ["init", "Context", "Counters", "Error", "NoSnapshot", "Busy",
           "TimedOut", "init_process_group", "err_name", "strerror",
           "KIND_PARAM", "KIND_OPTIM", "KIND_RNG", "KIND_OTHER", "NAME_MAX",
           "load_persisted", "PersistedState"]

KIND_PARAM, KIND_OPTIM, KIND_RNG, KIND_OTHER = 0, 1, 2, 3
MEM_HOST, MEM_CUDA = 0, 1
NAME_MAX = 63  # bytes of a registered name (FT_NAME_MAX - 1)
_FT_EINVAL, _FT_ERANGE, _FT_ESTATE, _FT_EBUSY = -1, -15, -13, -14


def _short_name(name):
    """A registered name fits in NAME_MAX bytes: a longer one keeps its
    start and ends with a hash of the whole (the same on every run)."""
    raw = name.encode()
    if len(raw) <= NAME_MAX:
        return name
    tag = hashlib.sha1(raw).hexdigest()[:12]
    return raw[:NAME_MAX - 13].decode(errors="ignore") + "~" + tag


def _comm_from_handle(buf):
    """An mpi4py Intracomm for the MPI_Comm stored in buf (mpi4py's own
    ctypes recipe: write the handle at MPI._addressof)."""
    from mpi4py import MPI
    comm = MPI.Intracomm()
    ctypes.memmove(MPI._addressof(comm), buf, ctypes.sizeof(buf))
    return comm


def _set_comm_null(comm):
    from mpi4py import MPI
    size = MPI._sizeof(MPI.Comm)
    ctypes.memmove(MPI._addressof(comm), MPI._addressof(MPI.COMM_NULL), size)


def _import_mpi():
    """mpi4py.MPI, initialising MPI at FUNNELED (what ft_init asks for)
    unless the script imported it first with its own settings."""
    if "mpi4py.MPI" not in sys.modules:
        import mpi4py
        mpi4py.rc.thread_level = "funneled"
    from mpi4py import MPI
    return MPI


def init():
    """ft_init.  Collective over MPI_COMM_WORLD (every process of the launch).

    Under ft-launch, each node's SMP is a process of ft-smp beside the
    trainers (``--smp ft-smp``, the default for a Python PROGRAM): call
    init() where the script likes, after its imports, on every trainer.
    With ``--smp first-rank`` (or a plain ``mpirun -np P python ...``) the
    first rank of each node runs the script too and becomes its node's SMP
    here: it never returns (the process exits 0 once the trainers finalize,
    or non-zero when the SMP fails), so call init() before importing
    anything heavy.  On a trainer it returns a ``Context`` whose ``comm``
    (mpi4py) holds the trainers only: use it, not COMM_WORLD.  On failure
    every process raises the same ``ftrt.Error``.
    """
    global _init_entered, _unfinalized
    MPI = _import_mpi()
    handle = lib()
    sys.stdout.flush()
    sys.stderr.flush()
    ctx = ctypes.c_void_p()
    comm_buf = (ctypes.c_char * MPI._sizeof(MPI.Comm))()
    # From here on every process of the job agrees on the outcome.
    _init_entered = True
    check(handle.ft_init(None, None, ctypes.byref(ctx), comm_buf), "ft_init")
    _abort_on_uncaught(MPI)
    context = Context(ctx, _comm_from_handle(comm_buf))
    _unfinalized += 1
    return context


_init_entered = False
_unfinalized = 0  # contexts init() returned that finalize() has not ended


def _end_job(why):
    MPI = _import_mpi()
    if MPI.Is_finalized():
        return
    sys.stdout.flush()
    sys.stderr.write("ftrt: rank %d of the job (host %s) is ending %s: "
                     "ending the job\n" % (MPI.COMM_WORLD.Get_rank(),
                                           MPI.Get_processor_name(), why))
    sys.stderr.flush()
    MPI.COMM_WORLD.Abort(1)


def _at_exit():
    """A trainer that ends without finalize() would leave its node's SMP
    serving it, and one of a job whose SMPs are ft-smp's processes
    (ft-launch sets FT_SMP=ft-smp for it) that ends without entering init()
    -- an exception, sys.exit(), a --help -- would leave its SMP waiting in
    ft_init for it: the job would hang (under Open MPI, this process too,
    in mpi4py's MPI_Finalize).  Registered at import: it ends the job
    instead, saying why.  Python's atexit handlers run before mpi4py
    finalizes."""
    if _unfinalized:
        _end_job("without ctx.finalize() (or a `with ftrt.init() as ctx:` "
                 "block), and its node's SMP serves until every trainer "
                 "finalizes")
    elif not _init_entered and _smp_waits():
        _end_job("without having called ftrt.init(), and its node's SMP (a "
                 "process of ft-smp) waits in ft_init for every trainer "
                 "(call ftrt.init() on every trainer, or launch with "
                 "ft-launch --smp first-rank)")


# The process that first imported the package, for the processes it starts
# (multiprocessing's, a DataLoader's workers, a subprocess): they inherit
# the variable with another pid, and are no trainer of the job.
os.environ.setdefault("FTRT_TRAINER_PID", str(os.getpid()))
_MPI_LAUNCHED = ("OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE")


def _smp_waits():
    """Whether a node's SMP waits in ft_init for this process: the job's SMPs
    are ft-smp's (FT_SMP=ft-smp, as ft-launch sets it), this process was
    started by the job's mpirun (its variables are set), and is not a
    process a trainer started."""
    if os.environ.get("FT_SMP") != "ft-smp":
        return False
    if not any(v in os.environ for v in _MPI_LAUNCHED):
        return False  # a script run outside any job, FT_SMP in the shell
    if os.environ.get("FTRT_TRAINER_PID") != str(os.getpid()):
        return False
    mp = sys.modules.get("multiprocessing")
    return not (mp and mp.parent_process() is not None)


atexit.register(_at_exit)


def _abort_on_uncaught(MPI):
    """An exception no one catches ends the job, as ``python -m mpi4py``
    does: at exit mpi4py would call MPI_Finalize, which waits for the
    node's SMP, which serves until every trainer calls ft_finalize, and the
    job would hang.  The traceback is printed first; the committed
    snapshots stay in the node stores for the relaunch."""
    previous = sys.excepthook

    def hook(kind, value, tb):
        previous(kind, value, tb)
        sys.stdout.flush()
        sys.stderr.flush()
        MPI.COMM_WORLD.Abort(1)

    sys.excepthook = hook


def init_process_group(comm, backend="gloo", timeout_s=None):
    """torch.distributed.init_process_group over exactly the ranks of comm:
    rank 0 of comm picks its host's address (its hostname as the hosts
    resolve it) and a free port, and broadcasts them over MPI.  Collective
    over comm.  Returns nothing; destroy it with
    torch.distributed.destroy_process_group() before ctx.finalize()."""
    import socket
    import datetime
    import torch.distributed as dist
    addr = None
    if comm.Get_rank() == 0:
        host = os.environ.get("MASTER_ADDR") or socket.gethostname()
        addr = socket.gethostbyname(host)
        with socket.socket() as s:
            s.bind(("", 0))
            addr = f"tcp://{addr}:{s.getsockname()[1]}"
    addr = comm.bcast(addr, root=0)
    kw = {}
    if timeout_s is not None:
        kw["timeout"] = datetime.timedelta(seconds=timeout_s)
    dist.init_process_group(backend, init_method=addr, rank=comm.Get_rank(),
                            world_size=comm.Get_size(), **kw)


class Counters:
    """Named counters in registered buffers (kind OTHER): step, epoch, a
    data loader's position (int64), an annealed learning rate, the best
    validation loss (float64: a counter whose initial value is a float).
    Read and set them as attributes (``counters.step += 1``); they are
    restored with everything else."""

    def __init__(self, names, floats=()):
        import numpy as np
        names = list(names)
        ints = [n for n in names if n not in floats]
        object.__setattr__(self, "_names", names)
        object.__setattr__(self, "_where", {
            **{n: (0, i) for i, n in enumerate(ints)},
            **{n: (1, i) for i, n in enumerate(floats)}})
        object.__setattr__(self, "array", np.zeros(len(ints), dtype=np.int64))
        object.__setattr__(self, "farray",
                           np.zeros(len(floats), dtype=np.float64))

    def __getattr__(self, name):
        try:
            which, i = self._where[name]
        except KeyError:
            raise AttributeError(f"no counter named {name!r}") from None
        return float(self.farray[i]) if which else int(self.array[i])

    def __setattr__(self, name, value):
        if name not in self._where:
            raise AttributeError(f"no counter named {name!r} (registered: "
                                 f"{', '.join(self._names)})")
        which, i = self._where[name]
        if not which:
            if isinstance(value, bool) or int(value) != value:
                raise ValueError(
                    f"counter {name!r} holds int64 (its initial value was an "
                    f"int): {value!r} would not be kept as it is; give it a "
                    f"float initial value ({name}=0.0) to hold floats")
            value = int(value)
        (self.farray if which else self.array)[i] = value

    def as_dict(self):
        return {n: getattr(self, n) for n in self._names}


class Context:
    """A trainer's ftrt context (ft_ctx_t).  Methods that are collective say
    so: every trainer of ``comm`` must call them, in the same order.  After
    ``finalize()`` the context and its ``comm`` are unusable."""

    def __init__(self, handle, comm):
        self._h = handle
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self._regs = {}        # name -> (object kept alive, data pointer)
        self._rng = None       # the RNG buffer and what it holds
        self._rng_cuda_unknown = False  # CUDA's generator left to chance
        self._packers = []     # optimizers, Statefuls: pack(), unpack()
        self._held = []        # (name, module._parameters, key, parameter)
        self._frozen = False

    # ---- registration (local, before the first snapshot or restore) ----

    def register(self, name, obj, kind=KIND_PARAM, global_offset=None,
                 global_size=None):
        """ft_register: register a torch tensor or numpy array in place.

        Not collective, but every rank registers the same names in the same
        order.  The memory must stay where it is until finalize(): a tensor
        whose storage is replaced later (``p.data = ...``, a
        ``load_state_dict`` that assigns) is refused at the next snapshot.
        ``global_offset``/``global_size`` (in elements) say that obj is the
        slice [offset, offset + numel) of a global 1-D tensor of global_size
        elements, so that a job with fewer ranks gets it re-sliced.  A
        DTensor (FSDP2's parameters and their optimizer state) registers
        its local shard as such a slice of the global tensor, worked out
        from its placement: Shard(0) or Replicate() on a 1-D device mesh.
        A tensor that is not contiguous, or not in host memory (or CUDA
        memory), is refused with FT_EINVAL; nothing is registered then.
        """
        held = obj   # a DTensor is held whole: its shard may be replaced
        if _is_dtensor(obj):
            if global_size is not None:
                raise Error(_FT_EINVAL, f"ft_register({name!r})", "a DTensor "
                            "says where its shard lies: give no global_offset "
                            "or global_size")
            obj, global_offset, global_size = _dtensor_shard(name, obj)
        ptr, nbytes, memory, itemsize = self._describe(name, obj)
        opts = BufOpts(kind=kind, memory=memory)
        if global_size is not None:
            off = global_offset or 0
            if off < 0 or off + nbytes // max(itemsize, 1) > global_size:
                raise Error(_FT_ERANGE, f"ft_register({name!r})",
                            f"slice [{off}, {off} + {nbytes // itemsize}) "
                            f"is not inside a global tensor of {global_size}")
            opts.global_offset = off * itemsize
            opts.global_bytes = global_size * itemsize
        cname = _short_name(name)
        st = lib().ft_register(self._h, cname.encode(), ptr, nbytes,
                               ctypes.byref(opts))
        if st != 0:
            raise Error(st, f"ft_register({cname!r})",
                        self._why_refused(st, cname))
        self._regs[cname] = (held, ptr)
        return cname

    def _describe(self, name, obj):
        what = f"ft_register({name!r})"
        if hasattr(obj, "__array_interface__") and not _is_tensor(obj):
            if not obj.flags["C_CONTIGUOUS"] or not obj.flags["WRITEABLE"]:
                raise Error(_FT_EINVAL, what, "the numpy array is not C-"
                            "contiguous and writeable (register a copy made "
                            "with numpy.ascontiguousarray)")
            return obj.ctypes.data, obj.nbytes, MEM_HOST, obj.itemsize
        if not _is_tensor(obj):
            raise Error(_FT_EINVAL, what, f"a {type(obj).__name__} is neither "
                        "a torch tensor nor a numpy array")
        if obj.layout != sys.modules["torch"].strided:
            raise Error(_FT_EINVAL, what, "a sparse tensor cannot be "
                        "registered (only dense, strided tensors)")
        if not obj.is_contiguous():
            raise Error(_FT_EINVAL, what, f"the tensor (shape {tuple(obj.shape)},"
                        f" strides {obj.stride()}) is not contiguous: ftrt "
                        "copies one block of memory per buffer")
        dev = obj.device.type
        if dev not in ("cpu", "cuda"):
            raise Error(_FT_EINVAL, what, f"the tensor is on device '{dev}':"
                        " ftrt registers host (cpu) or cuda memory only")
        memory = MEM_CUDA if dev == "cuda" else MEM_HOST
        return obj.data_ptr(), obj.numel() * obj.element_size(), memory, \
            obj.element_size()

    def _why_refused(self, st, cname):
        if st == _FT_ERANGE:
            return ("its slice does not lie inside the global size given "
                    "(global_offset + its length > global_size)")
        if st == _FT_ESTATE:
            return "registration is closed once the first snapshot or " \
                   "restore has run"
        if st == _FT_EINVAL and cname in self._regs:
            return "that name is already registered"
        return ""

    def register_model(self, model, prefix="model", buffers=True):
        """Register a torch.nn.Module's parameters (and, unless
        buffers=False, its persistent buffers) in place, kind PARAM."""
        names = []
        for n, p in model.named_parameters():
            names.append(self.register(f"{prefix}.{n}", p, KIND_PARAM))
        # Each module's own parameters, as registered: one replaced by
        # another object (load_state_dict(assign=True), p = Parameter(...))
        # is refused at the next snapshot.
        for mod_name, mod in model.named_modules():
            for pn, p in mod.named_parameters(recurse=False):
                self._held.append((f"{prefix}.{mod_name}.{pn}".replace("..", "."),
                                   mod._parameters, pn, p))
        if buffers:
            for mod_name, mod in model.named_modules():
                skip = getattr(mod, "_non_persistent_buffers_set", set())
                for bn, b in mod.named_buffers(recurse=False):
                    if b is None or bn in skip:
                        continue
                    full = f"{mod_name}.{bn}" if mod_name else bn
                    names.append(self.register(f"{prefix}.{full}", b,
                                               KIND_PARAM))
        return names

    def register_optimizer(self, optimizer, prefix="optim", global_offset=None,
                           global_size=None):
        """Register any torch.optim optimizer's state (SGD, Adam, AdamW,
        Adagrad, RMSprop...), before its first step; returns the names.

        What it keeps per parameter is learnt from one step on zeros of a
        throw-away copy; buffers of those shapes are registered (kind
        OPTIM), and the optimizer's own state stays empty, so its first
        step gives a fresh optimizer's bits.  At each snapshot the state it
        has made is adopted into the registered buffers (which it then
        updates in place); Python numbers in it and the param groups'
        numeric hyperparameters (lr, betas... as a scheduler changes them)
        are snapshotted too.  restore() puts all of it back, an empty state
        included.  With global_offset/global_size (elements), every state
        tensor the size of its parameter is registered as that slice of a
        global tensor (a sharded optimizer: see register()).
        """
        from .state import OptimizerState
        packer = OptimizerState(self, optimizer, prefix, global_offset,
                                global_size)
        self._packers.append(packer)
        return packer.names

    def register_stateful(self, name, obj, capacity=1 << 16):
        """Register an object with state_dict() and load_state_dict() (DCP's
        Stateful: an LR scheduler, a data loader's position, a small object
        of the script's own, floats and all): its state_dict() is
        serialised into a registered buffer of ``capacity`` bytes (kind
        OTHER) at each snapshot and given to load_state_dict() by
        restore().  For small state: it is copied at every snapshot.  A
        state that outgrows capacity is refused at the snapshot, with the
        capacity to register instead.  Returns the registered name."""
        from .state import StatefulState
        packer = StatefulState(self, name, obj, capacity)
        self._packers.append(packer)
        return packer.names[0]

    def register_rng(self, torch_rng=True, numpy_rng=True, python_rng=True,
                     cuda_rng=None):
        """Register the global generators' states (kind RNG, one buffer):
        torch's CPU generator, numpy's legacy global RandomState
        (numpy.random.seed/rand...; not Generator objects) and Python's
        ``random``; and the CUDA generator of the current device (dropout
        on the GPU draws from it) when cuda_rng is True, or is None and
        this process has initialised CUDA already (a model moved to the
        GPU before this call; a snapshot after CUDA's start refuses when
        it is left out that way: pass cuda_rng=False if nothing random
        runs on the GPU).  snapshot() packs them in just before the copy,
        restore() puts them back."""
        import numpy as np
        parts = []
        if torch_rng:
            import torch
            parts.append(("torch", _TorchRng(torch)))
        cuda_on = _cuda_started()
        if cuda_rng or (cuda_rng is None and cuda_on):
            import torch
            parts.append(("cuda", _CudaRng(torch)))
        self._rng_cuda_unknown = cuda_rng is None and not cuda_on
        if numpy_rng:
            parts.append(("numpy", _NumpyRng(np)))
        if python_rng:
            parts.append(("python", _PythonRng(np)))
        total = sum(p.nbytes for _, p in parts)
        buf = np.zeros(max(total, 1), dtype=np.uint8)
        self.register("rng", buf, KIND_RNG)
        self._rng = (buf, parts)
        self._pack_rng()

    def counters(self, **initial):
        """Register named counters (kind OTHER) and return them: int64, or
        float64 for those whose initial value is a float."""
        for k, v in initial.items():
            if isinstance(v, bool) or not isinstance(v, numbers.Real):
                raise Error(_FT_EINVAL, "counters", f"{k}={v!r}: a counter is "
                            "an int or a float (register other state with "
                            "register_stateful)")
        c = Counters(initial.keys(), [k for k, v in initial.items()
                                      if not isinstance(v, numbers.Integral)])
        for k, v in initial.items():
            setattr(c, k, v)
        if len(c.array):
            self.register("counters", c.array, KIND_OTHER)
        if len(c.farray):
            self.register("counters.f64", c.farray, KIND_OTHER)
        return c

    # ---- the calls of a training loop ----

    def snapshot(self, step):
        """ft_snapshot: start a snapshot labelled with step.  Collective over
        comm.  Packs the RNG states first.  Returns True, or False when
        FT_SNAPSHOT_POLICY=skip skipped it on every rank (FT_EBUSY).  In
        lazy mode (FT_CAPTURE=lazy) call fence() before changing a PARAM or
        OPTIM tensor; RNGs and counters may change at once."""
        self._check_in_place("ft_snapshot")
        self._agreed("ft_snapshot", self._pack_all)
        st = lib().ft_snapshot(self._h, int(step))
        if st == _FT_EBUSY:
            return False
        check(st, f"ft_snapshot(step {step})")
        return True

    def fence(self):
        """ft_fence: return once registered tensors may be changed again;
        raises why the last lazy copy failed (that version never commits)."""
        check(lib().ft_fence(self._h), "ft_fence")

    def wait_committed(self):
        """ft_wait_committed: wait until the latest snapshot is committed on
        every node; return its version number."""
        v = ctypes.c_uint64()
        check(lib().ft_wait_committed(self._h, ctypes.byref(v)),
              "ft_wait_committed")
        return v.value

    def restore(self):
        """ft_restore: fill every registered tensor from the latest committed
        version and put the RNG states back; return its step.  Collective
        over comm.  Raises ftrt.NoSnapshot (on every rank) when there is
        none; tensors and RNGs are untouched on any failure."""
        self._check_in_place("ft_restore")
        step = ctypes.c_uint64()
        check(lib().ft_restore(self._h, ctypes.byref(step)), "ft_restore")
        self._agreed("ft_restore", self._unpack_all)
        return step.value

    def update(self, step, snapshot=True):
        """A context manager around an optimizer step: fence() on entry (a
        lazy copy of the previous snapshot has ended), snapshot(step) on a
        normal exit when ``snapshot`` is true."""
        return _Update(self, step, snapshot)

    def finalize(self):
        """ft_finalize: wait for outstanding work, release the node's SMP.
        The context and comm are unusable afterwards, whatever happens."""
        global _unfinalized
        if self._h is None:
            return
        h, self._h = self._h, None
        _unfinalized -= 1
        _set_comm_null(self.comm)
        check(lib().ft_finalize(h), "ft_finalize")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.finalize()
        return False

    # ---- helpers ----

    def _check_in_place(self, what):
        for name, where, key, obj in self._held:
            if where.get(key) is not obj:
                raise Error(_FT_ESTATE, what, f"the parameter registered as "
                            f"{name!r} was replaced by another object "
                            "(load_state_dict(assign=True), or a new "
                            "Parameter assigned): the registered one is no "
                            "longer trained; update it in place (copy_, "
                            "load_state_dict without assign)")
        for name, (obj, ptr) in self._regs.items():
            if _is_dtensor(obj):
                now = obj._local_tensor.data_ptr()
            else:
                now = obj.data_ptr() if _is_tensor(obj) else obj.ctypes.data
            if now != ptr:
                raise Error(_FT_ESTATE, what, f"the tensor registered as "
                            f"{name!r} no longer uses the memory it was "
                            "registered with (its storage was replaced); "
                            "update it in place (copy_, load_state_dict "
                            "without assign)")

    def _pack_all(self):
        for p in self._packers:
            p.pack()
        self._pack_rng()

    def _unpack_all(self):
        for p in self._packers:
            p.unpack()
        self._unpack_rng()

    def _agreed(self, what, work, doing=None):
        """work() on every trainer, and every trainer told whether it
        failed anywhere: a state that one trainer cannot pack (or unpack)
        raises on all of them, instead of leaving the others waiting in the
        collective call that follows.  One small allreduce when there are
        packers (optimizers, Statefuls), whose work can fail, or when
        ``doing`` (what the others were doing, for the message) is given.
        Returns what work() returned."""
        if not self._packers and doing is None:
            return work()
        err = out = None
        try:
            out = work()
        except Exception as e:  # noqa: BLE001 - re-raised below
            err = e
        from mpi4py import MPI
        failed = self.comm.allreduce(self.rank if err is not None else -1,
                                     op=MPI.MAX)
        if err is not None:
            raise err
        if failed >= 0:
            doing = doing or ("pack its state: nothing was snapshotted"
                              if what == "ft_snapshot" else "put its state back")
            raise Error(_FT_ESTATE, what, f"trainer {failed} could not "
                        f"{doing} (see its message)")
        return out

    def _pack_rng(self):
        if self._rng is None:
            return
        if self._rng_cuda_unknown and _cuda_started():
            raise Error(_FT_EINVAL, "register_rng", "CUDA started after "
                        "register_rng(), so the CUDA generator (dropout on "
                        "the GPU) is not saved and a resumed run would draw "
                        "other numbers: call register_rng() once the model "
                        "is on the GPU, or pass cuda_rng=True (or False if "
                        "nothing random runs there)")
        buf, parts = self._rng
        off = 0
        for _, p in parts:
            p.pack(buf[off:off + p.nbytes])
            off += p.nbytes

    def _unpack_rng(self):
        if self._rng is None:
            return
        buf, parts = self._rng
        off = 0
        for _, p in parts:
            p.unpack(buf[off:off + p.nbytes])
            off += p.nbytes


class _Update:
    def __init__(self, ctx, step, snapshot):
        self.ctx, self.step, self.take = ctx, step, snapshot

    def __enter__(self):
        self.ctx.fence()
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None and self.take:
            self.ctx.snapshot(self.step)
        return False


def _dtensor_class():
    """torch's DTensor class, or None (torch before 2.4 has none here)."""
    if "torch" not in sys.modules:
        return None
    try:
        from torch.distributed.tensor import DTensor
    except ImportError:
        return None
    return DTensor


def _is_dtensor(obj):
    cls = _dtensor_class()
    return cls is not None and isinstance(obj, cls)


def _dtensor_shard(name, d):
    """(local tensor, global_offset, global_size) in elements, for a
    DTensor whose local shard is one contiguous slice of the flattened
    global tensor: Shard(0) on a 1-D mesh (rows [r0, r1) of it), or
    Replicate() (the whole tensor: no slice)."""
    from torch.distributed.tensor import Replicate, Shard
    what = f"ft_register({name!r})"
    local = d._local_tensor
    if d.device_mesh.ndim != 1 or len(d.placements) != 1:
        raise Error(_FT_EINVAL, what, f"a DTensor on a {d.device_mesh.ndim}-D "
                    "device mesh (HSDP, tensor parallelism) is not supported: "
                    "only a 1-D mesh (FSDP2's fully_shard)")
    pl = d.placements[0]
    if isinstance(pl, Replicate):
        return local, None, None
    if not isinstance(pl, Shard) or pl.dim != 0:
        raise Error(_FT_EINVAL, what, f"a DTensor placed {pl} is not one slice"
                    " of the global tensor: only Shard(0) or Replicate()")
    from torch.distributed.tensor._utils import \
        compute_local_shape_and_global_offset
    _, offset = compute_local_shape_and_global_offset(
        d.shape, d.device_mesh, d.placements)
    row = 1
    for n in d.shape[1:]:
        row *= n
    return local, (offset[0] if len(offset) else 0) * row, d.numel()


def _is_tensor(obj):
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.Tensor)


# ---- generator states as fixed-size bytes ----

class _TorchRng:
    def __init__(self, torch):
        self.torch = torch
        self.nbytes = torch.get_rng_state().numel()

    def pack(self, out):
        out[:] = self.torch.get_rng_state().numpy()

    def unpack(self, src):
        self.torch.set_rng_state(self.torch.from_numpy(src.copy()))


def _cuda_started():
    """This process has initialised CUDA (through torch)."""
    return "torch" in sys.modules and sys.modules["torch"].cuda.is_initialized()


class _CudaRng:
    """The CUDA generator of the device current at each snapshot and
    restore (the trainer's GPU, as ftrt's device copies need it)."""
    def __init__(self, torch):
        self.torch = torch
        self.nbytes = torch.cuda.get_rng_state().numel()

    def pack(self, out):
        out[:] = self.torch.cuda.get_rng_state().numpy()

    def unpack(self, src):
        self.torch.cuda.set_rng_state(self.torch.from_numpy(src.copy()))


class _NumpyRng:
    """numpy.random's global MT19937: 624 keys, pos, has_gauss, gauss."""
    nbytes = 624 * 4 + 8 * 3

    def __init__(self, np):
        self.np = np

    def pack(self, out):
        np = self.np
        kind, keys, pos, has_gauss, gauss = np.random.get_state()
        if kind != "MT19937":
            raise Error(_FT_EINVAL, "register_rng", f"numpy state {kind!r}")
        out[:624 * 4] = np.asarray(keys, dtype=np.uint32).view(np.uint8)
        tail = np.array([pos, has_gauss, 0], dtype=np.int64)
        tail.view(np.float64)[2] = gauss
        out[624 * 4:] = tail.view(np.uint8)

    def unpack(self, src):
        np = self.np
        keys = src[:624 * 4].copy().view(np.uint32)
        pos, has_gauss = src[624 * 4:624 * 4 + 16].copy().view(np.int64)
        gauss = src[624 * 4 + 16:].copy().view(np.float64)[0]
        np.random.set_state(("MT19937", keys, int(pos), int(has_gauss),
                             float(gauss)))


class _PythonRng:
    """random's Mersenne Twister: version 3, 625 words, gauss_next."""
    nbytes = 625 * 4 + 8 * 2

    def __init__(self, np):
        self.np = np

    def pack(self, out):
        np = self.np
        version, words, gauss = _pyrandom.getstate()
        out[:625 * 4] = np.asarray(words, dtype=np.uint32).view(np.uint8)
        tail = np.array([0.0 if gauss is None else gauss], dtype=np.float64)
        out[625 * 4:625 * 4 + 8] = np.array([gauss is not None],
                                            dtype=np.int64).view(np.uint8)
        out[625 * 4 + 8:] = tail.view(np.uint8)

    def unpack(self, src):
        np = self.np
        words = tuple(int(w) for w in src[:625 * 4].copy().view(np.uint32))
        has = int(src[625 * 4:625 * 4 + 8].copy().view(np.int64)[0])
        gauss = float(src[625 * 4 + 8:].copy().view(np.float64)[0])
        _pyrandom.setstate((3, words, gauss if has else None))
