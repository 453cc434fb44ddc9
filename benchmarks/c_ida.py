"""SUNDIALS IDA driven from C, on the same reduced DAE as bondsim_ros: the honest reference.

The model's own generated C (``bondgraph/codegen.py``: the reduced equations after
common-subexpression elimination, ``m_<key>.c`` in the cache) is compiled again together with
the driver: its ``residual`` ``F(t, y, y')`` (the laws as written: the modes computed at each
point) and ``jacobian``, the values of the iteration matrix ``dF/dy + cj dF/dy'`` in the same
CSC pattern. A small C driver runs IDA (dense matrix, dense
LU, ``IDASetSuppressAlg`` with the differential/algebraic ids) over all output times in one
call, so no Python runs inside the integration; Python calls it once per run through ctypes.

Everything is generated at run time into ``$BONDSIM_CACHE_DIR/c_ida/<model key>/`` (default
``~/.cache/bondsim_ros``): nothing generated is committed. It needs gcc and Debian's
``libsundials-dev`` (IDA 6.x); this is a benchmark-only dependency, not part of
``tools/setup.sh``::

    apt-get install libsundials-dev

    from c_ida import CIDA
    ida = CIDA(model, compiled)              # compiles once per model structure
    Y, YP, counters = ida.run(t_out, y0, yp0, rtol, atol, hmax)

A SUNDIALS built from source (``-O3 -march=native``, static libraries; docs/benchmarks.md has
the cmake line) is used instead with ``CIDA(..., prefix=PREFIX)``, or by the benchmark scripts
when ``BONDSIM_SUNDIALS_PREFIX`` names its install prefix. Its IDA is linked statically into the
model's library with its symbols kept local (``--exclude-libs``), so that a Debian-linked and
a native-linked library can be loaded side by side in one process: both SUNDIALS 6 shared
libraries carry the same soname, and the dynamic loader would quietly hand the second one
the first.
"""
from __future__ import annotations

import ctypes
import hashlib
import math
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np

HEADER = "/usr/include/ida/ida.h"
SUNDIALS_LIBS = ["sundials_ida", "sundials_nvecserial", "sundials_sunmatrixdense", "sundials_sunlinsoldense"]
LIBS = [f"-l{name}" for name in SUNDIALS_LIBS] + ["-lm"]
PREFIX_ENV = "BONDSIM_SUNDIALS_PREFIX"
# The model kernels get the optimisation numba gives ours (LLVM -O3 for the host CPU); the IDA
# library itself is Debian's build, as a user of the package gets it, unless a prefix is given.
CFLAGS = ["-O3", "-march=native", "-fPIC", "-shared", "-std=gnu11"]
COUNTERS = ["steps", "res_evals", "jac_evals", "newton_iters", "newton_conv_fails", "lin_setups",
            "err_test_fails", "last_order", "status"]


class MissingSundials(RuntimeError):
    pass


def native_prefix():
    """The install prefix of a SUNDIALS built from source, from $BONDSIM_SUNDIALS_PREFIX, or None."""
    return os.environ.get(PREFIX_ENV) or None


def _prefix_libs(prefix: str) -> list:
    """The static IDA libraries under ``prefix`` (lib/ or lib64/), with a clear error if absent."""
    out = []
    for name in SUNDIALS_LIBS:
        found = [p for p in (Path(prefix) / d / f"lib{name}.a" for d in ("lib", "lib64")) if p.exists()]
        if not found:
            raise MissingSundials(f"SUNDIALS prefix {prefix}: no lib{name}.a under lib/ or lib64/ (build SUNDIALS "
                                  f"with -DBUILD_STATIC_LIBS=ON -DCMAKE_POSITION_INDEPENDENT_CODE=ON, "
                                  f"docs/benchmarks.md)")
        out.append(str(found[0]))
    if not (Path(prefix) / "include" / "ida" / "ida.h").exists():
        raise MissingSundials(f"SUNDIALS prefix {prefix}: no include/ida/ida.h")
    return out


def check_toolchain() -> None:
    """Raise MissingSundials with the command to install what is missing."""
    missing = []
    if shutil.which("gcc") is None:
        missing.append("gcc")
    if not os.path.exists(HEADER):
        missing.append("libsundials-dev")
    if missing:
        raise MissingSundials(f"the C-IDA reference needs {' and '.join(missing)}: "
                              f"apt-get install {' '.join(missing)}  (benchmark only; not needed to use bondsim_ros)")


DRIVER = r"""
#include <math.h>
#include <string.h>
#include <ida/ida.h>
#include <nvector/nvector_serial.h>
#include <sunmatrix/sunmatrix_dense.h>
#include <sunlinsol/sunlinsol_dense.h>

/* the model's kernels (bondgraph/codegen.py, the ABI of solver/native.py) */
void residual(double t, const double *y, const double *yp, const double *p, double *out);
void jacobian(double t, const double *y, const double *yp, const double *p, double cj, double *vals);

typedef struct { const double *p; const long *indptr; const long *indices; double *vals; int n; } Data;

static int res(realtype t, N_Vector yy, N_Vector yp, N_Vector rr, void *ud) {
    Data *d = (Data *)ud;
    residual(t, N_VGetArrayPointer(yy), N_VGetArrayPointer(yp), d->p, N_VGetArrayPointer(rr));
    return 0;
}

static int jac(realtype t, realtype cj, N_Vector yy, N_Vector yp, N_Vector rr, SUNMatrix J, void *ud,
               N_Vector t1, N_Vector t2, N_Vector t3) {
    Data *d = (Data *)ud;
    jacobian(t, N_VGetArrayPointer(yy), N_VGetArrayPointer(yp), d->p, cj, d->vals);
    SUNMatZero(J);  /* the dense LU factors J in place: the structural zeros must be reset */
    for (int j = 0; j < d->n; j++) {
        realtype *col = SM_COLUMN_D(J, j);
        for (long k = d->indptr[j]; k < d->indptr[j + 1]; k++) col[d->indices[k]] += d->vals[k];
    }
    return 0;
}

/* One run over all output times; returns IDA's flag of the last IDASolve (>= 0 on success). */
int run_ida(int n, const double *p, const long *indptr, const long *indices, double *vals, const double *id,
            double t0, const double *y0, const double *yp0, double rtol, const double *atol, double hmax,
            long max_steps, int nout, const double *tout, double *Y, double *YP, long *counters) {
    SUNContext ctx;
    if (SUNContext_Create(NULL, &ctx)) return -100;
    N_Vector yy = N_VNew_Serial(n, ctx), yp = N_VNew_Serial(n, ctx), av = N_VNew_Serial(n, ctx),
             idv = N_VNew_Serial(n, ctx);
    memcpy(N_VGetArrayPointer(yy), y0, n * sizeof(double));
    memcpy(N_VGetArrayPointer(yp), yp0, n * sizeof(double));
    memcpy(N_VGetArrayPointer(av), atol, n * sizeof(double));
    memcpy(N_VGetArrayPointer(idv), id, n * sizeof(double));
    Data d = {p, indptr, indices, vals, n};
    void *mem = IDACreate(ctx);
    int flag = IDAInit(mem, res, t0, yy, yp);
    if (!flag) flag = IDASVtolerances(mem, rtol, av);
    if (!flag) flag = IDASetUserData(mem, &d);
    if (!flag) flag = IDASetId(mem, idv);
    if (!flag) flag = IDASetSuppressAlg(mem, SUNTRUE);
    if (!flag && hmax > 0 && isfinite(hmax)) flag = IDASetMaxStep(mem, hmax);
    if (!flag) flag = IDASetMaxNumSteps(mem, max_steps);
    SUNMatrix A = SUNDenseMatrix(n, n, ctx);
    SUNLinearSolver LS = SUNLinSol_Dense(yy, A, ctx);
    if (!flag) flag = IDASetLinearSolver(mem, LS, A);
    if (!flag) flag = IDASetJacFn(mem, jac);
    for (int k = 0; k < nout && flag >= 0; k++) {
        realtype tret;
        flag = IDASolve(mem, tout[k], &tret, yy, yp, IDA_NORMAL);
        if (flag < 0) break;
        memcpy(Y + (long)k * n, N_VGetArrayPointer(yy), n * sizeof(double));
        memcpy(YP + (long)k * n, N_VGetArrayPointer(yp), n * sizeof(double));
    }
    long v; int order;
    IDAGetNumSteps(mem, &v); counters[0] = v;
    IDAGetNumResEvals(mem, &v); counters[1] = v;
    IDAGetNumJacEvals(mem, &v); counters[2] = v;
    IDAGetNumNonlinSolvIters(mem, &v); counters[3] = v;
    IDAGetNumNonlinSolvConvFails(mem, &v); counters[4] = v;
    IDAGetNumLinSolvSetups(mem, &v); counters[5] = v;
    IDAGetNumErrTestFails(mem, &v); counters[6] = v;
    IDAGetLastOrder(mem, &order); counters[7] = order;
    counters[8] = flag;
    IDAFree(&mem);
    SUNLinSolFree(LS);
    SUNMatDestroy(A);
    N_VDestroy(yy); N_VDestroy(yp); N_VDestroy(av); N_VDestroy(idv);
    SUNContext_Free(&ctx);
    return flag;
}
"""


def c_source(model, compiled) -> str:
    """The C kernels of ``model`` as codegen generated them for ``compiled`` (``model`` is not
    needed: the source is in the cache next to the compiled library)."""
    return Path(compiled.source_path).read_text()


def _cache(key: str) -> Path:
    from bondsim_ros.solver.native import cache_root

    path = cache_root() / "c_ida" / key
    path.mkdir(parents=True, exist_ok=True)
    return path


_dbl = np.ctypeslib.ndpointer(dtype=np.float64, flags="C_CONTIGUOUS")
_lng = np.ctypeslib.ndpointer(dtype=np.int64, flags="C_CONTIGUOUS")


class CIDA:
    """IDA from C on one compiled model; ``run`` integrates over all output times in one C call."""

    def __init__(self, model, compiled, log=print, prefix=None):
        """``prefix``: install prefix of a SUNDIALS built from source (static libraries), else
        Debian's shared libraries."""
        if prefix:
            if shutil.which("gcc") is None:
                raise MissingSundials("the C-IDA reference needs gcc: apt-get install gcc")
            link = ["-I", str(Path(prefix) / "include"), "-Wl,--exclude-libs,ALL", *_prefix_libs(prefix), "-lm"]
            tag = "native-" + hashlib.sha1(str(Path(prefix).resolve()).encode()).hexdigest()[:10]
        else:
            check_toolchain()
            link, tag = LIBS, "debian"
        self.compiled = compiled
        self.prefix = prefix
        folder = _cache(compiled.key)
        lib = folder / f"libmodel_ida_{tag}.so"
        if not lib.exists():
            log(f"  C-IDA ({prefix or 'Debian'}): compiling {compiled.name}'s generated C with the driver "
                f"(gcc {' '.join(CFLAGS[:2])})")
            (folder / "model.c").write_text(c_source(model, compiled))
            (folder / "driver.c").write_text(DRIVER)
            tmp = folder / f"libmodel_ida_{tag}.so.tmp"
            # sources before the libraries: the static ones are searched only for what is still undefined
            # -Bsymbolic: the driver calls this library's residual/jacobian, never another loaded
            # library's of the same name (the model's own kernels library is loaded too)
            cmd = ["gcc", *CFLAGS, "-Wl,-Bsymbolic", "-o", str(tmp), str(folder / "model.c"), str(folder / "driver.c"),
                   *link]
            out = subprocess.run(cmd, capture_output=True, text=True)
            if out.returncode:
                raise RuntimeError(f"gcc failed for {folder}:\n{out.stderr[-3000:]}")
            os.replace(tmp, lib)
        self.lib = ctypes.CDLL(str(lib))
        f = self.lib.run_ida
        f.restype = ctypes.c_int
        f.argtypes = [ctypes.c_int, _dbl, _lng, _lng, _dbl, _dbl, ctypes.c_double, _dbl, _dbl, ctypes.c_double,
                      _dbl, ctypes.c_double, ctypes.c_long, ctypes.c_int, _dbl, _dbl, _dbl, _lng]

    def run(self, t_out, y0, yp0, rtol, atol, hmax=math.inf, t0=0.0, params=None, max_steps=500000):
        c = self.compiled
        n = c.n
        t_out = np.ascontiguousarray(t_out, dtype=float)
        Y = np.zeros((len(t_out), n))
        YP = np.zeros((len(t_out), n))
        counters = np.zeros(len(COUNTERS), dtype=np.int64)
        p = np.ascontiguousarray(c.params if params is None else params, dtype=float)
        atol_v = np.ascontiguousarray(np.broadcast_to(np.asarray(atol, float), (n,)))
        ids = np.ascontiguousarray(np.where(c.differential, 1.0, 0.0))
        flag = self.lib.run_ida(n, p, np.ascontiguousarray(c.indptr, np.int64),
                                np.ascontiguousarray(c.indices, np.int64), np.zeros(len(c.indices)), ids, float(t0),
                                np.ascontiguousarray(y0, float), np.ascontiguousarray(yp0, float), float(rtol), atol_v,
                                0.0 if math.isinf(hmax) else float(hmax), int(max_steps), len(t_out), t_out, Y, YP,
                                counters)
        stats = dict(zip(COUNTERS, (int(v) for v in counters)))
        if flag < 0:
            raise RuntimeError(f"C-IDA failed on {c.name} with flag {flag} ({stats})")
        return Y, YP, stats
