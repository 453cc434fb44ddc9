"""Numba core of the variable-step, variable-order BDF method for F(t, y, y') = 0.

The whole step loop (predictor, simplified Newton, LU, error test, step and order selection,
dense output) runs compiled. The model's residual and Jacobian arrive as numba first-class
functions with the fixed signatures of ``kernels``: one compiled, disk-cached core serves every
model, and calls through function pointers cost nanoseconds.

The method follows SciPy's BDF (backward differences D, step change by the R U transform,
Shampine & Reichelt 1997) with kappa = 0, adapted to implicit DAEs: with
cj = alpha_k / h, the new point solves F(t_new, y_pred + d, (psi + d) cj) = 0 for d, with the
iteration matrix G = dF/dy + cj dF/dy'.
"""
import math
import warnings

import numpy as np
from numba import njit, types
from numba.core.errors import NumbaExperimentalFeatureWarning

# the model kernels go through the event functions as first-class function values, which numba
# flags as experimental once per compilation of this module (a user saw it on the first run)
warnings.filterwarnings("ignore", message="First-class function type feature is experimental",
                        category=NumbaExperimentalFeatureWarning)

from .kernels import JAC_T, RES_T, f8, f8a

MAX_ORDER = 5
NEWTON_MAXITER = 4
MAX_FACTOR = 2.0  # largest step growth after a success (IDA's eta_max; 10 gave the Robotino 6.7k
# rejected steps against 5.8k, for 5 % fewer Newton iterations)
SAFETY = 0.9
GROW_MIN = 2.0  # a step grows only by at least this factor after a success (IDA; 1.2 gave the
# Robotino fewer steps but more Newton iterations, LUs and rejections: 95.7k / 12.5k / 7.5k)
RATE_MAX = 0.9  # Newton fails when its convergence rate exceeds this (IDA)
CJ_RATIO_LO, CJ_RATIO_HI = 0.6, 1.0 / 0.6  # keep G while cj/cj_lu stays inside (IDA: (1-0.25)/(1+0.25))
ETA_MIN_EF = 0.25  # smallest step factor after an error-test failure (IDA)
ETA_CF = 0.25  # step factor after a Newton convergence failure (IDA)
NEWTON_TOL = 0.03  # Newton stops when its estimated remaining error (weighted RMS) is below this; IDA's
# epcon is 0.33, which leaves the Robotino's no-slip constraints satisfied only to 4e-7 m/s (test: 1e-7)

# status codes
OK, UNDERFLOW, SINGULAR, TOO_MANY, NONFINITE = 0, 1, 2, 3, 4


@njit(cache=True)
def lu_factor(A, piv):
    """In-place LU with partial pivoting; returns -1 or the column where it broke down."""
    n = A.shape[0]
    for k in range(n):
        p = k
        big = abs(A[k, k])
        for i in range(k + 1, n):
            v = abs(A[i, k])
            if v > big:
                big, p = v, i
        piv[k] = p
        if big == 0.0 or not math.isfinite(big):
            return k
        if p != k:
            for j in range(n):
                tmp = A[k, j]
                A[k, j] = A[p, j]
                A[p, j] = tmp
        inv = 1.0 / A[k, k]
        for i in range(k + 1, n):
            A[i, k] *= inv
            l = A[i, k]
            if l != 0.0:
                for j in range(k + 1, n):
                    A[i, j] -= l * A[k, j]
    return -1


@njit(cache=True)
def lu_solve(A, piv, b):
    n = A.shape[0]
    for k in range(n):
        p = piv[k]
        if p != k:
            tmp = b[k]
            b[k] = b[p]
            b[p] = tmp
    for i in range(n):
        s = b[i]
        for j in range(i):
            s -= A[i, j] * b[j]
        b[i] = s
    for i in range(n - 1, -1, -1):
        s = b[i]
        for j in range(i + 1, n):
            s -= A[i, j] * b[j]
        b[i] = s / A[i, i]


@njit(cache=True)
def splu_factor(n, indptr, indices, vals, q, Lp, Li, Lx, Up, Ui, Ux, prow, pinv, x):
    """Sparse LU of the CSC matrix with column order q: left-looking, partial pivoting.

    Column k: scatter A[:, q[k]], apply the previous columns of L in pivot order (a valid
    topological order for a left-looking update), pick the largest remaining entry as pivot.
    L is unit lower (stored without its diagonal, original row indices), U holds the pivots.
    Cost O(n^2 + flops): meant for the tens-to-hundreds of unknowns of bond-graph models.
    Returns -1, the column that had no pivot, or -2 when the fill outgrew the work arrays.
    """
    cap_l, cap_u = Li.shape[0], Ui.shape[0]
    for i in range(n):
        pinv[i] = -1
        x[i] = 0.0
    nl = 0
    nu = 0
    Lp[0] = 0
    Up[0] = 0
    for k in range(n):
        col = q[k]
        for t in range(indptr[col], indptr[col + 1]):
            x[indices[t]] += vals[t]
        for j in range(k):
            u = x[prow[j]]
            if u != 0.0:
                for t in range(Lp[j], Lp[j + 1]):
                    x[Li[t]] -= Lx[t] * u
        # U column k (entries on already pivotal rows), in pivot order
        for j in range(k):
            u = x[prow[j]]
            if u != 0.0:
                if nu >= cap_u:
                    return -2
                Ui[nu] = j
                Ux[nu] = u
                nu += 1
            x[prow[j]] = 0.0
        piv_row, big = -1, 0.0
        for i in range(n):
            if pinv[i] < 0 and abs(x[i]) > big:
                big, piv_row = abs(x[i]), i
        if piv_row < 0 or not math.isfinite(big):
            for i in range(n):
                x[i] = 0.0
            return k
        pivot = x[piv_row]
        if nu >= cap_u:
            return -2
        Ui[nu] = k
        Ux[nu] = pivot
        nu += 1
        Up[k + 1] = nu
        prow[k] = piv_row
        pinv[piv_row] = k
        x[piv_row] = 0.0
        for i in range(n):
            if pinv[i] < 0 and x[i] != 0.0:
                if nl >= cap_l:
                    return -2
                Li[nl] = i
                Lx[nl] = x[i] / pivot
                nl += 1
            x[i] = 0.0
        Lp[k + 1] = nl
    return -1


@njit(cache=True)
def splu_solve(n, q, Lp, Li, Lx, Up, Ui, Ux, prow, b, w):
    """Solve A z = b in place with the factors of splu_factor (w: work vector)."""
    # forward: L y = P b, in pivot order
    for k in range(n):
        w[k] = b[prow[k]]
        v = w[k]
        if v != 0.0:
            for t in range(Lp[k], Lp[k + 1]):
                b[Li[t]] -= Lx[t] * v
    # backward: U z' = y, U stored by columns with the pivot last in each column
    for k in range(n - 1, -1, -1):
        end = Up[k + 1] - 1
        zk = w[k] / Ux[end]
        w[k] = zk
        for t in range(Up[k], end):
            w[Ui[t]] -= Ux[t] * zk
    for k in range(n):
        b[q[k]] = w[k]


@njit(cache=True)
def change_D(D, order, factor):
    """Rescale the difference array for a new step h_new = factor * h (R U transform)."""
    k = order + 1
    rescale_D(D, order, factor, np.zeros((k, k)), np.zeros((k, k)), np.zeros((k, k)), np.zeros((k, D.shape[1])))


@njit(cache=True)
def rescale_D(D, order, factor, R, U, RU, tmp):
    """change_D with caller-owned work arrays (R, U, RU at least (order+1)^2, tmp (order+1) x n):
    the step loop rescales D at every step-size change, so nothing is allocated here.
    R[i, j] = prod_{m=1..i} (m - 1 - factor j) / m; U is R at factor 1."""
    k = order + 1
    for j in range(k):
        R[0, j] = 1.0
        U[0, j] = 1.0
    for i in range(1, k):
        for j in range(k):
            R[i, j] = R[i - 1, j] * (i - 1 - factor * j) / i
            U[i, j] = U[i - 1, j] * (i - 1 - 1.0 * j) / i
    for i in range(k):
        for j in range(k):
            s = 0.0
            for m in range(k):
                s += R[i, m] * U[m, j]
            RU[i, j] = s
    n = D.shape[1]
    for i in range(k):
        for m in range(n):
            tmp[i, m] = 0.0
        for l in range(k):
            c = RU[l, i]
            if c != 0.0:
                for m in range(n):
                    tmp[i, m] += c * D[l, m]
    for i in range(k):
        for m in range(n):
            D[i, m] = tmp[i, m]


@njit(cache=True)
def wrms(v, scale, mask, nmask):
    s = 0.0
    for i in range(v.shape[0]):
        if mask[i]:
            r = v[i] / scale[i]
            s += r * r
    return math.sqrt(s / max(nmask, 1))


@njit(cache=True)
def assemble(G, vals, indptr, indices):
    n = G.shape[0]
    for i in range(n):
        for j in range(n):
            G[i, j] = 0.0
    for j in range(n):
        for k in range(indptr[j], indptr[j + 1]):
            G[indices[k], j] += vals[k]


@njit(cache=True)
def dense_output(t_eval, t, h, order, D, y_out, yp_out):
    """BDF interpolating polynomial through the last order+1 points (and its derivative)."""
    n = D.shape[1]
    for m in range(n):
        y_out[m] = D[0, m]
        yp_out[m] = 0.0
    prod = 1.0  # prod_{l<j} x_l
    dprod = 0.0  # d/dt of prod
    for j in range(1, order + 1):
        shift = t - h * (j - 1)
        denom = h * j
        x = (t_eval - shift) / denom
        dprod = dprod * x + prod / denom
        prod = prod * x
        for m in range(n):
            y_out[m] += D[j, m] * prod
            yp_out[m] += D[j, m] * dprod


i8a = types.int64[::1]

# Named slots of the state arrays the Python side keeps between advance() calls.
S_T, S_H, S_CJ_LU, S_SS, S_CJ_LAST = 0, 1, 2, 3, 4  # float state
N_FLOAT_STATE = 5
I_ORDER, I_N_EQUAL, I_LU_VALID, I_FAIL_VAR, I_K_OUT, I_MAX_ORDER = 0, 1, 2, 3, 4, 5  # integer state
I_EVENT_PHASE = 6  # after an event restart: 1 no step accepted yet, 2 start-up phase (bit flags)
N_INT_STATE = 7
# slots of the stats array
ST_STEPS, ST_REJECTED, ST_NEWTON, ST_JAC, ST_LU, ST_RES, ST_NEWTON_FAIL, ST_MAX_ORDER, ST_ERR_FAIL = range(9)
ST_EVENTS, ST_EVENT_RESTARTS = 9, 10  # mode switches at located roots; those that restarted the method
N_STATS = 11

# Newton outcomes
CONVERGED, SLOW, NOT_FINITE = 0, 1, 2


@njit(cache=True)
def predict(D, order, gamma, alpha_k, atol, rtol, y_pred, psi, scale):
    """Predictor y_pred = sum D[0..k], psi = sum gamma_j D[j] / alpha_k, and the error weights."""
    n = D.shape[1]
    for m in range(n):
        s = 0.0
        for j in range(order + 1):
            s += D[j, m]
        y_pred[m] = s
        scale[m] = atol[m] + rtol * abs(s)
        ps = 0.0
        for j in range(1, order + 1):
            ps += gamma[j] * D[j, m]
        psi[m] = ps / alpha_k


@njit(cache=True)
def factorize(jac, t, y, yp, p, cj, vals, sparse, indptr, indices, G, piv, q, Lp, Li, Lx, Up, Ui, Ux, prow, pinv,
              xw):
    """New Jacobian values and LU of G = dF/dy + cj dF/dy'. Returns -1, the unknown without a
    pivot, or -2 when the sparse fill outgrew its work space."""
    n = indptr.shape[0] - 1
    jac(t, y, yp, p, cj, vals)
    if sparse:
        bad = splu_factor(n, indptr, indices, vals, q, Lp, Li, Lx, Up, Ui, Ux, prow, pinv, xw)
        if bad >= 0:
            bad = q[bad]
        return bad
    assemble(G, vals, indptr, indices)
    return lu_factor(G, piv)


@njit(cache=True)
def newton_solve(res, t_new, y_pred, psi, cj, cj_lu, p, scale, tol, ss, sparse, G, piv, q, Lp, Li, Lx, Up, Ui,
                 Ux, prow, xw, y, yp, d, r, dy, stats):
    """Simplified Newton for F(t_new, y_pred + d, (psi + d) cj) = 0 with the factorised G(cj_lu).

    IDA's convergence test: after iteration m the rate is (|dy_m| / |dy_0|)^(1/m) and the
    remaining error is estimated as ss |dy_m| with ss = rate / (1 - rate); on the first
    iteration ss is the value carried from earlier steps (the caller resets it when G or cj
    changed). When cj differs from the factorised cj_lu the correction is scaled by
    2 / (1 + cj / cj_lu) (IDA's linear-solver scaling). Returns (outcome, ss).
    """
    n = y.shape[0]
    for m in range(n):
        d[m] = 0.0
        y[m] = y_pred[m]
    scal = 2.0 / (1.0 + cj / cj_lu) if cj != cj_lu else 1.0
    norm0 = 0.0
    for it in range(NEWTON_MAXITER):
        for m in range(n):
            yp[m] = (psi[m] + d[m]) * cj
        res(t_new, y, yp, p, r)
        stats[ST_RES] += 1
        for m in range(n):
            if not math.isfinite(r[m]):
                return NOT_FINITE, ss
            dy[m] = -r[m]
        if sparse:
            splu_solve(n, q, Lp, Li, Lx, Up, Ui, Ux, prow, dy, xw)
        else:
            lu_solve(G, piv, dy)
        stats[ST_NEWTON] += 1
        nrm = 0.0
        for m in range(n):
            dy[m] *= scal
            w_ = dy[m] / scale[m]
            nrm += w_ * w_
            y[m] += dy[m]
            d[m] += dy[m]
        nrm = math.sqrt(nrm / n)
        if it == 0:
            norm0 = nrm
            if nrm <= 1e-4 * tol:
                return CONVERGED, ss
        else:
            rate = (nrm / norm0) ** (1.0 / it) if norm0 > 0 else 0.0
            if rate > RATE_MAX:
                return SLOW, ss
            ss = rate / (1.0 - rate)
        if ss * nrm <= tol:
            return CONVERGED, ss
    return SLOW, ss


@njit(cache=True)
def error_norm(v, coef, y, atol, rtol, mask, nmask, scale):
    """WRMS norm of coef * v over the masked unknowns, weights atol + rtol |y| (left in scale)."""
    s = 0.0
    for m in range(v.shape[0]):
        scale[m] = atol[m] + rtol * abs(y[m])
        if mask[m]:
            e = coef * v[m] / scale[m]
            s += e * e
    return math.sqrt(s / max(nmask, 1))


@njit(cache=True)
def worst_unknown(v, scale, mask):
    worst, wv = 0, -1.0
    for m in range(v.shape[0]):
        if mask[m] and abs(v[m] / scale[m]) > wv:
            wv, worst = abs(v[m] / scale[m]), m
    return worst


@njit(cache=True)
def after_error_failure(err_n, err_m, order, n_fail):
    """Order and step factor after the n_fail-th error-test failure of a step (IDA's rule):
    first 0.9 (2 err + 1e-4)^(-1/(k+1)) within [0.25, 0.9], then a quarter; the order drops by
    one when the k-th difference is no larger than the (k+1)-th (IDA compares the terms
    k err_(k-1) and (k+1) err_k), and to 1 from the third failure on."""
    if n_fail >= 3:
        return 1, ETA_MIN_EF
    new_order = order
    if order > 1 and order * err_m <= (order + 1) * err_n:
        new_order = order - 1
    if n_fail == 1:
        e = err_n if new_order == order else err_m
        factor = SAFETY * (2.0 * e + 1e-4) ** (-1.0 / (new_order + 1))
        return new_order, min(SAFETY, max(ETA_MIN_EF, factor))
    return new_order, ETA_MIN_EF


@njit(cache=True)
def after_success(err_m, err_n, err_p, order, max_order):
    """Order (k-1, k, k+1 by the largest admissible step, SciPy's rule) and step factor, with
    IDA's hysteresis: grow only by >= 2 (capped at MAX_FACTOR), shrink to within [0.5, 0.9],
    else keep h (a kept h keeps the factorised iteration matrix and the Newton rate)."""
    f_m = err_m ** (-1.0 / order) if (order > 1 and err_m > 0) else (0.0 if order <= 1 else math.inf)
    f_n = err_n ** (-1.0 / (order + 1)) if err_n > 0 else math.inf
    f_p = 0.0
    if order < max_order:
        f_p = err_p ** (-1.0 / (order + 2)) if err_p > 0 else math.inf
    best = f_n
    new_order = order
    if f_m > best:
        best, new_order = f_m, order - 1
    if f_p > best:
        best, new_order = f_p, order + 1
    factor = SAFETY * best
    if factor >= GROW_MIN:
        factor = min(MAX_FACTOR, factor)
    elif factor < 1.0:
        factor = min(SAFETY, max(0.5, factor))
    else:
        factor = 1.0
    return new_order, factor


@njit(cache=True)
def emit_outputs(t_out, k_out, t, h, order, D, started, Yout, YPout, yo, ypo):
    """Write every output time the current step covers; returns the next output index."""
    n = D.shape[1]
    while k_out < t_out.shape[0] and t_out[k_out] <= t:
        if started:
            dense_output(t_out[k_out], t, h, order, D, yo, ypo)
        else:  # no step yet: the initial point
            for m in range(n):
                yo[m] = D[0, m]
                ypo[m] = D[1, m] / h
        for m in range(n):
            Yout[k_out, m] = yo[m]
            YPout[k_out, m] = ypo[m]
        k_out += 1
    return k_out


@njit(cache=True)
def update_differences(D, order, d):
    """Accepted step: the new backward differences from the correction d (SciPy's update)."""
    n = D.shape[1]
    for m in range(n):
        D[order + 2, m] = d[m] - D[order + 1, m]
        D[order + 1, m] = d[m]
    for i in range(order, -1, -1):
        for m in range(n):
            D[i, m] += D[i + 1, m]


# --------------------------------------------------------------------------------------
# Event location: the model's discontinuities as root functions (docs/solver.md, "Events")
# --------------------------------------------------------------------------------------
# The model's residual is smooth within a step because every discontinuous construct in it
# (Mod/floor, a Piecewise condition, Min/Max/clip) reads a *mode* frozen in the parameter
# array, p[n_par + k]. ``roots(t, y, yp, p, g)`` gives the switching functions g_j with the
# current modes; ``modes(t, y, yp, p, m)`` the modes the laws themselves would pick at a point.
# After an accepted step the core looks for a sign change of some g_j, finds its earliest root
# on the step's interpolating polynomial, ends the step there and continues with the new modes.
EV_NONE, EV_SWITCHED, EV_RESTART = 0, 1, 2
EVENT_NEWTON_TOL = 1e-3  # landing and probe solves: the restart derivative divides their error by
# the probe step, so they are converged further than a normal step (NEWTON_TOL)
SAME_TOL = 1e-3  # a mode switch that moves the Newton solution by less than this (WRMS, in
# tolerance units) at the root and one step ahead only relabels the same law (Mod at a multiple)
PROBE = 0.1  # the probe step that measures y' after a restart, as a fraction of the first step


@njit(cache=True)
def crosses(a, b):
    """g went from a to b through zero. A start exactly on zero is no crossing: the mode there
    was chosen for the side the solution moves to (natural modes just past the root)."""
    return (a < 0.0 and b >= 0.0) or (a > 0.0 and b <= 0.0)


@njit(cache=True)
def any_crossing(g_lo, g_hi):
    for j in range(g_lo.shape[0]):
        if crosses(g_lo[j], g_hi[j]):
            return True
    return False


@njit(cache=True)
def roots_at(roots, tt, t, h, order, D, p, yo, ypo, g):
    """Root functions at tt on the interpolating polynomial of the step that ends at t."""
    dense_output(tt, t, h, order, D, yo, ypo)
    roots(tt, yo, ypo, p, g)


@njit(cache=True)
def locate_root(roots, t_lo, t_hi, g_lo, g_hi, t, h, order, D, p, ttol, yo, ypo, g_mid):
    """Earliest root in (t_lo, t_hi] of the functions that change sign there, on the step's
    interpolating polynomial: secant steps with bracketing and the Illinois weight (an end
    kept twice has its value halved), all functions at once, the one whose secant root comes
    first choosing the trial point (the scheme of IDA's root finder, IDARootfind). Returns the
    right end of the final bracket (at most ttol wide), where the crossing function already
    has its new sign; g_lo and g_hi hold the bracket's values."""
    alpha = 1.0
    side = 0
    for _ in range(200):
        if t_hi - t_lo <= ttol:
            break
        frac = 0.0
        for j in range(g_lo.shape[0]):
            if crosses(g_lo[j], g_hi[j]):
                den = g_hi[j] - alpha * g_lo[j]
                f = abs(g_hi[j] / den) if den != 0.0 else 0.5
                if f > frac:
                    frac = f
        t_mid = t_hi - (t_hi - t_lo) * min(frac, 1.0)
        if t_mid - t_lo < 0.5 * ttol:
            t_mid = t_lo + 0.5 * ttol
        if t_hi - t_mid < 0.5 * ttol:
            t_mid = t_hi - 0.5 * ttol
        roots_at(roots, t_mid, t, h, order, D, p, yo, ypo, g_mid)
        if any_crossing(g_lo, g_mid):
            t_hi = t_mid
            g_hi[:] = g_mid
            alpha = 0.5 if side == 2 else 1.0
            side = 2
        else:
            t_lo = t_mid
            g_lo[:] = g_mid
            alpha = 2.0 if side == 1 else 1.0
            side = 1
    return t_hi


@njit(cache=True)
def modes_changed(p, n_par, m_new):
    for k in range(m_new.shape[0]):
        if p[n_par + k] != m_new[k]:
            return True
    return False


@njit(cache=True)
def swap_modes(p, n_par, m):
    """Exchange the modes in p with those in m."""
    for k in range(m.shape[0]):
        tmp = p[n_par + k]
        p[n_par + k] = m[k]
        m[k] = tmp


@njit(cache=True)
def lu_apply(sparse, G, piv, q, Lp, Li, Lx, Up, Ui, Ux, prow, xw, b):
    n = b.shape[0]
    if sparse:
        splu_solve(n, q, Lp, Li, Lx, Up, Ui, Ux, prow, b, xw)
    else:
        lu_solve(G, piv, b)


@njit(cache=True)
def same_law(res, t, y, yp, h, p, n_par, m_new, scale, sparse, G, piv, q, Lp, Li, Lx, Up, Ui, Ux, prow, xw,
             r_a, r_b, y_ahead):
    """Do the new modes give the same residual as the old ones, at (t, y, y') and one step h
    ahead along y'? Measured as the Newton correction the difference would cause (the
    factorised iteration matrix applied to it), in tolerance units. True for a relabelling
    (Mod crossing a multiple inside a law that stays continuous and smooth there), false for a
    jump or a kink."""
    n = y.shape[0]
    for k in range(2):
        for m in range(n):
            y_ahead[m] = y[m] + (h * yp[m] if k == 1 else 0.0)
        res(t + (h if k == 1 else 0.0), y_ahead, yp, p, r_a)
        swap_modes(p, n_par, m_new)
        res(t + (h if k == 1 else 0.0), y_ahead, yp, p, r_b)
        swap_modes(p, n_par, m_new)
        for m in range(n):
            r_b[m] -= r_a[m]
            if not math.isfinite(r_b[m]):
                return False
        lu_apply(sparse, G, piv, q, Lp, Li, Lx, Up, Ui, Ux, prow, xw, r_b)
        s = 0.0
        for m in range(n):
            e = r_b[m] / scale[m]
            s += e * e
        if not math.sqrt(s / n) <= SAME_TOL:
            return False
    return True


@njit(cache=True)
def probe_derivative(res, jac, t, h_r, y_star, yp_minus, p, atol, rtol, sparse, indptr, indices, vals, G, piv, q,
                     Lp, Li, Lx, Up, Ui, Ux, prow, pinv, xw, y_pred, psi, scale, y, yp, d, r, dy, yp_plus, stats):
    """y' just after a restart at (t, y*): one backward-Euler step of PROBE h_r with the new
    modes, y'+ = (y(t + eps) - y*)/eps, error O(eps y''). It sees what F(t, y*, y') = 0 alone
    does not: a kink in an index-2 constraint (a roller's rolling arm) changes y' only through
    the constraint's derivative. Falls back to the old y' if the probe does not converge.
    Returns the cj of the factorisation it left in G."""
    n = y_star.shape[0]
    eps_p = PROBE * h_r
    cj = 1.0 / eps_p
    for m in range(n):
        psi[m] = eps_p * yp_minus[m]
        y_pred[m] = y_star[m] + psi[m]
        yp[m] = yp_minus[m]
        scale[m] = atol[m] + rtol * abs(y_star[m])
        yp_plus[m] = yp_minus[m]
    bad = factorize(jac, t + eps_p, y_pred, yp, p, cj, vals, sparse, indptr, indices, G, piv, q, Lp, Li, Lx, Up,
                    Ui, Ux, prow, pinv, xw)
    stats[ST_JAC] += 1
    stats[ST_LU] += 1
    if bad != -1:
        return -1.0
    outcome, _ = newton_solve(res, t + eps_p, y_pred, psi, cj, cj, p, scale, EVENT_NEWTON_TOL, 20.0, sparse, G, piv,
                              q, Lp, Li, Lx, Up, Ui, Ux, prow, xw, y, yp, d, r, dy, stats)
    if outcome == CONVERGED:
        for m in range(n):
            yp_plus[m] = (y[m] - y_star[m]) / eps_p
    return cj


@njit(cache=True)
def after_restart_step(d, D, order, max_order, h, hmax, err_const, y, atol, rtol, mask, nmask, scale):
    """IDA's start-up phase after an event restart: each accepted step raises the order by
    one and doubles h, without waiting for order + 1 equal steps, until the first failure, the
    highest order, or the order-(k-1) estimate being no larger than the order-k one (the
    order would not rise). An order-1 restart otherwise needed some 30 steps to grow back
    (the Robotino's roller switches). Returns (order, factor, still ramping)."""
    if order >= max_order or h >= hmax:
        return order, 1.0, False
    if order > 1:
        err_n = error_norm(d, err_const[order], y, atol, rtol, mask, nmask, scale)
        err_m = error_norm(D[order], err_const[order - 1], y, atol, rtol, mask, nmask, scale)
        if err_m <= err_n:
            return order, 1.0, False
    return order + 1, min(2.0, hmax / h), True


@njit(cache=True)
def reprobe(res, jac, t, h, D, yp_restart, p, atol, rtol, sparse, indptr, indices, vals, G, piv, q, Lp, Li, Lx, Up,
            Ui, Ux, prow, pinv, xw, y_pred, psi, scale, y, yp, d, r, dy, stats):
    """The first step after an event restart failed its error test and shrank to h: measure
    y' again over PROBE h. A derivative measured over the longer probe would keep an error
    ~ eps |y''| in the predictor however small h gets (a step input into a PID at rtol 1e-12
    then underflowed, as without events). Returns the cj of the new factorisation."""
    y_star = D[0].copy()
    cj = probe_derivative(res, jac, t, h, y_star, yp_restart, p, atol, rtol, sparse, indptr, indices, vals, G, piv,
                          q, Lp, Li, Lx, Up, Ui, Ux, prow, pinv, xw, y_pred, psi, scale, y, yp, d, r, dy, yp_restart,
                          stats)
    for m in range(y_star.shape[0]):
        D[1, m] = h * yp_restart[m]
    return cj


@njit(cache=True)
def handle_events(res, jac, roots, modes, n_par, t_prev, t, h, order, D, D_prev, D_acc, p, atol, rtol, mask, nmask,
                  hmax, hmin, alpha, gamma, g_old, g_new, g_lo, g_hi, g_mid, m_new, sparse, indptr, indices, vals, G, piv, q,
                  Lp, Li, Lx, Up, Ui, Ux, prow, pinv, xw, y_pred, psi, d, y, yp, r, r2, dy, scale, yo, ypo, yq, ypq,
                  stats, t_out, k_out, Yout, YPout, wR, wU, wRU, wD, cj_lu):
    """After the step t_prev -> t (D updated with the correction d; D_prev: work space for the
    differences before it), whose end has a switching function with a new sign. Returns
    (code, t, h, k_out, cj_lu):
    EV_NONE: nothing to do; EV_SWITCHED: new modes, the step (possibly shortened to end at
    the root, D and h then those of the shorter step) continues as it is, because the law did
    not change there; EV_RESTART: the step was ended at the root, outputs up to it written,
    the modes switched and D reset for an order-1 restart at t with step h (y' measured by
    a probe step), the iteration matrix to be formed anew."""
    # the differences before the step, rows 0..order+1 (all a step of this order reads), by
    # undoing update_differences: cheaper than copying D at every step
    n = D.shape[1]
    for i in range(order + 1):
        for m in range(n):
            D_prev[i, m] = D[i, m] - D[i + 1, m]
    for m in range(n):
        D_prev[order + 1, m] = d[m] - D[order + 2, m]
    dense_output(t, t, h, order, D, yo, ypo)
    roots(t, yo, ypo, p, g_new)
    if not any_crossing(g_old, g_new):
        g_old[:] = g_new
        return EV_NONE, t, h, k_out, cj_lu
    # the modes the laws pick just past the step end (on the polynomial extended by ttol: a
    # function that ends exactly on zero, t <= 0.5 at t = 0.5, is judged on the far side)
    eps = 2.220446049250313e-16
    ttol = 100.0 * eps * (abs(t) + abs(h))
    dense_output(t + ttol, t, h, order, D, yq, ypq)
    modes(t + ttol, yq, ypq, p, m_new)
    if not modes_changed(p, n_par, m_new):
        g_old[:] = g_new
        return EV_NONE, t, h, k_out, cj_lu
    if same_law(res, t, yo, ypo, h, p, n_par, m_new, scale, sparse, G, piv, q, Lp, Li, Lx, Up, Ui, Ux, prow, xw,
                r, r2, yq):
        swap_modes(p, n_par, m_new)
        stats[ST_EVENTS] += 1
        roots(t, yo, ypo, p, g_old)
        return EV_SWITCHED, t, h, k_out, cj_lu
    # locate the earliest root whose modes differ
    t_lo = t_prev
    g_lo[:] = g_old
    t_root = t
    found = False
    for _ in range(g_old.shape[0] + 1):
        g_hi[:] = g_new
        t_root = locate_root(roots, t_lo, t, g_lo, g_hi, t, h, order, D, p, ttol, yo, ypo, g_mid)
        dense_output(t_root + ttol, t, h, order, D, yo, ypo)
        modes(t_root + ttol, yo, ypo, p, m_new)
        if modes_changed(p, n_par, m_new):
            found = True
            break
        # a crossing that changes no mode: search on past it
        t_lo = t_root
        g_lo[:] = g_hi
        if not any_crossing(g_lo, g_new):
            break
    if not found:
        g_old[:] = g_new
        return EV_NONE, t, h, k_out, cj_lu
    # end the step at the root: redo it from t_prev with the shorter step
    D_acc[:, :] = D
    t_anchor, h_anchor = t, h
    h_land = t_root - t_prev
    landed = t_root >= t - ttol
    if not landed and h_land > hmin:
        D[:, :] = D_prev
        rescale_D(D, order, h_land / h, wR, wU, wRU, wD)
        predict(D, order, gamma, alpha[order], atol, rtol, y_pred, psi, scale)
        cj = alpha[order] / h_land
        for m in range(y.shape[0]):
            yp[m] = psi[m] * cj
        bad = factorize(jac, t_root, y_pred, yp, p, cj, vals, sparse, indptr, indices, G, piv, q, Lp, Li, Lx, Up,
                        Ui, Ux, prow, pinv, xw)
        stats[ST_JAC] += 1
        stats[ST_LU] += 1
        if bad == -1:
            cj_lu = cj
            outcome, _ = newton_solve(res, t_root, y_pred, psi, cj, cj, p, scale, EVENT_NEWTON_TOL, 20.0, sparse, G,
                                      piv, q, Lp, Li, Lx, Up, Ui, Ux, prow, xw, y, yp, d, r, dy, stats)
            if outcome == CONVERGED:
                update_differences(D, order, d)
                t_anchor, h_anchor = t_root, h_land
                landed = True
        else:
            cj_lu = -1.0
        if not landed:
            D[:, :] = D_acc  # interpolate the accepted step instead
    # outputs up to the root from the polynomial of the (shortened) step
    n_out = t_out.shape[0]
    while k_out < n_out and t_out[k_out] <= t_root:
        dense_output(t_out[k_out], t_anchor, h_anchor, order, D, yo, ypo)
        Yout[k_out, :] = yo
        YPout[k_out, :] = ypo
        k_out += 1
    dense_output(t_root, t_anchor, h_anchor, order, D, yq, ypq)  # y*, y'- (old modes)
    if t_anchor == t_root and cj_lu > 0:
        for m in range(yq.shape[0]):
            scale[m] = atol[m] + rtol * abs(yq[m])
        if same_law(res, t_root, yq, ypq, h_anchor, p, n_par, m_new, scale, sparse, G, piv, q, Lp, Li, Lx, Up, Ui,
                    Ux, prow, xw, r, r2, yo):
            swap_modes(p, n_par, m_new)
            stats[ST_EVENTS] += 1
            roots(t_root, yq, ypq, p, g_old)
            return EV_SWITCHED, t_root, h_anchor, k_out, cj_lu
    # a new law from here: switch the modes and restart at order 1
    swap_modes(p, n_par, m_new)
    stats[ST_EVENTS] += 1
    stats[ST_EVENT_RESTARTS] += 1
    for m in range(yq.shape[0]):
        scale[m] = atol[m] + rtol * abs(yq[m])
    h_r = min(h, hmax)
    if order >= 2:  # first step from |y''| ~ |D[2]| / h^2 of the last polynomial: BDF1 error h^2 |y''| / 4
        ypp = wrms(D[2], scale, mask, nmask) / (h_anchor * h_anchor)
        if ypp > 0.0:
            h_r = min(h_r, 1.0 / math.sqrt(ypp))
    h_r = max(h_r, 100.0 * hmin)
    cj_lu = probe_derivative(res, jac, t_root, h_r, yq, ypq, p, atol, rtol, sparse, indptr, indices, vals, G, piv, q,
                             Lp, Li, Lx, Up, Ui, Ux, prow, pinv, xw, y_pred, psi, scale, y, yp, d, r, dy, ypo, stats)
    D[:, :] = 0.0
    for m in range(yq.shape[0]):
        D[0, m] = yq[m]
        D[1, m] = h_r * ypo[m]
    roots(t_root, yq, ypo, p, g_old)
    return EV_RESTART, t_root, h_r, k_out, cj_lu


@njit(types.int64(RES_T, JAC_T, i8a, i8a, types.boolean[::1], types.boolean[::1], f8a, f8, f8a, f8,
                  f8a, f8, types.float64[:, ::1], f8a, i8a, types.float64[:, ::1], types.float64[:, ::1],
                  types.int64, f8a, i8a, i8a,
                  types.boolean, i8a, i8a, i8a, f8a, i8a, i8a, f8a, i8a, i8a, f8a,
                  RES_T, RES_T, types.int64, types.int64), cache=True)
def advance(res, jac, indptr, indices, diff, index2, p, rtol, atol, hmax, t_out, t_stop, D, st, ist, Yout, YPout,
            max_steps, G_work, piv, stats,
            sparse, q, Lp, Li, Lx, Up, Ui, Ux, prow, pinv, xw,
            roots, modes, n_par, n_roots):
    """Integrate until every t_out is covered (dense output) or a failure.

    st, ist: the solver state between calls, in the named slots S_* and I_* above.
    index2: the higher-index algebraic unknowns, whose Newton weights are divided by h (h < 1).
    stats: counters in the ST_* slots. sparse: factor G with splu_factor (column order q,
    factors in Lp..Ux) instead of dense LU. roots, modes: the model's switching functions
    (n_roots of them) and natural modes, the modes living in p[n_par:] (handle_events).
    Returns a status code; on failure
    ist[I_FAIL_VAR] holds the variable (or pivot column) index involved, or -3 - i after a
    Newton divergence whose largest residual was equation i.
    """
    n = D.shape[1]
    t = st[S_T]
    h = st[S_H]
    cj_lu = st[S_CJ_LU]
    ss = st[S_SS]
    cj_last = st[S_CJ_LAST]
    order = ist[I_ORDER]
    n_equal = ist[I_N_EQUAL]
    lu_valid = ist[I_LU_VALID] == 1
    k_out = ist[I_K_OUT]
    max_order = min(max(ist[I_MAX_ORDER], 1), MAX_ORDER)
    nmask = 0
    for i in range(n):
        if diff[i]:
            nmask += 1
    mask = diff.copy()
    if nmask == 0:
        for i in range(n):
            mask[i] = True
        nmask = n
    G = G_work.reshape((n, n)) if not sparse else G_work.reshape((1, G_work.shape[0]))
    vals = np.zeros(indices.shape[0])
    gamma = np.zeros(MAX_ORDER + 2)
    for k in range(1, MAX_ORDER + 2):
        gamma[k] = gamma[k - 1] + 1.0 / k
    alpha = gamma  # kappa = 0: alpha_k = gamma_k
    err_const = np.zeros(MAX_ORDER + 2)
    for k in range(MAX_ORDER + 2):
        err_const[k] = 1.0 / (k + 1)
    eps = 2.220446049250313e-16
    newton_tol = NEWTON_TOL
    y_pred = np.zeros(n)
    psi = np.zeros(n)
    d = np.zeros(n)
    y = np.zeros(n)
    yp = np.zeros(n)
    r = np.zeros(n)
    scale = np.zeros(n)
    dy = np.zeros(n)
    yo = np.zeros(n)
    ypo = np.zeros(n)
    wR = np.zeros((MAX_ORDER + 1, MAX_ORDER + 1))
    wU = np.zeros((MAX_ORDER + 1, MAX_ORDER + 1))
    wRU = np.zeros((MAX_ORDER + 1, MAX_ORDER + 1))
    wD = np.zeros((MAX_ORDER + 1, n))
    n_out = t_out.shape[0]
    steps_here = 0
    status = OK
    # event location work space (empty without root functions)
    g_old, g_new = np.zeros(n_roots), np.zeros(n_roots)
    g_lo, g_hi, g_mid = np.zeros(n_roots), np.zeros(n_roots), np.zeros(n_roots)
    m_new = np.zeros(p.shape[0] - n_par)
    D_prev = np.zeros((D.shape[0] if n_roots > 0 else 1, n))
    D_acc = np.zeros((D.shape[0] if n_roots > 0 else 1, n))
    r2, yq, ypq = np.zeros(n), np.zeros(n), np.zeros(n)
    yp_restart = np.zeros(n)  # y' measured at the last event restart
    restart_pending = (ist[I_EVENT_PHASE] & 1) != 0  # no step accepted since that restart
    ramp = (ist[I_EVENT_PHASE] & 2) != 0  # IDA's start-up phase after it (after_restart_step)
    if restart_pending:  # still order 1 with D[1] = h y'
        for m in range(n):
            yp_restart[m] = D[1, m] / h
    if n_roots > 0:
        if stats[ST_STEPS] > 0:
            dense_output(t, t, h, order, D, yo, ypo)
        else:
            for m in range(n):
                yo[m] = D[0, m]
                ypo[m] = D[1, m] / h
        roots(t, yo, ypo, p, g_old)

    while True:
        k_out = emit_outputs(t_out, k_out, t, h, order, D, stats[ST_STEPS] > 0, Yout, YPout, yo, ypo)
        if k_out >= n_out:
            break
        if steps_here >= max_steps:
            status = TOO_MANY
            break
        # step size limits
        hmin = 10 * eps * max(abs(t), 1.0)
        if h > hmax:
            rescale_D(D, order, hmax / h, wR, wU, wRU, wD)
            h = hmax
            n_equal = 0
        if t + h > t_stop:
            hn = t_stop - t
            rescale_D(D, order, hn / h, wR, wU, wRU, wD)
            h = hn
            n_equal = 0
        n_err_fail = 0
        while True:  # attempts at this step
            if h < hmin:
                status = UNDERFLOW
                break
            t_new = t + h
            predict(D, order, gamma, alpha[order], atol, rtol, y_pred, psi, scale)
            if h < 1.0:
                # Hairer & Wanner's scaling of index-2 unknowns (RADAU5): a multiplier's Newton
                # correction carries the residuals' round-off times cj ~ 1/h, so at rtol 1e-12
                # it never met atol + rtol |y| and every smaller step made it worse (seed 003
                # slider crank: step size underflow at t = 1.34 s). Weighed by 1/h, the test
                # bounds h * correction, what the differential unknowns see of it. Never
                # tighter than the plain weight (no scaling for h >= 1).
                for m in range(n):
                    if index2[m]:
                        scale[m] /= h
            cj = alpha[order] / h
            # IDA's rule: the factorised G(cj_lu) serves while cj/cj_lu stays in [0.6, 1.67]
            if lu_valid and not (CJ_RATIO_LO <= cj / cj_lu <= CJ_RATIO_HI):
                lu_valid = False
            ss_old_g = ss  # the rate measured on the G in use, before any reset below
            if cj != cj_last or n_equal == 0:
                # the carried rate says nothing about a different cj (IDA), and it is measured
                # afresh after each step decision: at fixed cj a rate carried unmeasured over
                # many one-iteration steps left Newton errors that made the seed 003 slider
                # crank 20x less accurate at rtol 1e-8
                ss = 100.0
            cj_last = cj
            while True:  # Newton, with one retry on a fresh G if an old one converged badly
                fresh = False
                if not lu_valid:
                    for m in range(n):
                        yp[m] = psi[m] * cj
                    bad = factorize(jac, t_new, y_pred, yp, p, cj, vals, sparse, indptr, indices, G, piv, q,
                                    Lp, Li, Lx, Up, Ui, Ux, prow, pinv, xw)
                    stats[ST_JAC] += 1
                    stats[ST_LU] += 1
                    if bad != -1:
                        ist[I_FAIL_VAR] = bad
                        status = SINGULAR
                        break
                    lu_valid = True
                    # IDA restarts the rate estimate at 20 after every new G. When the step has
                    # grown (cj fell), a G fresh at the new cj converges at least as fast as the
                    # old one did, so its measured rate stands: 4.1k of the Robotino's 10k new
                    # G then converge in one iteration instead of two (Newton iterations 94.4k ->
                    # 91.8k). Not when the step shrank: the iteration matrix of an index-2 DAE
                    # gets worse conditioned as h falls (the index-2 pendulum underflowed at rtol
                    # 1e-5 when a rate from the larger step was trusted there).
                    ss = min(ss_old_g, 20.0) if cj < cj_lu else 20.0
                    cj_lu = cj
                    fresh = True
                outcome, ss = newton_solve(res, t_new, y_pred, psi, cj, cj_lu, p, scale, newton_tol, ss, sparse, G,
                                           piv, q, Lp, Li, Lx, Up, Ui, Ux, prow, xw, y, yp, d, r, dy, stats)
                if outcome == CONVERGED or fresh:
                    break
                lu_valid = False  # refresh the iteration matrix and retry
                ss_old_g = 20.0  # the old G's rate was too slow: nothing to carry
                stats[ST_NEWTON_FAIL] += 1
            if status != OK:
                break
            if outcome != CONVERGED:
                stats[ST_NEWTON_FAIL] += 1
                # remember the equation with the largest residual: named if h underflows
                worst, wv = 0, -1.0
                for m in range(n):
                    a = abs(r[m]) if math.isfinite(r[m]) else math.inf
                    if a > wv:
                        wv, worst = a, m
                ist[I_FAIL_VAR] = -3 - worst
                ramp = False
                # IDA: a quarter of the step and a new iteration matrix
                rescale_D(D, order, ETA_CF, wR, wU, wRU, wD)
                h *= ETA_CF
                n_equal = 0
                lu_valid = False
                stats[ST_REJECTED] += 1
                continue
            err_n = error_norm(d, err_const[order], y, atol, rtol, mask, nmask, scale)
            if err_n <= 1.0:
                break
            n_err_fail += 1
            stats[ST_REJECTED] += 1
            stats[ST_ERR_FAIL] += 1
            ist[I_FAIL_VAR] = worst_unknown(d, scale, mask)
            err_m = error_norm(D[order], err_const[order - 1], y, atol, rtol, mask, nmask, scale) \
                if order > 1 else math.inf
            new_order, factor = after_error_failure(err_n, err_m, order, n_err_fail)
            order = new_order
            rescale_D(D, order, factor, wR, wU, wRU, wD)
            h *= factor
            n_equal = 0
            ramp = ramp and restart_pending  # a failure after the first step ends the start-up phase
            if restart_pending:
                cj_lu = reprobe(res, jac, t, h, D, yp_restart, p, atol, rtol, sparse, indptr, indices, vals, G, piv,
                                q, Lp, Li, Lx, Up, Ui, Ux, prow, pinv, xw, y_pred, psi, scale, y, yp, d, r, dy, stats)
                lu_valid = False
        if status != OK:
            break
        # accept
        restart_pending = False
        stats[ST_STEPS] += 1
        if order > stats[ST_MAX_ORDER]:
            stats[ST_MAX_ORDER] = order
        steps_here += 1
        n_equal += 1
        t_prev = t
        t = t_new
        if t_stop - t < hmin:
            # a step cut to t_stop can end an ulp short of it (t + (t_stop - t) rounds): the
            # next step would be below hmin and underflow, so it has arrived
            t = t_stop
        ev = EV_RESTART  # (any value but EV_NONE: switching functions to be checked)
        update_differences(D, order, d)
        if n_roots > 0:
            # the converged step point (y, yp): a sign change of a switching function?
            roots(t, y, yp, p, g_new)
            if not any_crossing(g_old, g_new):
                g_old[:] = g_new
                ev = EV_NONE
        if n_roots > 0 and ev != EV_NONE:
            t_end = t
            ev, t, h, k_out, cj_ev = handle_events(
                res, jac, roots, modes, n_par, t_prev, t, h, order, D, D_prev, D_acc, p, atol, rtol, mask, nmask,
                hmax, hmin, alpha, gamma, g_old, g_new, g_lo, g_hi, g_mid, m_new, sparse, indptr, indices, vals, G,
                piv, q, Lp, Li, Lx, Up, Ui, Ux, prow, pinv, xw, y_pred, psi, d, y, yp, r, r2, dy, scale, yo, ypo, yq,
                ypq, stats, t_out, k_out, Yout, YPout, wR, wU, wRU, wD, cj_lu)
            if cj_ev != cj_lu:  # the landing or the probe factorised G anew
                cj_lu = cj_ev
                lu_valid = cj_ev > 0
            if ev == EV_RESTART:
                order = 1
                n_equal = 0
                lu_valid = False
                restart_pending = True
                ramp = True
                for m in range(n):
                    yp_restart[m] = D[1, m] / h
                continue
            if t != t_end:  # the step was shortened to end at the root: a new step size
                n_equal = 0
                continue
        if ramp:
            order, factor, ramp = after_restart_step(d, D, order, max_order, h, hmax, err_const, y, atol, rtol, mask,
                                                     nmask, scale)
            if ramp:
                rescale_D(D, order, factor, wR, wU, wRU, wD)
                h *= factor
                n_equal = 0
                continue
        if n_equal < order + 1:
            continue
        # order and step selection (every order+1 equal steps)
        err_m = error_norm(D[order], err_const[order - 1], y, atol, rtol, mask, nmask, scale) \
            if order > 1 else math.inf
        err_p = error_norm(D[order + 2], err_const[order + 1], y, atol, rtol, mask, nmask, scale) \
            if order < max_order else math.inf
        err_n = error_norm(d, err_const[order], y, atol, rtol, mask, nmask, scale)
        new_order, factor = after_success(err_m, err_n, err_p, order, max_order)
        if h * factor > hmax:
            factor = hmax / h
        order = new_order
        if factor != 1.0:
            rescale_D(D, order, factor, wR, wU, wRU, wD)
            h *= factor
        n_equal = 0
    st[S_T], st[S_H], st[S_CJ_LU], st[S_SS], st[S_CJ_LAST] = t, h, cj_lu, ss, cj_last
    ist[I_ORDER], ist[I_N_EQUAL], ist[I_LU_VALID], ist[I_K_OUT] = order, n_equal, 1 if lu_valid else 0, k_out
    ist[I_EVENT_PHASE] = (1 if restart_pending else 0) + (2 if ramp else 0)
    return status
