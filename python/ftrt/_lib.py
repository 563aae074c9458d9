"""The one place that loads libftrt (ctypes) and turns its statuses into
exceptions.

Why ctypes and not a C extension: the package is then pure Python, so one
copy works in every CPython 3 that can load libftrt, with no build against
a particular interpreter's headers (this machine has two interpreters), and
the C library stays the only compiled part.  The calls it wraps are few and
coarse (a snapshot copies megabytes), so the microseconds a ctypes call
costs do not show.

Order matters: mpi4py is imported first, because it loads libmpi with
RTLD_GLOBAL (Open MPI's plugins need its symbols); libftrt then links
against that same libmpi.
"""
import ctypes
import ctypes.util
import os

_lib = None


class Error(Exception):
    """A status from libftrt other than FT_OK.

    ``status`` is the C value (negative), ``name`` ft_err_name()'s
    (``"FT_ENOSNAPSHOT"``), ``strerror`` ft_strerror()'s text.
    ``str(err)`` names the call, the status and what the binding knows
    about why.
    """

    def __init__(self, status, what, detail=""):
        self.status = status
        self.name = err_name(status)
        self.strerror = strerror(status)
        self.what = what
        self.detail = detail
        msg = f"{what}: {self.name}: {self.strerror}"
        super().__init__(msg + (f": {detail}" if detail else ""))

    def __reduce__(self):
        # pickled whole (DCP and mpi4py carry exceptions between ranks)
        return (type(self), (self.status, self.what, self.detail))


class NoSnapshot(Error):
    """FT_ENOSNAPSHOT: restore() found no committed version (a fresh start)."""


class Busy(Error):
    """FT_EBUSY: the previous snapshot is still being protected."""


class TimedOut(Error):
    """FT_ETIMEDOUT: a peer (the node's SMP) did not answer in time."""


_CLASSES = {-6: NoSnapshot, -14: Busy, -12: TimedOut}


def _candidates():
    env = os.environ.get("FTRT_LIBRARY")
    if env:
        return [env]
    out = []
    try:
        from . import _paths  # written by make install
        out.append(os.path.join(_paths.LIBDIR, "libftrt.so.0"))
    except ImportError:
        pass
    found = ctypes.util.find_library("ftrt")
    if found:
        out.append(found)
    out.append("libftrt.so.0")
    return out


def _declare(lib):
    c_int, c_void_p, c_char_p = ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p
    u64p = ctypes.POINTER(ctypes.c_uint64)
    sigs = {
        "ft_strerror": (c_char_p, [c_int]),
        "ft_err_name": (c_char_p, [c_int]),
        "ft_init": (c_int, [c_void_p, c_void_p, ctypes.POINTER(c_void_p),
                            c_void_p]),
        "ft_register": (c_int, [c_void_p, c_char_p, c_void_p, ctypes.c_size_t,
                                ctypes.POINTER(BufOpts)]),
        "ft_snapshot": (c_int, [c_void_p, ctypes.c_uint64]),
        "ft_fence": (c_int, [c_void_p]),
        "ft_wait_committed": (c_int, [c_void_p, u64p]),
        "ft_restore": (c_int, [c_void_p, u64p]),
        "ft_finalize": (c_int, [c_void_p]),
    }
    for name, (res, args) in sigs.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args


class BufOpts(ctypes.Structure):
    """ft_buf_opts_t of include/ftrt.h (enums are ints)."""
    _fields_ = [("kind", ctypes.c_int), ("memory", ctypes.c_int),
                ("global_offset", ctypes.c_uint64),
                ("global_bytes", ctypes.c_uint64),
                ("cuda_stream", ctypes.c_void_p)]


def lib():
    """libftrt, loaded once: FTRT_LIBRARY if set, else the one installed next
    to this package (make install), else the linker's search path."""
    global _lib
    if _lib is not None:
        return _lib
    tried = []
    for path in _candidates():
        try:
            handle = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        except OSError as e:
            tried.append(f"{path} ({e})")
            continue
        _declare(handle)
        _lib = handle
        return _lib
    raise ImportError("ftrt: cannot load libftrt: tried " + "; ".join(tried) +
                      " (set FTRT_LIBRARY to the path of libftrt.so.0)")


def strerror(status):
    return lib().ft_strerror(status).decode()


def err_name(status):
    return lib().ft_err_name(status).decode()


def check(status, what, detail=""):
    """Raise the exception of a non-zero status; return FT_OK (0) as is."""
    if status == 0:
        return 0
    raise _CLASSES.get(status, Error)(status, what, detail)
