"""The sparse LU of the C core: SuiteSparse's KLU where klu.h is found, else (or with
BONDSIM_NO_KLU=1) the core's own left-looking LU. Both solve the same runs to round-off."""
import numpy as np
import pytest

from bondsim_ros.solver import BDFSolver, SolverOptions, _ccore, native


def _run(problem, y0, t_out, **kw):
    s = BDFSolver(problem, options=SolverOptions(linear_solver="sparse", **kw))
    s.init(0.0, y0)
    Y, YP = s.advance(t_out)
    return s, Y, YP


def test_the_build_reports_klu_where_its_header_is_and_own_with_bondsim_no_klu(monkeypatch):
    monkeypatch.delenv("BONDSIM_NO_KLU", raising=False)
    assert _ccore.sparse_lu() == ("klu" if _ccore.klu_flags() else "own")
    monkeypatch.setenv("BONDSIM_NO_KLU", "1")
    assert _ccore.sparse_lu() == "own"
    # the two builds are two libraries in the cache: one never stands in for the other
    monkeypatch.delenv("BONDSIM_NO_KLU")
    with_klu = {native.library_path(_ccore.source(), "bdf_core", native.cache_root() / "solver", f, libs)
                for f, libs in _ccore._configs()}
    monkeypatch.setenv("BONDSIM_NO_KLU", "1")
    without = {native.library_path(_ccore.source(), "bdf_core", native.cache_root() / "solver", f, libs)
               for f, libs in _ccore._configs()}
    assert without < with_klu if _ccore.klu_flags() else without == with_klu


def test_without_the_header_the_core_is_built_without_klu(tmp_path, monkeypatch):
    monkeypatch.delenv("BONDSIM_NO_KLU", raising=False)
    monkeypatch.setattr(_ccore, "KLU_INCLUDE_DIRS", (str(tmp_path),))
    monkeypatch.setattr(_ccore, "_klu_flags", [])
    monkeypatch.setattr(_ccore, "_libs", {})  # as in a fresh process
    assert _ccore.klu_flags() == ()
    assert _ccore.sparse_lu() == "own"


def test_a_klu_build_that_fails_falls_back_to_the_own_lu_and_is_not_tried_again(tmp_path, monkeypatch):
    """A klu.h the compiler refuses (as a header without its library would fail to link): the
    core is built without KLU, and the failure is remembered next to it in the cache."""
    monkeypatch.delenv("BONDSIM_NO_KLU", raising=False)
    include = tmp_path / "include"
    include.mkdir()
    (include / "klu.h").write_text('#error "not the real klu.h"\n#define KLU_MAIN_VERSION 9\n')
    monkeypatch.setattr(_ccore, "KLU_INCLUDE_DIRS", (str(include),))
    monkeypatch.setattr(_ccore, "_klu_flags", [])
    monkeypatch.setattr(_ccore, "_libs", {})
    monkeypatch.setattr(native, "cache_root", lambda: tmp_path / "cache")
    assert "-DBONDSIM_KLU" in _ccore.klu_flags()
    assert _ccore.sparse_lu() == "own"
    folder = tmp_path / "cache" / "solver"
    (failed,) = folder.glob("*.failed")
    assert "could not compile the BDF core" in failed.read_text()
    built = sorted(p.name for p in folder.glob("*.so"))
    assert len(built) == 1
    monkeypatch.setattr(_ccore, "_libs", {})  # a later process: no compiler call at all

    def no_compiler(*args, **kw):
        raise AssertionError("the failed KLU build was tried again")

    monkeypatch.setattr(native, "_run_all", no_compiler)
    assert _ccore.sparse_lu() == "own"
    assert _ccore._built()


@pytest.mark.skipif(not _ccore.klu_flags(), reason="no klu.h on this machine")
def test_klu_and_the_own_lu_solve_the_same_run(monkeypatch):
    from test_solver import linear_problem

    t_out = np.linspace(0.05, 3.0, 60)
    monkeypatch.delenv("BONDSIM_NO_KLU", raising=False)
    s_klu, Y_klu, YP_klu = _run(linear_problem(), [1.0, 0.0, 0.5], t_out, rtol=1e-9, atol=1e-12)
    monkeypatch.setenv("BONDSIM_NO_KLU", "1")
    s_own, Y_own, YP_own = _run(linear_problem(), [1.0, 0.0, 0.5], t_out, rtol=1e-9, atol=1e-12)
    assert (s_klu.sparse_lu, s_own.sparse_lu) == ("klu", "own")
    np.testing.assert_allclose(Y_klu, Y_own, rtol=0, atol=1e-13)
    assert s_klu.stats == s_own.stats


def test_a_dense_solver_has_no_sparse_lu():
    from test_solver import linear_problem

    assert BDFSolver(linear_problem(), options=SolverOptions(linear_solver="dense")).sparse_lu is None


@pytest.mark.skipif(not _ccore.klu_flags(), reason="no klu.h on this machine")
def test_the_dual_arm_with_klu_and_with_the_own_lu(monkeypatch):
    """The 225-unknown dual-arm (sparse LU under linear_solver="auto") over its 2 s with KLU and
    with the core's own sparse LU. KLU pivots differently, which moves a Newton iteration's last
    digits; the step decisions are discrete, so such a digit can flip one, after which the two
    runs are two valid solutions parting by up to the tolerance's error (rtol 1e-6: 1.7e-5 of a
    state's range, 258 steps against 240; at rtol 3e-7 they parted by 1.1e-6 with the kernels
    before). So: the same trajectory to round-off until the first flip (t <= 0.5 s here: 4e-10
    measured), both within reach of a rtol 1e-10 run at the end, and about the same work."""
    from bondsim_ros.bondgraph import compile_model
    from bondsim_ros.robots.dualarm.model import dualarm

    c = compile_model(dualarm())
    t_out = np.arange(1, 201) * 0.01
    runs = {}
    for no_klu in ("", "1"):
        monkeypatch.setenv("BONDSIM_NO_KLU", no_klu)
        s = BDFSolver(c.problem(), options=SolverOptions(rtol=1e-6, atol=1e-8))
        s.init(0.0, c.y0)
        Y, _ = s.advance(t_out)
        runs[s.sparse_lu] = (Y, s.stats)
    assert sorted(runs) == ["klu", "own"]
    s = BDFSolver(c.problem(), options=SolverOptions(rtol=1e-10, atol=1e-12))
    s.init(0.0, c.y0)
    Y_ref, _ = s.advance(t_out)
    (Y_klu, st_klu), (Y_own, st_own) = runs["klu"], runs["own"]
    scale = np.maximum(np.abs(Y_ref).max(axis=0), 1e-3)
    early = t_out <= 0.5
    assert np.max(np.abs(Y_klu - Y_own)[early] / scale) < 1e-8
    for Y in (Y_klu, Y_own):  # 3.6e-5 and 1.9e-5 measured
        assert np.max(np.abs(Y - Y_ref) / scale) < 1e-4
    assert st_klu["steps"] > 200
    for key in ("steps", "rejected", "newton_iters", "lu_factorizations"):
        assert abs(st_klu[key] - st_own[key]) <= 0.15 * st_own[key] + 3, key


@pytest.mark.skipif(not _ccore.klu_flags(), reason="no klu.h on this machine")
def test_klus_factorisations_are_freed_with_the_solver_and_made_again_after_a_release(monkeypatch):
    import gc

    from test_solver import linear_problem

    monkeypatch.delenv("BONDSIM_NO_KLU", raising=False)
    freed = []
    real = _ccore._release
    monkeypatch.setattr(_ccore, "_release", lambda lib, s: (freed.append(s.klu), real(lib, s)))
    t_out = np.linspace(0.05, 1.0, 20)
    s, Y, _ = _run(linear_problem(), [1.0, 0.0, 0.5], t_out, rtol=1e-8, atol=1e-10)
    assert s._core.s.klu  # made by the first factorisation
    s._core.release(keep_symbolic=False)
    assert not s._core.s.klu
    s.reset(0.0, [1.0, 0.0, 0.5])
    assert np.array_equal(s.advance(t_out)[0], Y)  # analysed and factored afresh: the same run
    assert s._core.s.klu
    del s
    gc.collect()
    assert len(freed) == 1 and freed[0]  # the finalizer freed KLU's state of that solver


def test_a_pattern_with_a_row_twice_in_a_column_takes_the_own_lu_which_sums_them():
    from bondsim_ros.solver import DAEProblem, jacobian_kernel, residual_kernel

    @residual_kernel
    def res(t, y, yp, p, out):
        out[0] = yp[0] + p[0] * y[0]
        out[1] = y[1] - y[0] * y[0]

    @jacobian_kernel
    def jac(t, y, yp, p, cj, vals):  # d out0 / d y0 in two parts: cj and p0
        vals[0], vals[1], vals[2] = cj, p[0], -2.0 * y[0]
        vals[3] = 1.0

    prob = DAEProblem(res, jac, np.array([0, 3, 4], np.int64), np.array([0, 0, 1, 1], np.int64),
                      np.array([True, False]), np.array([1.5]))
    t_out = np.linspace(0.1, 2.0, 20)
    runs = {}
    for linear_solver in ("sparse", "dense"):
        s = BDFSolver(prob, options=SolverOptions(rtol=1e-9, atol=1e-12, linear_solver=linear_solver))
        s.init(0.0, [1.0, 1.0])
        runs[linear_solver] = (s.sparse_lu, s.advance(t_out)[0])
    assert runs["sparse"][0] == "own" and runs["dense"][0] is None
    np.testing.assert_allclose(runs["sparse"][1][:, 0], np.exp(-1.5 * t_out), rtol=1e-6)
    np.testing.assert_allclose(runs["sparse"][1], runs["dense"][1], rtol=0, atol=1e-12)
