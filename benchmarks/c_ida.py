"""SUNDIALS IDA driven from C, on the same reduced DAE as bondsim_ros: the reference.

The model's own generated C (``bondgraph/codegen.py``: the reduced equations after
common-subexpression elimination, ``m_<key>.c`` in the cache) is compiled again together with
a small C driver that runs IDA over all output times in one call, so no Python runs inside the
integration; Python calls it once per run through ctypes. IDA gets what bondsim_ros's BDF gets:

* a model with modes (Mod/floor, Piecewise conditions, clip: ``bondgraph/events.py``) is
  integrated on the moded kernels ``residual_modes`` / ``jacobian_modes``, smooth while the
  modes in ``p[n_par:]`` stay fixed, as IDA's users handle switching laws: IDA's rootfinding
  (``IDARootInit``) watches the switching functions ``roots``; at a root the driver takes the
  modes the laws pick just past it (``modes``), and if they changed restarts IDA there
  (``IDAReInit``, then ``IDACalcIC(IDA_YA_YDP_INIT)`` for the algebraic unknowns and the
  derivatives under the new law; should that fail, the values at the root are kept);
* the analytic iteration matrix ``dF/dy + cj dF/dy'`` from the same generated ``jacobian``,
  dense (dense LU) or, with ``linear_solver="klu"``, in its CSC pattern (KLU, SuiteSparse);
* ``IDASetId`` + ``IDASetSuppressAlg`` (the algebraic unknowns outside the error test).

``moded=False`` gives the laws as written (``residual``/``jacobian``: the modes computed at each
point, no rootfinding), for comparison.

Everything is generated at run time into ``$BONDSIM_CACHE_DIR/c_ida/<model key>/`` (default
``~/.cache/bondsim_ros``): nothing generated is committed. It needs gcc and Debian's
``libsundials-dev`` (IDA 6.x; its SUNDIALS is built with KLU, which needs
``libsuitesparse-dev``); this is a benchmark-only dependency, not part of ``tools/setup.sh``::

    apt-get install libsundials-dev libsuitesparse-dev

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
# KLU: SUNDIALS's KLU linear solver and sparse matrix, SuiteSparse's KLU (Debian: libsuitesparse-dev)
KLU_HEADER = "/usr/include/sunlinsol/sunlinsol_klu.h"
KLU_INCLUDE = "/usr/include/suitesparse"
KLU_SUNDIALS_LIBS = ["sundials_sunlinsolklu", "sundials_sunmatrixsparse"]
KLU_LIBS = [f"-l{name}" for name in KLU_SUNDIALS_LIBS] + ["-lklu"]
PREFIX_ENV = "BONDSIM_SUNDIALS_PREFIX"
# The model kernels get the optimisation numba gives ours (LLVM -O3 for the host CPU); the IDA
# library itself is Debian's build, as a user of the package gets it, unless a prefix is given.
CFLAGS = ["-O3", "-march=native", "-fPIC", "-shared", "-std=gnu11"]
COUNTERS = ["steps", "res_evals", "jac_evals", "newton_iters", "newton_conv_fails", "lin_setups",
            "err_test_fails", "last_order", "status", "root_returns", "mode_switches", "reinits", "calcic_failures",
            "root_evals"]
LINEAR_SOLVERS = ("dense", "klu")
RESTARTS = ("none", "reinit", "calcic")  # what a mode switch does to IDA (driver's restart 0, 1, 2)


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


def klu_available(prefix=None) -> bool:
    """Can the driver be built with KLU (Debian's SUNDIALS and SuiteSparse, or under ``prefix``)?"""
    if prefix:
        return all(any((Path(prefix) / d / f"lib{name}.a").exists() for d in ("lib", "lib64"))
                   for name in KLU_SUNDIALS_LIBS) and (Path(KLU_INCLUDE) / "klu.h").exists()
    return os.path.exists(KLU_HEADER) and (Path(KLU_INCLUDE) / "klu.h").exists()


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
#include <float.h>
#include <math.h>
#include <string.h>
#include <ida/ida.h>
#include <nvector/nvector_serial.h>
#include <sunmatrix/sunmatrix_dense.h>
#include <sunlinsol/sunlinsol_dense.h>
#ifdef WITH_KLU
#include <sunmatrix/sunmatrix_sparse.h>
#include <sunlinsol/sunlinsol_klu.h>
#endif

/* the model's kernels (bondgraph/codegen.py, the ABI of solver/native.py) */
void residual(double t, const double *y, const double *yp, const double *p, double *out);
void jacobian(double t, const double *y, const double *yp, const double *p, double cj, double *vals);
/* a model with modes also has the kernels that read them from p[n_par:] (the ones bondsim_ros's
   solver integrates), its switching functions and its natural modes; weak: absent otherwise */
void residual_modes(double t, const double *y, const double *yp, const double *p, double *out) __attribute__((weak));
void jacobian_modes(double t, const double *y, const double *yp, const double *p, double cj, double *vals)
    __attribute__((weak));
void roots(double t, const double *y, const double *yp, const double *p, double *out) __attribute__((weak));
void modes(double t, const double *y, const double *yp, const double *p, double *out) __attribute__((weak));

typedef struct { double *p; const long *indptr; const long *indices; double *vals; int n; int moded; } Data;

/* the residual IDA integrates: with modes, the moded kernel at the modes in p[n_par:] */
void ida_residual(int moded, double t, const double *y, const double *yp, const double *p, double *out) {
    if (moded) residual_modes(t, y, yp, p, out); else residual(t, y, yp, p, out);
}

int has_modes(void) { return residual_modes != 0 && jacobian_modes != 0 && roots != 0 && modes != 0; }

int has_klu(void) {
#ifdef WITH_KLU
    return 1;
#else
    return 0;
#endif
}

static int res(realtype t, N_Vector yy, N_Vector yp, N_Vector rr, void *ud) {
    Data *d = (Data *)ud;
    ida_residual(d->moded, t, N_VGetArrayPointer(yy), N_VGetArrayPointer(yp), d->p, N_VGetArrayPointer(rr));
    return 0;
}

static int jac(realtype t, realtype cj, N_Vector yy, N_Vector yp, N_Vector rr, SUNMatrix J, void *ud,
               N_Vector t1, N_Vector t2, N_Vector t3) {
    Data *d = (Data *)ud;
    (d->moded ? jacobian_modes : jacobian)(t, N_VGetArrayPointer(yy), N_VGetArrayPointer(yp), d->p, cj, d->vals);
    SUNMatZero(J);  /* the dense LU factors J in place: the structural zeros must be reset */
    for (int j = 0; j < d->n; j++) {
        realtype *col = SM_COLUMN_D(J, j);
        for (long k = d->indptr[j]; k < d->indptr[j + 1]; k++) col[d->indices[k]] += d->vals[k];
    }
    return 0;
}

#ifdef WITH_KLU
/* KLU: the kernel writes the values straight into the CSC matrix of the same pattern */
static int jac_sparse(realtype t, realtype cj, N_Vector yy, N_Vector yp, N_Vector rr, SUNMatrix J, void *ud,
                      N_Vector t1, N_Vector t2, N_Vector t3) {
    Data *d = (Data *)ud;
    sunindextype *ptr = SM_INDEXPTRS_S(J), *idx = SM_INDEXVALS_S(J);
    for (int j = 0; j <= d->n; j++) ptr[j] = d->indptr[j];
    for (long k = 0; k < d->indptr[d->n]; k++) idx[k] = d->indices[k];
    (d->moded ? jacobian_modes : jacobian)(t, N_VGetArrayPointer(yy), N_VGetArrayPointer(yp), d->p, cj,
                                           SM_DATA_S(J));
    return 0;
}
#endif

static int gfun(realtype t, N_Vector yy, N_Vector yp, realtype *gout, void *ud) {
    Data *d = (Data *)ud;
    roots(t, N_VGetArrayPointer(yy), N_VGetArrayPointer(yp), d->p, gout);
    return 0;
}

/* The modes the laws pick just past (t, y, y'), dt along y': the side the solution moves to. */
static void natural_modes(const Data *d, double t, double dt, const double *y, const double *yp,
                          double *ytmp, double *m) {
    for (int i = 0; i < d->n; i++) ytmp[i] = y[i] + dt * yp[i];
    modes(t + dt, ytmp, yp, d->p, m);
}

static void silent(int code, const char *module, const char *function, char *msg, void *ud) {}

/* IDA's counters restart at IDAReInit: the run's totals are summed over its segments */
enum { C_STEPS, C_RES, C_JAC, C_NNI, C_NCF, C_LSETUP, C_ETF, C_G, C_N };
static void add_counters(void *mem, int with_roots, long *acc) {
    long v;
    IDAGetNumSteps(mem, &v); acc[C_STEPS] += v;
    IDAGetNumResEvals(mem, &v); acc[C_RES] += v;
    IDAGetNumJacEvals(mem, &v); acc[C_JAC] += v;
    IDAGetNumNonlinSolvIters(mem, &v); acc[C_NNI] += v;
    IDAGetNumNonlinSolvConvFails(mem, &v); acc[C_NCF] += v;
    IDAGetNumLinSolvSetups(mem, &v); acc[C_LSETUP] += v;
    IDAGetNumErrTestFails(mem, &v); acc[C_ETF] += v;
    if (with_roots) { IDAGetNumGEvals(mem, &v); acc[C_G] += v; }
}

/* One run over all output times; returns IDA's flag of the last IDASolve (>= 0 on success).
   moded: the residual and Jacobian read the modes in p[n_par:] (p has n_par + n_modes
   entries), IDA's rootfinding watches the n_roots switching functions, and at a root the modes
   the laws pick there are taken; if they changed, restart 0 goes on with IDA's history (no
   restart), 1 restarts IDA there (IDAReInit with the values at the root), 2 restarts it and
   then corrects the algebraic unknowns and the derivatives under the new law (IDACalcIC,
   IDA_YA_YDP_INIT; where that fails, the values at the root are kept). M gets the modes at
   each output time.
   sparse: KLU on the CSC pattern, else dense LU. */
int run_ida_ev(int n, double *p, int n_par, int n_modes, int n_roots, int moded, int restart, int sparse,
               const long *indptr, const long *indices, double *vals, const double *id,
               double t0, const double *y0, const double *yp0, double rtol, const double *atol, double hmax,
               long max_steps, int nout, const double *tout, double *Y, double *YP, double *M, long *counters) {
    if (moded && !has_modes()) return -101;
    if (sparse && !has_klu()) return -102;
    SUNContext ctx;
    if (SUNContext_Create(NULL, &ctx)) return -100;
    N_Vector yy = N_VNew_Serial(n, ctx), yp = N_VNew_Serial(n, ctx), av = N_VNew_Serial(n, ctx),
             idv = N_VNew_Serial(n, ctx), tmp = N_VNew_Serial(n, ctx);
    memcpy(N_VGetArrayPointer(yy), y0, n * sizeof(double));
    memcpy(N_VGetArrayPointer(yp), yp0, n * sizeof(double));
    memcpy(N_VGetArrayPointer(av), atol, n * sizeof(double));
    memcpy(N_VGetArrayPointer(idv), id, n * sizeof(double));
    Data d = {p, indptr, indices, vals, n, moded};
    double m_new[n_modes > 0 ? n_modes : 1];
    long n_switch = 0, n_reinit = 0, n_icfail = 0, n_rootret = 0, same_t = 0, acc[C_N] = {0};
    const int with_roots = moded && n_roots > 0;
    /* at the start as bondsim_ros's init picks them: 1e-9 max(1, |t0|) along y' (a law switching
       exactly at t0 takes the branch the run goes to) */
    if (moded) natural_modes(&d, t0, 1e-9 * fmax(1.0, fabs(t0)), y0, yp0, N_VGetArrayPointer(tmp), p + n_par);
    void *mem = IDACreate(ctx);
    int flag = IDAInit(mem, res, t0, yy, yp);
    if (!flag) flag = IDASVtolerances(mem, rtol, av);
    if (!flag) flag = IDASetUserData(mem, &d);
    if (!flag) flag = IDASetErrHandlerFn(mem, silent, NULL);  /* failures are returned as flags */
    if (!flag) flag = IDASetId(mem, idv);
    if (!flag) flag = IDASetSuppressAlg(mem, SUNTRUE);
    if (!flag && hmax > 0 && isfinite(hmax)) flag = IDASetMaxStep(mem, hmax);
    if (!flag) flag = IDASetMaxNumSteps(mem, max_steps);
    if (!flag && moded && n_roots > 0) flag = IDARootInit(mem, n_roots, gfun);
    if (!flag && moded && n_roots > 0) flag = IDASetNoInactiveRootWarn(mem);
    SUNMatrix A = NULL;
    SUNLinearSolver LS = NULL;
#ifdef WITH_KLU
    if (sparse) {
        A = SUNSparseMatrix(n, n, indptr[n], CSC_MAT, ctx);
        LS = SUNLinSol_KLU(yy, A, ctx);
    }
#endif
    if (!sparse) {
        A = SUNDenseMatrix(n, n, ctx);
        LS = SUNLinSol_Dense(yy, A, ctx);
    }
    if (!flag) flag = IDASetLinearSolver(mem, LS, A);
#ifdef WITH_KLU
    if (!flag) flag = IDASetJacFn(mem, sparse ? jac_sparse : jac);
#else
    if (!flag) flag = IDASetJacFn(mem, jac);
#endif
    double t_last_root = NAN;
    for (int k = 0; k < nout && flag >= 0; k++) {
        realtype tret;
        for (;;) {
            flag = IDASolve(mem, tout[k], &tret, yy, yp, IDA_NORMAL);
            if (flag != IDA_ROOT_RETURN) break;
            if (tret >= tout[k]) flag = IDA_SUCCESS;  /* a root on the output time: the output is there */
            n_rootret++;
            /* a run stuck on one point (a mode switched back and forth there) is a failure */
            same_t = (tret == t_last_root) ? same_t + 1 : 0;
            t_last_root = tret;
            if (same_t > 20) { flag = -200; break; }
            realtype h = 0.0;
            IDAGetLastStep(mem, &h);
            /* at a root: 100 ulp of |t| + |h| past it (the bracket IDA's rootfinding leaves) */
            natural_modes(&d, tret, 100.0 * DBL_EPSILON * (fabs(tret) + fabs(h)), N_VGetArrayPointer(yy),
                          N_VGetArrayPointer(yp), N_VGetArrayPointer(tmp), m_new);
            int changed = 0;
            for (int j = 0; j < n_modes; j++) changed |= (m_new[j] != p[n_par + j]);
            if (!changed) { if (flag == IDA_SUCCESS) break; continue; }
            n_switch++;
            memcpy(p + n_par, m_new, n_modes * sizeof(double));
            if (restart == 0) { if (flag == IDA_SUCCESS) break; continue; }
            /* the law changed: restart the method at the root with the new modes */
            add_counters(mem, with_roots, acc);
            int at_output = flag == IDA_SUCCESS;
            flag = IDAReInit(mem, tret, yy, yp);
            if (flag) break;
            n_reinit++;
            if (restart < 2) { if (at_output) break; continue; }
            realtype tout1 = tout[k] > tret + 1e-9 * (1.0 + fabs(tret)) ? tout[k] : tret + (hmax > 0 ? hmax : 1e-3);
            if (IDACalcIC(mem, IDA_YA_YDP_INIT, tout1) < 0) {
                n_icfail++;  /* keep the values at the root (IDAReInit's) */
                add_counters(mem, with_roots, acc);
                IDAReInit(mem, tret, yy, yp);
            }
            if (at_output) break;
        }
        if (flag < 0) break;
        memcpy(Y + (long)k * n, N_VGetArrayPointer(yy), n * sizeof(double));
        memcpy(YP + (long)k * n, N_VGetArrayPointer(yp), n * sizeof(double));
        if (M) memcpy(M + (long)k * (n_modes > 0 ? n_modes : 0), p + n_par, n_modes * sizeof(double));
    }
    int order;
    add_counters(mem, with_roots, acc);
    counters[0] = acc[C_STEPS];
    counters[1] = acc[C_RES];
    counters[2] = acc[C_JAC];
    counters[3] = acc[C_NNI];
    counters[4] = acc[C_NCF];
    counters[5] = acc[C_LSETUP];
    counters[6] = acc[C_ETF];
    IDAGetLastOrder(mem, &order); counters[7] = order;
    counters[8] = flag;
    counters[9] = n_rootret;
    counters[10] = n_switch;
    counters[11] = n_reinit;
    counters[12] = n_icfail;
    counters[13] = acc[C_G];
    IDAFree(&mem);
    SUNLinSolFree(LS);
    SUNMatDestroy(A);
    N_VDestroy(yy); N_VDestroy(yp); N_VDestroy(av); N_VDestroy(idv); N_VDestroy(tmp);
    SUNContext_Free(&ctx);
    return flag;
}

/* The run without modes and with dense LU (the laws as written: modes computed at each point). */
int run_ida(int n, const double *p, const long *indptr, const long *indices, double *vals, const double *id,
            double t0, const double *y0, const double *yp0, double rtol, const double *atol, double hmax,
            long max_steps, int nout, const double *tout, double *Y, double *YP, long *counters) {
    long all[14];
    int flag = run_ida_ev(n, (double *)p, 0, 0, 0, 0, 0, 0, indptr, indices, vals, id, t0, y0, yp0, rtol, atol,
                          hmax, max_steps, nout, tout, Y, YP, NULL, all);
    memcpy(counters, all, 9 * sizeof(long));
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

    def __init__(self, model, compiled, log=print, prefix=None, moded=True, linear_solver="dense",
                 restart="reinit"):
        """``prefix``: install prefix of a SUNDIALS built from source (static libraries), else
        Debian's shared libraries. ``moded``: integrate a model with modes on its moded kernels
        with rootfinding (default), else on the laws as written. ``linear_solver``: "dense" or
        "klu" (sparse, on the Jacobian's CSC pattern). ``restart``: what a mode switch at a root
        does to IDA: "reinit" (IDAReInit at the root, the default), "calcic" (IDAReInit, then
        IDACalcIC) or "none" (the new modes, IDA's history kept)."""
        if restart not in RESTARTS:
            raise ValueError(f"restart must be one of {', '.join(RESTARTS)}, not {restart!r}")
        self.restart = restart
        if linear_solver not in LINEAR_SOLVERS:
            raise ValueError(f"linear_solver must be one of {', '.join(LINEAR_SOLVERS)}, not {linear_solver!r}")
        if prefix:
            if shutil.which("gcc") is None:
                raise MissingSundials("the C-IDA reference needs gcc: apt-get install gcc")
            link = ["-I", str(Path(prefix) / "include"), "-Wl,--exclude-libs,ALL", *_prefix_libs(prefix), "-lm"]
            tag = "native-" + hashlib.sha1(str(Path(prefix).resolve()).encode()).hexdigest()[:10]
        else:
            check_toolchain()
            link, tag = LIBS, "debian"
        klu = klu_available(prefix)
        if linear_solver == "klu" and not klu:
            raise MissingSundials("the C-IDA reference with KLU needs SUNDIALS's KLU solver and SuiteSparse's klu.h: "
                                  "apt-get install libsundials-dev libsuitesparse-dev")
        if klu:
            if prefix:
                link = link[:3] + [str(next(p for p in (Path(prefix) / d / f"lib{name}.a" for d in ("lib", "lib64"))
                                            if p.exists())) for name in KLU_SUNDIALS_LIBS] + link[3:] + ["-lklu"]
            else:
                link = [f"-l{name}" for name in KLU_SUNDIALS_LIBS] + link + ["-lklu"]
            link = ["-DWITH_KLU", "-I", KLU_INCLUDE] + link
        self.compiled = compiled
        self.prefix = prefix
        self.moded = bool(moded) and compiled.n_modes > 0
        self.linear_solver = linear_solver
        folder = _cache(compiled.key)
        # the driver's text and the link line in the name: a changed driver is never a stale library
        digest = hashlib.sha1((DRIVER + " ".join(link)).encode()).hexdigest()[:10]
        lib = folder / f"libmodel_ida_{tag}_{digest}.so"
        if not lib.exists():
            log(f"  C-IDA ({prefix or 'Debian'}): compiling {compiled.name}'s generated C with the driver "
                f"(gcc {' '.join(CFLAGS[:2])})")
            (folder / "model.c").write_text(c_source(model, compiled))
            (folder / "driver.c").write_text(DRIVER)
            tmp = folder / f"{lib.name}.tmp"
            # sources before the libraries: the static ones are searched only for what is still undefined
            # -Bsymbolic: the driver calls this library's residual/jacobian, never another loaded
            # library's of the same name (the model's own kernels library is loaded too)
            flags = [f for f in link if f.startswith("-D") or f == "-I" or link[max(link.index(f) - 1, 0)] == "-I"]
            libs = [f for f in link if f not in flags]
            cmd = ["gcc", *CFLAGS, *flags, "-Wl,-Bsymbolic", "-o", str(tmp), str(folder / "model.c"),
                   str(folder / "driver.c"), *libs]
            out = subprocess.run(cmd, capture_output=True, text=True)
            if out.returncode:
                raise RuntimeError(f"gcc failed for {folder}:\n{out.stderr[-3000:]}")
            os.replace(tmp, lib)
        self.lib = ctypes.CDLL(str(lib))
        f = self.lib.run_ida
        f.restype = ctypes.c_int
        f.argtypes = [ctypes.c_int, _dbl, _lng, _lng, _dbl, _dbl, ctypes.c_double, _dbl, _dbl, ctypes.c_double,
                      _dbl, ctypes.c_double, ctypes.c_long, ctypes.c_int, _dbl, _dbl, _dbl, _lng]
        f = self.lib.run_ida_ev
        f.restype = ctypes.c_int
        f.argtypes = [ctypes.c_int, _dbl, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, _lng, _lng, _dbl, _dbl, ctypes.c_double, _dbl, _dbl, ctypes.c_double, _dbl,
                      ctypes.c_double, ctypes.c_long, ctypes.c_int, _dbl, _dbl, _dbl, ctypes.c_void_p, _lng]
        g = self.lib.ida_residual
        g.restype = None
        g.argtypes = [ctypes.c_int, ctypes.c_double, _dbl, _dbl, _dbl, _dbl]
        self.modes = None  # after a moded run: the modes IDA held at each output time

    def residual(self, t, y, yp, params=None, modes=None):
        """The residual IDA integrates, evaluated by the driver: with ``modes`` (a model with
        modes), the moded kernel at those modes; else the laws as written."""
        c = self.compiled
        p = np.asarray(c.params if params is None else params, dtype=float)
        moded = modes is not None
        if moded:
            if not c.n_modes:
                raise ValueError(f"model {c.name!r} has no modes")
            p = np.concatenate([p, np.asarray(modes, dtype=float)])
        out = np.zeros(c.n)
        self.lib.ida_residual(int(moded), float(t), np.ascontiguousarray(y, float), np.ascontiguousarray(yp, float),
                              np.ascontiguousarray(p), out)
        return out

    def run(self, t_out, y0, yp0, rtol, atol, hmax=math.inf, t0=0.0, params=None, max_steps=500000):
        """Integrate from (t0, y0, yp0) over ``t_out``; returns (Y, YP, counters). A moded run
        also leaves the modes IDA held at each output time in ``self.modes``."""
        c = self.compiled
        n = c.n
        t_out = np.ascontiguousarray(t_out, dtype=float)
        Y = np.zeros((len(t_out), n))
        YP = np.zeros((len(t_out), n))
        counters = np.zeros(len(COUNTERS), dtype=np.int64)
        n_modes = c.n_modes if self.moded else 0
        p = np.zeros(len(c.params) + n_modes)
        p[:len(c.params)] = c.params if params is None else params
        M = np.zeros((len(t_out), n_modes)) if n_modes else None
        atol_v = np.ascontiguousarray(np.broadcast_to(np.asarray(atol, float), (n,)))
        ids = np.ascontiguousarray(np.where(c.differential, 1.0, 0.0))
        flag = self.lib.run_ida_ev(
            n, p, len(c.params), n_modes, len(c.root_names or []) if self.moded else 0, int(self.moded),
            RESTARTS.index(self.restart), int(self.linear_solver == "klu"), np.ascontiguousarray(c.indptr, np.int64),
            np.ascontiguousarray(c.indices, np.int64), np.zeros(len(c.indices)), ids, float(t0),
            np.ascontiguousarray(y0, float), np.ascontiguousarray(yp0, float), float(rtol), atol_v,
            0.0 if math.isinf(hmax) else float(hmax), int(max_steps), len(t_out), t_out, Y, YP,
            None if M is None else M.ctypes.data, counters)
        stats = dict(zip(COUNTERS, (int(v) for v in counters)))
        self.modes = M
        if flag < 0:
            raise RuntimeError(f"C-IDA failed on {c.name} with flag {flag} ({stats})")
        return Y, YP, stats
