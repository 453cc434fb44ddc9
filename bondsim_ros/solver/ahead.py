"""A command's solve started ahead, from an image of the solver its last identical run set up.

A warm ``bondsim-ros simulate`` spends some 0.1 s importing numpy and the package and setting
the solver up before its first step, time in which the machine's second core idles. When the
same command ran before, the C core's struct and arrays as they stood before the first step
are kept in the cache (``runs/``, an *image*: raw bytes, the kernels by library file and
symbol name). The next run of that command starts the core from the image on a thread at once,
with nothing imported but ctypes, while the main thread imports, builds the solver as always and
sets it up. The solve is the same deterministic C over the same bytes, so it is taken only when
the solver the main thread built holds, byte for byte, what the image holds, with the same
kernels loaded at the same addresses, the same output times and the same calls (``Ahead.use``);
otherwise the thread is stopped and the solver solves as it would have. The result is then the
one the solver itself computes, bit for bit; the image only decides when the computing starts.

Only C kernels exported by a shared library qualify (numba's or Python's have no file to load
them from), and only the dense or the core's own sparse LU: KLU's factorisations live outside
the arrays. This module imports nothing beyond ctypes, so that the command line can start a run
before numpy is imported; the image is made and compared (``image``) where numpy is loaded.
"""
from __future__ import annotations

import ctypes
import marshal
import os
import sys
import threading
import zlib

from . import cachedir

FORMAT = 1
FOLDER = "runs"
SWITCH_INTERVAL = 1e-4  # s, while a run goes on (start); the interpreter's own after it
KEEP = 32  # images kept in the folder: the oldest go when a new one is written

# the struct's fields a call of the core sets (Core.advance), not part of the state
_PER_CALL = ("n_out", "t_stop", "rtol", "hmax", "max_steps", "t_out", "Yout", "YPout")
_KERNELS = ("res", "jac", "roots", "modes")


def image_path(words) -> str:
    """Where the image of the command ``words`` (its arguments after the program name) lives."""
    return _path(_key(words))


def _key(words) -> tuple:
    """What names a command's image: its arguments, the folder it runs in and whether it writes
    to a terminal (a progress bar splits the solve otherwise). A name shared by two commands only
    wastes a start, since a run is taken only when its solver matches."""
    return (FORMAT, sys.version, sys.executable, tuple(words), os.getcwd(), os.isatty(1))


def _path(key: tuple) -> str:
    data = repr(key).encode()
    name = f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}.run"
    return os.path.join(cachedir.cache_root(), FOLDER, name)


def start(words) -> "Ahead":
    """The command ``words``' image, started on a thread when there is one for this very
    command and everything it names loads; an Ahead without a run otherwise. Never raises: a
    missing, stale or damaged image only means the solve starts when the solver is set up."""
    try:
        key = _key(words)
        path = _path(key)
    except Exception:  # noqa: BLE001 - no cwd (removed), no home: no image
        return Ahead(None, None, None)
    run = None
    try:
        with open(path, "rb") as f:
            image = marshal.load(f)
        if isinstance(image, dict) and image.get("key") == key:
            run = Run(image)
            # between two calls the run takes the GIL back for a few lines: at the default 5 ms
            # switch interval the main thread, importing, kept it that long each time
            sys.setswitchinterval(SWITCH_INTERVAL)
            try:
                run.start()
            except BaseException:
                sys.setswitchinterval(run._interval)
                raise
    except Exception:  # noqa: BLE001 - see the docstring
        run = None
    return Ahead(path, key, run)


class Run(threading.Thread):
    """The core's calls of an image, on the image's own copies of the arrays; each call's
    status and rows written are published as it ends (``wait``)."""

    def __init__(self, image: dict):
        super().__init__(name="bondsim-ahead", daemon=True)
        self.image = image
        calls = image["calls"]
        self.n = image["n"]
        lib = ctypes.CDLL(image["core"])
        self._advance = lib[image["advance"]]
        self._advance.argtypes, self._advance.restype = [ctypes.c_void_p], ctypes.c_int64
        size = lib.bdf_struct_size
        size.argtypes, size.restype = [], ctypes.c_int64
        if len(image["struct"]) != size():
            raise ValueError("the image's struct is not this core's")
        self.struct = ctypes.create_string_buffer(image["struct"], len(image["struct"]))
        base = ctypes.addressof(self.struct)
        self.kernels = {}
        for name, offset, file, symbol in image["kernels"]:
            address = ctypes.cast(ctypes.CDLL(file)[symbol], ctypes.c_void_p).value
            self.kernels[name] = address
            ctypes.c_void_p.from_address(base + offset).value = address
        self.arrays = {}
        for name, offset, data in image["arrays"]:
            buf = ctypes.create_string_buffer(data, max(1, len(data)))
            self.arrays[name] = buf
            ctypes.c_void_p.from_address(base + offset).value = ctypes.addressof(buf)
        m = len(calls["t_out"]) // 8
        self.t_out = ctypes.create_string_buffer(calls["t_out"], max(8, len(calls["t_out"])))
        self.Y = (ctypes.c_double * max(1, m * self.n))()
        self.YP = (ctypes.c_double * max(1, m * self.n))()
        self._k_out = ctypes.c_int64.from_address(ctypes.addressof(self.arrays["ist"]) + 8 * image["i_k_out"])
        self._cond = threading.Condition()
        self.results: list = []  # (status, rows written) of each call made
        self.ended = False
        self._halt = False
        self._interval = sys.getswitchinterval()

    def run(self):
        image, calls = self.image, self.image["calls"]
        off = image["offsets"]
        base = ctypes.addressof(self.struct)
        n, t0, y0, yp0 = self.n, ctypes.addressof(self.t_out), ctypes.addressof(self.Y), ctypes.addressof(self.YP)
        k_out = self._k_out
        try:
            # the same for every call of a plan (Ahead.use compared them); the rest per call
            ctypes.c_double.from_address(base + off["t_stop"]).value = calls["tstop"]
            ctypes.c_double.from_address(base + off["rtol"]).value = calls["rtol"]
            ctypes.c_double.from_address(base + off["hmax"]).value = calls["hmax"]
            ctypes.c_int64.from_address(base + off["max_steps"]).value = calls["max_steps"]
            for a, b in calls["stretches"]:
                if self._halt:
                    break
                ctypes.c_int64.from_address(base + off["n_out"]).value = b - a
                ctypes.c_void_p.from_address(base + off["t_out"]).value = t0 + 8 * a
                ctypes.c_void_p.from_address(base + off["Yout"]).value = y0 + 8 * a * n
                ctypes.c_void_p.from_address(base + off["YPout"]).value = yp0 + 8 * a * n
                k_out.value = 0
                status = self._advance(base)  # ctypes lets go of the GIL for the call
                with self._cond:
                    self.results.append((status, k_out.value))
                    self._cond.notify_all()
                if status != image["ok"]:
                    break
        except Exception:  # noqa: BLE001 - a damaged image: no result (wait says so), no traceback
            pass
        finally:
            sys.setswitchinterval(self._interval)
            with self._cond:
                self.ended = True
                self._cond.notify_all()

    def stop(self) -> None:
        """End the run at its next step: no further call, and the one running told it has no
        more output times (the core reads ``n_out`` through the struct at every step; an aligned
        8-byte store, which the other thread sees whole). A run not taken only costs its CPU, so
        a call that starts just after this goes on to its end, unread."""
        self._halt = True
        ctypes.c_int64.from_address(ctypes.addressof(self.struct) + self.image["offsets"]["n_out"]).value = 0

    def wait(self, k: int) -> tuple:
        """(status, rows written) of call ``k``, once it has ended."""
        with self._cond:
            while len(self.results) <= k and not self.ended:
                self._cond.wait()
            if len(self.results) <= k:
                raise RuntimeError(f"the solve started ahead ended before its call {k}")
            return self.results[k]


class Ahead:
    """A command's run started from its image (``run``, or None), and where that command's
    image is kept (``path``: None when it cannot be)."""

    def __init__(self, path, key, run):
        self.path, self.key, self.run = path, key, run
        self.adopted = False  # use() handed the run to the solver
        self._new = None

    def use(self, solver, t_out, tstop, stretches) -> bool:
        """Hand ``solver`` the run when it is this solver's, about to make these calls (the
        output times ``t_out`` to ``tstop``, in ``stretches`` of rows, one core call each):
        True. Otherwise the run is stopped and this solver's image is kept, to be written by
        ``finish`` once the run succeeds (``solver`` None: a run whose calls follow no plan,
        which keeps no image)."""
        image = solver.image(t_out, tstop, stretches) if self.path is not None and solver is not None else None
        if image is not None:
            image["key"] = self.key
        run, self.run = self.run, None
        if run is not None and image is not None and run.image == image and all(
                solver.kernel_address(k) == a for k, a in run.kernels.items()):
            solver.adopt(run)
            self.adopted = True
            try:
                os.utime(self.path)  # in use: the last the folder's trimming removes
            except OSError:
                pass
            return True
        if run is not None:
            run.stop()
        self._new = image
        return False

    def finish(self) -> None:
        """Write the image kept by ``use`` (atomically; a full disk or a read-only cache only
        means no head start next time), and keep the folder to its newest ``KEEP`` images."""
        image, self._new = self._new, None
        if image is None:
            return
        if cachedir.write_whole(self.path, marshal.dumps(image)):
            _trim(os.path.dirname(self.path))


def _trim(folder: str) -> None:
    images = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        if entry.name.endswith(".run") and not entry.name.startswith("."):
            try:
                images.append((entry.stat().st_mtime, entry.path))
            except OSError:
                pass
    for _, path in sorted(images)[:-KEEP]:
        try:
            os.unlink(path)
        except OSError:
            pass


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p), ("dli_sname", ctypes.c_char_p),
                ("dli_saddr", ctypes.c_void_p)]


_dladdr = None


def symbol_of(address: int):
    """(library file, symbol name) of a function exported at exactly ``address``, else None
    (a numba or ctypes callback, a static function)."""
    global _dladdr
    if _dladdr is None:
        try:
            _dladdr = ctypes.CDLL(None).dladdr
        except (OSError, AttributeError):
            _dladdr = False
        else:
            _dladdr.argtypes, _dladdr.restype = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)], ctypes.c_int
    if not _dladdr or not address:
        return None
    info = _DlInfo()
    if not _dladdr(address, ctypes.byref(info)) or not info.dli_sname or info.dli_saddr != address:
        return None
    file = os.fsdecode(info.dli_fname)
    if not os.path.isabs(file) or not os.path.isfile(file):
        return None
    return file, info.dli_sname.decode()


def image(core, struct_type, t_core, tstop, rtol, hmax, max_steps, stretches, constants) -> dict | None:
    """The image of a solver's core (``_ccore.Core``) before the calls it is about to make: None
    when it cannot be rebuilt from bytes (a kernel without a library symbol, KLU, a pointer to
    anything but one of the core's arrays)."""
    s = core.s
    base = ctypes.addressof(s)
    if s.sparse == constants["SPARSE_KLU"] or s.klu:
        return None
    raw = bytearray(ctypes.string_at(base, ctypes.sizeof(s)))
    offsets, kernels, arrays = {}, [], []
    own = core._arrays
    for name, ctype in struct_type._fields_:
        offset = getattr(struct_type, name).offset
        offsets[name] = offset
        if name in _PER_CALL or ctype is ctypes.c_void_p:
            raw[offset:offset + 8] = bytes(8)
        if name in _PER_CALL or ctype is not ctypes.c_void_p:
            continue
        value = getattr(s, name)
        if name in _KERNELS:
            if not value:
                continue
            found = symbol_of(value)
            if found is None:
                return None
            kernels.append((name, offset, *found))
        elif name == "klu":
            continue
        else:
            a = own.get(name)
            if a is None or not a.flags.c_contiguous or (a.size and value != a.ctypes.data):
                return None
            arrays.append((name, offset, a.tobytes()))
    lib = symbol_of(ctypes.cast(core._advance, ctypes.c_void_p).value)
    if lib is None:
        return None
    return {"format": FORMAT, "core": lib[0], "advance": lib[1], "n": int(s.n), "struct": bytes(raw),
            "kernels": kernels, "arrays": arrays, "offsets": offsets, "i_k_out": constants["I_K_OUT"],
            "ok": constants["OK"],
            "calls": {"t_out": t_core.tobytes(), "tstop": float(tstop), "rtol": float(rtol), "hmax": float(hmax),
                      "max_steps": int(max_steps), "stretches": [(int(a), int(b)) for a, b in stretches]}}
