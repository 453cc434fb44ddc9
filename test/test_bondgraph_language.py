"""The bond-graph language: hierarchy, vector ports, checks on load, YAML form, drawing."""
import re
import shutil

import numpy as np
import pytest
import sympy as sp

from bondsim_ros.bondgraph import (
    C, GY, I, PID, R, TF, Component, EffortJunction, Integrator, Model, ModelError, Recorder, Se, Sf,
)
from bondsim_ros.bondgraph.draw import draw, to_dot
from bondsim_ros.bondgraph.equations import build_dae
from bondsim_ros.bondgraph.reduce import reduce_dae
from bondsim_ros.bondgraph.yamlmodel import loads_model
from bondsim_ros.models import examples
from bondsim_ros.solver import SolverOptions


def reduced(model):
    return reduce_dae(build_dae(model))


def same(a, b, tol=1e-12):
    """Two expressions agree at random points (floats make exact simplification brittle)."""
    import random

    rng = random.Random(1)
    syms = sorted(sp.sympify(a).free_symbols | sp.sympify(b).free_symbols, key=str)
    for _ in range(5):
        vals = {s: sp.Float(rng.uniform(-2, 2)) for s in syms}
        va, vb = float(sp.sympify(a).xreplace(vals)), float(sp.sympify(b).xreplace(vals))
        if abs(va - vb) > tol * max(1.0, abs(va), abs(vb)):
            return False
    return True


def state_equation(red, state_name):
    """The reduced equation solved for the derivative of ``state_name``: returns d/dt expression."""
    idx = red.var_names.index(state_name)
    var = red.variables[idx]
    d = red.derivative[var]
    for eq in red.equations:
        if d in eq.free_symbols:
            sol = sp.solve(eq, d)
            if len(sol) == 1:
                return sol[0]
    raise AssertionError(f"no equation for {state_name}'")


# ---------------------------------------------------------------- hierarchy & vector ports
class Pair(Component):
    """A component whose port 'v' has two bonds inside: a 2-vector port."""

    def __init__(self, name, m1, m2):
        super().__init__(name, ports={"v": "in"})
        self.m = (m1, m2)

    def build(self):
        self.add(I("a", self.m[0]), I("b", self.m[1]))
        self.bond(self.v, "a")
        self.bond(self.v, "b")


class Forces(Component):
    def __init__(self, name, f1, f2):
        super().__init__(name, ports={"v": "out"})
        self.f = (f1, f2)

    def build(self):
        self.add(Se("F1", self.f[0]), Se("F2", self.f[1]))
        self.bond("F1", self.v)
        self.bond("F2", self.v)


def test_vector_port_pairs_bonds_in_order():
    m = Model("vec")
    m.add(Pair("masses", 2.0, 4.0), Forces("forces", 3.0, 5.0))
    m.bond("forces.v", "masses.v")
    red = reduced(m)
    # the first bond inside each port pairs with the first bond of the other: a gets F1, b gets F2
    assert float(state_equation(red, "masses.a.p")) == pytest.approx(3.0)
    assert float(state_equation(red, "masses.b.p")) == pytest.approx(5.0)


def test_vector_port_dimension_mismatch_is_named():
    class One(Component):
        def build(self):
            self.add(Se("F", 1.0))
            self.bond("F", self.ports["v"])

    m = Model("mismatch")
    m.add(Pair("masses", 1.0, 1.0), One("one", ports={"v": "out"}))
    m.bond("one.v", "masses.v")
    with pytest.raises(ModelError, match=r"dimension mismatch.*dimension 1 and 2|dimension 1 and 2"):
        build_dae(m)


class Wheel(Component):
    """Reusable: axle inertia with bearing friction, driven through a 2-port."""

    def __init__(self, name):
        super().__init__(name, ports={"drive": "in"}, controls={"omega": "out"})

    def build(self):
        j = self.add(EffortJunction("j", output=True))
        self.add(I("inertia", 0.01), R("bearing", 0.001))
        self.bond(self.drive, j)
        self.bond(j, "inertia")
        self.bond(j, "bearing")
        self.connect(j.out, self.omega)


def test_component_reused_three_times_with_unique_names():
    m = Model("three")
    for i in range(3):
        m.add(Wheel(f"wheel{i + 1}"), Se(f"torque{i + 1}", 0.1 * (i + 1)))
        m.bond(f"torque{i + 1}", f"wheel{i + 1}.drive")
    m.add(Recorder("rec", ["w1", "w2", "w3"]))
    for i in range(3):
        m.connect(f"wheel{i + 1}.omega", f"rec.w{i + 1}")
    red = reduced(m)
    assert [n for n in red.var_names] == ["wheel1.inertia.p", "wheel2.inertia.p", "wheel3.inertia.p"]
    # d p/dt = torque - b * p / J for each wheel
    for i in range(3):
        expr = state_equation(red, f"wheel{i + 1}.inertia.p")
        p = red.variables[i]
        assert same(expr, 0.1 * (i + 1) - 0.001 * p / 0.01)
    assert [o[0] for o in red.outputs][-3:] == ["w1", "w2", "w3"]


def test_nesting_without_limit():
    inner = Wheel("w")
    level = inner
    for k in range(6):  # six levels of components around one wheel
        outer = Component(f"L{k}", ports={"drive": "in"})
        outer.add(level)
        outer.bond(outer.drive, "w.drive" if k == 0 else f"L{k - 1}.drive")
        level = outer
    m = Model("deep")
    m.add(level, Se("T", 1.0))
    m.bond("T", "L5.drive")
    red = reduced(m)
    assert red.var_names == ["L5.L4.L3.L2.L1.L0.w.inertia.p"]


# ---------------------------------------------------------------- checks on load
def test_dangling_port_names_path():
    m = Model("dangling")
    m.add(I("mass", 1.0), R("damper", 1.0), EffortJunction("j"))
    m.bond("j", "mass")
    with pytest.raises(ModelError, match=r"damper\.p.*not bonded|junction needs at least two"):
        build_dae(m)


def test_component_port_not_connected_outside():
    m = Model("open")
    m.add(Wheel("wheel"))
    with pytest.raises(ModelError, match=r"wheel\.drive: power port is not connected"):
        build_dae(m)


def test_duplicate_names_rejected():
    m = Model("dup")
    m.add(I("x", 1.0))
    with pytest.raises(ModelError, match="duplicate component name 'x'"):
        m.add(C("x", 1.0))


def test_power_direction_mismatch():
    m = Model("dir")
    m.add(I("mass", 1.0), Se("F", 1.0))
    with pytest.raises(ModelError, match=r"mass\.p: power direction mismatch"):
        m.bond("mass", "F")


def test_a_bond_between_ports_of_different_domains_is_refused_by_name():
    from bondsim_ros.bondgraph.core import Component

    class Coil(Component):
        def __init__(self, name):
            super().__init__(name, ports={"terminal": ("in", "electrical")})

        def build(self):
            self.add(I("L", 1.0))
            self.bond(self.terminal, "L")

    class Shaft(Component):
        def __init__(self, name):
            super().__init__(name, ports={"end": ("out", "rotational")})

        def build(self):
            self.add(Sf("w", 1.0))
            self.bond("w", self.end)

    m = Model("domains")
    m.add(Shaft("shaft"), Coil("coil"))
    with pytest.raises(ModelError, match=r"coil\.terminal: domain mismatch: a bond from shaft\.end \(rotational\) "
                                         r"cannot enter coil\.terminal \(electrical\)"):
        m.bond("shaft.end", "coil.terminal")
    # a junction's ports carry no domain: both join it
    m.add(EffortJunction("j"))
    m.bond("shaft.end", "j")
    m.bond("j", "coil.terminal")


def test_unconnected_control_input():
    m = Model("sig")
    m.add(TF("tf", "cos(a)", inputs=["a"]), Se("F", 1.0), I("mass", 1.0))
    m.bond("F", "tf.p1")
    m.bond("tf.p2", "mass")
    with pytest.raises(ModelError, match=r"tf\.a: control input is not connected"):
        build_dae(m)


def test_unknown_name_in_law():
    m = Model("law")
    m.add(R("r", effort="k*f"), Se("F", 1.0))
    m.bond("F", "r")
    with pytest.raises(ModelError, match=r"r \(effort law\).*unknown name\(s\) k"):
        build_dae(m)


@pytest.mark.parametrize("make, text", [
    (lambda: I("m", -1.0), "inertia must be positive"),
    (lambda: C("c", 0.0), "capacitance must be positive"),
    (lambda: R("r", -2.0), "must not be negative"),
])
def test_physically_meaningless_parameters(make, text):
    with pytest.raises(ModelError, match=text):
        make()


def test_over_constrained_model_is_reported_not_a_singular_matrix():
    # two flow sources fixing the same junction flow: hyperstatic
    m = Model("hyper")
    j = m.add(EffortJunction("j"))
    m.add(Sf("s1", 0.0), Sf("s2", 0.0), I("mass", 1.0))
    m.bond("s1", j)
    m.bond("s2", j)
    m.bond(j, "mass")
    with pytest.raises(ModelError, match="redundant|structurally singular|over-constrained"):
        reduced(m)


def test_junction_signs_follow_bond_direction():
    # F pushes into the 1-junction, the damper and the mass take power out
    m = examples.mass_spring_damper(m=2.0, k=3.0, b=0.5, x0=0.0, force=7.0)
    red = reduced(m)
    p = red.variables[red.var_names.index("mass.p")]
    q = red.variables[red.var_names.index("spring.q")]
    expr = state_equation(red, "mass.p")
    assert same(expr, 7.0 - 0.5 * p / 2.0 - 3.0 * q)


def test_trivial_equations_are_eliminated():
    raw = build_dae(examples.dc_motor())
    red = reduce_dae(raw)
    assert len(raw.equations) == 28
    assert len(red.equations) == 3  # motor.La.p, motor.Jm.p, JL.p remain; junction equalities are gone
    assert red.differential.all()


def test_pid_with_limits_has_integral_state_and_saturation():
    m = Model("pid")
    m.add(PID("pid", kp=2.0, ki=1.0, umin=-1.0, umax=1.0), Integrator("plant", 0.0))
    from bondsim_ros.bondgraph import Input, Sum

    m.add(Input("ref", 1.0), Sum("err", "+-"))
    m.connect("ref.out", "err.in1")
    m.connect("plant.out", "err.in2")
    m.connect("err.out", "pid.in_")
    m.connect("pid.out", "plant.in_")
    red = reduced(m)
    assert set(red.var_names) == {"pid.xi", "plant.x"}
    from bondsim_ros.bondgraph.elements import clip

    assert any(eq.has(clip) for eq in red.equations)


def test_pid_filtered_derivative_step_response_is_the_closed_form():
    """A unit step of the error at t0 into kp + ki/s + kd s/(tf s + 1): the output is
    kp + ki (t - t0) + (kd/tf) exp(-(t - t0)/tf) after t0 and 0 before (the derivative's kick
    decays with the filter time, the integral ramps)."""
    import numpy as np

    from bondsim_ros.bondgraph import Input, compile_model, simulate

    kp, ki, kd, tf, t0 = 3.0, 20.0, 0.05, 0.01, 0.1
    m = Model("pid_step")
    m.add(Input.step("e", t0=t0), PID("pid", kp=kp, ki=ki, kd=kd, tf=tf), Recorder("rec", ["u"]))
    m.connect("e.out", "pid.in_")
    m.connect("pid.out", "rec.u")
    r = simulate(compile_model(m), t_end=0.2, dt_out=0.001, options=SolverOptions(rtol=1e-10, atol=1e-12))
    s = np.clip(r.t - t0, 0.0, None)
    expected = np.where(r.t < t0, 0.0, kp + ki * s + kd / tf * np.exp(-s / tf))
    after = r.t > t0 + 1e-9
    assert np.max(np.abs(r["u"][r.t < t0])) < 1e-12
    assert np.max(np.abs(r["u"][after] - expected[after])) < 1e-6 * (kp + kd / tf)
    # the kick is there: just after the step the output is near kp + kd/tf, not kp
    k = int(np.argmax(after))
    assert r["u"][k] > kp + 0.8 * kd / tf * np.exp(-(r.t[k] - t0) / tf)


def test_pid_filter_time_must_be_positive_with_a_derivative():
    with pytest.raises(ModelError, match="filter time"):
        PID("pid", kp=1.0, kd=0.1, tf=0.0)


@pytest.mark.parametrize("params, says", [
    ({"Tf": -0.01}, "c (tf = Tf) must be positive (it is -0.01)"),  # ran on to x = -2.6e237
    ({"Tf": 0.0}, "c (tf = Tf) must be positive (it is 0)"),
    ({"Kp": 0.0}, "c (kp = Kp) must not be zero: the default back-calculation gain is 10 ki/kp (give kb)"),
])
def test_pid_gains_given_as_parameters_are_checked_like_numbers(params, says):
    from bondsim_ros.bondgraph import Input, Node, Sum, simulate
    from bondsim_ros.bondgraph.compiled import ParameterRefused

    m = Model("pid_parameters")
    m.parameter("Tf", 0.01)
    m.parameter("Kp", 2.0)
    m.add(Input("r", 1.0), Sum("err", "+-"), PID("c", kp="Kp", ki=1.0, kd=0.1, tf="Tf", umin=-5.0, umax=5.0),
          Integrator("x"), Node("n", 2), Recorder("rec", ["x"]))
    for a, b in (("r.out", "err.in1"), ("err.out", "c.in_"), ("c.out", "x.in_"), ("x.out", "n.in_"),
                 ("n.out1", "err.in2"), ("n.out2", "rec.x")):
        m.connect(a, b)
    assert simulate(m, t_end=5.0, dt_out=0.5)["x"][-1] == pytest.approx(1.0, abs=0.05)  # the loop settles
    with pytest.raises(ParameterRefused, match=re.escape(says)):
        simulate(m, t_end=5.0, dt_out=0.5, params=params)


# ---------------------------------------------------------------- YAML
MSD_YAML = """
model: mass_spring_damper
parameters: {k: 4.0}
definitions:
  Damper:
    ports: {p: in}
    components: {r: {type: R, resistance: 0.4}}
    bonds: [[self.p, r]]
components:
  v: {type: EffortJunction, output: true}
  F: {type: Se, effort: 0.0}
  mass: {type: I, inertia: 1.0}
  spring: {type: C, effort: "k*q", q0: 0.1}
  d: {type: Damper}
  rec: {type: Recorder, columns: [v]}
bonds:
  - [F, v]
  - [v, mass]
  - [v, spring]
  - [v, d.p]
signals:
  - [v.out, rec.v]
"""


def test_yaml_model_matches_python_model():
    red_yaml = reduced(loads_model(MSD_YAML))
    red_py = reduced(examples.mass_spring_damper(m=1.0, k=4.0, b=0.4, x0=0.1))
    ky = sp.Symbol("param:k", real=True)
    e_yaml = state_equation(red_yaml, "mass.p").xreplace({ky: 4.0})
    e_py = state_equation(red_py, "mass.p")
    ren = {red_yaml.variables[red_yaml.var_names.index(n)]: red_py.variables[red_py.var_names.index(n)]
           for n in ("mass.p", "spring.q")}
    assert sp.simplify(e_yaml.xreplace(ren) - e_py) == 0


@pytest.mark.parametrize("text, match", [
    ("model: x\ncomponents:\n  a: {type: Bogus}\n", r"<string>:3: a: unknown element type 'Bogus'"),
    ("model: x\ncomponents:\n  a: {type: I, inertia: 1.0, mass: 2}\n", r"<string>:3: a: I: .*unexpected keyword.*mass"),
    # what the type takes, beside Python's words for a key it does not
    ("model: x\ncomponents:\n  g: {type: GY, r: 2}\n",
     r"<string>:3: g: GY: got an unexpected keyword argument 'r' \(GY takes: ratio, inputs\)"),
    ("model: x\ncomponents:\n  s: {type: Step, start: 1}\n", r"\(Step takes: t0, before, after\)"),
    # the ports to choose from
    ("model: x\ncomponents:\n  E: {type: Se, effort: 1}\n  g: {type: GY, ratio: 2}\nbonds:\n  - [E, g]\n",
     r"g: has 2 power ports; name the port to bond \(g\.p1, g\.p2\)"),
    ("model: x\ncomponents:\n  a: {type: I, inertia: 1.0}\n  b: {type: Se}\nbonds:\n  - [a, b]\n",
     r"<string>:6: .*a\.p: power direction mismatch"),
    ("model: x\ncomponents:\n  a: {type: I, inertia: 1.0}\n  a: {type: C, capacitance: 1.0}\n", r"duplicate key 'a'"),
    ("model: x\ndefinitions:\n  Coil:\n    ports: {t: [in, electrical]}\n    components: {L: {type: I, inertia: 1}}\n"
     "    bonds: [[self.t, L]]\n  Shaft:\n    ports: {e: [out, rotational]}\n    components: {w: {type: Sf, flow: 1}}\n"
     "    bonds: [[w, self.e]]\ncomponents:\n  s: {type: Shaft}\n  c: {type: Coil}\nbonds:\n  - [s.e, c.t]\n",
     r"<string>:15: .*c\.t: domain mismatch: a bond from s\.e \(rotational\) cannot enter c\.t \(electrical\)"),
    ("model: x\ncomponents: [\n", r"<string>:\d+: YAML syntax error"),
    ("model: x\nwhatever: 1\n", r"unexpected top-level key\(s\): whatever"),
])
def test_yaml_errors_name_file_line_and_component(text, match):
    with pytest.raises(ModelError, match=match):
        loads_model(text)


@pytest.mark.parametrize("text, match", [
    ("model: x\ncomponents:\n  E: {type: Se, effort: 1}\n  r: {type: R, resistance: '2*f'}\nbonds:\n  - [E, r]\n",
     r"<string>:4: r \(resistance\): .*unknown name\(s\) f .*; f is the element's own variable: a law in f is given "
     r"as effort: instead of resistance:"),
    ("model: x\ncomponents:\n  F: {type: Se, effort: 1}\n  m: {type: I, inertia: 'p**2'}\nbonds:\n  - [F, m]\n",
     r"a law in p is given as flow: instead of inertia:"),
    ("model: x\ncomponents:\n  F: {type: Sf, flow: 1}\n  c: {type: C, capacitance: 'q'}\nbonds:\n  - [F, c]\n",
     r"a law in q is given as effort: instead of capacitance:"),
])
def test_a_law_in_the_elements_own_variable_given_as_its_coefficient_says_where_it_goes(text, match):
    """resistance: '2*f' used to be refused as a law with an unknown name f, and nothing more."""
    from bondsim_ros.bondgraph import compile_model

    with pytest.raises(ModelError, match=match):
        compile_model(loads_model(text), use_cache=False)


# ---------------------------------------------------------------- drawing
def test_dot_has_components_as_boxes_and_half_arrow_bonds():
    m = Model("draw")
    m.add(Wheel("wheel"), Se("T", 1.0))
    m.bond("T", "wheel.drive")
    src = to_dot(m)
    assert 'subgraph "cluster_wheel"' in src
    assert "arrowhead=lnormal" in src
    assert '"I: inertia"' in src


@pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz 'dot' not installed")
def test_draw_png(tmp_path):
    out = draw(examples.pendulum(), tmp_path / "pendulum.png")
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 2000


def _algebraic_value(model, name):
    red = reduced(model)
    for sym, expr in red.eliminated.items():
        if sym.name == name:
            return float(expr)
    raise AssertionError(f"{name} not eliminated")


def test_transformer_law_f1_equals_k_f2_and_e2_equals_k_e1():
    m = Model("tf")
    m.add(Se("V", 2.0), TF("tf", 4.0), R("load", 2.0))
    m.bond("V", "tf.p1")
    m.bond("tf.p2", "load")
    assert _algebraic_value(m, "load.e") == pytest.approx(8.0)  # e2 = k e1
    assert _algebraic_value(m, "load.f") == pytest.approx(4.0)
    assert _algebraic_value(m, "V.f") == pytest.approx(16.0)  # f1 = k f2


def test_gyrator_law():
    m = Model("gy")
    m.add(Se("V", 2.0), GY("gy", 3.0), R("load", 2.0))
    m.bond("V", "gy.p1")
    m.bond("gy.p2", "load")
    assert _algebraic_value(m, "load.f") == pytest.approx(2.0 / 3.0)  # e1 = r f2
    assert _algebraic_value(m, "V.f") == pytest.approx(4.0 / 9.0)  # e2 = r f1


def _parallel_rc_runtime():
    """Sf -> 0-junction -> R1, R2 (both run-time), C: one of the two branch currents can come
    from the junction, the other only from its resistor law, i.e. by dividing by a parameter."""
    from bondsim_ros.bondgraph import C, FlowJunction

    m = Model("parallel_rc_runtime")
    m.parameter("R1", 2.0)
    m.parameter("R2", 3.0)
    node = m.add(FlowJunction("node", output=True))
    m.add(Sf("src", 0.5), R("R1", "R1"), R("R2", "R2"), C("C", 0.1))
    for a, b in (("src", node), (node, "R1"), (node, "R2"), (node, "C")):
        m.bond(a, b)
    m.add(Recorder("rec", ["u"]))
    m.connect(node.out, "rec.u")
    return m


def test_runtime_parameter_pivot_is_eliminated_and_checked(tmp_path, monkeypatch):
    """Elimination may divide by a run-time resistance (leaving the capacitor charge as the only
    unknown); a value that zeroes that pivot is refused by name before the run, and the voltage
    follows u = I0 Rp (1 - exp(-t/(Rp C))) for the values set at run time."""
    import numpy as np

    from bondsim_ros.bondgraph.codegen import compile_model
    from bondsim_ros.bondgraph.simulation import simulate

    monkeypatch.setenv("BONDSIM_CACHE_DIR", str(tmp_path))
    compiled = compile_model(_parallel_rc_runtime())
    assert compiled.n == 1, compiled.var_names
    assert len(compiled.pivot_names) == 1, compiled.pivot_names
    pivot = "R1" if compiled.pivot_names[0].startswith("R1") else "R2"
    assert re.search(f"coefficient -?{pivot}$", compiled.pivot_names[0]), compiled.pivot_names
    r1, r2 = 4.0, 6.0
    res = simulate(compiled, t_end=2.0, dt_out=0.01,
                   options=SolverOptions(rtol=1e-9, atol=1e-12), params={"R1": r1, "R2": r2})
    rp = r1 * r2 / (r1 + r2)
    u_exact = 0.5 * rp * (1.0 - np.exp(-res.t / (rp * 0.1)))
    assert np.max(np.abs(res["u"] - u_exact)) < 1e-6
    with pytest.raises(ModelError, match=f"coefficient -?{pivot} \\(pivot = 0\\)"):
        simulate(compiled, t_end=0.1, dt_out=0.01, params={pivot: 0.0})


def test_large_kernels_are_split_into_chunks_without_changing_results(tmp_path, monkeypatch):
    """Kernels above cprint.CHUNK expressions are printed as several C functions (compile
    time); the trajectory must be the same as from the one-function kernels."""
    import numpy as np

    from bondsim_ros.bondgraph import codegen, cprint
    from bondsim_ros.bondgraph.simulation import simulate

    runs, default = {}, cprint.CHUNK
    for chunk in (default, 2):
        monkeypatch.setattr(cprint, "CHUNK", chunk)
        monkeypatch.setenv("BONDSIM_CACHE_DIR", str(tmp_path / f"c{chunk}"))
        compiled = codegen.compile_model(examples.dc_motor())
        src = open(compiled.source_path).read()
        runs[chunk] = (len(re.findall(r"^(?:__attribute__\(\(.*\)\) )?void \w+\(.*\) \{$", src, re.M)),
                       simulate(compiled, t_end=0.2, dt_out=0.01, options=SolverOptions(rtol=1e-9, atol=1e-12)))
    assert runs[2][0] > runs[default][0] == 5  # residual, jacobian, time_derivative, outputs, pivots
    np.testing.assert_array_equal(runs[2][1].data, runs[default][1].data)


# ---------------------------------------------------------------- definition parameters
DAMPERS = """
model: dampers
parameters: {k: 4.0, c: 0.4}
definitions:
  Damper:
    parameters: {c: 0.4}
    ports: {p: in}
    components: {r: {type: R, resistance: c}}
    bonds: [[self.p, r]]
  Pair:
    parameters: {c2: 1.0}
    ports: {p: in}
    components:
      j: {type: EffortJunction}
      a: {type: Damper, c: "c2/2"}
      b: {type: Damper}
    bonds: [[self.p, j], [j, a], [j, b]]
components:
  v: {type: EffortJunction, output: true}
  F: {type: Se, effort: 0.0}
  mass: {type: I, inertia: 1.0}
  spring: {type: C, effort: "k*q", q0: 0.1}
  d1: {type: Damper}
  d2: {type: Damper, c: D2}
  pair: {type: Pair, c2: "k"}
bonds: [[F, v], [v, mass], [v, spring], [v, d1.p], [v, d2], [v, pair]]
"""


def _damped_oscillator(c, k, t):
    """x'' + c x' + k x = 0, x(0) = 0.1, x'(0) = 0."""
    r1, r2 = np.roots([1.0, c, k]).astype(complex)
    a, b = 0.1 * r2 / (r2 - r1), -0.1 * r1 / (r2 - r1)
    return (a * np.exp(r1 * t) + b * np.exp(r2 * t)).real


@pytest.mark.parametrize("d2, c_d2", [("2*k", 8.0), ("3*k", 12.0), ("0.5", 0.5)])
def test_definition_parameters_give_each_instance_its_own_value(tmp_path, monkeypatch, d2, c_d2):
    """Damper's own c: d1 keeps its default 0.4, d2 takes a law of the model's k, and the Pair's
    c2 = k reaches its inner Damper as c2/2 (the model's own c = 0.4 is shadowed inside Damper).
    Each value is compiled into the code, so the cache must tell them apart: the three runs share
    one cache folder."""
    from bondsim_ros.bondgraph import compile_model, simulate

    monkeypatch.setenv("BONDSIM_CACHE_DIR", str(tmp_path / "shared-cache"))
    model = loads_model(DAMPERS.replace("c: D2", f'c: "{d2}"'), "dampers.yaml")
    result = simulate(compile_model(model), t_end=2.0, dt_out=0.5)
    c_total = 0.4 + c_d2 + (4.0 / 2 + 0.4)
    t, x = result.data[:, 0], result.data[:, result.names.index("spring.q")]
    np.testing.assert_allclose(x, _damped_oscillator(c_total, 4.0, t), atol=1e-6)


@pytest.mark.parametrize("change, match", [
    ("  d2: {type: Damper, c: D2}", r"dampers.yaml:24: d2: unexpected key\(s\) for an instance of Damper: cc "
                                    r"\(Damper takes: c\)"),
    ("    parameters: {c: 0.4}", r"dampers.yaml:6: Damper: parameters: c: a parameter value is a number or a law"),
    ("  pair: {type: Pair, c2: \"k\"}", r"dampers.yaml:25: pair \(c2\): law 'zz' refused: uses unknown name\(s\) zz"),
])
def test_definition_parameters_that_do_not_fit_are_refused_at_their_line(change, match):
    from bondsim_ros.bondgraph import compile_model

    bad = {"  d2: {type: Damper, c: D2}": "  d2: {type: Damper, cc: 1}",
           "    parameters: {c: 0.4}": "    parameters: {c: [1]}",
           "  pair: {type: Pair, c2: \"k\"}": "  pair: {type: Pair, c2: zz}"}[change]
    text = DAMPERS.replace(change, bad).replace("c: D2", "c: 1")
    with pytest.raises(ModelError, match=match):
        compile_model(loads_model(text, "dampers.yaml"), use_cache=False)


SIBLINGS = """
model: siblings
parameters: {k: 4.0}
definitions:
  Damper:
    parameters: {c: "2*half", half: 0.2}
    ports: {p: in}
    components: {r: {type: R, resistance: c}}
    bonds: [[self.p, r]]
components:
  v: {type: EffortJunction, output: true}
  F: {type: Se, effort: 0.0}
  mass: {type: I, inertia: 1.0}
  spring: {type: C, effort: "k*q", q0: 0.1}
  d1: {type: Damper}
  d2: {type: Damper, half: "k/8"}
  d3: {type: Damper, c: 0.1, half: 50}
bonds: [[F, v], [v, mass], [v, spring], [v, d1.p], [v, d2], [v, d3]]
"""


def test_a_definition_default_reads_the_definitions_other_parameters():
    """c's default reads half, written after it: d1 takes both defaults (c = 0.4), d2 sets half
    (c = 2 k / 8 = 1), d3 sets c itself, so its half changes nothing (c = 0.1)."""
    from bondsim_ros.bondgraph import compile_model, simulate

    result = simulate(compile_model(loads_model(SIBLINGS, "siblings.yaml"), use_cache=False), t_end=2.0, dt_out=0.5)
    t, x = result.data[:, 0], result.data[:, result.names.index("spring.q")]
    np.testing.assert_allclose(x, _damped_oscillator(0.4 + 1.0 + 0.1, 4.0, t), atol=1e-6)


@pytest.mark.parametrize("defaults, match", [
    ('{c: "2*c", half: 0.2}', r"siblings.yaml:6: Damper \(c\): its default refers to itself"),
    ('{c: "2*half", half: "c/2"}', r"siblings.yaml:6: Damper: the defaults of parameters c, half refer to each "
                                   r"other in a loop"),
    ('{c: "2*halve", half: 0.2}', r"siblings.yaml:6: Damper \(c\): law '2\*halve' refused: uses unknown name"),
])
def test_definition_defaults_that_cannot_be_resolved_are_refused_at_the_definitions_line(defaults, match):
    from bondsim_ros.bondgraph import compile_model

    text = SIBLINGS.replace('{c: "2*half", half: 0.2}', defaults)
    with pytest.raises(ModelError, match=match):
        compile_model(loads_model(text, "siblings.yaml"), use_cache=False)


@pytest.mark.parametrize("name", ["pi", "E", "sin", "t", "lambda", "in", "None"])
def test_a_definition_parameter_named_as_time_a_constant_or_a_function_is_refused(name):
    """`pi: 2.0` among a definition's parameters made pi 2 in that definition's laws, without a
    word: refused at its line, as a model's own parameter of that name is."""
    from bondsim_ros.bondgraph import compile_model

    text = SIBLINGS.replace('{c: "2*half", half: 0.2}', f'{{c: "2*half", half: 0.2, {name}: 2.0}}')
    with pytest.raises(ModelError, match=rf"siblings.yaml:6: Damper: parameters: '{name}' is reserved in laws"):
        compile_model(loads_model(text, "siblings.yaml"), use_cache=False)


def test_an_input_named_as_a_parameter_of_its_definition_is_refused():
    """Which u would `2*u` read: the signal or the instance's value? Neither silently."""
    from bondsim_ros.bondgraph import compile_model

    text = ("model: clash\ndefinitions:\n  Src:\n    parameters: {u: 1.0}\n    ports: {p: out}\n    components:\n"
            "      s: {type: Se, effort: '2*u', inputs: [u]}\n      c: {type: Constant, value: 3}\n"
            "    bonds: [[s, self.p]]\n    signals: [[c.out, s.u]]\n"
            "components:\n  src: {type: Src}\n  m: {type: I, inertia: 1.0}\nbonds: [[src.p, m]]\n")
    with pytest.raises(ModelError, match=r"clash.yaml:7: src\.s\.u: input name 'u' clashes with a parameter of the "
                                         r"definition it is in"):
        compile_model(loads_model(text, "clash.yaml"), use_cache=False)


def test_a_run_time_parameter_that_a_definition_hides_is_named_when_set(tmp_path, capsys):
    """The model's own c is read by no law (Damper's c hides it): --param c=3 or a sweep over it
    used to change nothing without a word. k is read, and set without a warning."""
    from bondsim_ros.cli import main
    from bondsim_ros.sweep import sweep

    path = tmp_path / "dampers.yaml"
    path.write_text(DAMPERS.replace("c: D2", 'c: "2*k"'))
    assert main(["simulate", str(path), "--t-end", "0.5", "--dt-out", "0.5", "--param", "c=3", "--param", "k=5",
                 "--csv", str(tmp_path / "x.csv"), "-q"]) == 0
    err = capsys.readouterr().err
    assert "warning: --param c: no law of model 'dampers' reads c, so its value changes nothing" in err, err
    assert "--param k" not in err, err
    result = sweep(str(path), {"c": [1.0, 2.0], "k": [4.0]}, t_end=0.5, dt_out=0.5, jobs=1)
    assert result.warnings == ["parameter c: no law of model 'dampers' reads it, so its values change nothing"]
    assert result.status == ["ok", "ok"]


@pytest.mark.parametrize("initial, p0", [('f0: "2"', 6.0), ("f0: 1e-3", 0.003), ("f0: 2", 6.0), ("p0: 1e-3", 0.001)])
def test_an_initial_flow_written_as_text_is_read_as_its_number(initial, p0):
    """YAML reads 1e-3 (no dot) and "2" as text: f0 times the inertia 3 made "222" of "2" (a run
    at v = 74 without a word) and raised TypeError for 1e-3."""
    from bondsim_ros.bondgraph import compile_model, simulate

    text = f"model: m\ncomponents:\n  F: {{type: Se, effort: 0}}\n  v: {{type: EffortJunction}}\n" \
           f"  m: {{type: I, inertia: 3, {initial}}}\nbonds: [[F, v], [v, m]]\n"
    result = simulate(compile_model(loads_model(text, "m.yaml"), use_cache=False), t_end=1.0, dt_out=1.0)
    assert result["m.p"][-1] == pytest.approx(p0, rel=1e-12)


@pytest.mark.parametrize("initial", ["f0: true", "p0: true", "f0: [1]"])
def test_an_initial_value_that_is_no_number_is_refused(initial):
    from bondsim_ros.bondgraph import compile_model

    text = f"model: m\ncomponents:\n  F: {{type: Se, effort: 0}}\n  v: {{type: EffortJunction}}\n" \
           f"  m: {{type: I, inertia: 3, {initial}}}\nbonds: [[F, v], [v, m]]\n"
    with pytest.raises(ModelError, match="must be a number"):
        compile_model(loads_model(text, "m.yaml"), use_cache=False)


def test_a_yaml_merge_key_may_be_overridden_and_a_written_twice_key_is_still_refused():
    """`m2: {<<: *mass, inertia: 2}` is YAML's way to reuse m1's entry with another inertia:
    it was refused as a duplicate key. Two inertias on one 1-junction pushed by 1 N share
    its speed t / 3: p1 = 1/3, p2 = 2/3 at t = 1."""
    from bondsim_ros.bondgraph import compile_model, simulate

    text = ("model: y\ncomponents:\n  F: {type: Se, effort: 1}\n  v: {type: EffortJunction}\n"
            "  m1: &mass {type: I, inertia: 1}\n  m2:\n    <<: *mass\n    inertia: 2\n"
            "bonds: [[F, v], [v, m1], [v, m2]]\n")
    result = simulate(compile_model(loads_model(text, "y.yaml"), use_cache=False), t_end=1.0, dt_out=1.0)
    assert result["m1.p"][-1] == pytest.approx(1 / 3) and result["m2.p"][-1] == pytest.approx(2 / 3)
    with pytest.raises(ModelError, match="y.yaml:3: duplicate key 'inertia'"):
        loads_model("model: y\ncomponents:\n  m: {type: I, inertia: 1, inertia: 2}\n", "y.yaml")


@pytest.mark.parametrize("block, says", [
    ("{type: PID, kp: 1, umin: lo, umax: hi}", r"\(umax - umin = hi - lo\) must be positive \(it is -1\)"),
    ('{type: Function, expr: "clip(u, lo, hi)", inputs: [u]}',
     r"clip's upper bound minus its lower = hi - lo\) must be non-negative \(it is -1\)"),
])
def test_limits_given_as_parameters_are_checked_as_numbers_are(block, says):
    """A PID's umin/umax and a clip's bounds as parameters with lo > hi: numbers there are refused
    when the model is read; parameters ran, the output held at lo where min(max(u, lo), hi) is
    hi. Refused before the run now, naming the parameters; a run with lo < hi is untouched."""
    from bondsim_ros.bondgraph import compile_model, simulate

    text = ("model: lim\nparameters: {lo: 1.0, hi: 0.0}\ncomponents:\n  c: {type: Ramp}\n"
            f"  f: {block}\n  i: {{type: Integrator}}\n"
            "signals: [[c.out, " + ("f.in_" if "PID" in block else "f.u") + "], [f.out, i.in_]]\n")
    compiled = compile_model(loads_model(text, "lim.yaml"), use_cache=False)
    with pytest.raises(ModelError, match=says):
        simulate(compiled, t_end=1.0, dt_out=0.5)
    assert simulate(compiled, t_end=1.0, dt_out=0.5, params={"lo": -1.0, "hi": 0.25}).stats["steps"] > 0


@pytest.mark.parametrize("value", [True, "1_0", "\u0661", np.array([2.0]), np.True_])
def test_a_model_parameter_takes_what_a_runs_params_take(value):
    """Model.parameter stored True as 1.0 and '1_0' as 10, which simulate(params=...) refuses."""
    with pytest.raises(ModelError, match=re.escape(f"parameter 'M': expected a number, got {value!r}")):
        Model("p").parameter("M", value)


def test_numpy_numbers_are_numbers_to_the_elements():
    """Se('F', np.int64(1)) was refused: 'expected a number or expression, got int64'."""
    from bondsim_ros.bondgraph import simulate

    m = Model("numpy_numbers")
    m.parameter("M", np.float64(1.5))
    m.add(Se("F", np.int64(1)), I("m", np.float32(1.5)))
    m.bond("F", "m")
    r = simulate(m, t_end=1.0, dt_out=0.5)
    assert r["m.p"][-1] == pytest.approx(1.0)  # p' = F = 1
    assert m.parameters["M"] == 1.5


def test_a_dc_motor_start_current_needs_a_numeric_inductance():
    """DCMotor(La='La', i0=1) failed with 'mot.La: f0 needs a constant linear inertia; give p0
    instead', an argument DCMotor does not have."""
    from bondsim_ros.bondgraph.library import DCMotor

    with pytest.raises(ModelError, match=r"mot: i0 needs La as a number .* got La = 'La'"):
        DCMotor("mot", Ra=1.0, La="La", K=0.05, J=1e-5, i0=1.0)
    DCMotor("mot", Ra=1.0, La="La", K=0.05, J=1e-5)  # a run-time La without i0
    DCMotor("mot", Ra=1.0, La=1e-3, K=0.05, J=1e-5, i0=1.0)


BEYOND_A_DOUBLE = 10 ** 400


@pytest.mark.parametrize("make, message", [
    (lambda: I("m", BEYOND_A_DOUBLE), "m (inertia): value must be finite, got an integer of about 401 digits"),
    (lambda: I("m", 1.0, p0=-BEYOND_A_DOUBLE), "m: initial value of p must be a finite number, got an integer of "
                                               "about 401 digits"),
    (lambda: I("m", 1.0, f0=BEYOND_A_DOUBLE), "m: initial value of p must be a finite number, got inf"),
    (lambda: I("m", BEYOND_A_DOUBLE, f0=1.0), "m: initial value of p must be a finite number, got inf"),
    (lambda: C("m", 1.0, q0=BEYOND_A_DOUBLE), "m: initial value of q must be a finite number, got an integer of "
                                              "about 401 digits"),
])
def test_a_whole_number_beyond_a_double_is_refused_as_not_finite(make, message):
    """I('m', 10**400) ended in OverflowError (math.isfinite, float(), format's g of the
    number): refused as 1e400, an infinite double, is."""
    m = Model("big")
    m.add(Se("F", 1.0), make())
    m.bond("F", "m")
    with pytest.raises(ModelError) as err:
        build_dae(m)
    assert str(err.value) == message


def test_a_model_parameter_beyond_a_double_is_refused_as_not_finite():
    from bondsim_ros.bondgraph.signals import Input

    with pytest.raises(ModelError, match=r"^p: parameter 'M' must be finite, got an integer of about 401 digits$"):
        Model("p").parameter("M", BEYOND_A_DOUBLE)
    with pytest.raises(ModelError, match=r"^s: Step: t0 must be a finite number, got an integer of about 401 digits$"):
        Input.step("s", t0=BEYOND_A_DOUBLE)
    with pytest.raises(ModelError, match=r"^s: keys must be a mapping key -> value of the shape, got 5$"):
        Input("s", 1.0, keys=5)
