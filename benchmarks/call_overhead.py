"""Fixed cost of the solver's calls on a two-unknown model (mass-spring-damper form), with C
kernels and with numba kernels (through the C core's cfunc adapters): what the ROS twin pays per
30 ms frame (``advance`` of one output time) and a fit per run (``BDFSolver`` + ``init``).

    python benchmarks/call_overhead.py          # medians of 2000-3000 calls, best of 3 rounds
"""
from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bondsim_ros.solver import BDFSolver, DAEProblem, SolverOptions, native  # noqa: E402

C_SOURCE = """
void res(double t, const double *y, const double *yp, const double *p, double *out) {
    out[0] = yp[0] - y[1]; out[1] = p[0] * yp[1] + p[1] * y[0] + p[2] * y[1]; }
void jac(double t, const double *y, const double *yp, const double *p, double cj, double *vals) {
    vals[0] = cj; vals[1] = p[1]; vals[2] = -1.0; vals[3] = p[0] * cj + p[2]; }
"""


def problem(res, jac):
    return DAEProblem(res, jac, indptr=np.array([0, 2, 4]), indices=np.array([0, 1, 0, 1]),
                      differential=np.array([True, True]), params=np.array([1.0, 4.0, 0.5]))


def median_us(f, n):
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e6


def measure(prob):
    s = BDFSolver(prob, options=SolverOptions(rtol=1e-6, atol=1e-8, hmax=0.01))
    s.init(0.0, [0.1, 0.0])
    s.advance([0.5])
    empty = median_us(lambda: s.advance([s.t]), 3000)
    frame = median_us(lambda: s.advance([s.t + 0.03]), 2000)

    def setup():
        BDFSolver(prob, options=SolverOptions(rtol=1e-6, atol=1e-8)).init(0.0, [0.1, 0.0], consistent=False)

    return empty, frame, median_us(setup, 1000)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        lib = native.load_library(native.build_library(C_SOURCE, "overhead", Path(tmp)))
        c_prob = problem(native.CKernel(lib, "res", "res"), native.CKernel(lib, "jac", "jac"))
        from bondsim_ros.solver.kernels import jacobian_kernel, residual_kernel

        @residual_kernel
        def res(t, y, yp, p, out):
            out[0] = yp[0] - y[1]
            out[1] = p[0] * yp[1] + p[1] * y[0] + p[2] * y[1]

        @jacobian_kernel
        def jac(t, y, yp, p, cj, vals):
            vals[0], vals[1] = cj, p[1]
            vals[2], vals[3] = -1.0, p[0] * cj + p[2]

        nb_prob = problem(res, jac)
        for label, prob in (("C kernels", c_prob), ("numba kernels", nb_prob)):
            best = [min(x) for x in zip(*(measure(prob) for _ in range(3)))]
            print(f"{label:14s} advance() with nothing to do {best[0]:5.1f} us, a 30 ms frame (3 steps) "
                  f"{best[1]:5.1f} us, BDFSolver + init {best[2]:5.1f} us")


if __name__ == "__main__":
    main()
