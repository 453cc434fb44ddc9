"""The generated C kernels (bondgraph/cprint.py) against the reduced DAE's own sympy
expressions, evaluated independently (sympy.lambdify with numpy, which prints Mod as numpy.mod,
Min/Max as numpy.amin/amax, Piecewise as numpy.select: none of the C printer's code).

Every kernel of the compiled model is evaluated at random points (t, y, y', p, cj) spread over
several orders of magnitude and both signs, so that floor/Mod see negative arguments, Piecewise
laws take every branch and saturations both sides; the moded kernels also with the modes set
to values on both sides of every switch.
"""
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

from bondsim_ros.bondgraph import codegen, cprint
from bondsim_ros.bondgraph.equations import T, build_dae
from bondsim_ros.bondgraph.events import extract_events
from bondsim_ros.bondgraph.reduce import _diff, reduce_dae
from bondsim_ros.bondgraph.yamlmodel import load_model, loads_model
from bondsim_ros.models import resolve_model

MODELS = Path(__file__).parent / "data" / "models"

# Every function a law may call (laws.FUNCTIONS), in outputs (printed as written: no modes)
# and in the dynamics through a damper law (moded), fed by a state that takes both signs.
ZOO_LAWS = {
    "mod_pos": "mod(u, 0.7)", "mod_neg": "Mod(u, -0.7)", "floor": "floor(u/0.3)", "ceil": "ceiling(u/0.3)",
    "min3": "min(u, 0.5*u - 0.2, 0.1)", "max2": "Max(u, 0.3)", "clip": "clip(u, -0.5, 0.4)",
    "sign": "sign(u)", "abs": "abs(u) + Abs(u - 1)", "heaviside": "Heaviside(u - 0.1)",
    "pw": "Piecewise((u, u < -1), (2*u, u <= 1), (3*u, True))",
    "pw_nested": "Piecewise((Piecewise((1, u < -2), (2, True)), u < 0), (mod(u, 0.25), True))",
    "powers": "u**3 + u**(-2) + u**2 - 1/u + sqrt(abs(u)) + abs(u)**1.5 + abs(u)**(1/3)",
    "trig": "sin(u) + cos(2*u) + tan(u/5) + asin(clip(u, -1, 1)) + acos(clip(u/3, -1, 1)) + atan(u)",
    "hyp": "atan2(u, 0.5) + atan2(-0.5, u) + sinh(u/4) + cosh(u/4) + tanh(u)",
    "explog": "exp(u/3) + log(abs(u) + 0.01) + E**(u/5) + pi*u",
    "logic": "Piecewise((1.0, u > -1 and u < 1), (2.0, u < -2 or u == 5), (3.0, not u < 4), (4.0, u != 2.5),"
             " (5.0, True))",
}
ZOO = "\n".join([
    "model: law_zoo",
    "parameters: {m: 1.5, b: 0.8, w: 2.0}",
    "components:",
    "  src: {type: Sine, amplitude: 3.0, omega: w}",
    "  F: {type: Se, effort: u, inputs: [u]}",
    "  v: {type: EffortJunction, output: true}",
    "  mass: {type: I, inertia: m}",
    "  damper: {type: R, effort: \"b*f + 0.2*clip(f, -0.1, 0.1) + 0.05*Max(f, -f/2)"
    " + Piecewise((0.1*f, f < 0), (0.3*f, True)) + 0.01*floor(f) + 0.02*sign(f)*abs(f)\"}",
    "  x: {type: Integrator, x0: 0.0}",
    "  split: {type: Node, n: %d}" % (len(ZOO_LAWS) + 1),
    *[f"  f_{k}: {{type: Function, expr: \"{law}\", inputs: [u]}}" for k, law in ZOO_LAWS.items()],
    f"  rec: {{type: Recorder, columns: [pos, {', '.join(ZOO_LAWS)}]}}",
    "bonds: [[F, v], [v, mass], [v, damper]]",
    "signals:",
    "  - [src.out, F.u]",
    "  - [v.out, x.in_]",
    "  - [x.out, split.in_]",
    "  - [split.out1, rec.pos]",
    *[f"  - [split.out{i + 2}, f_{k}.u]\n  - [f_{k}.out, rec.{k}]" for i, k in enumerate(ZOO_LAWS)],
])

SWITCHING_FORCE = (Path(__file__).parent / "data" / "models" / "switching_force.yaml").read_text()

BUILDERS = {
    "law_zoo": lambda: loads_model(ZOO, "law_zoo.yaml"),
    "switching_force": lambda: loads_model(SWITCHING_FORCE, "switching_force.yaml"),
    "pid_step_saturation": lambda: load_model(MODELS / "pid_step_saturation.yaml"),
    "servo": lambda: load_model(MODELS / "servo.yaml"),
    "dc_motor": lambda: resolve_model("dc_motor")[0],
    "mass_spring_damper": lambda: resolve_model("mass_spring_damper")[0],
    "slider_crank_lagrange": lambda: resolve_model("slider_crank_lagrange")[0],
    "robotino": lambda: resolve_model("robotino")[0],
}

RTOL = 1e-12


def _clip(u, lo, hi):
    return np.minimum(np.maximum(u, lo), hi)


class Oracle:
    """The reduced DAE of a model as sympy built it, evaluated by lambdify."""

    def __init__(self, model):
        red = reduce_dae(build_dae(model))
        self.red = red
        self.moded, self.ev = extract_events(red.equations, red.eq_names)
        self.cj = sp.Symbol("cj")
        self.args = ([T] + list(red.variables) + [red.derivative.get(v, sp.Dummy()) for v in red.variables]
                     + list(red.param_symbols) + list(self.ev.modes) + [self.cj])

    def function(self, exprs):
        f = sp.lambdify(self.args, [sp.sympify(e) for e in exprs],
                        modules=[{"clip": _clip, "Heaviside": lambda x, h0=0.5: np.heaviside(x, h0)}, "numpy"])
        return lambda *a: np.array([float(v) for v in np.broadcast_arrays(*f(*a))], dtype=float) if exprs \
            else np.zeros(0)

    def jacobian(self, equations):
        red = self.red
        out = []
        for i, j in zip(red.jac_rows, red.jac_cols):
            v = red.variables[j]
            d = _diff(equations[i], v)
            dv = red.derivative.get(v)
            out.append(d + self.cj * _diff(equations[i], dv) if dv is not None else d)
        return out


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("c_kernels")


def _points(rng, compiled, count):
    """(t, y, yp, p, cj): magnitudes from 0.05 to 30, both signs, parameters within 20 %."""
    n = compiled.n
    for _ in range(count):
        scale = 10.0 ** rng.uniform(-1.3, 1.5)
        yield (float(rng.uniform(-5.0, 50.0)), rng.uniform(-1.0, 1.0, n) * scale, rng.uniform(-1.0, 1.0, n) * scale,
               compiled.params * rng.uniform(0.8, 1.2, len(compiled.params)), float(10.0 ** rng.uniform(-1, 4)))


def _close(got, want, what):
    """Within RTOL of the entry, or of the kernel's largest entry (sums that cancel)."""
    assert got.shape == want.shape, what
    finite = np.isfinite(want)
    assert np.array_equal(np.isnan(got), np.isnan(want)) and np.array_equal(got[~finite & ~np.isnan(want)],
                                                                            want[~finite & ~np.isnan(want)]), \
        f"{what}: non-finite entries differ:\n{got}\n{want}"
    scale = np.max(np.abs(want[finite]), initial=1.0)
    err = np.abs(got[finite] - want[finite])
    bad = err > RTOL * np.maximum(np.abs(want[finite]), scale)
    assert not bad.any(), f"{what}: entries {np.flatnonzero(finite)[bad].tolist()} C {got[finite][bad]} " \
                          f"sympy {want[finite][bad]}"


@pytest.mark.parametrize("name", list(BUILDERS))
def test_kernels_match_the_sympy_expressions(name, cache, monkeypatch):
    monkeypatch.setenv("BONDSIM_CACHE_DIR", str(cache))
    compiled = codegen.compile_model(BUILDERS[name]())
    oracle = Oracle(BUILDERS[name]())
    red, ev = oracle.red, oracle.ev
    assert (compiled.var_names, compiled.eq_names, compiled.output_names) == \
        (red.var_names, red.eq_names, [n for n, _ in red.outputs])
    assert compiled.n_modes == len(ev.modes)
    if name in ("law_zoo", "switching_force", "pid_step_saturation", "servo", "robotino"):
        assert compiled.n_modes > 0, "this model was chosen for its events"
    n_par = len(compiled.params)
    residual = oracle.function(red.equations)  # the laws as written: Mod, Min, Piecewise...
    jacobian = oracle.function([dy + oracle.cj * dyp for dy, dyp in zip(red.jac_dy, red.jac_dyp)])
    outputs = oracle.function([e for _, e in red.outputs])
    pivots = oracle.function([e for e, _ in red.pivots] + [e for e, _, _ in red.param_checks or []])
    if ev:
        residual_modes = oracle.function(oracle.moded)
        jacobian_modes = oracle.function(oracle.jacobian(oracle.moded))
        roots = oracle.function(ev.roots)
        naturals = [oracle.function([m]) for m in ev.natural]
        is_floor = [isinstance(m, sp.floor) for m in ev.natural]
    rng = np.random.default_rng(14)
    n_jac, n_out = len(compiled.indices), len(compiled.output_names)
    seen_modes = [set() for _ in ev.modes]
    for t, y, yp, p, cj in _points(rng, compiled, 40):
        def both(kernel, ref, size, pp, *extra):
            out = np.full(size, 123.0)
            kernel(t, y, yp, pp, *extra, out)
            mvals = pp[n_par:] if len(pp) > n_par else np.zeros(len(ev.modes))
            want = ref(t, *y, *yp, *pp[:n_par], *mvals, cj if extra else 0.0)
            return out, want

        m0 = np.zeros(len(ev.modes))
        pm = np.concatenate([p, m0])
        got, want = both(compiled.residual, residual, compiled.n, p)
        _close(got, want, f"{name}: residual at t={t}, y={y}")
        got, want = both(compiled.jacobian, jacobian, n_jac, p, cj)
        _close(got, want, f"{name}: jacobian")
        got, want = both(compiled.outputs, outputs, n_out, pm)
        _close(got, want, f"{name}: outputs at y={y}")
        got, want = both(compiled.pivots, pivots, len(compiled.pivot_names) + len(compiled.check_names), pm)
        _close(got, want, f"{name}: pivots")
        if not ev:
            continue
        # the modes the laws pick at this point, each from the ones before it
        modes = np.zeros(len(ev.modes))
        compiled.modes(t, y, yp, p, modes)
        want_modes = np.zeros(len(ev.modes))
        for k, f in enumerate(naturals):
            want_modes[k] = f(t, *y, *yp, *p, *want_modes, 0.0)[0]
        np.testing.assert_array_equal(modes, want_modes, err_msg=f"{name}: modes at y={y}")
        for k, m in enumerate(modes):
            seen_modes[k].add(m)
        # the moded kernels with the natural modes and with modes across every switch
        for trial in range(3):
            if trial:
                modes = np.where(is_floor, rng.integers(-3, 4, len(modes)),
                                 rng.integers(0, 2, len(modes))).astype(float)
            pm = np.concatenate([p, modes])
            got, want = both(compiled.residual_modes, residual_modes, compiled.n, pm)
            _close(got, want, f"{name}: residual_modes, modes {modes}")
            got, want = both(compiled.jacobian_modes, jacobian_modes, n_jac, pm, cj)
            _close(got, want, f"{name}: jacobian_modes, modes {modes}")
            got, want = both(compiled.roots, roots, len(ev.roots), pm)
            _close(got, want, f"{name}: roots, modes {modes}")
    # the random points reached both sides of the switches (else the test proves little)
    for k, seen in enumerate(seen_modes):
        assert len(seen) >= 2, f"{name}: mode {k} ({ev.natural[k]}) took only the values {seen}"


def test_the_oracle_sees_a_c_fmod(cache, monkeypatch, tmp_path):
    """Printed as C's fmod (the sign of the dividend), Mod of a negative argument differs from
    the law's (the sign of the divisor): the comparison above must notice."""
    monkeypatch.setenv("BONDSIM_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cprint, "C_PRELUDE", cprint.C_PRELUDE.replace(
        "double r = fmod(a, c);", "return fmod(a, c); double r = 0.0;"))
    wrong = codegen.compile_model(BUILDERS["law_zoo"]())
    monkeypatch.undo()
    monkeypatch.setenv("BONDSIM_CACHE_DIR", str(cache))
    right = codegen.compile_model(BUILDERS["law_zoo"]())
    assert wrong.key == right.key and wrong.source_path != right.source_path
    k = right.output_names.index("mod_pos")
    y = np.full(right.n, -0.5)
    outs = []
    for c in (wrong, right):
        out = np.zeros(len(c.output_names))
        c.outputs(0.0, y, np.zeros(c.n), c.params, out)
        outs.append(out[k])
    assert outs[1] == pytest.approx(0.2, rel=1e-12) and outs[0] == pytest.approx(-0.5, rel=1e-12)
    with pytest.raises(AssertionError, match="outputs"):
        _close(np.array([outs[0]]), np.array([outs[1]]), "outputs")


def _compiler(tmp_path, body):
    cc = tmp_path / "cc.sh"
    cc.write_text("#!/bin/sh\n" + body)
    cc.chmod(0o755)
    return cc


def test_a_compile_failure_names_the_model_and_leaves_nothing(tmp_path, monkeypatch):
    from bondsim_ros.bondgraph.core import ModelError
    from bondsim_ros.solver import _ccore

    # the build starts the solver core's in the background (this compiler names another core):
    # it is this test's, and is over before the test's compiler and cache are put back (one
    # still running then built a core without KLU with gcc, which later tests were handed)
    monkeypatch.setattr(_ccore, "_libs", {})
    monkeypatch.setattr(_ccore, "_pending", None)
    monkeypatch.setenv("BONDSIM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CC", str(_compiler(tmp_path, 'case "$*" in *--version*) echo "cc 1";; '
                                                     '*) echo "error: refused" >&2; exit 1;; esac\n')))
    try:
        with pytest.raises(ModelError, match=r"(?s)switching_force: the generated code does not compile .*refused"):
            codegen.compile_model(BUILDERS["switching_force"]())
    finally:
        _ccore.wait_prebuild()
    assert sorted(p.name for p in (tmp_path / "cache" / "models").iterdir()) == []


def test_concurrent_first_runs_compile_once(tmp_path):
    """Two processes building the same model at once: one compiles, the other waits and loads
    the same library; neither sees a partial cache entry, and the lock file goes."""
    import os
    import subprocess
    import sys

    log = tmp_path / "cc.log"
    # the model's compilations only: a first run also builds the solver core (in the background)
    cc = _compiler(tmp_path, f'case "$*" in *--version*) ;; */m_*.c*) echo build >> {log}; sleep 1;; esac\n'
                             'exec gcc "$@"\n')
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=str(root), BONDSIM_CACHE_DIR=str(tmp_path / "cache"), CC=str(cc))
    code = ("import numpy as np; from bondsim_ros.bondgraph.codegen import compile_model; "
            "from bondsim_ros.models import resolve_model; c = compile_model(resolve_model('dc_motor')[0]); "
            "out = np.zeros(c.n); c.residual(0.0, c.y0, c.y0 * 0, c.params, out); print(c.key, out.tolist())")
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [e for _, e in outs]
    assert outs[0][0] == outs[1][0]
    assert log.read_text().split() == ["build"]
    names = sorted(p.name for p in (tmp_path / "cache" / "models").iterdir())
    assert [n.rsplit(".", 1)[1] for n in names] == ["c", "json", "so"], names


def test_a_large_source_builds_as_parallel_units_with_the_same_kernels(cache, tmp_path, monkeypatch):
    """A source above native.SPLIT_MIN is compiled as one translation unit per core and linked:
    forced here on the Robotino, cut into 25-expression chunks over 3 units, its kernels give
    bit for bit what the one-unit build of the same expressions gives."""
    from bondsim_ros.solver import native

    monkeypatch.setenv("BONDSIM_CACHE_DIR", str(cache))
    whole = codegen.compile_model(BUILDERS["robotino"]())
    monkeypatch.setenv("BONDSIM_CACHE_DIR", str(tmp_path / "split"))
    monkeypatch.setattr(cprint, "CHUNK", 25)
    monkeypatch.setattr(native, "SPLIT_MIN", 0)
    monkeypatch.setattr(native, "_jobs", lambda: 3)
    calls = []
    real_units = native._units
    monkeypatch.setattr(native, "_units", lambda source, jobs: calls.append(real_units(source, jobs)) or calls[-1])
    split = codegen.compile_model(BUILDERS["robotino"]())
    units = calls[-1]
    assert len(units) == 3
    source = Path(split.source_path).read_text()
    header, *bodies = source.split(native.UNIT_MARK)
    assert len(bodies) > 10 and "void jacobian_modes_0(" in header
    assert all(u.startswith(header) for u in units)
    assert "".join(u[len(header):] for u in units) == "".join(bodies)  # each function once, in order
    rng = np.random.default_rng(3)
    pm = np.concatenate([whole.params, np.zeros(whole.n_modes)])
    for t, y, yp, p, cj in _points(rng, whole, 10):
        for kind in ("residual", "jacobian", "outputs", "roots", "residual_modes", "jacobian_modes"):
            size = {"residual": whole.n, "residual_modes": whole.n, "outputs": len(whole.output_names),
                    "roots": len(whole.root_names)}.get(kind, len(whole.indices))
            args = (t, y, yp, p if kind in ("residual", "jacobian") else pm) + ((cj,) if "jacobian" in kind else ())
            a, b = np.zeros(size), np.zeros(size)
            getattr(whole, kind)(*args, a)
            getattr(split, kind)(*args, b)
            np.testing.assert_array_equal(a, b, err_msg=kind)


def test_heaviside_at_zero_is_sympys_half_in_the_compiled_outputs(tmp_path, monkeypatch):
    """The law's value at the switch itself: sympy (and so every fold of a law, and lambdify)
    gives Heaviside(0) = 1/2; the compiled output must say the same, not C's x > 0."""
    from bondsim_ros.bondgraph.simulation import simulate

    monkeypatch.setenv("BONDSIM_CACHE_DIR", str(tmp_path))
    model = loads_model("\n".join([
        "model: step_at_one",
        "components:",
        "  clock: {type: Function, expr: \"t - 1\", inputs: []}",
        "  h: {type: Function, expr: \"Heaviside(u)\", inputs: [u]}",
        "  h1: {type: Function, expr: \"Heaviside(u, 1)\", inputs: [u]}",
        "  x: {type: Integrator, x0: 0.0}",
        "  split: {type: Node, n: 3}",
        "  rec: {type: Recorder, columns: [h, h1]}",
        "signals:",
        "  - [clock.out, split.in_]",
        "  - [split.out1, h.u]",
        "  - [split.out2, h1.u]",
        "  - [split.out3, x.in_]",
        "  - [h.out, rec.h]",
        "  - [h1.out, rec.h1]",
    ]), "step_at_one.yaml")
    result = simulate(model, t_end=2.0, dt_out=0.5)
    t = np.asarray(result.t)
    at_one = int(np.flatnonzero(t == 1.0)[0])
    assert list(result["h"][[0, at_one, -1]]) == [0.0, 0.5, 1.0]
    assert list(result["h1"][[0, at_one, -1]]) == [0.0, 1.0, 1.0]


def test_the_code_cache_key_covers_every_module_that_reads_or_prints_a_law():
    """A cached library is reused while its key holds: a module that changes what a law means
    (the parser, the reduction, the printer) must be part of the key, or a fixed misreading
    would live on in every cache."""
    from bondsim_ros.bondgraph import fingerprint

    here = Path(fingerprint.__file__).parent
    # what builds, parses, reduces or prints equations; not: drawing, running, file loading
    # (whose result, the Model with its law texts, is fingerprinted itself), the package index
    not_code = {"__init__.py", "draw.py", "simulation.py", "yamlmodel.py", "library.py"}
    missing = sorted(p.name for p in here.glob("*.py")
                     if p.name not in not_code and p.name not in fingerprint.ENGINE_FILES)
    assert not missing, f"bondgraph modules outside the code cache's key: {missing}"


def test_a_large_sources_kernels_take_o0_only_where_their_powers_come_out_the_same(tmp_path):
    import ctypes

    from bondsim_ros.bondgraph import cache
    from bondsim_ros.solver import native

    pad = "/*" + " " * cache.LARGE_SOURCE + "*/\n"
    assert list(cache._powi_exponents("__builtin_powi(f(x, (y)), -3) + __builtin_powi(z, 12)")) == [-3, 12]
    assert cache.kernel_flags("double a;") == cache.KERNEL_CFLAGS  # small: -O1
    assert cache.kernel_flags(pad + "__builtin_powi(x, 4) + __builtin_powi(x, -4)") == cache.LARGE_KERNEL_CFLAGS
    assert cache.kernel_flags(pad + "__builtin_powi(x, 5)") == cache.KERNEL_CFLAGS
    # what the rule rests on: x**n for |n| <= 4 is the same at -O1 (gcc's multiplications) and
    # at -O0 (libgcc's __powidf2)
    body = "".join(f"    out[{k}] = __builtin_powi(x[0], {n});\n" for k, n in enumerate(range(-4, 5)))
    src = f"void powers(const double *x, double *out) {{\n{body}}}\n"
    libs = [ctypes.CDLL(str(native.build_library(src, f"powi{o}", tmp_path, extra_flags=(o,)))) for o in ("-O0", "-O1")]
    rng = np.random.default_rng(1)
    for x in np.concatenate([rng.uniform(-3, 3, 2000), rng.lognormal(0, 20, 2000)]):
        xs, outs = np.array([x]), []
        for lib in libs:
            out = np.zeros(9)
            lib.powers(ctypes.c_void_p(xs.ctypes.data), ctypes.c_void_p(out.ctypes.data))
            outs.append(out)
        assert np.array_equal(outs[0], outs[1], equal_nan=True), x


def _series_model(degree):
    """Two masses, each pushed by its own Chebyshev series of degree ``degree`` in s = t/10 - 1,
    T_k(s) written as the laws of the dual-arm's voltages write it: cos(k th), th = acos(s)."""
    rng = np.random.default_rng(5)
    laws = []
    for _ in range(2):
        c = rng.uniform(-1.0, 1.0, degree + 1) / (1.0 + np.arange(degree + 1))
        laws.append(" + ".join([repr(float(c[0]))] + [f"({float(c[k])!r})*cos({k}*th)" for k in range(1, degree + 1)]))
    return loads_model("\n".join([
        "model: series_drive",
        "components:",
        "  cheb: {type: Function, expr: \"acos(clip(0.1*t - 1.0, -1.0, 1.0))\", inputs: []}",
        "  split: {type: Node, n: 2}",
        *[f"  F{i}: {{type: Se, effort: \"{law}\", inputs: [th]}}" for i, law in enumerate(laws)],
        *[f"  v{i}: {{type: EffortJunction}}\n  m{i}: {{type: I, inertia: {1.0 + i}}}\n"
          f"  d{i}: {{type: R, effort: \"0.5*f\"}}" for i in range(2)],
        "bonds: [[F0, v0], [v0, m0], [v0, d0], [F1, v1], [v1, m1], [v1, d1]]",
        "signals: [[cheb.out, split.in_], [split.out1, F0.th], [split.out2, F1.th]]",
    ]), "series_drive.yaml")


def test_a_series_shared_by_chunks_is_computed_once_by_rotation_and_to_1e12(cache, monkeypatch, tmp_path):
    """cos(k th), k = 2..40, needed by two chunks of the residual: the calling function computes
    them once, by rotation from cos th and sin th (no libm call per k), and the kernel agrees
    with the sympy expressions to 1e-12 of the largest term, for th over [0, pi]."""
    monkeypatch.setenv("BONDSIM_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cprint, "CHUNK", 1)
    compiled = codegen.compile_model(_series_model(40))
    source = Path(compiled.source_path).read_text()
    head = "void residual_modes(double t, const double *y, const double *yp, const double *p, double *out) {"
    residual = source[source.index(head):]
    residual = residual[:residual.index("\n}\n")]
    assert "c_next = c * c1 - s * s1" in residual, "the multiples were not computed by rotation"
    assert "cos(40" not in source and "cos(17" not in source
    oracle = Oracle(_series_model(40))
    want_fn = oracle.function(oracle.red.equations)
    rng = np.random.default_rng(8)
    n_par = len(compiled.params)
    for t, y, yp, p, _ in _points(rng, compiled, 30):
        t = float(rng.uniform(-1.0, 21.0))  # th from pi (s = -1) to 0 (s = 1)
        got = np.full(compiled.n, 123.0)
        compiled.residual(t, y, yp, p, got)
        want = want_fn(t, *y, *yp, *p[:n_par], *np.zeros(len(oracle.ev.modes)), 0.0)
        _close(got, want, f"series residual at t={t}")


def test_sines_of_an_angle_plus_constants_become_one_sine_and_one_cosine():
    """sin(x + c) and cos(x + c) for the three wheels of an omnidrive (c = 2 pi/3, -2 pi/3, pi):
    only sin x and cos x are left to call, and in doubles the values are within 4 ulp of 1 of
    the exact ones (the sum x + c rounded first costs up to an ulp of x: 7e-15 at x = 40)."""
    x = sp.Symbol("x")
    exprs = [sp.sin(x + 2 * sp.pi / 3) + sp.cos(x - sp.Float(2.0943951023931953)),
             sp.sin(x + sp.Float(3.141592653589793)) * sp.cos(x), sp.cos(2 * x + 1.5)]
    split = cprint.split_offsets(exprs)
    calls = set().union(*[e.atoms(sp.sin, sp.cos) for e in split])
    assert calls == {sp.sin(x), sp.cos(x), sp.sin(2 * x), sp.cos(2 * x)}
    y = sp.Symbol("y")
    in_doubles = [sp.lambdify(x, e, "math") for e in split]
    for v in np.linspace(-40.0, 40.0, 101):
        for e, f in zip(exprs, in_doubles):
            exact = e.xreplace({x: y}).evalf(30, subs={y: sp.Rational(float(v))})
            assert abs(f(float(v)) - float(exact)) < 4 * 2.2e-16, (e, v)


def test_a_denominator_shared_by_several_quotients_is_computed_once():
    """x/d, y/d and z/d print d by value in each quotient (so the C divides, as the
    expressions say): d itself must be the shared sub-expression, or its cosine is called once
    per quotient (the Robotino's contact radius r_0 + r cos θ, in three residual rows)."""
    y0, y1, y2, th = sp.symbols("y0 y1 y2 th")
    d = sp.Float(-0.0275) + sp.Float(0.04) * sp.cos(th - sp.pi / 3)
    exprs = [y0 / d, y1 / d + y0, y2 / d - y1]
    printer = cprint._printer({y0: "y[0]", y1: "y[1]", y2: "y[2]", th: "y[3]"})
    source = "\n".join(cprint._emit_function("residual", "res", exprs, printer))
    calls = source.count("cos(") + source.count("sin(")  # sympy may write the cosine as a sine
    assert calls == 1, source
    body = [line for line in source.splitlines() if line.strip().startswith("out[")]
    assert all("/" in line and "cos(" not in line and "sin(" not in line for line in body), source
