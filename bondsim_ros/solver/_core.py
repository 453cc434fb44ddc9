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

import numpy as np
from numba import njit, types

from .kernels import JAC_T, RES_T, f8, f8a

MAX_ORDER = 5
NEWTON_MAXITER = 4
MIN_FACTOR = 0.2
MAX_FACTOR = 10.0
SAFETY = 0.9

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
    # R[i, j] = prod_{m=1..i} (m - 1 - factor * j) / m, for i, j = 0..order
    R = np.zeros((order + 1, order + 1))
    U = np.zeros((order + 1, order + 1))
    for j in range(order + 1):
        R[0, j] = 1.0
        U[0, j] = 1.0
    for i in range(1, order + 1):
        for j in range(order + 1):
            R[i, j] = R[i - 1, j] * (i - 1 - factor * j) / i
            U[i, j] = U[i - 1, j] * (i - 1 - 1.0 * j) / i
    RU = R @ U
    n = D.shape[1]
    tmp = np.zeros((order + 1, n))
    for i in range(order + 1):
        for k in range(order + 1):
            c = RU[k, i]
            if c != 0.0:
                for m in range(n):
                    tmp[i, m] += c * D[k, m]
    for i in range(order + 1):
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


@njit(types.int64(RES_T, JAC_T, i8a, i8a, types.boolean[::1], f8a, f8, f8a, f8,
                  f8a, f8, types.float64[:, ::1], f8a, i8a, types.float64[:, ::1], types.float64[:, ::1],
                  types.int64, f8a, i8a, i8a,
                  types.boolean, i8a, i8a, i8a, f8a, i8a, i8a, f8a, i8a, i8a, f8a), cache=True)
def advance(res, jac, indptr, indices, diff, p, rtol, atol, hmax, t_out, t_stop, D, st, ist, Yout, YPout,
            max_steps, G_work, piv, stats,
            sparse, q, Lp, Li, Lx, Up, Ui, Ux, prow, pinv, xw):
    """Integrate until every t_out is covered (dense output) or a failure.

    st:  [t, h, cj_lu, ...]   ist: [order, n_equal_steps, lu_valid, fail_var, k_out_done]
    stats: [steps, rejected, newton_iters, jac_evals, lu_factorizations, res_evals, newton_fail, max_order]
    sparse: factor G with splu_factor (column order q, factors in Lp..Ux) instead of dense LU.
    Returns a status code; on failure ist[3] holds the variable (or pivot column) index involved,
    or -3 - i after a Newton divergence whose largest residual was equation i.
    """
    n = D.shape[1]
    t = st[0]
    h = st[1]
    order = ist[0]
    n_equal = ist[1]
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
    alpha = gamma.copy()
    err_const = np.zeros(MAX_ORDER + 2)
    for k in range(MAX_ORDER + 2):
        err_const[k] = 1.0 / (k + 1)
    eps = 2.220446049250313e-16
    newton_tol = max(10 * eps / rtol, min(0.03, math.sqrt(rtol)))
    y_pred = np.zeros(n)
    psi = np.zeros(n)
    d = np.zeros(n)
    y = np.zeros(n)
    yp = np.zeros(n)
    r = np.zeros(n)
    scale = np.zeros(n)
    dy = np.zeros(n)
    errv = np.zeros(n)
    yo = np.zeros(n)
    ypo = np.zeros(n)
    k_out = ist[4]
    n_out = t_out.shape[0]
    steps_here = 0
    lu_valid = ist[2] == 1
    cj_lu = st[2]

    while k_out < n_out:
        # emit outputs already covered by the current polynomial
        while k_out < n_out and t_out[k_out] <= t:
            dense_output(t_out[k_out], t, h if stats[0] > 0 else 1.0, order if stats[0] > 0 else 0, D, yo, ypo)
            if stats[0] == 0:  # no step yet: the initial point
                for m in range(n):
                    ypo[m] = D[1, m] / h
            for m in range(n):
                Yout[k_out, m] = yo[m]
                YPout[k_out, m] = ypo[m]
            k_out += 1
        if k_out >= n_out:
            break
        if steps_here >= max_steps:
            st[0], st[1], st[2] = t, h, cj_lu
            ist[0], ist[1], ist[2], ist[4] = order, n_equal, 1 if lu_valid else 0, k_out
            return TOO_MANY
        # step size limits
        hmin = 10 * eps * max(abs(t), 1.0)
        if h > hmax:
            change_D(D, order, hmax / h)
            h = hmax
            n_equal = 0
            lu_valid = False
        if t + h > t_stop:
            hn = t_stop - t
            change_D(D, order, hn / h)
            h = hn
            n_equal = 0
            lu_valid = False
        step_accepted = False
        while not step_accepted:
            if h < hmin:
                st[0], st[1] = t, h
                ist[0], ist[1], ist[4] = order, n_equal, k_out
                return UNDERFLOW
            t_new = t + h
            for m in range(n):
                s = 0.0
                for j in range(order + 1):
                    s += D[j, m]
                y_pred[m] = s
                scale[m] = atol[m] + rtol * abs(s)
                ps = 0.0
                for j in range(1, order + 1):
                    ps += gamma[j] * D[j, m]
                psi[m] = ps / alpha[order]
            cj = alpha[order] / h
            converged = False
            fresh = False
            while not converged:
                if not lu_valid or cj != cj_lu:
                    for m in range(n):
                        yp[m] = psi[m] * cj
                    jac(t_new, y_pred, yp, p, cj, vals)
                    stats[3] += 1
                    if sparse:
                        bad = splu_factor(n, indptr, indices, vals, q, Lp, Li, Lx, Up, Ui, Ux, prow, pinv, xw)
                        if bad == -2:
                            ist[3] = -2
                            st[0], st[1] = t, h
                            return SINGULAR
                        if bad >= 0:
                            bad = q[bad]
                    else:
                        assemble(G, vals, indptr, indices)
                        bad = lu_factor(G, piv)
                    stats[4] += 1
                    if bad >= 0:
                        ist[3] = bad
                        st[0], st[1] = t, h
                        return SINGULAR
                    lu_valid = True
                    cj_lu = cj
                    fresh = True
                # simplified Newton on d
                for m in range(n):
                    d[m] = 0.0
                    y[m] = y_pred[m]
                dy_norm_old = -1.0
                ok = False
                for it in range(NEWTON_MAXITER):
                    for m in range(n):
                        yp[m] = (psi[m] + d[m]) * cj
                    res(t_new, y, yp, p, r)
                    stats[5] += 1
                    finite = True
                    for m in range(n):
                        if not math.isfinite(r[m]):
                            finite = False
                    if not finite:
                        break
                    for m in range(n):
                        dy[m] = -r[m]
                    if sparse:
                        splu_solve(n, q, Lp, Li, Lx, Up, Ui, Ux, prow, dy, xw)
                    else:
                        lu_solve(G, piv, dy)
                    stats[2] += 1
                    dy_norm = 0.0
                    for m in range(n):
                        w_ = dy[m] / scale[m]
                        dy_norm += w_ * w_
                    dy_norm = math.sqrt(dy_norm / n)
                    rate = dy_norm / dy_norm_old if dy_norm_old > 0 else -1.0
                    if rate >= 1.0 or (rate > 0 and rate ** (NEWTON_MAXITER - it) / (1 - rate) * dy_norm > newton_tol):
                        break
                    for m in range(n):
                        y[m] += dy[m]
                        d[m] += dy[m]
                    if dy_norm == 0.0 or (rate > 0 and rate / (1 - rate) * dy_norm < newton_tol) or \
                            (rate < 0 and dy_norm < 1e-3 * newton_tol):
                        ok = True
                        break
                    dy_norm_old = dy_norm
                if ok:
                    converged = True
                elif not fresh:
                    lu_valid = False  # refresh the iteration matrix and retry
                    stats[6] += 1
                else:
                    break
            if not converged:
                stats[6] += 1
                # remember the equation with the largest residual: named if h underflows
                worst, wv = 0, -1.0
                for m in range(n):
                    a = abs(r[m]) if math.isfinite(r[m]) else math.inf
                    if a > wv:
                        wv, worst = a, m
                ist[3] = -3 - worst
                factor = 0.5
                change_D(D, order, factor)
                h *= factor
                n_equal = 0
                lu_valid = False
                stats[1] += 1
                continue
            # local error test on the differential variables
            for m in range(n):
                scale[m] = atol[m] + rtol * abs(y[m])
                errv[m] = err_const[order] * d[m]
            err_norm = wrms(errv, scale, mask, nmask)
            if err_norm > 1.0:
                factor = max(MIN_FACTOR, SAFETY * err_norm ** (-1.0 / (order + 1)))
                change_D(D, order, factor)
                h *= factor
                n_equal = 0
                lu_valid = False
                stats[1] += 1
                worst, wv = 0, -1.0
                for m in range(n):
                    if mask[m] and abs(errv[m] / scale[m]) > wv:
                        wv, worst = abs(errv[m] / scale[m]), m
                ist[3] = worst
                continue
            step_accepted = True
        # accept
        stats[0] += 1
        if order > stats[7]:
            stats[7] = order
        steps_here += 1
        n_equal += 1
        t = t_new
        for m in range(n):
            D[order + 2, m] = d[m] - D[order + 1, m]
            D[order + 1, m] = d[m]
        for i in range(order, -1, -1):
            for m in range(n):
                D[i, m] += D[i + 1, m]
        if n_equal < order + 1:
            continue
        # order selection (every order+1 equal steps)
        if order > 1:
            for m in range(n):
                errv[m] = err_const[order - 1] * D[order, m]
            err_m = wrms(errv, scale, mask, nmask)
        else:
            err_m = np.inf
        if order < MAX_ORDER:
            for m in range(n):
                errv[m] = err_const[order + 1] * D[order + 2, m]
            err_p = wrms(errv, scale, mask, nmask)
        else:
            err_p = np.inf
        for m in range(n):
            errv[m] = err_const[order] * d[m]
        err_n = wrms(errv, scale, mask, nmask)
        f_m = err_m ** (-1.0 / order) if err_m > 0 and order > 1 else (0.0 if order <= 1 else np.inf)
        f_n = err_n ** (-1.0 / (order + 1)) if err_n > 0 else np.inf
        f_p = err_p ** (-1.0 / (order + 2)) if err_p > 0 else (np.inf if order < MAX_ORDER else 0.0)
        if order >= MAX_ORDER:
            f_p = 0.0
        best = f_n
        delta = 0
        if f_m > best:
            best, delta = f_m, -1
        if f_p > best:
            best, delta = f_p, 1
        order += delta
        factor = min(MAX_FACTOR, SAFETY * best)
        if h * factor > hmax:
            factor = hmax / h
        if factor > 1.0 or factor < 1.0:
            change_D(D, order, factor)
            h *= factor
            lu_valid = False
        n_equal = 0
    st[0], st[1], st[2] = t, h, cj_lu
    ist[0], ist[1], ist[2], ist[4] = order, n_equal, 1 if lu_valid else 0, k_out
    return OK
