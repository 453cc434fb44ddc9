"""SUNDIALS IDA driven from C, on the same reduced DAE as bondsim_ros: the honest reference.

The model's reduced equations (``bondgraph.reduce``, the expressions ``codegen`` prints as numba
kernels) are printed as C with sympy's C99 printer, after the same common-subexpression
elimination: a residual ``F(t, y, y')`` and the values of the iteration matrix
``dF/dy + cj dF/dy'`` in the same CSC pattern. A small C driver runs IDA (dense matrix, dense
LU, ``IDASetSuppressAlg`` with the differential/algebraic ids) over all output times in one
call, so no Python runs inside the integration; Python calls it once per run through ctypes.

Everything is generated at run time into ``$BONDSIM_CACHE_DIR/c_ida/<model key>/`` (default
``~/.cache/bondsim_ros``): nothing generated is committed. It needs gcc and Debian's
``libsundials-dev`` (IDA 6.x); this is a benchmark-only dependency, not part of
``tools/setup.sh``::

    apt-get install libsundials-dev

    from c_ida import CIDA
    ida = CIDA(model, compiled)              # prints C, compiles once per model structure
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

void model_residual(double t, const double *y, const double *yp, const double *p, double *out);
void model_jacobian(double t, const double *y, const double *yp, const double *p, double cj, double *vals);

typedef struct { const double *p; const long *indptr; const long *indices; double *vals; int n; } Data;

static int res(realtype t, N_Vector yy, N_Vector yp, N_Vector rr, void *ud) {
    Data *d = (Data *)ud;
    model_residual(t, N_VGetArrayPointer(yy), N_VGetArrayPointer(yp), d->p, N_VGetArrayPointer(rr));
    return 0;
}

static int jac(realtype t, realtype cj, N_Vector yy, N_Vector yp, N_Vector rr, SUNMatrix J, void *ud,
               N_Vector t1, N_Vector t2, N_Vector t3) {
    Data *d = (Data *)ud;
    model_jacobian(t, N_VGetArrayPointer(yy), N_VGetArrayPointer(yp), d->p, cj, d->vals);
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


def _c_printer():
    from sympy.printing.c import C99CodePrinter

    class KernelCPrinter(C99CodePrinter):
        def _print_Symbol(self, expr):  # y[i], yp[i], p[k], t, cj, CSE temporaries
            return expr.name

        def _print_Mod(self, expr):  # Python's float %, as the numba kernels compute it
            a, b = (self._print(x) for x in expr.args)
            return f"pymod({a}, {b})"

        def _print_clip(self, expr):
            u, lo, hi = (self._print(a) for a in expr.args)
            return f"fmin(fmax({u}, {lo}), {hi})"

        def _print_Heaviside(self, expr):
            return f"(({self._print(expr.args[0])}) > 0 ? 1.0 : 0.0)"

    return KernelCPrinter()


def _c_function(name, args, exprs, target, printer):
    import sympy as sp

    lines = [f"void {name}({args}) {{"]
    repl, reduced = sp.cse(exprs, symbols=sp.numbered_symbols("_c"), order="none")
    for sym, val in repl:
        lines.append(f"    const double {sym} = {printer.doprint(val)};")
    for k, val in enumerate(reduced):
        lines.append(f"    {target}[{k}] = {printer.doprint(val)};")
    lines.append("}")
    return lines


def c_source(model, compiled) -> str:
    """C kernels of ``model``'s reduced DAE, in ``compiled``'s unknown and Jacobian order."""
    import sympy as sp

    from bondsim_ros.bondgraph.equations import build_dae
    from bondsim_ros.bondgraph.reduce import T, reduce_dae

    red = reduce_dae(build_dae(model))
    # the C code must index y, F and the CSC values exactly as the numba kernels do
    if list(red.var_names) != list(compiled.var_names):
        raise RuntimeError(f"{model.name}: reduced unknowns differ from the compiled model's")
    cols = np.repeat(np.arange(compiled.n), np.diff(compiled.indptr))
    if not (np.array_equal(np.asarray(red.jac_rows), compiled.indices)
            and np.array_equal(np.asarray(red.jac_cols), cols)):
        raise RuntimeError(f"{model.name}: Jacobian pattern differs from the compiled model's")
    mapping = {T: sp.Symbol("t")}
    for i, v in enumerate(red.variables):
        mapping[v] = sp.Symbol(f"y[{i}]")
        if v in red.derivative:
            mapping[red.derivative[v]] = sp.Symbol(f"yp[{i}]")
    for k, s in enumerate(red.param_symbols):
        mapping[s] = sp.Symbol(f"p[{k}]")

    def prep(e):
        return sp.sympify(e).xreplace(mapping)

    cj = sp.Symbol("cj")
    res = [prep(e) for e in red.equations]
    jac = [prep(dy) + cj * prep(dyp) if dyp != 0 else prep(dy) for dy, dyp in zip(red.jac_dy, red.jac_dyp)]
    printer = _c_printer()
    lines = [f"/* Generated by benchmarks/c_ida.py for model {red.name!r}, key {compiled.key}. */",
             "#include <math.h>",
             "static inline double pymod(double a, double b) {",
             "    double m = fmod(a, b);",
             "    if (m != 0.0 && ((b < 0) != (m < 0))) m += b;",
             "    return m;",
             "}"]
    lines += _c_function("model_residual", "double t, const double *y, const double *yp, const double *p, double *out",
                         res, "out", printer)
    lines += _c_function("model_jacobian",
                         "double t, const double *y, const double *yp, const double *p, double cj, double *vals",
                         jac, "vals", printer)
    return "\n".join(lines) + "\n"


def _cache(key: str) -> Path:
    root = os.environ.get("BONDSIM_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "bondsim_ros")
    path = Path(root) / "c_ida" / key
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
            log(f"  C-IDA ({prefix or 'Debian'}): printing {compiled.name} as C and compiling "
                f"(gcc {' '.join(CFLAGS[:2])})")
            if not (folder / "model.c").exists():
                (folder / "model.c").write_text(c_source(model, compiled))
            (folder / "driver.c").write_text(DRIVER)
            tmp = folder / f"libmodel_ida_{tag}.so.tmp"
            # sources before the libraries: the static ones are searched only for what is still undefined
            cmd = ["gcc", *CFLAGS, "-o", str(tmp), str(folder / "model.c"), str(folder / "driver.c"), *link]
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
