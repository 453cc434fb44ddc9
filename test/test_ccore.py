"""The BDF core in C (solver/bdf_core.c) with C model kernels: closed-form answers, events, no numba
on the path, and a clear error when the core cannot be built."""
import ctypes
import json
import math
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from bondsim_ros.solver import BDFSolver, DAEProblem, SolverOptions, native

ROOT = Path(__file__).resolve().parents[1]

# y0' = -k y0 and the algebraic 0 = y1 - y0^2 (index 1): y0 = e^{-kt}, y1 = e^{-2kt}.
# The Jacobian of G = dF/dy + cj dF/dy' in CSC order: column 0 rows (0, 1), column 1 row 1.
DECAY_C = """
void res(double t, const double *y, const double *yp, const double *p, double *out) {
    out[0] = yp[0] + p[0] * y[0];
    out[1] = y[1] - y[0] * y[0];
}
void jac(double t, const double *y, const double *yp, const double *p, double cj, double *vals) {
    vals[0] = p[0] + cj;
    vals[1] = -2.0 * y[0];
    vals[2] = 1.0;
}
/* a velocity that flips sign at t = 1 through a mode in p[1]: y' = 1, then -1 */
void res_switch(double t, const double *y, const double *yp, const double *p, double *out) {
    out[0] = yp[0] - (p[1] == 0.0 ? 1.0 : -1.0);
}
void jac_switch(double t, const double *y, const double *yp, const double *p, double cj, double *vals) {
    vals[0] = cj;
}
void roots(double t, const double *y, const double *yp, const double *p, double *g) { g[0] = t - 1.0; }
void modes(double t, const double *y, const double *yp, const double *p, double *m) { m[0] = t >= 1.0 ? 1.0 : 0.0; }
"""


def c_kernels(folder):
    lib = native.load_library(native.build_library(DECAY_C, "test_decay", folder))
    return {name: native.CKernel(lib, name, "jac" if name.startswith("jac") else "res")
            for name in ("res", "jac", "res_switch", "jac_switch", "roots", "modes")}


def decay_problem(k, kern):
    return DAEProblem(kern["res"], kern["jac"], indptr=np.array([0, 2, 3]), indices=np.array([0, 1, 1]),
                      differential=np.array([True, False]), params=np.array([k]))


@pytest.mark.parametrize("linear_solver", ["dense", "sparse"])
def test_c_kernels_solve_an_index1_dae_to_its_closed_form(tmp_path, linear_solver):
    k = 1.5
    kern = c_kernels(tmp_path)
    t = np.linspace(0.0, 4.0, 81)
    errors = []
    for rtol in (1e-6, 1e-9):
        s = BDFSolver(decay_problem(k, kern),
                      options=SolverOptions(rtol=rtol, atol=rtol * 1e-2, linear_solver=linear_solver))
        s.init(0.0, [1.0, 0.0])  # y1 made consistent by init: 1
        Y, YP = s.advance(t)
        errors.append(max(np.max(np.abs(Y[:, 0] - np.exp(-k * t))), np.max(np.abs(Y[:, 1] - np.exp(-2 * k * t))),
                          np.max(np.abs(YP[:, 0] + k * np.exp(-k * t)))))
        assert s.stats["steps"] > 10
    assert errors[0] < 1e-4 and errors[1] < 1e-7
    assert errors[1] < errors[0] / 20  # the error falls with the tolerance (60x measured for 1000x)


def test_c_switching_functions_locate_the_event_and_restart_there(tmp_path):
    kern = c_kernels(tmp_path)
    prob = DAEProblem(kern["res_switch"], kern["jac_switch"], indptr=np.array([0, 1]), indices=np.array([0]),
                      differential=np.array([True]), params=np.array([0.0]), roots=kern["roots"],
                      modes=kern["modes"], n_roots=1, n_modes=1)
    s = BDFSolver(prob, options=SolverOptions(rtol=1e-8, atol=1e-10, hmax=0.3))
    s.init(0.0, [0.0])
    t = np.array([0.5, 1.0, 1.5, 2.0])
    Y, YP = s.advance(t)
    # y rises to 1 at t = 1 and falls back: the kink is located, not stepped over
    assert Y[:, 0] == pytest.approx([0.5, 1.0, 0.5, 0.0], abs=1e-9)
    assert YP[[0, 2, 3], 0] == pytest.approx([1.0, -1.0, -1.0], abs=1e-9)
    assert s.stats["events"] == 1 and s.stats["event_restarts"] == 1
    assert s.pm[1] == 1.0  # the mode after the switch


# Two linear index-1 DAEs for the dense LU that keeps a pivot order (bdf.KEEP_PIVOT).
# FILL: z (unknown 0) and y_1..y_4 with y_i' + k_i y_i + (z - sin t) = 0 and
# c z + sum_i (y_i' + k_i y_i) - c sin t = 0: z = sin t, y_i = e^{-k_i t}. G's column of z
# is (1, 1, 1, 1, c): eliminating it fills every row, and the pivots' relative sizes do not
# change with cj, so a kept order is the order partial pivoting picks every time.
# THROUGH_ZERO: s(t) x + z = s cos t + sin t, x + z = cos t + sin t, y' = x: x = cos t,
# z = sin t, y = sin t, with s(t) = 10 max(p0, 1 - t): x's pivot is s's row while s > 1, and
# that row's entry falls to 10 p0 from t = 1 on (exactly 0, or 1e-299: a pivot 1e299 times
# smaller than the entry below it, whose factors lose every digit).
KEPT_ORDER_C = """
#include <math.h>
static const double K[4] = {0.5, 1.0, 2.0, 3.0};
void res_fill(double t, const double *y, const double *yp, const double *p, double *out) {
    double sum = 0.0;
    for (int i = 0; i < 4; i++) {
        double a = yp[1 + i] + K[i] * y[1 + i];
        out[i] = a + y[0] - sin(t);
        sum += a;
    }
    out[4] = p[0] * y[0] + sum - p[0] * sin(t);
}
void jac_fill(double t, const double *y, const double *yp, const double *p, double cj, double *vals) {
    for (int i = 0; i < 4; i++) vals[i] = 1.0; /* column z: rows 0..3, then 4 */
    vals[4] = p[0];
    for (int i = 0; i < 4; i++) { vals[5 + 2 * i] = K[i] + cj; vals[6 + 2 * i] = K[i] + cj; } /* rows i, 4 */
}
static double s_of(double t, double floor) { return 10.0 * fmax(floor, 1.0 - t); }
void res_zero(double t, const double *y, const double *yp, const double *p, double *out) {
    double s = s_of(t, p[0]);
    out[0] = s * y[0] + y[1] - (s * cos(t) + sin(t));
    out[1] = y[0] + y[1] - (cos(t) + sin(t));
    out[2] = yp[2] - y[0];
}
void jac_zero(double t, const double *y, const double *yp, const double *p, double cj, double *vals) {
    vals[0] = s_of(t, p[0]); vals[1] = 1.0; vals[2] = -1.0; /* column x: rows 0, 1, 2 */
    vals[3] = 1.0; vals[4] = 1.0;                     /* column z: rows 0, 1 */
    vals[5] = cj;                                     /* column y: row 2 */
}
"""


def kept_order_problems(folder, floor=0.0):
    lib = native.load_library(native.build_library(KEPT_ORDER_C, "test_kept_order", folder))
    kern = {name: native.CKernel(lib, name, "jac" if name.startswith("jac") else "res")
            for name in ("res_fill", "jac_fill", "res_zero", "jac_zero")}
    fill = DAEProblem(kern["res_fill"], kern["jac_fill"], indptr=np.array([0, 5, 7, 9, 11, 13]),
                      indices=np.array([0, 1, 2, 3, 4, 0, 4, 1, 4, 2, 4, 3, 4]),
                      differential=np.array([False, True, True, True, True]), params=np.array([0.5]))
    zero = DAEProblem(kern["res_zero"], kern["jac_zero"], indptr=np.array([0, 3, 5, 6]),
                      indices=np.array([0, 1, 2, 0, 1, 2]), differential=np.array([False, False, True]),
                      params=np.array([floor]))
    return fill, zero


def run_dense(problem, y0, t, keep_pivot, monkeypatch):
    """Steps that end on every output time (tstop): the step size, and with it G, changes at each."""
    from bondsim_ros.solver import bdf

    monkeypatch.setattr(bdf, "KEEP_PIVOT", keep_pivot)
    s = BDFSolver(problem, options=SolverOptions(rtol=1e-8, atol=1e-10, linear_solver="dense"))
    s.init(0.0, y0)
    rows = [s.advance([ti], tstop=ti) for ti in t]
    return np.vstack([r[0] for r in rows]), np.vstack([r[1] for r in rows]), s.stats


def test_the_dense_lu_in_a_kept_order_gives_partial_pivotings_factors_bit_for_bit(tmp_path, monkeypatch):
    fill, _ = kept_order_problems(tmp_path)
    t = np.linspace(0.05, 5.0, 100)
    y0 = [0.0, 1.0, 1.0, 1.0, 1.0]
    kept = run_dense(fill, y0, t, 0.01, monkeypatch)
    fresh = run_dense(fill, y0, t, 0.0, monkeypatch)  # every matrix pivoted afresh
    assert kept[2]["lu_factorizations"] > 10
    exact = np.column_stack([np.sin(t)] + [np.exp(-k * t) for k in (0.5, 1.0, 2.0, 3.0)])
    assert np.max(np.abs(kept[0] - exact)) < 1e-6
    # the same factors give the same steps, Newton iterates and outputs, to the last bit
    assert np.array_equal(kept[0], fresh[0]) and np.array_equal(kept[1], fresh[1])
    assert kept[2] == fresh[2]


@pytest.mark.parametrize("floor", [0.0, 1e-300])
def test_a_kept_pivot_that_falls_to_zero_is_pivoted_afresh(tmp_path, monkeypatch, floor):
    _, zero = kept_order_problems(tmp_path, floor)
    t = np.linspace(0.05, 3.0, 300)
    Y, YP, stats = run_dense(zero, [1.0, 0.0, 0.0], t, 0.01, monkeypatch)
    assert np.max(np.abs(Y - np.column_stack([np.cos(t), np.sin(t), np.sin(t)]))) < 1e-8  # 2.5e-10 measured
    # the order is left at the zero or tiny pivot, before a Newton iteration fails on its factors:
    # as many failures (of matrices kept from an earlier step) as a run that pivots every matrix
    # afresh (without the zero test, or without the threshold for the tiny one, one more each).
    # Between s = 1 and s = 0.01 the kept order is not partial pivoting's: round-off apart (2e-11)
    fresh = run_dense(zero, [1.0, 0.0, 0.0], t, 0.0, monkeypatch)
    assert stats["newton_failures"] == fresh[2]["newton_failures"]
    assert stats["lu_factorizations"] <= fresh[2]["lu_factorizations"] * 1.1
    assert np.max(np.abs(Y - fresh[0])) < 1e-9


def test_a_run_with_c_kernels_never_imports_numba(tmp_path):
    script = textwrap.dedent(f"""
        import json, sys
        import numpy as np
        sys.path.insert(0, {str(ROOT)!r}); sys.path.insert(0, {str(Path(__file__).parent)!r})
        import bondsim_ros.solver
        from bondsim_ros.solver.kernels import output_rows
        from test_ccore import c_kernels, decay_problem
        from bondsim_ros.solver import BDFSolver, SolverOptions
        from pathlib import Path
        kern = c_kernels(Path({str(tmp_path)!r}))
        s = BDFSolver(decay_problem(2.0, kern), SolverOptions(rtol=1e-8, atol=1e-10))
        s.init(0.0, [1.0, 1.0])
        Y, YP = s.advance([1.0])
        rows = output_rows(kern["res"], 2, [1.0], Y, YP, s.pm)
        print(json.dumps({{"y": Y[0].tolist(), "rows": rows[0].tolist(),
                           "numba": sorted(m for m in sys.modules if m.split(".")[0] == "numba")}}))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["numba"] == []
    assert got["y"][0] == pytest.approx(math.exp(-2.0), rel=1e-6)
    assert got["y"][1] == pytest.approx(math.exp(-4.0), rel=1e-6)
    # the output rows through the C loop: [t, residual at the solution] = [1, ~0, ~0]
    assert got["rows"][0] == 1.0 and max(abs(v) for v in got["rows"][1:]) < 1e-6


def test_cli_says_when_the_solver_core_cannot_be_compiled(tmp_path, monkeypatch, capsys):
    from bondsim_ros import cli
    from bondsim_ros.solver import _ccore

    monkeypatch.setattr(_ccore, "_libs", {})  # as in a fresh process
    monkeypatch.setattr(native, "cache_root", lambda: tmp_path)
    # a core the compiler refuses (the model's own kernels compile: their failure is a
    # ModelError, test_c_kernels)
    monkeypatch.setattr(_ccore, "source", lambda: "this is not C;\n")
    out_csv = tmp_path / "out.csv"
    code = cli.main(["simulate", "mass_spring_damper", "--t-end", "1", "--dt-out", "0.1", "--csv", str(out_csv)])
    err = capsys.readouterr().err
    assert code == 1
    assert "bondsim-ros simulate: error: " in err and "could not compile the BDF core" in err
    assert "Traceback" not in err
    assert not out_csv.exists()
    # nothing half-built left in the cache
    assert [p.name for p in (tmp_path / "solver").iterdir()] == []


def _no_march_native_compiler(tmp_path, monkeypatch):
    """CC: gcc refusing -march=native, as a compiler that does not know it; returns its log of
    compiles (one line each)."""
    log = tmp_path / "cc.log"
    cc = tmp_path / "cc.sh"
    cc.write_text(f'#!/bin/sh\ncase "$*" in *--version*) exec gcc "$@";; esac\necho "$*" >> {log}\n'
                  'case "$*" in *march=native*) echo "error: unknown flag" >&2; exit 1;; esac\n'
                  'exec gcc "$@"\n')
    cc.chmod(0o755)
    monkeypatch.setenv("CC", str(cc))
    return log


def _compiles(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_a_compiler_without_march_native_still_builds_the_core(tmp_path, monkeypatch):
    """The core is compiled for the CPU (-march=native); a compiler that refuses that flag gets
    the portable build instead of an error, and solves as well. The refusal is remembered
    (``.failed`` beside the library it would have made): a later process loads the portable
    build without running the compiler."""
    from bondsim_ros.solver import _ccore

    log = _no_march_native_compiler(tmp_path, monkeypatch)
    monkeypatch.setattr(_ccore, "_libs", {})  # as in a fresh process
    monkeypatch.setattr(native, "cache_root", lambda: tmp_path / "cache")
    monkeypatch.setattr(_ccore, "PREBUILT", tmp_path / "installed")  # an install that built none
    lib = _ccore.library()
    assert lib.bdf_struct_size() == ctypes.sizeof(_ccore.Solver)
    built = [p.name for p in (tmp_path / "cache" / "solver").glob("*.so")]
    assert len(built) == 1 and built[0].startswith("bdf_core_"), built
    assert _compiles(log) > 1 and _ccore._find().name == built[0]
    before = _compiles(log)
    monkeypatch.setattr(_ccore, "_libs", {})  # a later process
    assert _ccore.library()._name.endswith(built[0]) and _compiles(log) == before
    # a solve on it (monkeypatch puts the process's own core back afterwards)
    s = BDFSolver(decay_problem(1.5, c_kernels(tmp_path)), options=SolverOptions(rtol=1e-8, atol=1e-10))
    s.init(0.0, [1.0, 0.0])
    Y, _ = s.advance(np.array([1.0]))
    assert s._core._lib is lib
    assert Y[0, 0] == pytest.approx(math.exp(-1.5), rel=1e-6)


def test_an_install_whose_compiler_refuses_march_native_is_used_as_installed(tmp_path, monkeypatch):
    """The install's compiler refuses -march=native: it installs the portable core and marks the
    refusal beside it, and a run then loads that core without running the compiler at all."""
    from bondsim_ros.solver import _ccore

    log = _no_march_native_compiler(tmp_path, monkeypatch)
    installed = tmp_path / "installed"
    monkeypatch.setattr(_ccore, "PREBUILT", installed)
    monkeypatch.setattr(native, "cache_root", lambda: tmp_path / "cache")
    path = _ccore.install_build(installed)
    assert any(p.suffix == ".failed" for p in installed.iterdir())
    monkeypatch.setattr(_ccore, "_libs", {})  # a user's process
    before = _compiles(log)
    monkeypatch.setattr(_ccore, "_pending", None)
    _ccore.prebuild()
    assert _ccore._pending is None  # nothing to build: no thread started
    assert _ccore.library()._name == str(path) and _compiles(log) == before
    assert not (tmp_path / "cache" / "solver").exists()


def test_a_damaged_installed_core_gives_way_to_one_compiled_into_the_cache(tmp_path, monkeypatch):
    """A file in the install's folder under the right name that does not load (truncated) is
    passed over: the core is compiled into the cache and loaded from there."""
    from bondsim_ros.solver import _ccore

    installed = tmp_path / "installed"
    monkeypatch.setattr(_ccore, "PREBUILT", installed)
    monkeypatch.setattr(native, "cache_root", lambda: tmp_path / "cache")
    monkeypatch.setattr(_ccore, "_libs", {})
    path = _ccore.install_build(installed)
    path.write_bytes(path.read_bytes()[:100])
    lib = _ccore.library()
    assert Path(lib._name).parent == tmp_path / "cache" / "solver" and Path(lib._name).name == path.name
    assert lib.bdf_struct_size() == ctypes.sizeof(_ccore.Solver)


def test_core_source_ships_with_the_package():
    from bondsim_ros.solver import _ccore

    assert "bdf_advance" in _ccore.source()
    setup = (ROOT / "setup.py").read_text()
    assert '"solver/*.c"' in setup  # package_data: pip and colcon install it next to _ccore.py


def _output_case():
    """An output kernel (two outputs from y, y', p and t) with three points to evaluate it at."""
    def outs(t, y, yp, p, out):
        out[0] = y[0] * p[0] + t
        out[1] = yp[1]

    Y = np.arange(6.0).reshape(3, 2)
    return outs, Y, Y + 10.0, np.array([2.0])


def test_output_rows_of_a_numba_kernel_go_through_the_c_loop():
    """kernels.output_rows: a numba-compiled output kernel (through its C adapter) gives the rows
    a plain Python loop over the same function gives."""
    from bondsim_ros.solver.kernels import output_rows, residual_kernel

    outs, Y, YP, p = _output_case()
    compiled = output_rows(residual_kernel(outs), 2, [0.1, 0.2, 0.3], Y, YP, p)
    plain = output_rows(outs, 2, [0.1, 0.2, 0.3], Y, YP, p)
    assert np.array_equal(compiled, plain)
    assert np.array_equal(plain, [[0.1, 0.1, 11.0], [0.2, 4.2, 13.0], [0.3, 8.3, 15.0]])


def test_output_rows_fill_a_given_table():
    """output_rows(out=...) writes the rows into the caller's array (a result's table after its
    first row) and returns it; an array of another shape is refused, naming the shape."""
    from bondsim_ros.solver.kernels import output_rows, residual_kernel

    outs, Y, YP, p = _output_case()
    table = np.full((4, 3), -1.0)
    for kernel in (outs, residual_kernel(outs)):
        rows = output_rows(kernel, 2, [0.1, 0.2, 0.3], Y, YP, p, out=table[1:])
        assert np.shares_memory(rows, table)
        assert np.array_equal(table[1:], [[0.1, 0.1, 11.0], [0.2, 4.2, 13.0], [0.3, 8.3, 15.0]])
        assert np.array_equal(table[0], [-1.0, -1.0, -1.0])
        table[1:] = 0.0
    with pytest.raises(ValueError, match=r"shape \(3, 3\)"):
        output_rows(outs, 2, [0.1, 0.2, 0.3], Y, YP, p, out=np.zeros((2, 3)))


def test_the_slots_and_codes_are_read_from_the_core_itself():
    """_ccore takes every enum member and integer #define of bdf_core.c from its source (no hand
    copy to drift); the ctypes struct has solver_t's fields in solver_t's order."""
    import re

    from bondsim_ros.solver import _ccore

    assert _ccore.c_constants("enum { A, B = 4, C }; /* enum { X }; */\n#define N (B + 2)\n#define F 0.5\n") \
        == {"A": 0, "B": 4, "C": 5, "N": 6}
    c = _ccore.CONSTANTS
    src = _ccore.source()
    for prefix, count in (("S_", "N_FLOAT_STATE"), ("I_", "N_INT_STATE"), ("ST_", "N_STATS")):
        slots = sorted(v for k, v in c.items() if k.startswith(prefix))
        assert slots == list(range(c[count])), prefix  # every slot named once, none left out
    assert len(_ccore.STAT_NAMES) == c["N_STATS"] and "newton_iters" in _ccore.STAT_NAMES
    assert _ccore.MAX_ORDER == c["MAX_ORDER"] == 5 and _ccore.NROWS == 8
    body = re.search(r"typedef struct \{(.*?)\} solver_t;", re.sub(r"/\*.*?\*/", "", src, flags=re.S), re.S).group(1)
    fields = []
    for decl in body.split(";"):
        decl = re.sub(r"\b(const|double|int64_t|uint8_t|void|res_fn|jac_fn)\b", "", decl)
        fields += [f.strip(" *\n") for f in decl.split(",") if f.strip(" *\n")]
    assert fields == [name for name, _ in _ccore.Solver._fields_]


def package_without_installed_core(tmp_path) -> Path:
    """A folder to put first on PYTHONPATH: bondsim_ros without the solver core that setup.py
    compiled (as installed from a wheel built elsewhere, or where the install had no compiler),
    made as benchmarks/cli_bench.py makes it for its runs without an installed core."""
    from bench_scripts import load

    return load("cli_bench").without_installed_core(ROOT, tmp_path)


def test_a_first_run_without_an_installed_core_builds_it_beside_the_model_and_leaves_it_whole(tmp_path):
    """Where the install compiled no core, `simulate` on an empty cache starts gcc on it before
    it builds the model (the two overlap); a run that then fails on its model still waits for
    that build: the core is in the cache, whole, with no temporary folder beside it, and the
    next run uses it."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\ncomponents:\n  - {type: NoSuchElement, name: x}\n")
    env = dict(__import__("os").environ, PYTHONPATH=str(package_without_installed_core(tmp_path)),
               BONDSIM_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, "-m", "bondsim_ros.cli", "simulate", str(bad), "--t-end", "1",
                           "--dt-out", "0.1"], env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    built = sorted(p.name for p in (tmp_path / "cache" / "solver").iterdir())
    assert len(built) == 1 and built[0].startswith("bdf_core_") and built[0].endswith(".so"), built
    proc = subprocess.run([sys.executable, "-c", "from bondsim_ros.solver import _ccore; "
                           "print(_ccore.library()._name)"], env=env, capture_output=True, text=True, timeout=300,
                          cwd=tmp_path)
    assert proc.stdout.strip().endswith(built[0]), proc.stderr


def _wheel(tmp_path, source_root: Path) -> Path:
    """`pip wheel` of the package at ``source_root`` (no dependencies, no index: the build uses
    this environment's setuptools, as colcon's `setup.py build` does)."""
    out = tmp_path / "wheels"
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                           "--no-index", "-w", str(out), str(source_root)],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (wheel,) = out.glob("bondsim_ros-*.whl")
    return wheel


def _source_copy(tmp_path) -> Path:
    """The checkout's files that a build reads, copied (a build writes beside them)."""
    import shutil

    src = tmp_path / "src"
    ignore = shutil.ignore_patterns("__pycache__", "prebuilt", "*.egg-info")
    for name in ("bondsim_ros", "launch", "urdf", "config", "resource", "scripts"):
        shutil.copytree(ROOT / name, src / name, ignore=ignore)
    for name in ("setup.py", "setup.cfg", "package.xml", "README.md", "LICENSE"):
        if (ROOT / name).exists():
            shutil.copy(ROOT / name, src / name)
    return src


def test_an_install_compiles_the_solver_core_and_a_first_run_uses_it(tmp_path):
    """The wheel pip builds (as `pip install -e` and colcon's `setup.py build` build the same
    modules) carries the solver core compiled for this machine and is tagged for its platform;
    installed by pip, a run on an empty cache loads that core and compiles none."""
    wheel = _wheel(tmp_path, _source_copy(tmp_path))
    assert wheel.name.endswith("-py3-none-linux_x86_64.whl") or not wheel.name.endswith("-any.whl"), wheel.name
    site = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target",
                           str(site), str(wheel)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cores = sorted((site / "bondsim_ros" / "solver" / "prebuilt").glob("bdf_core_*.so"))
    from bondsim_ros.solver import _ccore

    names = {native.library_path(_ccore.source(), "bdf_core", Path(), f, libs).name for f, libs in _ccore._configs()}
    assert len(cores) == 1 and cores[0].name in names, cores  # one of the builds this machine tries
    env = dict(__import__("os").environ, PYTHONPATH=str(site), BONDSIM_CACHE_DIR=str(tmp_path / "cache"))
    code = ("from bondsim_ros.solver import _ccore; import sys; lib = _ccore.library(); "
            "print(lib._name); print(lib.bdf_struct_size())")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    name, size = proc.stdout.split()
    assert name == str(cores[0]) and int(size) == ctypes.sizeof(_ccore.Solver)
    assert not (tmp_path / "cache" / "solver").exists()


# colcon on a ROS install runs setup.py with the system Python and its setuptools (Debian 12:
# 66, Ubuntu 24.04 under Jazzy and Kilted: 68); tools/setup.sh installs python3-setuptools
SYSTEM_PYTHON = "/usr/bin/python3"


def _system_setuptools():
    if not Path(SYSTEM_PYTHON).exists():
        return None
    out = subprocess.run([SYSTEM_PYTHON, "-c", "import setuptools; print(setuptools.__version__)"],
                         capture_output=True, text=True)
    return tuple(int(x) for x in out.stdout.split(".")[:2]) if out.returncode == 0 else None


@pytest.mark.parametrize("symlink_install", [False, True], ids=["colcon build", "colcon build --symlink-install"])
def test_colcons_setup_py_commands_compile_the_solver_core(tmp_path, symlink_install):
    """The setup.py commands colcon's Python build task runs (colcon-core, task/python/build.py),
    with the system Python colcon runs them with: `egg_info build install` for `colcon build`,
    `develop --editable` for --symlink-install, each leaving the core where that install imports
    the package from."""
    version = _system_setuptools()
    if version is None or version >= (80, 0):  # 80 made develop pip's editable install (no --editable)
        pytest.skip(f"{SYSTEM_PYTHON} has no setuptools < 80 (tools/setup.sh installs python3-setuptools)")
    src = _source_copy(tmp_path)
    build, prefix = tmp_path / "build", tmp_path / "install"
    build.mkdir()
    if symlink_install:
        cmd = ["develop", "--prefix", str(prefix), "--editable", "--build-directory", str(build / "build"),
               "--no-deps"]
    else:
        cmd = ["egg_info", "--egg-base", str(build), "build", "--build-base", str(build / "build"),
               "install", "--prefix", str(prefix), "--record", str(build / "install.log"),
               "--single-version-externally-managed"]
    # colcon's Python library folder and install layout (task/python/build.py: _get_python_lib,
    # _append_install_layout: Debian's and Ubuntu's dist-packages take --install-layout deb)
    where = ("import setuptools; from distutils.sysconfig import get_python_lib; "
             f"print(get_python_lib(prefix={str(prefix)!r}))")
    pylib = Path(subprocess.run([SYSTEM_PYTHON, "-c", where], capture_output=True, text=True,
                                check=True).stdout.strip())
    if "dist-packages" in pylib.parts:
        cmd += ["--install-layout", "deb"]
    pylib.mkdir(parents=True)  # colcon makes it and puts it on PYTHONPATH
    env = dict(__import__("os").environ, PYTHONPATH=str(pylib))
    proc = subprocess.run([SYSTEM_PYTHON, "setup.py", *cmd], cwd=src, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    if symlink_install:  # develop: the package is imported from the sources
        cores = list((src / "bondsim_ros" / "solver" / "prebuilt").glob("bdf_core_*.so"))
    else:  # install: where the install's record says it put them, beside the modules
        record = (build / "install.log").read_text().split()
        cores = [Path(f) for f in record if "/bondsim_ros/solver/prebuilt/bdf_core_" in f]
        assert all((c.parents[1] / "_ccore.py").exists() for c in cores)
    from bondsim_ros.solver import _ccore

    names = {native.library_path(_ccore.source(), "bdf_core", Path(), f, libs).name for f, libs in _ccore._configs()}
    assert len(cores) == 1 and cores[0].name in names, (cores, proc.stderr[-2000:])
    assert not list(src.rglob("__pycache__")), "the build left bytecode in the sources"
    # the command where `ros2 run bondsim_ros bondsim-ros` looks (setup.cfg); installed, it is the
    # script itself and runs (develop wraps it in a script of pkg_resources', which wants every
    # dependency of the package installed for this Python, as the node scripts beside it do)
    command = prefix / "lib" / "bondsim_ros" / "bondsim-ros"
    assert command.exists()
    if not symlink_install:
        assert command.read_text() == (ROOT / "scripts" / "bondsim-ros").read_text()
        # (a command of one start, -S; its help: this Python may lack the package's dependencies)
        out = subprocess.run([str(command), "cache", "--help"], env=dict(env, PYTHONPATH=str(cores[0].parents[3])),
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0 and "usage: bondsim-ros cache" in out.stdout, out.stderr[-2000:]


def test_an_install_without_a_working_compiler_goes_on_and_says_so(tmp_path):
    """setup.py's build with a compiler that does not run: the package is built all the same,
    without a compiled core (the first run compiles it, or says the compiler is missing), and
    the build's output says why."""
    src = _source_copy(tmp_path)
    env = dict(__import__("os").environ, CC=str(tmp_path / "no" / "cc"))
    proc = subprocess.run([sys.executable, "setup.py", "build", "--build-base", str(tmp_path / "build")], cwd=src,
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "the solver core was not compiled now" in proc.stderr and "it is compiled on first use" in proc.stderr
    (lib,) = (tmp_path / "build").glob("lib*/bondsim_ros")  # lib.<platform>: a package with a compiled library
    assert (lib / "solver" / "_ccore.py").exists() and (lib / "solver" / "bdf_core.c").exists()
    assert not list(lib.glob("solver/prebuilt/*.so"))


def test_an_installed_core_of_another_source_is_not_loaded(tmp_path, monkeypatch):
    """A library in the install's folder is used only under the name this process computes
    (source, flags, compiler, CPU): one built from an edited core is passed over and the core
    is compiled into the cache instead."""
    from bondsim_ros.solver import _ccore

    installed = tmp_path / "installed"
    monkeypatch.setattr(_ccore, "PREBUILT", installed)
    monkeypatch.setattr(native, "cache_root", lambda: tmp_path / "cache")
    monkeypatch.setattr(_ccore, "_libs", {})  # as in a fresh process
    real = _ccore.source()
    monkeypatch.setattr(_ccore, "source", lambda: real + "\n/* an edited core */\n")
    old = _ccore.install_build(installed)
    monkeypatch.setattr(_ccore, "source", lambda: real)
    assert not _ccore._built()
    path = _ccore._build()
    assert path.parent == tmp_path / "cache" / "solver" and path.name != old.name
    # and installing the current source replaces the stale library rather than adding to it
    assert _ccore.install_build(installed).name == path.name
    assert sorted(p.name for p in installed.iterdir()) == [path.name]
    assert _ccore._find() == installed / path.name  # the install's is found first


def test_the_compiler_version_is_asked_once_per_compiler_binary(tmp_path, monkeypatch):
    """`cc --version` names the core's library; its answer is kept in <cache>/host/ for the
    binary as it is, so a later process starts no compiler to find the core. A changed binary
    (another size or time) is asked again."""
    log = tmp_path / "versions.log"
    cc = tmp_path / "cc.sh"
    cc.write_text(f'#!/bin/sh\necho asked >> {log}\necho "cc 1.0"\n')
    cc.chmod(0o755)
    monkeypatch.setattr(native, "cache_root", lambda: tmp_path / "cache")
    monkeypatch.setattr(native, "_versions", {})
    assert native._compiler_id(str(cc)) == "cc 1.0"
    monkeypatch.setattr(native, "_versions", {})  # as in a new process
    assert native._compiler_id(str(cc)) == "cc 1.0"
    assert log.read_text().split() == ["asked"]
    assert [p.name.startswith("cc_") for p in (tmp_path / "cache" / "host").iterdir()] == [True]
    cc.write_text(f'#!/bin/sh\necho asked >> {log}\necho "cc 2.0 (upgraded)"\n')
    monkeypatch.setattr(native, "_versions", {})
    assert native._compiler_id(str(cc)) == "cc 2.0 (upgraded)"
    assert log.read_text().split() == ["asked", "asked"]


def test_a_cache_shared_by_two_architectures_keeps_a_model_library_for_each(monkeypatch, tmp_path):
    """gcc's version line is the same on x86_64 and aarch64: a model's cache entry written on
    one machine and read on the other (a home folder on NFS) gets a second library, named for
    that architecture and compiled from the cached C, instead of the first machine's; the entry
    stays the first machine's, whose runs load its own library without compiling."""
    import json
    import os

    from bondsim_ros.bondgraph import compile_model
    from bondsim_ros.models import examples

    monkeypatch.setattr(native, "cache_root", lambda: tmp_path)
    first = compile_model(examples.mass_spring_damper())
    folder = tmp_path / "models"
    meta_path = Path(first.source_path).with_suffix(".json")
    meta = json.loads(meta_path.read_text())
    assert meta["machine"] == os.uname().machine
    libraries = lambda: sorted(p.name for p in folder.glob(f"{Path(first.source_path).stem}_*.so"))  # noqa: E731
    assert libraries() == [meta["library"]]
    real = os.uname()
    other = os.uname_result((real.sysname, real.nodename, real.release, real.version,
                             "aarch64" if real.machine != "aarch64" else "x86_64"))
    monkeypatch.setattr(os, "uname", lambda: other)
    second = compile_model(examples.mass_spring_damper())
    assert second.from_cache and len(libraries()) == 2
    assert json.loads(meta_path.read_text()) == meta  # still the first machine's entry
    monkeypatch.setattr(os, "uname", lambda: real)
    monkeypatch.setattr(native, "_run_all", lambda *a, **k: pytest.fail("the first machine compiled again"))
    third = compile_model(examples.mass_spring_damper())
    assert third.from_cache and len(libraries()) == 2


def test_the_cores_build_needs_no_numpy(tmp_path):
    """The command line starts the core's first build before it imports numpy (0.05-0.1 s
    earlier on the first run's critical path): finding or building the core imports none."""
    code = ("import sys; from bondsim_ros.solver import _ccore; _ccore._built(); "
            "print('numpy' in sys.modules)")
    env = dict(__import__("os").environ, PYTHONPATH=str(ROOT), BONDSIM_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False"]
