"""Reading a version a job persisted to disk (FT_PERSIST_DIR), without MPI
and without a running job: ``ftrt.load_persisted``.

Thin over ft_persisted_* (include/ftrt.h): libftrt chooses the version,
checks its manifests, puts each global tensor together from its ranks'
slices and checks the CRC64 of every 4 MiB block it reads; this module only
reads the bytes into torch tensors and, with ``like=``, views them as the
caller's dtypes and shapes.  The signatures are declared here rather than
in _lib.py so that this reader stays one file; the library is still loaded
in one place (_lib.lib()).
"""
import ctypes
import os
import warnings

from ._lib import Error, check, lib

__all__ = ["load_persisted", "PersistedState"]

_FT_EINVAL, _FT_ENOENT, _FT_EMISMATCH = -1, -4, -9
_MSG = 4096
_declared = None


class _Info(ctypes.Structure):
    """ft_persisted_info_t."""
    _fields_ = [("dir", ctypes.c_char * 64),
                ("version", ctypes.c_uint64), ("step", ctypes.c_uint64),
                ("epoch", ctypes.c_uint64), ("run", ctypes.c_uint64),
                ("nnodes", ctypes.c_uint32), ("nranks", ctypes.c_uint32),
                ("bytes", ctypes.c_uint64), ("ntensors", ctypes.c_size_t)]


class _Tensor(ctypes.Structure):
    """ft_persisted_tensor_t."""
    _fields_ = [("name", ctypes.c_char_p), ("rank", ctypes.c_int64),
                ("bytes", ctypes.c_uint64), ("kind", ctypes.c_uint32),
                ("nslices", ctypes.c_uint32)]


def _c():
    global _declared
    if _declared is None:
        h = lib()
        vp, cp, sz, u64 = (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t,
                           ctypes.c_uint64)
        sigs = {
            "ft_persisted_open": (ctypes.c_int, [cp, cp, cp,
                                                 ctypes.POINTER(vp), cp, sz]),
            "ft_persisted_info": (None, [vp, ctypes.POINTER(_Info)]),
            "ft_persisted_tensor": (ctypes.c_int,
                                    [vp, sz, ctypes.POINTER(_Tensor)]),
            "ft_persisted_read": (ctypes.c_int, [vp, sz, u64, u64, vp, cp,
                                                 sz]),
            "ft_persisted_close": (None, [vp]),
        }
        for name, (res, args) in sigs.items():
            fn = getattr(h, name)
            fn.restype, fn.argtypes = res, args
        _declared = h
    return _declared


class PersistedState(dict):
    """What load_persisted returns: a dict, plus the version it was read
    from (``dir``, e.g. ``"v12.e3"``, ``version``, ``step``, ``epoch``,
    ``nranks``)."""


def _version_arg(version):
    if version is None:
        return "latest"
    if isinstance(version, bool) or not isinstance(version, (int, str)):
        raise Error(_FT_EINVAL, "load_persisted", f"version={version!r}: "
                    "expected None or 'latest', a version number, or a "
                    "directory name 'v<V>.e<E>'")
    return str(version)


def _open(d, job, version):
    h = _c()
    msg = ctypes.create_string_buffer(_MSG)
    p = ctypes.c_void_p()
    st = h.ft_persisted_open(os.fsencode(d), job.encode(), version.encode(),
                             ctypes.byref(p), msg, _MSG)
    note = msg.value.decode(errors="replace")
    check(st, f"ft_persisted_open({d!r}, job {job!r}, version {version!r})",
          note)
    if note:  # "latest" passed over newer versions that fail their CRCs
        warnings.warn(f"ftrt.load_persisted: newer versions fail "
                      f"verification: {note}", RuntimeWarning, stacklevel=3)
    return h, p


def _table(h, p):
    info = _Info()
    h.ft_persisted_info(p, ctypes.byref(info))
    out = []
    for i in range(info.ntensors):
        t = _Tensor()
        check(h.ft_persisted_tensor(p, i, ctypes.byref(t)),
              "ft_persisted_tensor")
        out.append((i, t.name.decode(errors="surrogateescape"), t.rank,
                    t.bytes))
    return info, out


def _read(h, p, entry):
    import torch
    i, name, _, nbytes = entry
    t = torch.empty(nbytes, dtype=torch.uint8)
    if nbytes:
        msg = ctypes.create_string_buffer(_MSG)
        st = h.ft_persisted_read(p, i, 0, nbytes,
                                 ctypes.c_void_p(t.data_ptr()), msg, _MSG)
        check(st, f"ft_persisted_read({name!r})",
              msg.value.decode(errors="replace"))
    return t


def _candidates(key, prefix):
    """The registered names a state-dict key may have been registered as:
    what register_model(model, prefix) gives it first, then the key
    itself (a tensor registered with register(key, ...))."""
    from . import _short_name
    names = [_short_name(f"{prefix}.{key}")] if prefix else []
    return names + [_short_name(key)]


def _pick(entries, key, prefix, rank):
    """The entries like[key] may read: a global tensor, else the private
    buffer of `rank`, else every rank's that holds it (_one_of checks that
    they agree)."""
    for name in _candidates(key, prefix):
        held = [e for e in entries if e[1] == name and
                (e[2] < 0 or rank is None or e[2] == rank)]
        if held:
            return sorted(held, key=lambda e: e[2])
    return None


def _one_of(h, p, held, key):
    """The bytes of like[key]: one entry's, or, when several ranks hold a
    private buffer of that name and no rank was given, theirs if they are
    all the same (data-parallel replicas); different bytes (shards of a
    tensor registered as private buffers) are an error, never one rank's
    bytes taken silently."""
    raw = _read(h, p, held[0])
    for e in held[1:]:
        if not raw.equal(_read(h, p, e)):
            raise Error(_FT_EMISMATCH, "load_persisted", f"like[{key!r}]: "
                        f"ranks {held[0][2]} and {e[2]} hold different bytes "
                        f"for {e[1]!r} (a private buffer per rank, not a "
                        "replica): pass rank=R to take one rank's")
    return raw


def _viewed(raw, ref, key, entry):
    import torch
    if not isinstance(ref, torch.Tensor):
        raise Error(_FT_EINVAL, "load_persisted", f"like[{key!r}] is a "
                    f"{type(ref).__name__}, not a tensor")
    want = ref.numel() * ref.element_size()
    if want != raw.numel():
        where = "global" if entry[2] < 0 else f"rank {entry[2]}"
        raise Error(_FT_EMISMATCH, "load_persisted", f"like[{key!r}] is "
                    f"{tuple(ref.shape)} {ref.dtype} ({want} bytes), the "
                    f"persisted {entry[1]!r} ({where}) holds {raw.numel()} "
                    "bytes")
    return raw.view(ref.dtype).view(ref.shape)


def _load_like(h, p, entries, like, prefix, rank, strict, dirname):
    out, missing = {}, []
    for key, ref in like.items():
        held = _pick(entries, key, prefix, rank)
        if held is None:
            missing.append(f"{key!r} (as " + " or ".join(
                repr(n) for n in _candidates(key, prefix)) + ")")
            continue
        out[key] = _viewed(_one_of(h, p, held, key), ref, key, held[0])
    if missing and strict:
        raise Error(_FT_ENOENT, "load_persisted", f"{dirname} holds no "
                    f"buffer for {len(missing)} of like's entries: "
                    + ", ".join(missing[:8]) + (", ..." if len(missing) > 8
                                                else "")
                    + " (strict=False leaves them out)")
    return out


def _load_all(h, p, entries, rank):
    out = {}
    for e in entries:
        _, name, r, _ = e
        if r < 0:
            out[name] = _read(h, p, e)
        elif rank is None:
            out.setdefault(name, {})[r] = _read(h, p, e)
        elif r == rank:
            out[name] = _read(h, p, e)
    return out


def load_persisted(dir=None, job=None, version=None, like=None, *,
                   prefix="model", rank=None, strict=True):
    """Read a version the job persisted to disk, checking every CRC on the
    way.  Not collective: any process may call it, with or without MPI,
    while the job runs or after it ended; nothing on disk is changed.

    dir: the persist directory (default FT_PERSIST_DIR); job: the job name
    (default FT_JOB, else "ftrt").  version: None or "latest", the newest
    complete version whose every file verifies (newer ones that fail are
    skipped with a RuntimeWarning naming the file; choosing reads the
    version once whole, then again for the tensors); an int N, the newest
    version numbered N; "v<V>.e<E>", that directory (ft-persist list shows
    them).

    Returns a PersistedState: a dict whose ``step``, ``version``, ``epoch``,
    ``dir`` and ``nranks`` say what was read.  Without ``like``: each
    registered name to a torch uint8 tensor (CPU) -- a buffer registered
    as a slice of a global tensor (register(..., global_offset,
    global_size)) once, whole, put together from every rank's slice; a
    private buffer to a dict {rank: tensor}, or with ``rank=R`` only rank
    R's, name to tensor.

    With ``like`` (a state dict, name -> tensor, e.g.
    ``model.state_dict()``): the same keys, each read and viewed as that
    tensor's dtype and shape (on the CPU; load_state_dict copies it where
    the model lives).  Key K matches the buffer register_model(model,
    prefix) registered for it, ``prefix + "." + K`` (long names shortened
    as register() shortens them), else a buffer registered as K itself;
    prefix=None matches K only.  A private buffer is taken from ``rank``;
    without one, every rank's copy is read and they must be equal
    (replicas of a data-parallel model are), else ftrt.Error
    (FT_EMISMATCH) says to pass rank=R.  A key with no buffer raises ftrt.Error (FT_ENOENT)
    naming it, unless strict=False, which leaves it out (tied weights
    appear once in named_parameters, so only once among the registered
    names); a size that differs raises FT_EMISMATCH.  Optimizer state is
    registered under "optim.<i>.exp_avg", ... (register_optimizer), not
    under optimizer.state_dict()'s nested keys: read it without ``like``.

    Raises ftrt.Error carrying libftrt's status and message: FT_ENOENT (no
    such directory, job or version), FT_ECONFIG (the directory is not this
    user's private one), FT_ECORRUPT (a file fails its CRC: the message
    names it and the block), FT_EMISMATCH (a global tensor's slices leave
    bytes out), FT_EINVAL (a malformed version).
    """
    d = dir if dir is not None else os.environ.get("FT_PERSIST_DIR", "")
    if not d:
        raise Error(_FT_EINVAL, "load_persisted", "no persist directory: "
                    "pass dir= or set FT_PERSIST_DIR")
    job = job or os.environ.get("FT_JOB") or "ftrt"
    h, p = _open(os.fspath(d), job, _version_arg(version))
    try:
        info, entries = _table(h, p)
        dirname = info.dir.decode()
        if like is not None:
            out = _load_like(h, p, entries, like, prefix, rank, strict,
                             dirname)
        else:
            out = _load_all(h, p, entries, rank)
    finally:
        h.ft_persisted_close(p)
    res = PersistedState(out)
    res.dir, res.version, res.step = dirname, info.version, info.step
    res.epoch, res.nranks = info.epoch, info.nranks
    return res
