"""Set-up plus solve per run on small models: what a fit or a parameter sweep pays per simulation.

Per run, in one process, alternating, min of --repeat runs each (a shared machine's load only
adds time):

- ``new solver``: ``BDFSolver(problem)`` + ``init`` (consistent initial values) + ``advance``
  over all output times: a fresh solver per run, as a fit did before runs were reused;
- ``reused solver``: ``BDFSolver.reset`` (new parameters, consistent initial values) +
  ``advance`` on one solver: what ``simulate_many`` and the fit do per run;
- ``reused, values given``: ``reset(..., consistent=False)`` with the consistent values passed
  in, + ``advance``: the same work as the C-IDA run below, which is handed them;
- ``C-IDA``: SUNDIALS IDA from C (``benchmarks/c_ida.py``), one ``run`` per run: IDACreate,
  IDAInit, tolerances, the dense linear solver, the integration and IDAFree, from Python
  through ctypes (its set-up is part of each run). With ``--sundials-prefix PREFIX`` (or
  ``BONDSIM_SUNDIALS_PREFIX``) it is the SUNDIALS built there from source (``-O3
  -march=native``, IDA's fastest build here), else Debian's ``libsundials-dev``;
- ``simulate`` / ``simulate_many``: the simulation layer, output columns and results included
  (``simulate`` builds nothing: it is handed the compiled model): a sweep of --repeat
  ``simulate`` calls against one ``simulate_many`` over the same sets, per run, the faster of
  5 sweeps each.

The models are solver_bench's mass-spring-damper (10 s, output every 0.01 s) and DC motor
(0.5 s, every 0.5 ms), at rtol 1e-6, atol 1e-8. Each run gets another parameter set
(a model parameter made a run-time one: the damper's, the load's friction), and the
reused solver's results are checked to be bit for bit the new solver's.

    python benchmarks/small_runs.py [--repeat 300] [--sundials-prefix PREFIX] [--record]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import record  # noqa: E402  (benchmarks/record.py, beside this script)
from bondsim_ros.solver import SolverOptions  # noqa: E402

RTOL, ATOL = 1e-6, 1e-8
OPTIONS = SolverOptions(rtol=RTOL, atol=ATOL)  # made once: a run's cost is the solver's


def models():
    """(name, example builder, its argument made a run-time parameter, the values of the runs,
    t_end, dt_out)."""
    from bondsim_ros.models import examples as ex

    return [("mass-spring-damper", ex.mass_spring_damper, "b", [0.3, 0.4, 0.5], 10.0, 0.01),
            ("DC motor, rigid gear (index 2)", ex.dc_motor, "bL", [5e-5, 1e-4, 2e-4], 0.5, 0.0005)]


def run_time_model(build, name):
    """The example with parameter ``name`` turned into a run-time parameter of the same value."""
    import inspect

    default = inspect.signature(build).parameters[name].default
    model = build(**{name: "p_" + name})
    model.parameter("p_" + name, default)
    return model


def measure(label, build, pname, values, t_end, dt_out, repeat, prefix=None):
    from c_ida import CIDA

    from bondsim_ros.bondgraph.codegen import compile_model
    from bondsim_ros.bondgraph.simulation import output_times, simulate, simulate_many
    from bondsim_ros.solver import BDFSolver

    model = run_time_model(build, pname)
    c = compile_model(model)
    t_out = output_times(0.0, t_end, dt_out)
    sets = [{"p_" + pname: v} for v in values]
    vecs = []
    for s in sets:
        p = np.array(c.params, dtype=float)
        p[c.param_index("p_" + pname)] = s["p_" + pname]
        vecs.append(p)
    problem = c.problem()
    # the consistent values of each set, handed to the runs that are given them
    starts = []
    for p in vecs:
        problem.params[:] = p
        y0, yp0 = BDFSolver(problem, options=OPTIONS).init(0.0, c.y0)
        starts.append((y0.copy(), yp0.copy()))
    problem.params[:] = vecs[0]
    reused = BDFSolver(problem, options=OPTIONS)
    reused.init(0.0, c.y0)
    given = BDFSolver(problem, options=OPTIONS)
    given.init(0.0, c.y0)
    cida = CIDA(model, c, log=lambda msg: None, prefix=prefix)

    def new_solver(k):
        problem.params[:] = vecs[k]
        s = BDFSolver(problem, options=OPTIONS)
        s.init(0.0, c.y0)
        return s.advance(t_out)

    def reuse(k):
        reused.reset(0.0, c.y0, params=vecs[k])
        return reused.advance(t_out)

    def reuse_given(k):
        given.reset(0.0, starts[k][0], starts[k][1], params=vecs[k], consistent=False)
        return given.advance(t_out)

    def ida(k):
        return cida.run(t_out, starts[k][0], starts[k][1], RTOL, ATOL, params=vecs[k])

    def sim(k):
        return simulate(c, t_end, dt_out, options=OPTIONS, params=sets[k])

    many_sets = [sets[k % len(sets)] for k in range(repeat)]

    # bit for bit: the reused solver against new ones, simulate_many against simulate
    for k in range(len(sets)):
        a, b = new_solver(k), reuse(k)
        assert all(np.array_equal(x, y) for x, y in zip(a, b)), f"{label}: reset differs from a new solver"
    for k, r in enumerate(simulate_many(c, sets, t_end, dt_out, options=OPTIONS)):
        assert np.array_equal(r.data, sim(k).data), f"{label}: simulate_many differs from simulate"

    fns = {"new solver": new_solver, "reused solver": reuse, "reused, values given": reuse_given, "C-IDA": ida}
    times = {key: [] for key in fns}
    for i in range(repeat + 1):  # alternating; the first round warms up
        k = i % len(sets)
        for key, fn in fns.items():
            tic = time.perf_counter()
            fn(k)
            el = time.perf_counter() - tic
            if i:
                times[key].append(el)
    runs = {key: min(v) for key, v in times.items()}
    # the simulation layer: a sweep of `simulate` calls against one `simulate_many` over the same
    # sets, alternating, per run of the faster of 5 sweeps each (outputs and results included)
    sweeps = {"simulate, per run of a sweep": [], "simulate_many, per run": []}
    for _ in range(5):
        sweeps["simulate, per run of a sweep"].append(_timed(lambda: [sim(i % len(sets)) for i in range(repeat)]))
        sweeps["simulate_many, per run"].append(
            _timed(lambda: simulate_many(c, many_sets, t_end, dt_out, options=OPTIONS)))
    runs.update({key: min(v) / repeat for key, v in sweeps.items()})
    reuse(0)  # the counters of both on the first set
    steps = reused.stats["steps"]
    ida_steps = ida(0)[-1]["steps"]
    return {"model": label, "n": c.n, "outputs": len(t_out), "steps": steps, "ida_steps": ida_steps,
            "us_per_run": {key: v * 1e6 for key, v in runs.items()},
            "ratio_reused_to_new": runs["reused solver"] / runs["new solver"],
            "ratio_reused_to_cida": runs["reused solver"] / runs["C-IDA"],
            "ratio_given_to_cida": runs["reused, values given"] / runs["C-IDA"],
            "ratio_many_to_simulate": runs["simulate_many, per run"] / runs["simulate, per run of a sweep"]}


def _timed(fn) -> float:
    tic = time.perf_counter()
    fn()
    return time.perf_counter() - tic


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=300, help="runs of each kind per model (min taken)")
    ap.add_argument("--sundials-prefix", default=None,
                    help="install prefix of a SUNDIALS built from source (default: $BONDSIM_SUNDIALS_PREFIX, "
                         "else Debian's libsundials-dev)")
    record.add_argument(ap, "small_runs")
    a = ap.parse_args()
    from c_ida import native_prefix

    prefix = a.sundials_prefix or native_prefix()
    ida_build = "native (-O3 -march=native)" if prefix else "Debian's libsundials-dev"
    print(f"C-IDA: {ida_build}")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}; min of {a.repeat} runs each, in microseconds")
    out = []
    for label, build, pname, values, t_end, dt_out in models():
        r = measure(label, build, pname, values, t_end, dt_out, a.repeat, prefix)
        out.append(r)
        print(f"{label} (n = {r['n']}, {r['outputs']} output times, {r['steps']} steps, C-IDA {r['ida_steps']}):")
        for key, us in r["us_per_run"].items():
            print(f"  {key:30s} {us:8.1f}")
        print(f"  reused / new {r['ratio_reused_to_new']:.2f}; reused / C-IDA {r['ratio_reused_to_cida']:.2f}; "
              f"reused with values given / C-IDA {r['ratio_given_to_cida']:.2f}; "
              f"simulate_many / simulate {r['ratio_many_to_simulate']:.2f}")
    if a.record:
        record.write("small_runs", sys.argv[1:], {"rtol": RTOL, "atol": ATOL, "repeat": a.repeat, "ida": ida_build,
                                                  "models": out}, placeholders={"--sundials-prefix": "PREFIX"})


if __name__ == "__main__":
    main()
