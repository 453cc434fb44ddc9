/* C core of the variable-step, variable-order BDF method for F(t, y, y') = 0 (docs/solver.md).

The whole step loop (predictor, simplified Newton, dense or sparse LU, error test, step and
order selection, dense output, event location) runs here; the model's residual, Jacobian,
switching functions and modes arrive as plain C function pointers (solver/native.py's ABI).
It is compiled by the system C compiler when the package is installed, else on first use
(solver/_ccore.py), and needs no runtime.

The method follows SciPy's BDF (backward differences D, step change by the R U transform,
Shampine & Reichelt 1997) with kappa = 0, adapted to implicit DAEs: with cj = alpha_k / h,
the new point solves F(t_new, y_pred + d, (psi + d) cj) = 0 for d, with the iteration matrix
G = dF/dy + cj dF/dy'. Step, order and Newton control follow IDA where the comments say so.

The loops marked `#pragma omp simd` are element-wise (the one reduction marked is an integer
AND): compiled with -fopenmp-simd at -O2 (solver/native.py, CORE_CFLAGS) they are vectorised as
-O3 would, rounding as the scalar loops do, in half -O3's compile time.

Every array is owned by the caller (the Python side allocates them once per solver, the work
space included): nothing is allocated here, so nothing can leak, except by SuiteSparse's KLU in
a build with it (BONDSIM_KLU): its symbolic and numeric factorisations live until bdf_release,
which the Python side calls when the solver is reset or freed.

Functions, in file order:
  entry points (ctypes, solver/_ccore.py)
    bdf_work_size, bdf_struct_size  sizes the Python side allocates and checks
    bdf_advance          the step loop: every output time covered, or a failure status
    bdf_output_rows      the model's output kernel over many output times
    bdf_rows_text        rows of values as CSV text, '%.17g' exactly as printf writes it
    bdf_no_modes         the modes kernel of a problem without modes
    bdf_has_klu, bdf_release  is KLU in this build; free its factorisations
  linear algebra
    lu_factor            dense LU with partial pivoting, by columns
    lu_rows_u, lu_compress, lu_solve_rows  its factors by rows without zeros; the solve
                         with them
    assemble             CSC values into the dense iteration matrix
    lu_keep, lu_refactor the pivot order and factor structure of the last lu_factor kept;
                         the next LU in that order on the factors' structure alone
    splu_factor, splu_solve  sparse left-looking LU (threshold partial pivoting)
    klu_lu_factor, klu_lu_solve  SuiteSparse's KLU (BONDSIM_KLU builds; sparse == SPARSE_KLU)
    lu_apply             solve with whichever factorisation is in use
  the method
    rescale_D            difference array for a new step size (R U transform)
    sum_squares, wrms, error_norm, worst_unknown  weighted sums of squares and RMS norms; the
                         unknown an error test failed on
    dense_output         the step's interpolating polynomial and its derivative
    predict              predictor, psi and the error weights
    factorize            Jacobian values and LU of G = dF/dy + cj dF/dy'
    newton_solve         simplified Newton with IDA's convergence test
    after_error_failure  order and step factor after an error-test failure (IDA's rule)
    after_success        order and step factor every order + 1 equal steps (IDA's rule)
    emit_outputs         outputs the current step covers
    update_differences   the differences of an accepted step
  events (docs/solver.md, "Events")
    crosses, any_crossing  sign changes of the switching functions
    locate_root          earliest root on the step's polynomial (Illinois secant)
    event_ttol           the events' resolution in time
    modes_changed, swap_modes  compare and exchange modes
    same_law             does a mode switch only relabel the same law?
    probe_derivative, reprobe  y' just after a restart, from a short backward-Euler probe
    after_restart_step   IDA's start-up phase after a restart
    restart_at           switch modes at a point and restart at order 1
    predicted_crossing   a switch between the step start and the predictor (failed steps)
    within_band          is a mode the laws exclude within the step's accuracy of its switch?
    modes_inconsistent   may a step end with its modes: a function that left exactly zero to
                         the side its mode excludes, or a mode excluded beyond the band
    handle_events        after an accepted step: detect, relabel, locate, land, restart
  the step loop (split as IDA's IDAStep)
    begin_step           step size limits (hmin, hmax, tstop) before the attempts
    step_attempt         predictor, iteration matrix and Newton (IDA's IDAnls)
    newton_failure       after a Newton failure: shrink, cut short of a switch, or restart
                         on it (IDA's IDAHandleNFlag)
    error_test_failure   after an error-test failure: order and step (IDATestError's failure)
    mode_failure         after a step that ends with modes its laws exclude
    wrong_mode_failure   after a step whose start and end have a mode the laws exclude: a
                         restart at its start with their modes, or a chattering mode
    take_step            attempts until one is accepted, a restart or a failure
    enter_restart        the loop's state after a restart at an event
    complete_step        the accepted step: events, start-up phase, order and step choice
                         (IDA's IDACompleteStep)
    setup_work           the work arrays and constants of one bdf_advance call */
#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef BONDSIM_KLU
#include <klu.h>
#endif

typedef void (*res_fn)(double t, const double *y, const double *yp, const double *p, double *out);
typedef void (*jac_fn)(double t, const double *y, const double *yp, const double *p, double cj, double *vals);

#define MAX_ORDER 5
#define NEWTON_MAXITER 4
#define MAX_FACTOR 2.0 /* largest step growth after a success (IDA's eta_max) */
#define SAFETY 0.9
#define GROW_MIN 2.0 /* a step grows only by at least this factor after a success (IDA's
   eta_max_fx; growing by 1.6 instead, inside the window that keeps G, cost the Robotino 15-25 %
   more Newton iterations) */
#define RATE_AGE 20 /* Newton's rate, measured by a solve of two or more iterations, is carried
   unmeasured at fixed cj across step decisions for at most this many steps (step_attempt; after
   every decision: the Robotino's Newton iterations 5 % more at rtol 1e-6, 8 % at 1e-8) */
#define RATE_MAX 0.9 /* Newton fails when its convergence rate exceeds this (IDA) */
#define CJ_RATIO_LO 0.6 /* keep G while cj/cj_lu stays inside (IDA: (1-0.25)/(1+0.25)) */
#define CJ_RATIO_HI (1.0 / 0.6)
#define ETA_MIN_EF 0.25 /* smallest step factor after an error-test failure (IDA) */
#define ETA_MIN_RESTART 0.01 /* ... and after the first step's failure after an event restart: its
   order-1 estimate h^2 |y''| / 4 comes from a fresh polynomial, and y'' jumps at the switch that
   the first step's size was taken from (the Robotino's first steps failed with errors up to 1e4,
   924 of its 927 restarts 2 to 4 times in a row at 0.25, each failure a new G and a re-probe) */
#define ETA_CF 0.25 /* step factor after a Newton convergence failure (IDA) */
#define NEWTON_TOL 0.03 /* Newton stops when its estimated remaining error (weighted RMS) is below
   this; IDA's epcon is 0.33, which leaves the Robotino's no-slip constraints satisfied only to
   4e-7 m/s (test: 3e-7, measured up to 1.2e-7) */
#define EPS 2.220446049250313e-16
#define ROUNDOFF_FLOOR 100.0 /* an index-2 unknown's Newton weight is at least this x EPS x cj x
   (|y| + atol): the round-off its correction stalls at (newton_solve) */

/* status codes of bdf_advance */
enum { OK = 0, UNDERFLOW = 1, SINGULAR = 2, TOO_MANY = 3,
       CHATTER = 4 /* a mode switched back and forth (wrong_mode_failure) */ };
/* what a failure names: I_FAIL_KIND, with I_FAIL_INDEX the unknown (FAIL_ERROR_TEST: the largest
   error estimate; FAIL_PIVOT: no pivot), the equation (FAIL_NEWTON: the largest residual;
   FAIL_NOT_FINITE: a residual that is NaN or inf), or the mode (FAIL_MODES: one that chatters,
   CHATTER) */
enum { FAIL_NONE, FAIL_ERROR_TEST, FAIL_NEWTON, FAIL_PIVOT, FAIL_SPARSE_FILL, FAIL_MODES, FAIL_NOT_FINITE };
/* named slots of the state arrays kept between advance() calls: st (doubles), ist (integers) */
enum { S_T, S_H, S_CJ_LU, S_SS, S_CJ_LAST,
       S_T_SWITCHED, S_EV_FROM, /* the switch-back records (loop_t), valid when I_RECORDS is 1 */
       S_EV_T, S_EV_ANCHOR, S_EV_H, S_EV_TTOL, /* the last event restart's root, the end and size
                                        of the step whose polynomial answers output times up to
                                        it, the events' resolution there (I_EV_ORDER > 0:
                                        emit_event_rows) */
       N_FLOAT_STATE };
enum { I_ORDER, I_N_EQUAL, I_LU_VALID, I_FAIL_KIND, I_FAIL_INDEX, I_K_OUT, I_MAX_ORDER,
       I_EVENT_PHASE, /* after an event restart: bit flags PHASE_* */
       I_N_BACK, I_K_BACK, I_STEPS_BACK, I_N_EV_BACK, I_K_EV, I_STEPS_EV,
       I_RECORDS, /* 0 (a restart zeroes ist): the records start afresh */
       I_RATE_AGE,    /* converged attempts since Newton last measured its rate (step_attempt) */
       I_LU_KEPT,     /* 1: the dense LU's pivot order and the structure of its factors are kept
                         (lu_keep); a restart zeroes ist, so a reset run factors as a new one */
       I_EV_ORDER,    /* the order of the polynomial kept at the last event restart; 0: none */
       N_INT_STATE };
enum { PHASE_RESTART_PENDING = 1, /* no step accepted yet */
       PHASE_RAMP = 2 };          /* IDA's start-up phase */
/* counters (stats); BDFSolver.stats names them by these names, lower case, without ST_ */
enum { ST_STEPS, ST_REJECTED, ST_NEWTON_ITERS, ST_JAC_EVALS, ST_LU_FACTORIZATIONS, ST_RES_EVALS,
       ST_NEWTON_FAILURES, ST_MAX_ORDER, ST_ERROR_TEST_FAILURES,
       ST_EVENTS, /* mode switches at located roots */
       ST_EVENT_RESTARTS, /* those that restarted the method */
       ST_REPROJECTIONS, /* restarts from a probe's end: a step start found off its equations */
       N_STATS };
/* the solver's `sparse` field: which LU factors G */
enum { DENSE_LU = 0, SPARSE_OWN = 1, SPARSE_KLU = 2 };
/* Newton outcomes */
enum { CONVERGED, SLOW, NOT_FINITE };
/* event outcomes */
enum { EV_NONE, EV_SWITCHED, EV_RESTART, EV_GLIDED };
#define EVENT_NEWTON_TOL 1e-3 /* landing and probe solves: the restart derivative divides their
   error by the probe step, so they are converged further than a normal step (NEWTON_TOL) */
#define SAME_TOL 1e-3 /* a mode switch that moves the Newton solution by less than this (WRMS, in
   tolerance units) at the root and one step ahead only relabels the same law (Mod at a multiple) */
#define GLIDE_TOL 3.0 /* ... and one at a step's end by less than this, of a law switching back and
   forth (event_chatter's count half way), is taken there without a restart (handle_events) */
#define MODE_HMIN 1000.0 /* a step whose modes its end excludes shrinks until below this x hmin,
   then the method restarts at its start with the modes picked there (mode_failure) */
#define CHATTER_MAX 10 /* a mode switched back at a step's start more often than this in a row, each */
#define CHATTER_STEPS 100 /* within this many steps of the last, chatters (wrong_mode_failure) */
#define CHATTER_EVENT_STEPS 3 /* a mode switched back at a located root more often than CHATTER_MAX
   times in a row, each within this many steps of its last switch, chatters (event_chatter) */
#define PROBE 0.1 /* the probe step that measures y' after a restart, as a fraction of the first step */

#define NROWS (MAX_ORDER + 3) /* rows of the difference array D */
#define NW (MAX_ORDER + 1)    /* R, U, RU of the step change are NW x NW */

/* Python's min/max of two floats (the first unless the second is strictly smaller/larger) */
static inline double pmin(double a, double b) { return b < a ? b : a; }
static inline double pmax(double a, double b) { return b > a ? b : a; }

/* The solver: problem, tolerances, state and work arrays, all owned by the caller, set once;
   the fields after `t_out` change with every advance() call. Field order = _ccore.Solver. */
typedef struct {
    res_fn res;
    jac_fn jac;
    res_fn roots;  /* the model's switching functions (n_roots of them) with the current modes */
    res_fn modes;  /* the modes the laws pick at a point; they live in p[n_par:] */
    int64_t n, nnz, n_par, n_modes, n_roots, sparse, max_steps, cap_l, cap_u;
    const int64_t *indptr, *indices; /* CSC pattern of G */
    const uint8_t *diff;             /* unknowns in the error test */
    double *p;                       /* parameters, then the modes */
    double rtol;
    const double *atol;
    double hmax;
    double keep_pivot; /* dense LU: lu_refactor keeps the last pivot order while each pivot is at
                          least this fraction of the largest magnitude below it; 0: never */
    double *D;       /* NROWS x n */
    double *st;      /* N_FLOAT_STATE */
    int64_t *ist;    /* N_INT_STATE */
    int64_t *stats;  /* N_STATS */
    double *G;       /* n x n (dense), by columns */
    int64_t *piv;    /* n */
    const int64_t *q; /* sparse: column order */
    int64_t *Lp, *Li; double *Lx; int64_t *Up, *Ui; double *Ux; int64_t *prow, *pinv; double *xw;
    double *work;    /* bdf_work_size(...) doubles */
    uint8_t *mask;   /* n */
    const uint8_t *index2; /* n: algebraic unknowns outside the error test that no y'-free
                              equation contains (index-2 multipliers): their Newton
                              weight has a round-off floor growing with cj (newton_solve) */
    void *klu;       /* sparse == SPARSE_KLU: KLU's state (klu_state_t), made on the first
                        factorisation; NULL until then and after bdf_release */
    /* per call */
    const double *t_out;
    int64_t n_out;
    double t_stop;
    double *Yout, *YPout; /* n_out x n */
} solver_t;

/* the part of the work space each bdf_advance call zeroes (setup_work) */
static int64_t work_zeroed_size(int64_t n, int64_t nnz, int64_t n_roots, int64_t n_modes) {
    return nnz + 16 * n + 3 * NW * NW + NW * n + 5 * n_roots + 2 * n_modes + 2 * NROWS * n + 2 * n * n_roots;
}

/* the dense LU's factors by rows (lu_rows_t), after the zeroed part: at most n (n - 1) entries
   (values, then their int32 column indices), a solve's n-vector, and the row starts and the
   permutation (int32) */
static int64_t lu_rows_size(int64_t n) { return n * (n - 1) + n + (n * (n - 1) + 3 * n + 2 + 1) / 2 + 1; }

/* the dense LU's kept pivot order and factor structure (lu_kept_t): int32 arrays of n, 3 (n + 1)
   and 3 n (n - 1) / 2 entries, and an n x n byte scratch */
static int64_t lu_kept_size(int64_t n) { return (4 * (n + 3 * (n + 1) + 3 * (n * (n - 1) / 2)) + n * n + 7) / 8 + 1; }

int64_t bdf_work_size(int64_t n, int64_t nnz, int64_t n_roots, int64_t n_modes) {
    /* then: g_old as the last bdf_advance call left it (I_RECORDS); the kept LU structure; the
       polynomial of the step that ended at the last event restart (I_EV_ORDER) */
    return work_zeroed_size(n, nnz, n_roots, n_modes) + lu_rows_size(n) + n_roots + lu_kept_size(n) +
           (MAX_ORDER + 1) * n + n_modes;
}

int64_t bdf_struct_size(void) { return (int64_t)sizeof(solver_t); }

/* ---------------------------------------------------------------------------------- */
/* linear algebra                                                                     */
/* ---------------------------------------------------------------------------------- */

/* The dense factors of lu_factor by rows with their zeros dropped, U's rows first (lu_factor
   writes them as it goes), then L's: row i of L (columns ascending) at val[lp[i] .. lp[i + 1]),
   row i of U right of the diagonal (columns ascending; the solve runs it backwards) at
   val[up[i] .. up[i + 1]), perm the row permutation of all the pivots' swaps at once. A
   bond-graph iteration matrix keeps few entries through its LU (the Robotino's 28 x 28: some
   100 in L and 150 in U of 756), and the column solve's loops, short and each reading the
   element the last one stored, ran at some 0.3 us per solve, a third of the Robotino's run. */
typedef struct {
    double *val, *y;
    int32_t *idx, *lp, *up, *perm;
} lu_rows_t;

static lu_rows_t lu_rows_of(const solver_t *s) {
    const int64_t n = s->n;
    lu_rows_t R;
    R.val = s->work + work_zeroed_size(n, s->nnz, s->n_roots, s->n_modes);
    R.y = R.val + n * (n - 1);
    R.idx = (int32_t *)(R.y + n);
    R.lp = R.idx + n * (n - 1);
    R.up = R.lp + n + 1;
    R.perm = R.up + n + 1;
    return R;
}

/* Dense LU with partial pivoting, in place, of A stored by columns (A[j * n + i] = a_ij, as
   LAPACK's dgetrf): every inner loop is an update of a contiguous column by a multiple of
   another (axpy), with no chain through one accumulator, so it runs at the machine's
   throughput; row-oriented dot products were bound by the add latency (the Robotino's
   25 x 25 solves took 0.85 us, 40 % of its run). Zero multipliers are skipped: a bond-graph
   iteration matrix is mostly zeros (the Robotino's: 128 of 625 entries).
   U's rows go to R as they are found (each is final at its step): their multipliers are read
   here anyway, and a later pass over them, across A's columns, cost as much again.
   Returns -1 or the column where it broke down (U's rows from it on then empty). */
static int64_t lu_factor(int64_t n, double *A, int64_t *piv, const lu_rows_t *R) {
    int32_t q = 0;
    for (int64_t k = 0; k < n; k++) {
        double *col_k = A + k * n;
        /* the pivot: the first of the largest magnitudes, found as their maximum in four
           independent lanes, then where it is (one compare-and-select chain over the column
           was a third of the factorisation's time); a NaN on the diagonal breaks down as an
           infinite magnitude does, one below it is passed over */
        double m0 = 0.0, m1 = 0.0, m2 = 0.0, m3 = 0.0;
        int64_t i = k;
        for (; i + 4 <= n; i += 4) {
            m0 = pmax(m0, fabs(col_k[i]));
            m1 = pmax(m1, fabs(col_k[i + 1]));
            m2 = pmax(m2, fabs(col_k[i + 2]));
            m3 = pmax(m3, fabs(col_k[i + 3]));
        }
        for (; i < n; i++) m0 = pmax(m0, fabs(col_k[i]));
        double big = pmax(pmax(m0, m1), pmax(m2, m3));
        piv[k] = k;
        if (big == 0.0 || !isfinite(big) || isnan(col_k[k])) {
            for (int64_t r = k; r <= n; r++) R->up[r] = q;
            return k;
        }
        int64_t p = k;
        while (fabs(col_k[p]) != big) p++;
        piv[k] = p;
        if (p != k)
            for (int64_t j = 0; j < n; j++) {
                double tmp = A[j * n + k];
                A[j * n + k] = A[j * n + p];
                A[j * n + p] = tmp;
            }
        double inv = 1.0 / col_k[k];
        col_k[k] = inv; /* the diagonal holds 1 / u_kk: the back substitution multiplies (a
                           division there sat on the solve's critical path) */
        #pragma omp simd
        for (int64_t i = k + 1; i < n; i++) col_k[i] *= inv;
        R->up[k] = q;
        for (int64_t j = k + 1; j < n; j++) {
            double *col_j = A + j * n;
            double u = col_j[k];
            if (u == 0.0) continue;
            R->val[q] = u;
            R->idx[q] = (int32_t)j;
            q++;
            #pragma omp simd
            for (int64_t i = k + 1; i < n; i++) col_j[i] -= col_k[i] * u;
        }
    }
    R->up[n] = q;
    return -1;
}

/* U's rows of lu_factor's factors in A, as lu_factor writes them (for a G factorised by an
   earlier call: the rows live outside the work space each call zeroes, but a reset solver's G
   is zeroed) */
static void lu_rows_u(const solver_t *s, const double *restrict A) {
    const int64_t n = s->n;
    lu_rows_t R = lu_rows_of(s);
    int32_t q = 0;
    for (int64_t i = 0; i < n; i++) {
        R.up[i] = q;
        for (int64_t k = i + 1; k < n; k++) {
            double v = A[k * n + i];
            if (v != 0.0) { R.val[q] = v; R.idx[q] = (int32_t)k; q++; }
        }
    }
    R.up[n] = q;
}

/* L's rows of lu_factor's factors in A and the permutation of piv, after U's rows, for
   lu_solve_rows (also after a failed factorisation, whose factors no solve uses) */
static void lu_compress(const solver_t *s, const double *restrict A, const int64_t *restrict piv) {
    const int64_t n = s->n;
    lu_rows_t R = lu_rows_of(s);
    for (int64_t i = 0; i < n; i++) R.perm[i] = (int32_t)i;
    for (int64_t k = 0; k < n; k++) {
        int64_t p = piv[k];
        if (p != k && p >= 0 && p < n) { int32_t tmp = R.perm[k]; R.perm[k] = R.perm[p]; R.perm[p] = tmp; }
    }
    int32_t q = R.up[n];
    for (int64_t i = 0; i < n; i++) {
        R.lp[i] = q;
        for (int64_t k = 0; k < i; k++) {
            double v = A[k * n + i];
            if (v != 0.0) { R.val[q] = v; R.idx[q] = (int32_t)k; q++; }
        }
    }
    R.lp[n] = q;
}

/* the CSC values into the dense G, stored by columns like them; with row_at, row i of the
   pattern goes to row row_at[i] of G (lu_refactor's kept order) */
static void assemble(int64_t n, double *G, const double *vals, const int64_t *indptr, const int64_t *indices,
                     const int32_t *row_at) {
    memset(G, 0, n * n * sizeof(double));
    for (int64_t j = 0; j < n; j++)
        for (int64_t k = indptr[j]; k < indptr[j + 1]; k++)
            G[j * n + (row_at ? row_at[indices[k]] : indices[k])] += vals[k];
}

/* The pivot order of the last full factorisation (lu_factor), kept with the structure of the
   factors it gives on G's pattern, so that the next G, with new values on the same pattern, is
   factorised in that order by lu_refactor: its loops run over the factors' structural non-zeros
   only and search no pivot. The Robotino's 28 x 28 G has 116 entries and some 250 in its factors:
   lu_factor's column updates and pivot searches over the dense columns took 19 % of a run.
   Row i of G is at pinv[i] in the order; L's column k holds rows l_rows[l_col[k] .. l_col[k + 1])
   (all > k, ascending), U's row k columns u_cols[u_row[k] .. u_row[k + 1]) (all > k, ascending),
   L's row i columns l_cols[l_row[i] .. l_row[i + 1]) (all < i, ascending). */
typedef struct {
    int32_t *pinv, *l_col, *u_row, *l_row, *l_rows, *u_cols, *l_cols;
    uint8_t *pattern; /* n x n scratch of lu_keep */
} lu_kept_t;

static lu_kept_t lu_kept_of(const solver_t *s) {
    const int64_t n = s->n, half = n * (n - 1) / 2;
    lu_kept_t K;
    K.pinv = (int32_t *)(s->work + work_zeroed_size(n, s->nnz, s->n_roots, s->n_modes) + lu_rows_size(n) +
                         s->n_roots);
    K.l_col = K.pinv + n;
    K.u_row = K.l_col + n + 1;
    K.l_row = K.u_row + n + 1;
    K.l_rows = K.l_row + n + 1;
    K.u_cols = K.l_rows + half;
    K.l_cols = K.u_cols + half;
    K.pattern = (uint8_t *)(K.l_cols + half);
    return K;
}

static void pattern_or(uint8_t *restrict to, const uint8_t *restrict from, int64_t m) {
    for (int64_t i = 0; i < m; i++) to[i] |= from[i];
}

/* After lu_factor and lu_compress succeeded: keep their pivot order (R.perm) and the structure
   of the factors on G's pattern in that order (symbolic elimination: a structural zero stays
   one whatever the values, so the structure holds for every G of the pattern). */
static void lu_keep(const solver_t *s) {
    const int64_t n = s->n;
    lu_kept_t K = lu_kept_of(s);
    lu_rows_t R = lu_rows_of(s);
    uint8_t *P = K.pattern;
    for (int64_t i = 0; i < n; i++) K.pinv[R.perm[i]] = (int32_t)i;
    memset(P, 0, n * n);
    for (int64_t j = 0; j < n; j++)
        for (int64_t t = s->indptr[j]; t < s->indptr[j + 1]; t++) P[j * n + K.pinv[s->indices[t]]] = 1;
    for (int64_t k = 0; k < n; k++) /* column k is final: it fills the columns its row k reaches */
        for (int64_t j = k + 1; j < n; j++)
            if (P[j * n + k]) pattern_or(P + j * n + k + 1, P + k * n + k + 1, n - k - 1);
    int32_t a = 0, b = 0, c = 0;
    for (int64_t k = 0; k < n; k++) {
        K.l_col[k] = a;
        K.u_row[k] = b;
        K.l_row[k] = c;
        for (int64_t i = k + 1; i < n; i++)
            if (P[k * n + i]) K.l_rows[a++] = (int32_t)i;
        for (int64_t j = k + 1; j < n; j++)
            if (P[j * n + k]) K.u_cols[b++] = (int32_t)j;
        for (int64_t j = 0; j < k; j++)
            if (P[j * n + k]) K.l_cols[c++] = (int32_t)j;
    }
    K.l_col[n] = a;
    K.u_row[n] = b;
    K.l_row[n] = c;
    s->ist[I_LU_KEPT] = 1;
}

/* LU of G (CSC values vals) in the kept order, into G, R and piv as lu_factor and lu_compress
   leave them; the same operations in the same order as lu_factor's (the skipped ones subtract
   exact zeros), so where lu_factor would pivot alike the factors are bit for bit its own.
   Returns 0, G then undefined, when a pivot is below keep_pivot of its column or not finite:
   the caller factorises afresh. */
static int lu_refactor(const solver_t *s, const double *vals) {
    const int64_t n = s->n;
    double *A = s->G;
    lu_kept_t K = lu_kept_of(s);
    lu_rows_t R = lu_rows_of(s);
    assemble(n, A, vals, s->indptr, s->indices, K.pinv);
    int32_t q = 0;
    for (int64_t k = 0; k < n; k++) {
        double *col_k = A + k * n;
        const int32_t *l0 = K.l_rows + K.l_col[k], *l1 = K.l_rows + K.l_col[k + 1];
        double big = 0.0;
        for (const int32_t *r = l0; r < l1; r++) big = pmax(big, fabs(col_k[*r]));
        double d = col_k[k];
        if (!(fabs(d) >= s->keep_pivot * big) || d == 0.0 || !isfinite(d) || !isfinite(big)) return 0;
        double inv = 1.0 / d;
        col_k[k] = inv;
        for (const int32_t *r = l0; r < l1; r++) col_k[*r] *= inv;
        R.up[k] = q;
        for (int32_t b = K.u_row[k]; b < K.u_row[k + 1]; b++) {
            int32_t j = K.u_cols[b];
            double *col_j = A + (int64_t)j * n;
            double u = col_j[k];
            if (u == 0.0) continue;
            R.val[q] = u;
            R.idx[q] = j;
            q++;
            for (const int32_t *r = l0; r < l1; r++) col_j[*r] -= col_k[*r] * u;
        }
    }
    R.up[n] = q;
    for (int64_t i = 0; i < n; i++) { /* L's rows, as lu_compress writes them */
        R.lp[i] = q;
        for (int32_t c = K.l_row[i]; c < K.l_row[i + 1]; c++) {
            int32_t k = K.l_cols[c];
            double v = A[(int64_t)k * n + i];
            if (v != 0.0) { R.val[q] = v; R.idx[q] = k; q++; }
        }
    }
    R.lp[n] = q;
    return 1;
}

/* Solve with the factors by rows: each unknown one short dot product over the entries of its
   row, in the order lu_solve subtracts them (the same result: the dropped entries subtract
   exact zeros); the diagonal's 1 / u_ii read from A. */
static void lu_solve_rows(const solver_t *s, double *restrict b) {
    const int64_t n = s->n;
    const double *restrict A = s->G;
    lu_rows_t R = lu_rows_of(s);
    const double *restrict val = R.val;
    const int32_t *restrict idx = R.idx;
    double *restrict y = R.y;
    for (int64_t i = 0; i < n; i++) { /* L y = P b */
        double v = b[R.perm[i]];
        for (int32_t q = R.lp[i]; q < R.lp[i + 1]; q++) v -= val[q] * y[idx[q]];
        y[i] = v;
    }
    for (int64_t i = n - 1; i >= 0; i--) { /* U x = y */
        double v = y[i];
        for (int32_t q = R.up[i + 1] - 1; q >= R.up[i]; q--) v -= val[q] * y[idx[q]];
        y[i] = v * A[i * n + i];
    }
    memcpy(b, y, n * sizeof(double));
}

/* Sparse LU of the CSC matrix with column order q: left-looking, partial pivoting.
   Column k: scatter A[:, q[k]], apply the previous columns of L in pivot order (a valid
   topological order for a left-looking update), pick the largest remaining entry as pivot.
   L is unit lower (stored without its diagonal, original row indices), U holds the pivots.
   Cost O(n^2 + flops): meant for the tens-to-hundreds of unknowns of bond-graph models.
   Returns -1, the column that had no pivot, or -2 when the fill outgrew the work arrays. */
static int64_t splu_factor(const solver_t *s, const double *vals) {
    const int64_t n = s->n, cap_l = s->cap_l, cap_u = s->cap_u;
    const int64_t *indptr = s->indptr, *indices = s->indices, *q = s->q;
    int64_t *Lp = s->Lp, *Li = s->Li, *Up = s->Up, *Ui = s->Ui, *prow = s->prow, *pinv = s->pinv;
    double *Lx = s->Lx, *Ux = s->Ux, *x = s->xw;
    for (int64_t i = 0; i < n; i++) { pinv[i] = -1; x[i] = 0.0; }
    int64_t nl = 0, nu = 0;
    Lp[0] = 0;
    Up[0] = 0;
    for (int64_t k = 0; k < n; k++) {
        int64_t col = q[k];
        for (int64_t t = indptr[col]; t < indptr[col + 1]; t++) x[indices[t]] += vals[t];
        for (int64_t j = 0; j < k; j++) {
            double u = x[prow[j]];
            if (u != 0.0)
                for (int64_t t = Lp[j]; t < Lp[j + 1]; t++) x[Li[t]] -= Lx[t] * u;
        }
        /* U column k (entries on already pivotal rows), in pivot order */
        for (int64_t j = 0; j < k; j++) {
            double u = x[prow[j]];
            if (u != 0.0) {
                if (nu >= cap_u) return -2;
                Ui[nu] = j;
                Ux[nu] = u;
                nu++;
            }
            x[prow[j]] = 0.0;
        }
        int64_t piv_row = -1;
        double big = 0.0;
        for (int64_t i = 0; i < n; i++)
            if (pinv[i] < 0 && fabs(x[i]) > big) { big = fabs(x[i]); piv_row = i; }
        if (piv_row < 0 || !isfinite(big)) {
            for (int64_t i = 0; i < n; i++) x[i] = 0.0;
            return k;
        }
        double pivot = x[piv_row];
        if (nu >= cap_u) return -2;
        Ui[nu] = k;
        Ux[nu] = pivot;
        nu++;
        Up[k + 1] = nu;
        prow[k] = piv_row;
        pinv[piv_row] = k;
        x[piv_row] = 0.0;
        for (int64_t i = 0; i < n; i++) {
            if (pinv[i] < 0 && x[i] != 0.0) {
                if (nl >= cap_l) return -2;
                Li[nl] = i;
                Lx[nl] = x[i] / pivot;
                nl++;
            }
            x[i] = 0.0;
        }
        Lp[k + 1] = nl;
    }
    return -1;
}

/* Solve A z = b in place with the factors of splu_factor (xw: work vector). */
static void splu_solve(const solver_t *s, double *b) {
    const int64_t n = s->n;
    const int64_t *q = s->q, *Lp = s->Lp, *Li = s->Li, *Up = s->Up, *Ui = s->Ui, *prow = s->prow;
    const double *Lx = s->Lx, *Ux = s->Ux;
    double *w = s->xw;
    /* forward: L y = P b, in pivot order */
    for (int64_t k = 0; k < n; k++) {
        w[k] = b[prow[k]];
        double v = w[k];
        if (v != 0.0)
            for (int64_t t = Lp[k]; t < Lp[k + 1]; t++) b[Li[t]] -= Lx[t] * v;
    }
    /* backward: U z' = y, U stored by columns with the pivot last in each column */
    for (int64_t k = n - 1; k >= 0; k--) {
        int64_t end = Up[k + 1] - 1;
        double zk = w[k] / Ux[end];
        w[k] = zk;
        for (int64_t t = Up[k]; t < end; t++) w[Ui[t]] -= Ux[t] * zk;
    }
    for (int64_t k = 0; k < n; k++) b[q[k]] = w[k];
}

/* SuiteSparse's KLU (BTF, AMD ordering, threshold partial pivoting) on the CSC pattern: the
   symbolic analysis once per solver (the pattern is fixed), a full factorisation first, then
   refactorisations that keep its pivot order. As SUNDIALS' KLU linear solver does, a
   refactorisation that met a zero pivot, or whose crude reciprocal condition (smallest /
   largest |u_kk|) falls below EPS^(2/3), is redone as a full factorisation with new pivots;
   the latter only when its reciprocal pivot growth is also below KLU_GROWTH_KEEP times that of
   the last full factorisation. A small rcond alone is the matrix's, not the pivots': the
   index-2 dual-arm's G at steps of 1e-11 s has rcond 1e-14 whatever the pivots, and full
   factorisations there chose the same pivots again. */
#define KLU_RCOND_MIN 3.666852862501036e-11 /* EPS^(2/3) */
#define KLU_GROWTH_KEEP 0.5
#ifdef BONDSIM_KLU
typedef struct {
    klu_l_common common;
    klu_l_symbolic *symbolic;
    klu_l_numeric *numeric;
    double rgrowth_full; /* reciprocal pivot growth of the last full factorisation */
} klu_state_t;

_Static_assert(sizeof(SuiteSparse_long) == sizeof(int64_t), "KLU's long indices are not 64-bit");

/* Returns -1, the unknown (column of G) without a pivot, or -2 when KLU ran out of memory
   (or refused the pattern: BDFSolver hands it none with a row twice in a column). */
static int64_t klu_lu_factor(solver_t *s, const double *vals) {
    klu_state_t *k = s->klu;
    SuiteSparse_long *Ap = (SuiteSparse_long *)s->indptr, *Ai = (SuiteSparse_long *)s->indices;
    double *Ax = (double *)vals;
    /* KLU's pivot search passes a NaN or an infinity on, where splu_factor names its column */
    for (int64_t j = 0; j < s->n; j++)
        for (int64_t t = s->indptr[j]; t < s->indptr[j + 1]; t++)
            if (!isfinite(vals[t])) return j;
    if (!k) {
        k = calloc(1, sizeof(klu_state_t));
        if (!k) return -2;
        klu_l_defaults(&k->common);
        s->klu = k;
    }
    if (!k->symbolic) {
        k->symbolic = klu_l_analyze(s->n, Ap, Ai, &k->common);
        if (!k->symbolic) return -2;
    }
    if (k->numeric) {
        if (klu_l_refactor(Ap, Ai, Ax, k->symbolic, k->numeric, &k->common) &&
            klu_l_rcond(k->symbolic, k->numeric, &k->common) && isfinite(k->common.rcond) &&
            (k->common.rcond >= KLU_RCOND_MIN ||
             (klu_l_rgrowth(Ap, Ai, Ax, k->symbolic, k->numeric, &k->common) &&
              k->common.rgrowth >= KLU_GROWTH_KEEP * k->rgrowth_full)))
            return -1;
        klu_l_free_numeric(&k->numeric, &k->common);
    }
    k->numeric = klu_l_factor(Ap, Ai, Ax, k->symbolic, &k->common);
    if (k->numeric) {
        k->rgrowth_full = klu_l_rgrowth(Ap, Ai, Ax, k->symbolic, k->numeric, &k->common) ? k->common.rgrowth : 0.0;
        return -1;
    }
    if (k->common.status == KLU_SINGULAR) {
        int64_t col = k->common.singular_col;
        return col >= 0 && col < s->n ? col : 0;
    }
    return -2;
}

static void klu_lu_solve(const solver_t *s, double *b) {
    klu_state_t *k = s->klu;
    klu_l_solve(k->symbolic, k->numeric, s->n, 1, b, &k->common);
}
#endif

int64_t bdf_has_klu(void) {
#ifdef BONDSIM_KLU
    return 1;
#else
    return 0;
#endif
}

/* Free KLU's factorisations: the numeric one (a reset: the next run factors afresh, as a new
   solver's first run does) and, unless keep_symbolic, the analysis and state too (the solver
   is freed). Nothing to do for the other LUs or before the first factorisation. */
void bdf_release(solver_t *s, int64_t keep_symbolic) {
#ifdef BONDSIM_KLU
    klu_state_t *k = s->klu;
    if (!k) return;
    if (k->numeric) klu_l_free_numeric(&k->numeric, &k->common);
    if (keep_symbolic) return;
    if (k->symbolic) klu_l_free_symbolic(&k->symbolic, &k->common);
    free(k);
    s->klu = NULL;
#else
    (void)s; (void)keep_symbolic;
#endif
}

static void lu_apply(const solver_t *s, double *b) {
#ifdef BONDSIM_KLU
    if (s->sparse == SPARSE_KLU) { klu_lu_solve(s, b); return; }
#endif
    if (s->sparse) splu_solve(s, b);
    else lu_solve_rows(s, b);
}



/* ---------------------------------------------------------------------------------- */
/* the method                                                                         */
/* ---------------------------------------------------------------------------------- */

/* work arrays carved out of solver_t.work */
typedef struct {
    double *vals, *y_pred, *psi, *d, *y, *yp, *r, *scale, *dy, *yo, *ypo, *r2, *yq, *ypq, *yp_restart, *y_star;
    double *newton_wt; /* Newton's weights, the index-2 floor included (newton_solve) */
    double *wR, *wU, *wRU, *wD;
    double *g_old, *g_new, *g_lo, *g_hi, *g_mid, *m_new, *m_past;
    double *g_kept; /* g_old at the end of the last call (I_RECORDS) */
    double *D_event; /* rows 0..I_EV_ORDER of the step that ended at the last event restart, */
    double *m_event; /* and the modes before it */
    double *D_prev, *D_acc;
    double *dg; /* 2 n x n_roots: switching functions' changes (within_band) */
    double gamma[MAX_ORDER + 2], err_const[MAX_ORDER + 2];
    int64_t nmask;
    int64_t newton_its; /* iterations of the last newton_solve */
    int probe_converged; /* the last probe_derivative's Newton converged (w->y: the probe's end) */
} work_t;

/* Rescale the difference array for a new step h_new = factor * h (R U transform), with
   R[i, j] = prod_{m=1..i} (m - 1 - factor j) / m; U is R at factor 1. */
static void rescale_D(int64_t n, double *D, int64_t order, double factor, work_t *w) {
    double *R = w->wR, *U = w->wU, *RU = w->wRU, *tmp = w->wD;
    int64_t k = order + 1;
    for (int64_t j = 0; j < k; j++) { R[j] = 1.0; U[j] = 1.0; }
    for (int64_t i = 1; i < k; i++)
        for (int64_t j = 0; j < k; j++) {
            R[i * NW + j] = R[(i - 1) * NW + j] * ((double)(i - 1) - factor * (double)j) / (double)i;
            U[i * NW + j] = U[(i - 1) * NW + j] * ((double)(i - 1) - 1.0 * (double)j) / (double)i;
        }
    for (int64_t i = 0; i < k; i++)
        for (int64_t j = 0; j < k; j++) {
            double s = 0.0;
            for (int64_t m = 0; m < k; m++) s += R[i * NW + m] * U[m * NW + j];
            RU[i * NW + j] = s;
        }
    for (int64_t i = 0; i < k; i++) {
        #pragma omp simd
        for (int64_t m = 0; m < n; m++) tmp[i * n + m] = 0.0;
        for (int64_t l = 0; l < k; l++) {
            double c = RU[l * NW + i];
            if (c != 0.0) {
                #pragma omp simd
                for (int64_t m = 0; m < n; m++) tmp[i * n + m] += c * D[l * n + m];
            }
        }
    }
    for (int64_t i = 0; i < k; i++) {
        #pragma omp simd
        for (int64_t m = 0; m < n; m++) D[i * n + m] = tmp[i * n + m];
    }
}

/* The sum of squares of coef v_m / w_m over the unknowns in mask (NULL: all). From LANES_MIN
   unknowns on it is added in four lanes (unknown m into lane m % 4, the lanes then summed
   (0 + 1) + (2 + 3)): the order is fixed here, not by the vector width of a build, so every
   machine adds alike, and without a mask the four lanes are one vector (its divisions too).
   With one accumulator each add waited for the last and each division ran alone: the Newton
   and error norms took some 12 % of the Robotino's solve. Below LANES_MIN one accumulator, as
   the lanes' set-up cost a 3-unknown model more than the chain they shorten. */
#define LANES_MIN 8
#if defined(__GNUC__)
__attribute__((always_inline)) /* in each norm: a call's frame costs a small model a step's percent */
#endif
static inline double sum_squares(int64_t n, const double *restrict v, double coef, const double *restrict w,
                                 const uint8_t *restrict mask) {
    if (n < LANES_MIN) {
        double sum = 0.0;
        for (int64_t m = 0; m < n; m++)
            if (!mask || mask[m]) {
                double e = coef * v[m] / w[m];
                sum += e * e;
            }
        return sum;
    }
    double l[4] = {0.0, 0.0, 0.0, 0.0};
    int64_t m = 0;
    if (!mask) {
        for (; m + 4 <= n; m += 4) {
            #pragma omp simd
            for (int k = 0; k < 4; k++) {
                double e = coef * v[m + k] / w[m + k];
                l[k] += e * e;
            }
        }
    } else {
        for (; m + 4 <= n; m += 4)
            for (int k = 0; k < 4; k++)
                if (mask[m + k]) {
                    double e = coef * v[m + k] / w[m + k];
                    l[k] += e * e;
                }
    }
    for (int k = 0; m < n; m++, k++)
        if (!mask || mask[m]) {
            double e = coef * v[m] / w[m];
            l[k] += e * e;
        }
    return (l[0] + l[1]) + (l[2] + l[3]);
}

static double wrms(int64_t n, const double *v, const double *scale, const uint8_t *mask, int64_t nmask) {
    return sqrt(sum_squares(n, v, 1.0, scale, nmask == n ? NULL : mask) / (double)(nmask > 1 ? nmask : 1));
}

/* BDF interpolating polynomial through the last order+1 points (and its derivative). */
static void dense_output(int64_t n, double t_eval, double t, double h, int64_t order, const double *D,
                         double *y_out, double *yp_out) {
    #pragma omp simd
    for (int64_t m = 0; m < n; m++) { y_out[m] = D[m]; yp_out[m] = 0.0; }
    double prod = 1.0; /* prod_{l<j} x_l */
    double dprod = 0.0; /* d/dt of prod */
    for (int64_t j = 1; j <= order; j++) {
        double shift = t - h * (double)(j - 1);
        double denom = h * (double)j;
        double x = (t_eval - shift) / denom;
        dprod = dprod * x + prod / denom;
        prod = prod * x;
        #pragma omp simd
        for (int64_t m = 0; m < n; m++) {
            y_out[m] += D[j * n + m] * prod;
            yp_out[m] += D[j * n + m] * dprod;
        }
    }
}

/* Predictor y_pred = sum D[0..k], psi = sum gamma_j D[j] / alpha_k, and the error weights. */
static void predict(const solver_t *s, const double *D, int64_t order, const double *gamma, double alpha_k,
                    double *y_pred, double *psi, double *scale) {
    const int64_t n = s->n;
    /* row by row over D (contiguous loops), each sum in the order of j */
    #pragma omp simd
    for (int64_t m = 0; m < n; m++) { y_pred[m] = D[m]; psi[m] = 0.0; }
    for (int64_t j = 1; j <= order; j++) {
        const double *Dj = D + j * n;
        const double g = gamma[j];
        #pragma omp simd
        for (int64_t m = 0; m < n; m++) { y_pred[m] += Dj[m]; psi[m] += g * Dj[m]; }
    }
    #pragma omp simd
    for (int64_t m = 0; m < n; m++) {
        scale[m] = s->atol[m] + s->rtol * fabs(y_pred[m]);
        psi[m] /= alpha_k;
    }
}

/* New Jacobian values and LU of G = dF/dy + cj dF/dy'. Returns -1, the unknown without a
   pivot, or -2 when the sparse fill outgrew its work space (KLU: out of memory). */
static int64_t factorize(const solver_t *s, double t, const double *y, const double *yp, double cj, double *vals) {
    s->jac(t, y, yp, s->p, cj, vals);
#ifdef BONDSIM_KLU
    /* the one place KLU's state changes: the solver is the caller's, handed on as const */
    if (s->sparse == SPARSE_KLU) return klu_lu_factor((solver_t *)s, vals);
#endif
    if (s->sparse) {
        int64_t bad = splu_factor(s, vals);
        if (bad >= 0) bad = s->q[bad];
        return bad;
    }
    const int keep = s->keep_pivot > 0.0;
    if (keep && s->ist[I_LU_KEPT] && lu_refactor(s, vals)) return -1;
    assemble(s->n, s->G, vals, s->indptr, s->indices, NULL);
    lu_rows_t R = lu_rows_of(s);
    int64_t bad = lu_factor(s->n, s->G, s->piv, &R);
    lu_compress(s, s->G, s->piv);
    if (bad == -1 && keep) lu_keep(s);
    else s->ist[I_LU_KEPT] = 0;
    return bad;
}

/* Simplified Newton for F(t_new, y_pred + d, (psi + d) cj) = 0 with the factorised G(cj_lu).
   IDA's convergence test: after iteration m the rate is (|dy_m| / |dy_0|)^(1/m) and the
   remaining error is estimated as ss |dy_m| with ss = rate / (1 - rate); on the first
   iteration ss is the value carried from earlier steps (the caller resets it when G or cj
   changed). When cj differs from the factorised cj_lu the correction is scaled by
   2 / (1 + cj / cj_lu) (IDA's linear-solver scaling). Returns the outcome; *ss updated. */
static int newton_solve(const solver_t *s, work_t *w, double t_new, double cj, double cj_lu, const double *scale,
                        double tol, double *ss_io) {
    const int64_t n = s->n;
    double *y = w->y, *yp = w->yp, *d = w->d, *r = w->r, *dy = w->dy;
    const double *psi = w->psi, *y_pred = w->y_pred;
    double ss = *ss_io;
    #pragma omp simd
    for (int64_t m = 0; m < n; m++) { d[m] = 0.0; y[m] = y_pred[m]; }
    double scal = cj != cj_lu ? 2.0 / (1.0 + cj / cj_lu) : 1.0;
    /* An index-2 unknown (a joint force) is determined through the iteration matrix's 1/h^2
       conditioning: its correction stalls at round-off x cj (measured on the Boudon et al. slider
       crank: 9e-15 N at h = 2e-4, 5e-13 N at 3e-6), which at rtol 1e-12 stayed above
       atol + rtol |y| (3.7e-14 N): Newton failed, h shrank, the stall grew, the step underflowed.
       Its Newton weight is therefore never below that round-off floor, ROUNDOFF_FLOOR EPS cj
       (|y| + atol) with cj in 1/s (DASSL's 100 uround test, per unknown and scaled by cj as the
       conditioning is). At rtol 1e-8 the floor is far below the weight and nothing changes;
       weighing by 1/cj outright (RADAU5's h-scaling of index-2 components) made the crank 7x
       less accurate there. The unknown is outside the error test. */
    const double floor_cj = ROUNDOFF_FLOOR * EPS * cj;
    double *wgt = w->newton_wt;
    for (int64_t m = 0; m < n; m++)
        wgt[m] = s->index2[m] ? pmax(scale[m], floor_cj * (fabs(y_pred[m]) + s->atol[m])) : scale[m];
    double norm0 = 0.0, ss_first = 0.0;
    for (int64_t it = 0; it < NEWTON_MAXITER; it++) {
        #pragma omp simd
        for (int64_t m = 0; m < n; m++) yp[m] = (psi[m] + d[m]) * cj;
        s->res(t_new, y, yp, s->p, r);
        s->stats[ST_RES_EVALS] += 1;
        int finite = 1; /* (one test after the loop, which then runs in vectors) */
        #pragma omp simd reduction(&:finite)
        for (int64_t m = 0; m < n; m++) {
            finite &= isfinite(r[m]) != 0;
            dy[m] = -r[m];
        }
        if (!finite) { *ss_io = ss; return NOT_FINITE; }
        lu_apply(s, dy);
        s->stats[ST_NEWTON_ITERS] += 1;
        w->newton_its = it + 1;
        #pragma omp simd
        for (int64_t m = 0; m < n; m++) {
            dy[m] *= scal;
            y[m] += dy[m];
            d[m] += dy[m];
        }
        double nrm = sqrt(sum_squares(n, dy, 1.0, wgt, NULL) / (double)n);
        if (it == 0) {
            norm0 = nrm;
            if (nrm <= 1e-4 * tol) { *ss_io = ss; return CONVERGED; }
        } else {
            double rate = norm0 > 0 ? (it == 1 ? nrm / norm0 : pow(nrm / norm0, 1.0 / (double)it)) : 0.0;
            if (rate > RATE_MAX) { *ss_io = ss; return SLOW; }
            ss = rate / (1.0 - rate);
            if (it == 1) ss_first = ss;
        }
        if (ss * nrm <= tol) {
            /* the m-th root of a slow first iteration and a fast later one (1.72 -> 0.885 ->
               6e-5 gives 0.006) promises the next step a contraction its first iteration did
               not have; the rate left for it is at least the first iteration's (docs/solver.md) */
            *ss_io = pmax(ss, ss_first);
            return CONVERGED;
        }
    }
    *ss_io = ss;
    return SLOW;
}

/* WRMS norm of coef * v over the masked unknowns, weights atol + rtol |y| (left in scale). */
static double error_norm(const solver_t *s, const work_t *w, const double *v, double coef, const double *y,
                         double *scale) {
    const int64_t n = s->n;
    const double count = (double)(w->nmask > 1 ? w->nmask : 1);
    if (n < LANES_MIN) { /* the weights and the sum in one pass, as sum_squares adds them */
        double sum = 0.0;
        for (int64_t m = 0; m < n; m++) {
            scale[m] = s->atol[m] + s->rtol * fabs(y[m]);
            if (s->mask[m]) {
                double e = coef * v[m] / scale[m];
                sum += e * e;
            }
        }
        return sqrt(sum / count);
    }
    #pragma omp simd
    for (int64_t m = 0; m < n; m++) scale[m] = s->atol[m] + s->rtol * fabs(y[m]);
    return sqrt(sum_squares(n, v, coef, scale, w->nmask == n ? NULL : s->mask) / count);
}

static int64_t worst_unknown(int64_t n, const double *v, const double *scale, const uint8_t *mask) {
    int64_t worst = 0;
    double wv = -1.0;
    for (int64_t m = 0; m < n; m++)
        if (mask[m] && fabs(v[m] / scale[m]) > wv) { wv = fabs(v[m] / scale[m]); worst = m; }
    return worst;
}

/* Order and step factor after the n_fail-th error-test failure of a step (IDA's rule):
   first 0.9 (2 err + 1e-4)^(-1/(k+1)) within [0.25, 0.9], then a quarter; the order drops by
   one when the k-th difference is no larger than the (k+1)-th (IDA compares the terms
   k err_(k-1) and (k+1) err_k), and to 1 from the third failure on. */
static void after_error_failure(double err_n, double err_m, int64_t order, int64_t n_fail, double eta_min,
                                int64_t *order_out, double *factor_out) {
    if (n_fail >= 3) { *order_out = 1; *factor_out = ETA_MIN_EF; return; }
    int64_t new_order = order;
    if (order > 1 && (double)order * err_m <= (double)(order + 1) * err_n) new_order = order - 1;
    *order_out = new_order;
    if (n_fail == 1) {
        double e = new_order == order ? err_n : err_m;
        double factor = SAFETY * pow(2.0 * e + 1e-4, -1.0 / (double)(new_order + 1));
        *factor_out = pmin(SAFETY, pmax(eta_min, factor));
        return;
    }
    *factor_out = ETA_MIN_EF;
}

/* Order and step factor after a success (IDA's IDACompleteStep): the order from the error terms
   T_q = (q + 1) err_q of orders k-1, k, k+1, i.e. the norms of the differences themselves: at
   order 1 it rises when T_2 < T_1 / 2; above, it drops when T_(k-1) <= min(T_k, T_(k+1)), stays
   when T_(k+1) >= T_k, and rises otherwise. The step factor for the chosen order q is
   (2 err_q + 1e-4)^(-1/(q+1)), with IDA's hysteresis: grow only by >= 2 (capped at MAX_FACTOR),
   shrink to within [0.5, 0.9], else keep h (a kept h keeps the factorised iteration matrix and
   the Newton rate). SciPy's rule, the order with the largest admissible step, changed the
   Robotino's order at 40 % of the decisions and grew steps that then failed their error test:
   at rtol 1e-6 it took 11 % more steps, 25 % more Newton iterations and 50 % more LU
   factorisations, for a larger error. */
static void after_success(double err_m, double err_n, double err_p, int64_t order, int64_t max_order,
                          int64_t *order_out, double *factor_out) {
    double term_m = (double)order * err_m, term_n = (double)(order + 1) * err_n,
           term_p = (double)(order + 2) * err_p;
    int64_t new_order = order;
    double err = err_n;
    if (order == 1) {
        if (order < max_order && term_p < 0.5 * term_n) { new_order = 2; err = err_p; }
    } else if (term_m <= pmin(term_n, term_p)) {
        new_order = order - 1;
        err = err_m;
    } else if (order < max_order && term_p < term_n) {
        new_order = order + 1;
        err = err_p;
    }
    double factor = pow(2.0 * err + 1e-4, -1.0 / (double)(new_order + 1));
    if (factor >= GROW_MIN) factor = pmin(MAX_FACTOR, factor);
    else if (factor < 1.0) factor = pmin(SAFETY, pmax(0.5, factor));
    else factor = 1.0;
    *order_out = new_order;
    *factor_out = factor;
}

/* Write every output time the current step covers; returns the next output index. The
   polynomial's node shifts and 1/(h j) are taken once per step, not per output time: a small
   model's run answers some five output times a step, and dense_output's ten divisions each
   were a fifth of its time. */
static int64_t emit_outputs(const solver_t *s, int64_t k_out, double t, double h, int64_t order, const double *D,
                            int started) {
    const int64_t n = s->n;
    if (k_out >= s->n_out || s->t_out[k_out] > t) return k_out;
    double shift[MAX_ORDER + 1], inv[MAX_ORDER + 1];
    for (int64_t j = 1; j <= order; j++) {
        shift[j] = t - h * (double)(j - 1);
        inv[j] = 1.0 / (h * (double)j);
    }
    while (k_out < s->n_out && s->t_out[k_out] <= t) {
        double *Y = s->Yout + k_out * n, *YP = s->YPout + k_out * n;
        if (started) {
            const double t_eval = s->t_out[k_out];
            for (int64_t m = 0; m < n; m++) { Y[m] = D[m]; YP[m] = 0.0; }
            double prod = 1.0, dprod = 0.0; /* as dense_output */
            for (int64_t j = 1; j <= order; j++) {
                double x = (t_eval - shift[j]) * inv[j];
                dprod = dprod * x + prod * inv[j];
                prod = prod * x;
                const double *Dj = D + j * n;
                for (int64_t m = 0; m < n; m++) {
                    Y[m] += Dj[m] * prod;
                    YP[m] += Dj[m] * dprod;
                }
            }
        } else { /* no step yet: the initial point */
            for (int64_t m = 0; m < n; m++) { Y[m] = D[m]; YP[m] = D[n + m] / h; }
        }
        k_out++;
    }
    return k_out;
}

/* Accepted step: the new backward differences from the correction d (SciPy's update). */
static void update_differences(int64_t n, double *D, int64_t order, const double *d) {
    #pragma omp simd
    for (int64_t m = 0; m < n; m++) {
        D[(order + 2) * n + m] = d[m] - D[(order + 1) * n + m];
        D[(order + 1) * n + m] = d[m];
    }
    for (int64_t i = order; i >= 0; i--) {
        #pragma omp simd
        for (int64_t m = 0; m < n; m++) D[i * n + m] += D[(i + 1) * n + m];
    }
}

/* ---------------------------------------------------------------------------------- */
/* Event location: the model's discontinuities as root functions (docs/solver.md, "Events")
   The model's residual is smooth within a step because every discontinuous construct in it
   (Mod/floor, a Piecewise condition, Min/Max/clip) reads a *mode* frozen in the parameter
   array, p[n_par + k]. roots(t, y, yp, p, g) gives the switching functions g_j with the
   current modes; modes(t, y, yp, p, m) the modes the laws themselves would pick at a point.
   After an accepted step the core looks for a sign change of some g_j, finds its earliest
   root on the step's interpolating polynomial, ends the step there and continues with the
   new modes. */
/* ---------------------------------------------------------------------------------- */

/* g went from a to b through zero. A start exactly on zero is no crossing: the mode there was
   chosen for the side the solution moves to (natural modes just past the root). */
static inline int crosses(double a, double b) { return (a < 0.0 && b >= 0.0) || (a > 0.0 && b <= 0.0); }

static int any_crossing(int64_t nr, const double *g_lo, const double *g_hi) {
    for (int64_t j = 0; j < nr; j++)
        if (crosses(g_lo[j], g_hi[j])) return 1;
    return 0;
}

/* Earliest root in (t_lo, t_hi] of the functions that change sign there, on the step's
   interpolating polynomial: secant steps with bracketing and the Illinois weight, all functions at
   once, the one whose secant root comes first choosing the trial point (the scheme of IDA's root
   finder, IDARootfind): the weight doubles each time the same end is kept again, and a trial
   point within ttol/2 of an end moves a tenth of the bracket inwards. Both matter where one end's
   value is tiny against the other's (a restart just short of the next root: the secant then
   lands within round-off of that end, and a fixed weight with a ttol/2 nudge crawled, ending
   after its iterations at the bracket's far end, past a root it never reached). Returns the
   right end of the final bracket (at most ttol wide), where the crossing function already has
   its new sign; g_lo and g_hi hold the bracket's values. */
static double locate_root(const solver_t *s, work_t *w, double t_lo, double t_hi, double t, double h,
                          int64_t order, const double *D, double ttol) {
    const int64_t nr = s->n_roots;
    double *g_lo = w->g_lo, *g_hi = w->g_hi, *g_mid = w->g_mid;
    double alpha = 1.0;
    int side = 0, side_prev = -1;
    /* a guard only (IDA has none): the secant and the inward moves end far sooner; at worst a
       pass gains ttol/2 (a root of high multiplicity, end values 1e280 apart took 1,093 passes) */
    for (int it = 0; it < 2000; it++) {
        if (t_hi - t_lo <= ttol) break;
        if (side == side_prev) alpha = side == 2 ? alpha * 0.5 : alpha * 2.0;
        else alpha = 1.0;
        double frac = 0.0;
        for (int64_t j = 0; j < nr; j++) {
            if (crosses(g_lo[j], g_hi[j])) {
                double den = g_hi[j] - alpha * g_lo[j];
                double f = den != 0.0 ? fabs(g_hi[j] / den) : 0.5;
                if (f > frac) frac = f;
            }
        }
        double t_mid = t_hi - (t_hi - t_lo) * pmin(frac, 1.0);
        double inward = (t_hi - t_lo) > 5.0 * ttol ? 0.1 : 0.5 * ttol / (t_hi - t_lo);
        if (t_mid - t_lo < 0.5 * ttol) t_mid = t_lo + inward * (t_hi - t_lo);
        if (t_hi - t_mid < 0.5 * ttol) t_mid = t_hi - inward * (t_hi - t_lo);
        dense_output(s->n, t_mid, t, h, order, D, w->yo, w->ypo);
        s->roots(t_mid, w->yo, w->ypo, s->p, g_mid);
        side_prev = side;
        if (any_crossing(nr, g_lo, g_mid)) {
            t_hi = t_mid;
            memcpy(g_hi, g_mid, nr * sizeof(double));
            side = 2;
        } else {
            t_lo = t_mid;
            memcpy(g_lo, g_mid, nr * sizeof(double));
            side = 1;
        }
    }
    return t_hi;
}

/* A located root whose crossing function is exactly zero at the bracket's right end (g_hi):
   advance *t_root, doubling the distance from ttol up to the step end t, to the first point
   where every such function has its new sign strictly. A switching function computed from an
   unknown large against its change over ttol stays exactly zero over a stretch of time (a
   Robotino wheel at 2e4 rad moves by less than its ulp, 3.6e-12 rad, in 3.6e-13 s; g = 3(theta +
   pi/6)/pi - k is then exactly 0 over that stretch, while ttol at t = 0.04 s is 9e-16 s), and
   there its law still picks the old mode (floor(x) at x = k): the root would pass for a crossing
   that changes no mode, the step would go on with the old law, and the run underflowed at the
   roller's edge. Returns whether *t_root moved (g_hi then holds the values there). */
static int off_zero(const solver_t *s, work_t *w, double *t_root, double t, double h, int64_t order,
                    const double *D, double ttol) {
    const int64_t nr = s->n_roots;
    double *g_lo = w->g_lo, *g_hi = w->g_hi, *g_mid = w->g_mid;
    int on_zero = 0;
    for (int64_t j = 0; j < nr; j++) on_zero |= crosses(g_lo[j], g_hi[j]) && g_hi[j] == 0.0;
    if (!on_zero) return 0;
    double t0 = *t_root, t_past = t0;
    for (double d = 2.0 * ttol; t_past < t; d *= 2.0) {
        t_past = pmin(t0 + d, t);
        dense_output(s->n, t_past, t, h, order, D, w->yo, w->ypo);
        s->roots(t_past, w->yo, w->ypo, s->p, g_mid);
        int still = 0;
        for (int64_t j = 0; j < nr; j++) still |= crosses(g_lo[j], g_hi[j]) && g_hi[j] == 0.0 && g_mid[j] == 0.0;
        if (!still) break;
    }
    memcpy(g_hi, g_mid, nr * sizeof(double));
    *t_root = t_past;
    return 1;
}

/* The smallest step at t: 10 ulps of max(|t|, 1), so that t + h differs from t. */
static inline double hmin_at(double t) { return 10.0 * EPS * pmax(fabs(t), 1.0); }

/* The events' resolution in time, 100 ulp of |t| + |h|: the width of a located root's bracket,
   and how far past a point "just past it" is. */
static inline double event_ttol(double t, double h) { return 100.0 * EPS * (fabs(t) + fabs(h)); }

static int modes_changed(const solver_t *s, const double *m_new) {
    for (int64_t k = 0; k < s->n_modes; k++)
        if (s->p[s->n_par + k] != m_new[k]) return 1;
    return 0;
}

/* Exchange the modes in p with those in m. */
static void swap_modes(const solver_t *s, double *m) {
    for (int64_t k = 0; k < s->n_modes; k++) {
        double tmp = s->p[s->n_par + k];
        s->p[s->n_par + k] = m[k];
        m[k] = tmp;
    }
}

/* Do the new modes give the same residual as the old ones, at (t, y, y') and (points 2) one
   step h ahead along y'? Measured as the Newton correction the difference would cause (the
   factorised iteration matrix applied to it), in tolerance units. With both points: true for a
   relabelling (Mod crossing a multiple inside a law that stays continuous and smooth there),
   false for a jump or a kink; at the point alone, true for a kink (a clip at its limit) too. */
static int same_residual(const solver_t *s, double t, const double *y, const double *yp, double h, double *m_new,
                         const double *scale, double *r_a, double *r_b, double *y_ahead, int points, double tol) {
    const int64_t n = s->n;
    for (int k = 0; k < points; k++) {
        for (int64_t m = 0; m < n; m++) y_ahead[m] = y[m] + (k == 1 ? h * yp[m] : 0.0);
        s->res(t + (k == 1 ? h : 0.0), y_ahead, yp, s->p, r_a);
        swap_modes(s, m_new);
        s->res(t + (k == 1 ? h : 0.0), y_ahead, yp, s->p, r_b);
        swap_modes(s, m_new);
        for (int64_t m = 0; m < n; m++) {
            r_b[m] -= r_a[m];
            if (!isfinite(r_b[m])) return 0;
        }
        lu_apply(s, r_b);
        if (!(sqrt(sum_squares(n, r_b, 1.0, scale, NULL) / (double)n) <= tol)) return 0;
    }
    return 1;
}

static int same_law(const solver_t *s, double t, const double *y, const double *yp, double h, double *m_new,
                    const double *scale, double *r_a, double *r_b, double *y_ahead) {
    return same_residual(s, t, y, yp, h, m_new, scale, r_a, r_b, y_ahead, 2, SAME_TOL);
}

/* y' just after a restart at (t, y*): one backward-Euler step of PROBE h_r with the new modes,
   y'+ = (y(t + eps) - y*)/eps, error O(eps y''). It sees what F(t, y*, y') = 0 alone does not:
   a kink in an index-2 constraint (a roller's rolling arm) changes y' only through the
   constraint's derivative. Falls back to the old y' if the probe does not converge.
   Returns the cj of the factorisation it left in G. (yp_plus may be yp_minus.) */
static double probe_derivative(const solver_t *s, work_t *w, double t, double h_r, const double *y_star,
                               const double *yp_minus, double *yp_plus) {
    const int64_t n = s->n;
    double eps_p = PROBE * h_r;
    double cj = 1.0 / eps_p;
    for (int64_t m = 0; m < n; m++) {
        w->psi[m] = eps_p * yp_minus[m];
        w->y_pred[m] = y_star[m] + w->psi[m];
        w->yp[m] = yp_minus[m];
        w->scale[m] = s->atol[m] + s->rtol * fabs(y_star[m]);
        yp_plus[m] = yp_minus[m];
    }
    w->probe_converged = 0;
    int64_t bad = factorize(s, t + eps_p, w->y_pred, w->yp, cj, w->vals);
    s->stats[ST_JAC_EVALS] += 1;
    s->stats[ST_LU_FACTORIZATIONS] += 1;
    if (bad != -1) return -1.0;
    double ss = 20.0;
    int outcome = newton_solve(s, w, t + eps_p, cj, cj, w->scale, EVENT_NEWTON_TOL, &ss);
    w->probe_converged = outcome == CONVERGED;
    if (outcome == CONVERGED)
        for (int64_t m = 0; m < n; m++) yp_plus[m] = (w->y[m] - y_star[m]) / eps_p;
    return cj;
}

/* IDA's start-up phase after an event restart: each accepted step raises the order by one and
   doubles h, without waiting for order + 1 equal steps, until the first failure, the highest
   order, or the order-(k-1) estimate being no larger than the order-k one (the order would not
   rise). An order-1 restart otherwise needed some 30 steps to grow back (the Robotino's roller
   switches). Returns whether it still ramps; *order, *factor set. */
static int after_restart_step(const solver_t *s, work_t *w, const double *D, int64_t *order, int64_t max_order,
                              double h, double *factor) {
    if (*order >= max_order || h >= s->hmax) { *factor = 1.0; return 0; }
    if (*order > 1) {
        double err_n = error_norm(s, w, w->d, w->err_const[*order], w->y, w->scale);
        double err_m = error_norm(s, w, D + *order * s->n, w->err_const[*order - 1], w->y, w->scale);
        if (err_m <= err_n) { *factor = 1.0; return 0; }
    }
    *order += 1;
    *factor = pmin(2.0, s->hmax / h);
    return 1;
}

/* The first step after an event restart failed its error test and shrank to h: measure y'
   again over PROBE h. A derivative measured over the longer probe would keep an error
   ~ eps |y''| in the predictor however small h gets (a step input into a PID at rtol 1e-12
   then underflowed, as without events). Returns the cj of the new factorisation. */
static double reprobe(const solver_t *s, work_t *w, double t, double h, double *D) {
    const int64_t n = s->n;
    memcpy(w->y_star, D, n * sizeof(double));
    double cj = probe_derivative(s, w, t, h, w->y_star, w->yp_restart, w->yp_restart);
    for (int64_t m = 0; m < n; m++) D[n + m] = h * w->yp_restart[m];
    return cj;
}

/* Switch to the modes in w->m_new at (t_root, w->yq) with y'- = w->yq' (w->ypq) and restart at
   order 1: D reset to y* and h_r y'+, y'+ measured by a probe step, g_old the switching
   functions there with the new modes. h: the step so far, D's polynomial that of step h_poly
   (its |y''| caps the first step). Returns the first step h_r; *cj_lu: the probe's factorisation. */
static double restart_at(const solver_t *s, work_t *w, double t_root, double h, double h_poly, int64_t order,
                         double *D, double hmin, double *cj_lu) {
    const int64_t n = s->n;
    double *yq = w->yq, *ypq = w->ypq, *ypo = w->ypo;
    swap_modes(s, w->m_new);
    s->stats[ST_EVENTS] += 1;
    s->stats[ST_EVENT_RESTARTS] += 1;
    for (int64_t m = 0; m < n; m++) w->scale[m] = s->atol[m] + s->rtol * fabs(yq[m]);
    double h_r = pmin(h, s->hmax);
    if (order >= 2) { /* first step from |y''| ~ |D[2]| / h^2 of the last polynomial: BDF1 error h^2 |y''| / 4 */
        double ypp = wrms(n, D + 2 * n, w->scale, s->mask, w->nmask) / (h_poly * h_poly);
        if (ypp > 0.0) h_r = pmin(h_r, 1.0 / sqrt(ypp));
    }
    h_r = pmax(h_r, 100.0 * hmin);
    *cj_lu = probe_derivative(s, w, t_root, h_r, yq, ypq, ypo);
    /* The modes were picked on the polynomial of the step that found the root; the run restarts
       from y* of the step landed on it, which differs from it by that step's error. A law whose
       switching function is past zero at y* too must switch now or never: the sign it starts
       with is the one it keeps, so no crossing is seen (the omni5dpo's three identical PID clips:
       the two not located were at -4e-10 and -1e-8 at y* and stayed on the wrong side of their
       limit, its wheel speeds 1.1 rad/s apart). So the modes just past t* along y'+ are taken as
       well, as at init, except that a mode switched here is not switched back (it would chatter
       at its limit). */
    double ttol = event_ttol(t_root, h);
    for (int64_t m = 0; m < n; m++) w->r2[m] = yq[m] + ttol * ypo[m];
    s->modes(t_root + ttol, w->r2, ypo, s->p, w->m_past);
    int more = 0;
    for (int64_t k = 0; k < s->n_modes; k++) {
        double *mode = s->p + s->n_par + k;
        if (w->m_past[k] != *mode && *mode == w->m_new[k]) { /* (m_new: the modes before the switch) */
            *mode = w->m_past[k];
            more = 1;
        }
    }
    if (more) {
        s->stats[ST_EVENTS] += 1;
        *cj_lu = probe_derivative(s, w, t_root, h_r, yq, ypq, ypo);
    }
    memset(D, 0, NROWS * n * sizeof(double));
    for (int64_t m = 0; m < n; m++) {
        D[m] = yq[m];
        D[n + m] = h_r * ypo[m];
    }
    s->roots(t_root, yq, ypo, s->p, w->g_old);
    return h_r;
}

/* A step attempt from t of size h failed in Newton. Do the switching functions change sign
   between the step start (g_old) and the predicted point (y_pred, y' = psi cj)? Then a law
   may be evaluated past its switch with the old modes (acos(clip(t - 1, -1, 1)) is NaN past
   t = 2 on its unclipped branch) and the step must end before the switch instead of shrinking
   blindly. Returns the earliest predicted crossing as a fraction of h (g interpolated linearly
   between the two points), or -1 when none changes sign. */
static double predicted_crossing(const solver_t *s, work_t *w, double t, double h, double cj) {
    const int64_t n = s->n, nr = s->n_roots;
    for (int64_t m = 0; m < n; m++) w->ypq[m] = w->psi[m] * cj;
    s->roots(t + h, w->y_pred, w->ypq, s->p, w->g_new);
    double frac = -1.0;
    for (int64_t j = 0; j < nr; j++) {
        double a = w->g_old[j], b = w->g_new[j];
        if (!crosses(a, b)) continue;
        double f = a / (a - b);
        if (!(f >= 0.0)) f = 0.0;
        if (f > 1.0) f = 1.0;
        if (frac < 0.0 || f < frac) frac = f;
    }
    return frac;
}


/* Are the modes the laws pick at the step's end (t, w->y, w->yp; in w->m_new) within the step's
   accuracy of the current ones? Each unknown of the point is known to within its error weight
   (atol + rtol |y|, what the error test lets one step be off), and its derivative, y' = cj (y -
   psi), to within cj times what this step's estimates leave in y: the local error estimate
   ec |d_i| and Newton's remaining error ss |dy_i| (its convergence test's own estimate). A
   switching function g_j is within its band of zero when moving the unknowns and derivatives
   by those amounts can take it across zero, to first order: |g_j| <= sum_i |dg_j/dy_i| scale_i +
   |dg_j/dy'_i| cj (ec |d_i| + ss |dy_i|) (the switching functions evaluated once per unknown and
   once per derivative moved). The solver does not know which function belongs to which mode,
   so it asks the laws: for each g_j within its band, the laws' modes at the corner of that box
   that moves g_j furthest towards zero and beyond. If they are the current ones wherever the
   end's differ, a point within the step's accuracy of the end is on the current mode's side and
   the mode is tolerated. A restart point lies within one step's error of its root (the landing
   that produced it is that far off the polynomial the root was found on), and y' there is what a
   short probe measured: a mode just switched, which restart_at keeps, is within the band there
   (a PID clip reads a wheel speed, y' of its angle); it leaves the band when the function moves
   on. dg: n x n_roots for y, then n x n_roots for y'. */
static int within_band(const solver_t *s, work_t *w, double t, double cj, double ec, double ss, double ttol) {
    const int64_t n = s->n, nr = s->n_roots;
    double *dg = w->dg, *dgp = w->dg + n * nr, *y_c = w->yq, *yp_c = w->ypq, *m_c = w->m_past;
    double *dyp = w->r2; /* what y' may be off by */
    for (int64_t i = 0; i < n; i++) dyp[i] = cj * (ec * fabs(w->d[i]) + ss * fabs(w->dy[i]));
    memcpy(y_c, w->y, n * sizeof(double));
    memcpy(yp_c, w->yp, n * sizeof(double));
    for (int64_t i = 0; i < n; i++) {
        y_c[i] = w->y[i] + w->scale[i];
        s->roots(t, y_c, yp_c, s->p, dg + i * nr);
        y_c[i] = w->y[i];
        yp_c[i] = w->yp[i] + dyp[i];
        s->roots(t, y_c, yp_c, s->p, dgp + i * nr);
        yp_c[i] = w->yp[i];
        for (int64_t j = 0; j < nr; j++) {
            dg[i * nr + j] -= w->g_new[j];
            dgp[i * nr + j] -= w->g_new[j];
        }
    }
    for (int64_t j = 0; j < nr; j++) {
        double band = 0.0;
        for (int64_t i = 0; i < n; i++) band += fabs(dg[i * nr + j]) + fabs(dgp[i * nr + j]);
        if (!(fabs(w->g_new[j]) <= band)) continue;
        /* the corner: each unknown and derivative moved by its amount in the direction that takes
           g_j to zero (those g_j does not read stay) */
        double up = w->g_new[j] > 0.0 ? -1.0 : 1.0;
        for (int64_t i = 0; i < n; i++) {
            double a = dg[i * nr + j], b = dgp[i * nr + j];
            y_c[i] = w->y[i] + (a > 0.0 ? up : a < 0.0 ? -up : 0.0) * w->scale[i] + ttol * w->yp[i];
            yp_c[i] = w->yp[i] + (b > 0.0 ? up : b < 0.0 ? -up : 0.0) * dyp[i];
        }
        s->modes(t + ttol, y_c, yp_c, s->p, m_c);
        int restored = 1;
        for (int64_t k = 0; k < s->n_modes; k++)
            if (w->m_new[k] != s->p[s->n_par + k] && m_c[k] != s->p[s->n_par + k]) restored = 0;
        if (restored) return 1;
    }
    return 0;
}

/* A converged step attempt ending at (t_acc, w->y, w->yp): may it be accepted with the current
   modes? Switching functions in w->g_new on return; when not, the modes the laws pick just past
   the step's end in w->m_new. A sign change is no concern here (handle_events locates it and
   takes the modes just past the root for every law). With the modes the laws pick there, the
   residual is that of the laws themselves (every discontinuity of the model reads a mode), so
   the point solves them as it solves F = 0. Otherwise (no sign change, modes differ):
   - a switching function started the step exactly on zero and ends it off zero: MODES_LEFT_ZERO.
     Such a start changed no sign, for crosses(): the mode there was chosen for the side the
     solution would move to, and it did not move there (a wheel at rest whose angle moves by
     round-off first one way, then the other);
   - the end is within the step's accuracy of the current modes (within_band): MODES_OK, the mode is
     tolerated. restart_at keeps a mode just switched although the restart point can lie a
     step's error back across its root (switching it back would chatter at a PID's limit);
   - else MODES_WRONG: a mode the laws exclude by more than the step's accuracy can tell, which
     the step's start had too (kept by restart_at, then carried away from its switch). */
enum { MODES_OK, MODES_LEFT_ZERO, MODES_WRONG };
static int modes_inconsistent(const solver_t *s, work_t *w, double t_acc, double h, double cj, double ec,
                              double ss) {
    const int64_t n = s->n, nr = s->n_roots;
    s->roots(t_acc, w->y, w->yp, s->p, w->g_new);
    if (any_crossing(nr, w->g_old, w->g_new)) return MODES_OK;
    double ttol = event_ttol(t_acc, h);
    for (int64_t m = 0; m < n; m++) w->r2[m] = w->y[m] + ttol * w->yp[m];
    s->modes(t_acc + ttol, w->r2, w->yp, s->p, w->m_new);
    if (!modes_changed(s, w->m_new)) return MODES_OK;
    for (int64_t j = 0; j < nr; j++)
        if (w->g_old[j] == 0.0 && w->g_new[j] != 0.0) return MODES_LEFT_ZERO;
    /* the laws keep the current modes at the end itself and leave them only within ttol past
       it: the switch is at the end to the events' resolution, and the next step, starting on
       it, crosses it. Refused, the step shrank by quarters and its fourth successor landed on
       the switch again (the dual-arm's acos(clip(2 t / T - 1, -1, 1)) at t = T: 16 rejected
       steps and 18 LUs on the way to a switch that a function of t alone puts exactly there) */
    s->modes(t_acc, w->y, w->yp, s->p, w->m_past);
    if (!modes_changed(s, w->m_past)) return MODES_OK;
    return within_band(s, w, t_acc, cj, ec, ss, ttol) ? MODES_OK : MODES_WRONG;
}


/* After the step t_prev -> t (D updated with the correction d), whose end has a switching
   function with a new sign. Returns the code; *t, *h, *k_out, *cj_lu updated:
   EV_NONE: nothing to do; EV_SWITCHED: new modes, the step (possibly shortened to end at the
   root, D and h then those of the shorter step) continues as it is, because the law did not
   change there; EV_RESTART: the step was ended at the root, outputs before it written, the
   modes switched and D reset for an order-1 restart at t with step h (y' measured by a probe
   step), the iteration matrix to be formed anew. */
/* Output times from k_out up to a located root t_root, from the polynomial (order, D) of the step
   that ended there (at t_a, of size h_a); m_old: the modes before the switch. One on the root
   itself (to ttol) where the laws already pick other modes (t < 0.1 at t = 0.1) is left to the
   restart, written after it from y* and y'+: its row's state is then the one its laws (the
   outputs' kernel reads them at t) belong to. Not at t_stop: the run ends there, and its last row
   is the one its interval's laws reach (inputs given on [t0, t_stop] end at t_stop; y'+ would be
   measured past it). Returns the next output index. */
static int64_t emit_event_rows(const solver_t *s, work_t *w, int64_t k_out, double t_root, double t_a, double h_a,
                               int64_t order, const double *D, const double *m_old, double ttol) {
    const int64_t n = s->n;
    while (k_out < s->n_out && s->t_out[k_out] <= t_root) {
        dense_output(n, s->t_out[k_out], t_a, h_a, order, D, w->yo, w->ypo);
        if (s->t_out[k_out] >= t_root - ttol && t_root < s->t_stop - ttol) {
            s->modes(s->t_out[k_out], w->yo, w->ypo, s->p, w->m_past);
            int other = 0;
            for (int64_t k = 0; k < s->n_modes; k++) other |= w->m_past[k] != m_old[k];
            if (other) break;
        }
        memcpy(s->Yout + k_out * n, w->yo, n * sizeof(double));
        memcpy(s->YPout + k_out * n, w->ypo, n * sizeof(double));
        k_out++;
    }
    return k_out;
}

static int handle_events(const solver_t *s, work_t *w, double t_prev, double *t_io, double *h_io, int64_t order,
                         double *D, double hmin, int64_t *k_out_io, double *cj_lu_io, int gliding) {
    const int64_t n = s->n, nr = s->n_roots;
    double t = *t_io, h = *h_io, cj_lu = *cj_lu_io;
    int64_t k_out = *k_out_io;
    double *D_prev = w->D_prev, *D_acc = w->D_acc, *yo = w->yo, *ypo = w->ypo, *yq = w->yq, *ypq = w->ypq;
    double *g_old = w->g_old, *g_new = w->g_new, *g_lo = w->g_lo, *g_hi = w->g_hi, *m_new = w->m_new;
    /* the differences before the step, rows 0..order+1 (all a step of this order reads), by
       undoing update_differences: cheaper than copying D at every step */
    for (int64_t i = 0; i <= order; i++)
        for (int64_t m = 0; m < n; m++) D_prev[i * n + m] = D[i * n + m] - D[(i + 1) * n + m];
    for (int64_t m = 0; m < n; m++) D_prev[(order + 1) * n + m] = w->d[m] - D[(order + 2) * n + m];
    dense_output(n, t, t, h, order, D, yo, ypo);
    s->roots(t, yo, ypo, s->p, g_new);
    if (!any_crossing(nr, g_old, g_new)) {
        memcpy(g_old, g_new, nr * sizeof(double));
        return EV_NONE;
    }
    /* the modes the laws pick just past the step end (on the polynomial extended by ttol: a
       function that ends exactly on zero, t <= 0.5 at t = 0.5, is judged on the far side) */
    double ttol = event_ttol(t, h);
    dense_output(n, t + ttol, t, h, order, D, yq, ypq);
    s->modes(t + ttol, yq, ypq, s->p, m_new);
    /* With one function crossing, the modes at the step's end are those past its root. With two or
       more, the laws in between can differ from both ends (a pulse, t > t1 and t < t2, passed in
       one step: off at both ends, on between): then the earliest root decides, as located below */
    int64_t crossing = 0;
    for (int64_t j = 0; j < nr; j++) crossing += crosses(g_old[j], g_new[j]);
    if (crossing == 1 && !modes_changed(s, m_new)) {
        memcpy(g_old, g_new, nr * sizeof(double));
        return EV_NONE;
    }
    /* One function crossing: a relabel (same_law) keeps the step with the new modes. So does a
       crossing of a law switching back and forth at located roots (gliding: event_chatter's
       count half way to CHATTER_MAX, the last switch within CHATTER_EVENT_STEPS) whose new
       modes change the residual at the step's end by a few tolerance units (GLIDE_TOL), not
       more: a continuous law with a kink there, crossed a little way (a PID's clip on its
       limit, where the loop pushes its input past the limit and the back-calculation pushes it
       back). The Robotino twin restarted 11 times at one instant, then failed with CHATTER;
       gliding, it follows a run at rtol 1e-9. A jump (dry friction) is still located. */
    int kept = EV_NONE;
    if (crossing == 1 && same_law(s, t, yo, ypo, h, m_new, w->scale, w->r, w->r2, yq))
        kept = EV_SWITCHED;
    else if (crossing == 1 && gliding &&
             same_residual(s, t, yo, ypo, h, m_new, w->scale, w->r, w->r2, yq, 1, GLIDE_TOL))
        kept = EV_GLIDED;
    if (kept != EV_NONE) {
        swap_modes(s, m_new);
        s->stats[ST_EVENTS] += 1;
        s->roots(t, yo, ypo, s->p, g_old);
        return kept;
    }
    /* locate the earliest root whose modes differ */
    double t_lo = t_prev;
    memcpy(g_lo, g_old, nr * sizeof(double));
    double t_root = t;
    int found = 0, relabeled = 0;
    for (int64_t it = 0; it < 4 * (nr + 1); it++) {
        memcpy(g_hi, g_new, nr * sizeof(double));
        t_root = locate_root(s, w, t_lo, t, t, h, order, D, ttol);
        dense_output(n, t_root + ttol, t, h, order, D, yo, ypo);
        s->modes(t_root + ttol, yo, ypo, s->p, m_new);
        if (!modes_changed(s, m_new) && off_zero(s, w, &t_root, t, h, order, D, ttol)) {
            dense_output(n, t_root + ttol, t, h, order, D, yo, ypo);
            s->modes(t_root + ttol, yo, ypo, s->p, m_new);
        }
        if (modes_changed(s, m_new)) {
            /* Of two or more crossings, one that only relabels the same law (two wheels' Mod
               passing a multiple in one step) is taken where it is, on the accepted step, and the
               search goes on past it with the new modes' switching functions: landing on it would
               cost a shortened step and an iteration matrix for nothing */
            if (crossing < 2 ||
                !same_law(s, t_root, yo, ypo, h, m_new, w->scale, w->r, w->r2, yq)) {
                found = 1;
                break;
            }
            swap_modes(s, m_new);
            s->stats[ST_EVENTS] += 1;
            relabeled = 1;
            s->roots(t_root + ttol, yo, ypo, s->p, g_hi);
            dense_output(n, t, t, h, order, D, yq, ypq);
            s->roots(t, yq, ypq, s->p, g_new);
        }
        /* a crossing that changes no mode, or a relabel: search on past it */
        t_lo = t_root;
        memcpy(g_lo, g_hi, nr * sizeof(double));
        if (!any_crossing(nr, g_lo, g_new)) break;
    }
    if (!found) {
        memcpy(g_old, g_new, nr * sizeof(double));
        return relabeled ? EV_SWITCHED : EV_NONE;
    }
    /* end the step at the root: redo it from t_prev with the shorter step */
    memcpy(D_acc, D, NROWS * n * sizeof(double));
    double t_anchor = t, h_anchor = h;
    double h_land = t_root - t_prev;
    int landed = t_root >= t - ttol;
    if (!landed && h_land > hmin) {
        memcpy(D, D_prev, NROWS * n * sizeof(double));
        rescale_D(n, D, order, h_land / h, w);
        predict(s, D, order, w->gamma, w->gamma[order], w->y_pred, w->psi, w->scale);
        double cj = w->gamma[order] / h_land;
        for (int64_t m = 0; m < n; m++) w->yp[m] = w->psi[m] * cj;
        int64_t bad = factorize(s, t_root, w->y_pred, w->yp, cj, w->vals);
        s->stats[ST_JAC_EVALS] += 1;
        s->stats[ST_LU_FACTORIZATIONS] += 1;
        if (bad == -1) {
            cj_lu = cj;
            double ss = 20.0;
            int outcome = newton_solve(s, w, t_root, cj, cj, w->scale, EVENT_NEWTON_TOL, &ss);
            if (outcome == CONVERGED) {
                update_differences(n, D, order, w->d);
                t_anchor = t_root;
                h_anchor = h_land;
                landed = 1;
            }
        } else {
            cj_lu = -1.0;
        }
        if (!landed) memcpy(D, D_acc, NROWS * n * sizeof(double)); /* interpolate the accepted step instead */
    }
    /* outputs up to the root from the polynomial of the (shortened) step */
    k_out = emit_event_rows(s, w, k_out, t_root, t_anchor, h_anchor, order, D, s->p + s->n_par, ttol);
    dense_output(n, t_root, t_anchor, h_anchor, order, D, yq, ypq); /* y*, y'- (old modes) */
    if (t_anchor == t_root && cj_lu > 0) {
        for (int64_t m = 0; m < n; m++) w->scale[m] = s->atol[m] + s->rtol * fabs(yq[m]);
        if (same_law(s, t_root, yq, ypq, h_anchor, m_new, w->scale, w->r, w->r2, yo)) {
            swap_modes(s, m_new);
            s->stats[ST_EVENTS] += 1;
            s->roots(t_root, yq, ypq, s->p, g_old);
            *t_io = t_root; *h_io = h_anchor; *k_out_io = k_out; *cj_lu_io = cj_lu;
            return EV_SWITCHED;
        }
    }
    /* a new law from here: switch the modes and restart at order 1. The polynomial that answered
       the outputs up to the root is kept for those of the next call (this one's may end before
       the root: the progress bar's chunks, a fit's rows, a twin's frames), which the restart's
       polynomial, starting at the root, would answer by extrapolating backwards across it */
    memcpy(w->D_event, D, (order + 1) * n * sizeof(double));
    memcpy(w->m_event, s->p + s->n_par, s->n_modes * sizeof(double));
    s->st[S_EV_T] = t_root; s->st[S_EV_ANCHOR] = t_anchor; s->st[S_EV_H] = h_anchor; s->st[S_EV_TTOL] = ttol;
    s->ist[I_EV_ORDER] = order;
    double h_r = restart_at(s, w, t_root, h, h_anchor, order, D, hmin, &cj_lu);
    *t_io = t_root; *h_io = h_r; *k_out_io = k_out; *cj_lu_io = cj_lu;
    return EV_RESTART;
}

/* ---------------------------------------------------------------------------------- */
/* The step loop, split as IDA's IDAStep is: an attempt (step_attempt: predictor and   */
/* Newton, IDAnls), its failures (newton_failure: IDAHandleNFlag's convergence branch;  */
/* error_test_failure: IDATestError's failure branch; mode_failure), the accepted step */
/* (complete_step: IDACompleteStep, with the events and the step/order choice).        */
/* ---------------------------------------------------------------------------------- */

/* The step loop's state: loaded from st/ist at the start of bdf_advance, stored back at its end
   (the fields with a slot), or living for one call (the others). */
typedef struct {
    double t, h, cj_lu, ss, cj_last; /* S_T, S_H, S_CJ_LU, S_SS, S_CJ_LAST */
    int64_t order, n_equal, k_out, max_order; /* I_ORDER, I_N_EQUAL, I_K_OUT, I_MAX_ORDER */
    int lu_valid;                    /* I_LU_VALID */
    int restart_pending, ramp;       /* I_EVENT_PHASE: no step accepted since an event restart;
                                        IDA's start-up phase after it (after_restart_step) */
    int64_t fail_kind, fail_index;   /* I_FAIL_KIND, I_FAIL_INDEX: what a failure names */
    int64_t rate_age;                /* I_RATE_AGE */
    /* per call */
    double hmin;                     /* smallest step at t */
    double t_new;                    /* end of the step being attempted */
    double cj;                       /* its alpha_k / h */
    double t_switched;               /* where a failed step last restarted on a switch */
    int64_t steps_here;              /* steps accepted since the last output time was reached */
    /* per step (reset by begin_step) */
    int64_t n_err_fail, n_cut;       /* error-test failures; cuts short of a predicted switch */
    double err_restart;              /* the last failure's error of a first step after a restart */
    double err_order1;               /* the last failure's error where it was at order 1 (else inf) */
    double h_mode;                   /* the step size at which its end first excluded its modes */
    /* modes switched back at a step's start (wrong_mode_failure) */
    int64_t n_back, k_back, steps_back; /* how often in a row, which mode, at which step count */
    /* modes switched back at located roots (event_chatter): how often in a row, which mode, at
       which step count, the value it had before its last switch */
    int64_t n_ev_back, k_ev, steps_ev;
    double ev_from;
} loop_t;

/* outcomes of a step's attempt and of its failure handlers */
enum { ATTEMPT_CONVERGED, ATTEMPT_NEWTON_FAILED, ATTEMPT_SINGULAR, /* step_attempt */
       RETRY, RESTARTED, CHATTERED, ACCEPTED };                     /* the handlers */

/* The step size limits at t, before the attempts at a step: hmin, hmax and tstop. */
static void begin_step(const solver_t *s, work_t *w, loop_t *L) {
    const int64_t n = s->n;
    L->hmin = hmin_at(L->t);
    if (L->h > s->hmax) {
        rescale_D(n, s->D, L->order, s->hmax / L->h, w);
        L->h = s->hmax;
        L->n_equal = 0;
    }
    if (L->t + L->h > s->t_stop) {
        double hn = s->t_stop - L->t;
        rescale_D(n, s->D, L->order, hn / L->h, w);
        L->h = hn;
        L->n_equal = 0;
    }
    L->n_err_fail = 0;
    L->n_cut = 0;
    L->h_mode = 0.0;
    L->err_order1 = INFINITY;
}

/* One attempt at the step t -> t + h (IDA's IDAnls with its predictor): predict, form and
   factorise G when the old one is out of range, simplified Newton, and one retry on a fresh G
   if an old one converged badly. Returns ATTEMPT_CONVERGED (w->y, w->yp, w->d the new point),
   ATTEMPT_NEWTON_FAILED (w->r the last residual) or ATTEMPT_SINGULAR (L->fail_* set). */
static int step_attempt(const solver_t *s, work_t *w, loop_t *L) {
    const int64_t n = s->n, nr = s->n_roots;
    int64_t *stats = s->stats;
    L->t_new = L->t + L->h;
    predict(s, s->D, L->order, w->gamma, w->gamma[L->order], w->y_pred, w->psi, w->scale);
    double cj = w->gamma[L->order] / L->h; /* kappa = 0: alpha_k = gamma_k */
    L->cj = cj;
    /* IDA's rule: the factorised G(cj_lu) serves while cj/cj_lu stays in [0.6, 1.67] */
    if (L->lu_valid && !(CJ_RATIO_LO <= cj / L->cj_lu && cj / L->cj_lu <= CJ_RATIO_HI)) L->lu_valid = 0;
    double ss_old_g = L->ss; /* the rate measured on the G in use, before any reset below */
    if (cj != L->cj_last || (L->n_equal == 0 && L->rate_age >= RATE_AGE))
        /* the carried rate says nothing about a different cj (IDA), and it is measured afresh
           at the first step decision RATE_AGE steps after it was last measured: at fixed cj a
           rate carried unmeasured over many one-iteration steps left Newton errors that made the
           Boudon et al. slider crank 20x less accurate at rtol 1e-8 */
        L->ss = 100.0;
    L->cj_last = cj;
    for (;;) {
        int fresh = 0;
        if (!L->lu_valid) {
            for (int64_t m = 0; m < n; m++) w->yp[m] = w->psi[m] * cj;
            int64_t bad = factorize(s, L->t_new, w->y_pred, w->yp, cj, w->vals);
            stats[ST_JAC_EVALS] += 1;
            stats[ST_LU_FACTORIZATIONS] += 1;
            if (bad != -1) {
                if (nr > 0 && predicted_crossing(s, w, L->t, L->h, cj) >= 0.0) {
                    /* G past a switch (d/dx sqrt(1 - x) beyond x = 1): a failed attempt */
                    s->res(L->t_new, w->y_pred, w->yp, s->p, w->r); /* names the equation if h underflows */
                    stats[ST_RES_EVALS] += 1;
                    return ATTEMPT_NEWTON_FAILED;
                }
                L->fail_kind = bad == -2 ? FAIL_SPARSE_FILL : FAIL_PIVOT;
                L->fail_index = bad;
                return ATTEMPT_SINGULAR;
            }
            L->lu_valid = 1;
            /* IDA restarts the rate estimate at 20 after every new G. When the step has grown
               (cj fell), a G fresh at the new cj converges at least as fast as the old one did,
               so its measured rate stands: 4.1k of the Robotino's 10k new G then converge in one
               iteration instead of two. Not when the step shrank: the iteration matrix of an
               index-2 DAE gets worse conditioned as h falls (the index-2 pendulum underflowed at
               rtol 1e-5 when a rate from the larger step was trusted there). */
            L->ss = cj < L->cj_lu ? pmin(ss_old_g, 20.0) : 20.0;
            L->cj_lu = cj;
            fresh = 1;
        }
        int outcome = newton_solve(s, w, L->t_new, cj, L->cj_lu, w->scale, NEWTON_TOL, &L->ss);
        if (outcome == CONVERGED && fresh)
            /* a fresh G converges at exact Newton's rate (5e-9 measured), which says nothing of
               the same G a step later: on the Robotino the rows of the rolling constraints turn
               with the heading and a G one step old can contract by worse than 1. The next step
               measures it (IDA's 20 for an unmeasured rate; docs/solver.md) */
            L->ss = 20.0;
        if (outcome == CONVERGED) {
            L->rate_age = w->newton_its >= 2 ? 0 : L->rate_age + 1; /* (two iterations measure it) */
            return ATTEMPT_CONVERGED;
        }
        if (fresh) {
            /* the next G by partial pivoting afresh: a kept order is only a threshold order */
            s->ist[I_LU_KEPT] = 0;
            return ATTEMPT_NEWTON_FAILED;
        }
        L->lu_valid = 0; /* refresh the iteration matrix and retry */
        ss_old_g = 20.0; /* the old G's rate was too slow: nothing to carry */
        stats[ST_NEWTON_FAILURES] += 1;
    }
}

/* Newton failed on a fresh G (IDA's IDAHandleNFlag for a convergence failure): a quarter of the
   step and a new G, unless a switching function changes sign inside the step (docs/solver.md,
   "Events"): then the step is cut short of the switch, or, when the step starts on it, the
   modes just past it are taken and the method restarts there. Returns RETRY or RESTARTED. */
static int newton_failure(const solver_t *s, work_t *w, loop_t *L) {
    const int64_t n = s->n, nr = s->n_roots;
    double *D = s->D;
    s->stats[ST_NEWTON_FAILURES] += 1;
    /* remember the equation with the largest residual: named if h underflows */
    int64_t worst = 0;
    double wv = -1.0;
    for (int64_t m = 0; m < n; m++) {
        double a = isfinite(w->r[m]) ? fabs(w->r[m]) : INFINITY;
        if (a > wv) { wv = a; worst = m; }
    }
    /* a residual that is NaN or inf there (a law outside its domain) is no divergence */
    L->fail_kind = isfinite(w->r[worst]) ? FAIL_NEWTON : FAIL_NOT_FINITE;
    L->fail_index = worst;
    L->ramp = 0;
    double factor = ETA_CF;
    double frac = nr > 0 ? predicted_crossing(s, w, L->t, L->h, L->cj) : -1.0;
    if (frac >= 0.0) {
        double ttol = event_ttol(L->t, L->h);
        if (frac * L->h <= ttol) {
            /* the step starts on the switch: the modes just past it, and a restart (once at a
               point: a second would loop without a step accepted) */
            dense_output(n, L->t + ttol, L->t, L->h, L->order, D, w->yq, w->ypq);
            s->modes(L->t + ttol, w->yq, w->ypq, s->p, w->m_new);
            if (L->t != L->t_switched && modes_changed(s, w->m_new)) {
                L->t_switched = L->t;
                dense_output(n, L->t, L->t, L->h, L->order, D, w->yq, w->ypq);
                L->h = restart_at(s, w, L->t, L->h, L->h, L->order, D, L->hmin, &L->cj_lu);
                s->stats[ST_REJECTED] += 1;
                return RESTARTED;
            }
        } else {
            /* end the step ttol/2 short of the predicted switch; a second cut in the same step
               (the prediction was late) at least halves it */
            factor = frac - 0.5 * ttol / L->h;
            if (L->n_cut > 0) factor = pmin(factor, 0.5);
            L->n_cut += 1;
        }
    }
    rescale_D(n, D, L->order, factor, w);
    L->h *= factor;
    L->n_equal = 0;
    L->lu_valid = 0;
    s->stats[ST_REJECTED] += 1;
    return RETRY;
}

/* The attempt's error estimate err_n exceeded 1 (IDA's IDATestError failure branch, then
   IDAHandleNFlag): the order and step factor of after_error_failure, the step of the first
   attempt after an event restart shrinking by as much as its estimate asks (ETA_MIN_RESTART);
   after an event restart y' is measured again over the smaller step (reprobe). */
static void error_test_failure(const solver_t *s, work_t *w, loop_t *L, double err_n) {
    const int64_t n = s->n;
    double *D = s->D;
    L->n_err_fail += 1;
    s->stats[ST_REJECTED] += 1;
    s->stats[ST_ERROR_TEST_FAILURES] += 1;
    L->fail_kind = FAIL_ERROR_TEST;
    L->fail_index = worst_unknown(n, w->d, w->scale, s->mask);
    double err_m = L->order > 1 ? error_norm(s, w, D + L->order * n, w->err_const[L->order - 1], w->y, w->scale)
                                : INFINITY;
    /* Two order-1 failures in a row, the second a quarter of the first's step (after_error_failure
       from the second failure on): from a point on the equations the error falls as h^2, by 16.
       One that is not halved is the step start's own distance from them, which no step size
       mends. A Newton solve stops within a fraction of the weights of its solution, and where a
       constraint reads the derivative of another unknown (a pendulum's momentum m l sin(th) th'
       next to th' = p/J) that remainder reaches it multiplied by cj: the cart-pole at rtol 1e-6
       accepted a point whose pendulum momentum missed its constraint by 2.5 weights, and every
       shorter step measured the same 2.5 until the step underflowed. The run then restarts from
       the end of a short probe, where the equations hold (below, as after an event). */
    int stalled = L->order == 1 && L->n_err_fail >= 3 && err_n > 0.5 * L->err_order1;
    L->err_order1 = L->order == 1 ? err_n : INFINITY;
    int64_t new_order;
    double factor;
    after_error_failure(err_n, err_m, L->order, L->n_err_fail, L->restart_pending ? ETA_MIN_RESTART : ETA_MIN_EF,
                        &new_order, &factor);
    L->order = new_order;
    rescale_D(n, D, L->order, factor, w);
    L->h *= factor;
    L->n_equal = 0;
    L->ramp = L->ramp && L->restart_pending; /* a failure after the first step ends the start-up phase */
    if (L->restart_pending) {
        /* An order-1 step from a point on the new law's constraints has an error falling as
           h^2, by 16 for the quarter after_error_failure cuts to from the second failure on;
           one that stays (not halved by such a cut) is the restart point's own distance from
           them, which no step size mends: the located root is known to ttol, and where the new law's
           constraints change slope at the switch the point the old law reached there misses
           them by that much (the Robotino at rtol 1e-9 and t = 2031 s: a momentum 1.2e-10 off
           against a weight of 1.05e-11, the same error at every h down to hmin). Then the run
           restarts from the probe's end, where the new law holds, and measures y' there again. */
        int off = L->n_err_fail >= 3 && err_n > 0.5 * L->err_restart;
        L->err_restart = err_n;
        L->cj_lu = reprobe(s, w, L->t, L->h, D);
        if (off && w->probe_converged && L->cj_lu > 0) {
            memcpy(D, w->y, n * sizeof(double));
            L->t += PROBE * L->h;
            L->cj_lu = reprobe(s, w, L->t, L->h, D);
        }
        L->lu_valid = 0;
    } else if (stalled) {
        for (int64_t m = 0; m < n; m++) w->yp_restart[m] = D[n + m] / L->h; /* y' of the order-1 step */
        L->cj_lu = reprobe(s, w, L->t, L->h, D);
        if (w->probe_converged && L->cj_lu > 0) {
            memcpy(D, w->y, n * sizeof(double));
            memset(D + 2 * n, 0, (NROWS - 2) * n * sizeof(double));
            L->t += PROBE * L->h;
            L->cj_lu = reprobe(s, w, L->t, L->h, D);
            L->restart_pending = 1; /* the restart's own failure handling from here (above) */
            L->ramp = 1;
            L->err_restart = INFINITY;
            s->stats[ST_REPROJECTIONS] += 1;
        }
        L->lu_valid = 0;
    }
}

/* The attempt passed its error test but ends with modes its laws exclude and no sign change to
   locate (modes_inconsistent; the modes picked there in w->m_new): a shorter step from the same
   start (IDA's quarter), which ends before the solution leaves the side the modes were chosen
   for, or crosses back into it so that the crossing is seen; once shorter steps cannot tell
   (below MODE_HMIN hmin), the modes the laws pick at the short step's end are taken at its
   start and the method restarts there (once at a point: if the laws exclude those too, no mode
   is consistent just past the point, and the short step is accepted with them, its end checked
   again by the next step; a StepSizeUnderflow here named the mode and stopped a fit of the
   Robotino's parameters, whose wheel at rest picked its roller side from round-off both ways).
   Returns RETRY, RESTARTED or ACCEPTED. */
static int mode_failure(const solver_t *s, work_t *w, loop_t *L) {
    const int64_t n = s->n;
    double *D = s->D;
    if (L->h * ETA_CF < MODE_HMIN * L->hmin && L->t == L->t_switched)
        /* restarted here already with the modes picked past it, and the laws exclude those too:
           no mode is consistent just past the point; accepted as wrong_mode_failure does */
        return ACCEPTED;
    s->stats[ST_REJECTED] += 1;
    L->ramp = L->ramp && L->restart_pending;
    L->fail_kind = FAIL_MODES;
    L->fail_index = 0;
    while (L->fail_index < s->n_modes && w->m_new[L->fail_index] == s->p[s->n_par + L->fail_index])
        L->fail_index++;
    if (L->h_mode == 0.0) L->h_mode = L->h;
    if (L->h * ETA_CF < MODE_HMIN * L->hmin) {
        L->t_switched = L->t;
        dense_output(n, L->t, L->t, L->h, L->order, D, w->yq, w->ypq);
        /* (the first step as if the restart had come before the shrinking) */
        L->h = restart_at(s, w, L->t, L->h_mode, L->h, L->order, D, L->hmin, &L->cj_lu);
        return RESTARTED;
    }
    rescale_D(n, D, L->order, ETA_CF, w);
    L->h *= ETA_CF;
    L->n_equal = 0;
    if (L->restart_pending) {
        L->cj_lu = reprobe(s, w, L->t, L->h, D);
        L->lu_valid = 0;
    }
    return RETRY;
}

/* The attempt ends with a mode its laws exclude beyond every switching function's band, a mode
   its start had too (modes_inconsistent: MODES_WRONG; the laws' modes at the end in w->m_new).
   The start was accepted within the band, so the laws' modes just past the start are taken
   there and the method restarts (once at a point). If they are the current ones (the start was
   right, and the mode went wrong inside the step without a sign change), the step shrinks as
   after any mode failure (mode_failure: a restart at a shorter step's end). If the start has
   just been restarted with them and the laws exclude the new mode too, no mode is consistent
   just past the point (the mode's own switching function jumps to the other side with it): the
   step is accepted with the mode the restart chose, as restart_at keeps a mode just switched,
   and the next step's end decides again, from a new point. A mode switched back so more than
   CHATTER_MAX times in a row, each within CHATTER_STEPS steps of the last, chatters: both sides
   of its switch drive the solution back to it (a sliding motion along the switch, which no
   choice of mode follows); that is the failure CHATTER naming the mode, not restarts by the
   million ending in TooManySteps.
   Returns RETRY, RESTARTED, ACCEPTED or CHATTERED. */
static int wrong_mode_failure(const solver_t *s, work_t *w, loop_t *L) {
    const int64_t n = s->n;
    double *D = s->D;
    double ttol = event_ttol(L->t, L->h);
    dense_output(n, L->t + ttol, L->t, L->h, L->order, D, w->yq, w->ypq);
    s->modes(L->t + ttol, w->yq, w->ypq, s->p, w->m_past);
    if (!modes_changed(s, w->m_past)) return mode_failure(s, w, L);
    if (L->t == L->t_switched) return ACCEPTED;
    int64_t k = 0;
    while (w->m_past[k] == s->p[s->n_par + k]) k++;
    L->fail_kind = FAIL_MODES;
    L->fail_index = k;
    if (k == L->k_back && s->stats[ST_STEPS] - L->steps_back <= CHATTER_STEPS) L->n_back += 1;
    else L->n_back = 1;
    L->k_back = k;
    L->steps_back = s->stats[ST_STEPS];
    if (L->n_back > CHATTER_MAX) return CHATTERED;
    s->stats[ST_REJECTED] += 1;
    L->ramp = L->ramp && L->restart_pending;
    L->t_switched = L->t;
    memcpy(w->m_new, w->m_past, s->n_modes * sizeof(double));
    dense_output(n, L->t, L->t, L->h, L->order, D, w->yq, w->ypq);
    L->h = restart_at(s, w, L->t, L->h, L->h, L->order, D, L->hmin, &L->cj_lu);
    return RESTARTED;
}

/* Attempts at one step until one is accepted (ATTEMPT_CONVERGED), the method restarted at an
   event (RESTARTED), a chattering mode (CHATTERED) or a failure status (UNDERFLOW, SINGULAR;
   L->fail_* say why). */
static int take_step(const solver_t *s, work_t *w, loop_t *L) {
    for (;;) {
        if (L->h < L->hmin) return UNDERFLOW;
        int attempt = step_attempt(s, w, L);
        if (attempt == ATTEMPT_SINGULAR) return SINGULAR;
        if (attempt == ATTEMPT_NEWTON_FAILED) {
            if (newton_failure(s, w, L) == RESTARTED) return RESTARTED;
            continue;
        }
        double err_n = error_norm(s, w, w->d, w->err_const[L->order], w->y, w->scale);
        if (err_n > 1.0) {
            error_test_failure(s, w, L, err_n);
            continue;
        }
        if (s->n_roots == 0) return ATTEMPT_CONVERGED;
        double t_acc = s->t_stop - L->t_new < L->hmin ? s->t_stop : L->t_new; /* (as complete_step) */
        int mc = modes_inconsistent(s, w, t_acc, L->h, L->cj, w->err_const[L->order], L->ss);
        if (mc == MODES_OK) return ATTEMPT_CONVERGED;
        int r = mc == MODES_WRONG ? wrong_mode_failure(s, w, L) : mode_failure(s, w, L);
        if (r == RESTARTED || r == CHATTERED) return r;
        if (r == ACCEPTED) return ATTEMPT_CONVERGED; /* (its end is checked again at the next step) */
    }
}

/* The loop's state after a restart at an event (handle_events' EV_RESTART, or a failed step
   that restarted on its switch): order 1, a new iteration matrix, IDA's start-up phase, y' at
   the restart (D[1] = h y') kept for a re-probe after an early failure. */
static void enter_restart(const solver_t *s, work_t *w, loop_t *L) {
    const int64_t n = s->n;
    L->order = 1;
    L->n_equal = 0;
    L->lu_valid = 0;
    L->restart_pending = 1;
    L->ramp = 1;
    for (int64_t m = 0; m < n; m++) w->yp_restart[m] = s->D[n + m] / L->h;
}

/* After a mode switch at a located root (handle_events; w->m_new holds the modes before it):
   is it the last of more than CHATTER_MAX switches back and forth of one mode in a row, each
   within CHATTER_EVENT_STEPS steps of the last? Then both sides of its switch carry the
   solution straight back across it (x' = -1 for x > 0, +1 below: a sliding motion along the
   switch, Filippov's solution, which no choice of mode follows), and the run would go on in
   steps that shrink until the jump's Newton correction passes for a relabelling (same_law
   scales with h), a million of them ending in TOO_MANY: CHATTER naming the mode instead. A
   switch that returns after a few steps is not counted: an oscillation resolved by the steps
   (a relay driving a mass) leaves its switch for longer than that. */
static int event_chatter(const solver_t *s, work_t *w, loop_t *L) {
    int64_t k = 0;
    while (k < s->n_modes && w->m_new[k] == s->p[s->n_par + k]) k++;
    if (k == s->n_modes) return 0;
    int64_t steps = s->stats[ST_STEPS];
    if (k == L->k_ev && s->p[s->n_par + k] == L->ev_from && steps - L->steps_ev <= CHATTER_EVENT_STEPS)
        L->n_ev_back += 1;
    else
        L->n_ev_back = 0;
    L->k_ev = k;
    L->steps_ev = steps;
    L->ev_from = w->m_new[k];
    if (L->n_ev_back <= CHATTER_MAX) return 0;
    L->fail_kind = FAIL_MODES;
    L->fail_index = k;
    return 1;
}

/* The accepted step (IDA's IDACompleteStep): counters, t, the differences; the events at its
   end (handle_events); the start-up phase after an event restart; every order + 1 equal steps
   the order and step choice (after_success). */
static int complete_step(const solver_t *s, work_t *w, loop_t *L) {
    const int64_t n = s->n, nr = s->n_roots;
    double *D = s->D;
    int64_t *stats = s->stats;
    L->restart_pending = 0;
    stats[ST_STEPS] += 1;
    if (L->order > stats[ST_MAX_ORDER]) stats[ST_MAX_ORDER] = L->order;
    L->steps_here += 1;
    L->n_equal += 1;
    double t_prev = L->t;
    L->t = L->t_new;
    if (s->t_stop - L->t < L->hmin)
        /* a step cut to t_stop can end an ulp short of it (t + (t_stop - t) rounds): the next
           step would be below hmin and underflow, so it has arrived */
        L->t = s->t_stop;
    update_differences(n, D, L->order, w->d);
    if (nr > 0) {
        /* the converged step point (y, yp): a sign change of a switching function? (w->g_new:
           evaluated there by modes_inconsistent before the step was accepted) */
        if (!any_crossing(nr, w->g_old, w->g_new)) {
            memcpy(w->g_old, w->g_new, nr * sizeof(double));
        } else {
            double t_end = L->t;
            double cj_ev = L->cj_lu;
            int ev = handle_events(s, w, t_prev, &L->t, &L->h, L->order, D, L->hmin, &L->k_out, &cj_ev,
                                   2 * L->n_ev_back >= CHATTER_MAX &&
                                       s->stats[ST_STEPS] - L->steps_ev <= CHATTER_EVENT_STEPS);
            if (cj_ev != L->cj_lu) { /* the landing or the probe factorised G anew */
                L->cj_lu = cj_ev;
                L->lu_valid = cj_ev > 0;
            }
            if (ev == EV_GLIDED) L->steps_ev = s->stats[ST_STEPS]; /* (keeps the glide's window open) */
            else if (ev != EV_NONE && event_chatter(s, w, L)) return CHATTERED;
            if (ev == EV_RESTART) {
                enter_restart(s, w, L);
                return ACCEPTED;
            }
            if (L->t != t_end) { /* the step was shortened to end at the root: a new step size */
                L->n_equal = 0;
                return ACCEPTED;
            }
        }
    }
    if (L->ramp) {
        double factor;
        L->ramp = after_restart_step(s, w, D, &L->order, L->max_order, L->h, &factor);
        if (L->ramp) {
            rescale_D(n, D, L->order, factor, w);
            L->h *= factor;
            L->n_equal = 0;
            return ACCEPTED;
        }
    }
    if (L->n_equal < L->order + 1) return ACCEPTED;
    /* order and step selection (every order+1 equal steps) */
    const double *err_const = w->err_const;
    double err_m = L->order > 1 ? error_norm(s, w, D + L->order * n, err_const[L->order - 1], w->y, w->scale)
                                : INFINITY;
    double err_p = L->order < L->max_order
                       ? error_norm(s, w, D + (L->order + 2) * n, err_const[L->order + 1], w->y, w->scale)
                       : INFINITY;
    double err_n = error_norm(s, w, w->d, err_const[L->order], w->y, w->scale);
    int64_t new_order;
    double factor;
    after_success(err_m, err_n, err_p, L->order, L->max_order, &new_order, &factor);
    if (L->h * factor > s->hmax) factor = s->hmax / L->h;
    L->order = new_order;
    if (factor != 1.0) {
        rescale_D(n, D, L->order, factor, w);
        L->h *= factor;
    }
    L->n_equal = 0;
    return ACCEPTED;
}

/* Carve the work arrays out of s->work (zeroed, as a fresh run of the step loop expects them)
   and set the method's constants. */
static void setup_work(solver_t *s, work_t *w) {
    const int64_t n = s->n, nr = s->n_roots;
    memset(s->work, 0, work_zeroed_size(n, s->nnz, nr, s->n_modes) * sizeof(double));
    if (s->sparse == DENSE_LU) { /* (the factors in G outlive the call) */
        lu_rows_u(s, s->G);
        lu_compress(s, s->G, s->piv);
    }
    double *p = s->work;
    w->vals = p; p += s->nnz;
    double **vecs[] = {&w->y_pred, &w->psi, &w->d, &w->y, &w->yp, &w->r, &w->scale, &w->dy, &w->yo, &w->ypo,
                       &w->r2, &w->yq, &w->ypq, &w->yp_restart, &w->y_star, &w->newton_wt};
    for (size_t i = 0; i < sizeof(vecs) / sizeof(vecs[0]); i++) { *vecs[i] = p; p += n; }
    w->wR = p; p += NW * NW;
    w->wU = p; p += NW * NW;
    w->wRU = p; p += NW * NW;
    w->wD = p; p += NW * n;
    w->g_old = p; p += nr;
    w->g_new = p; p += nr;
    w->g_lo = p; p += nr;
    w->g_hi = p; p += nr;
    w->g_mid = p; p += nr;
    w->m_new = p; p += s->n_modes;
    w->m_past = p; p += s->n_modes;
    w->D_prev = p; p += NROWS * n;
    w->D_acc = p; p += NROWS * n;
    w->dg = p; p += 2 * n * nr;
    w->g_kept = s->work + work_zeroed_size(n, s->nnz, nr, s->n_modes) + lu_rows_size(n);
    w->D_event = w->g_kept + nr + lu_kept_size(n);
    w->m_event = w->D_event + (MAX_ORDER + 1) * n;

    int64_t nmask = 0;
    for (int64_t i = 0; i < n; i++) {
        s->mask[i] = s->diff[i] ? 1 : 0;
        if (s->diff[i]) nmask++;
    }
    if (nmask == 0) {
        for (int64_t i = 0; i < n; i++) s->mask[i] = 1;
        nmask = n;
    }
    w->nmask = nmask;
    w->gamma[0] = 0.0;
    for (int64_t k = 1; k < MAX_ORDER + 2; k++) w->gamma[k] = w->gamma[k - 1] + 1.0 / (double)k;
    for (int64_t k = 0; k < MAX_ORDER + 2; k++) w->err_const[k] = 1.0 / (double)(k + 1);
}

/* Integrate until every t_out is covered (dense output) or a failure.

   st, ist: the solver state between calls, in the named slots S_* and I_* above. stats:
   counters in the ST_* slots. sparse: factor G with splu_factor (SPARSE_OWN: column order
   q, factors in Lp..Ux) or KLU (SPARSE_KLU, in a BONDSIM_KLU build) instead of dense LU.
   roots, modes: the model's switching functions (n_roots of them) and natural modes, the
   modes living in p[n_par:] (handle_events). Returns a status
   code; on failure ist[I_FAIL_KIND] says what failed (FAIL_*) and ist[I_FAIL_INDEX] which
   unknown, equation or mode. */
int64_t bdf_advance(solver_t *s) {
    const int64_t n = s->n, nr = s->n_roots;
    double *D = s->D, *st = s->st;
    int64_t *ist = s->ist;
    loop_t L;
    L.t = st[S_T]; L.h = st[S_H]; L.cj_lu = st[S_CJ_LU]; L.ss = st[S_SS]; L.cj_last = st[S_CJ_LAST];
    L.order = ist[I_ORDER]; L.n_equal = ist[I_N_EQUAL]; L.k_out = ist[I_K_OUT];
    L.lu_valid = ist[I_LU_VALID] == 1;
    L.max_order = ist[I_MAX_ORDER] > 1 ? ist[I_MAX_ORDER] : 1;
    if (L.max_order > MAX_ORDER) L.max_order = MAX_ORDER;
    L.restart_pending = (ist[I_EVENT_PHASE] & PHASE_RESTART_PENDING) != 0;
    L.ramp = (ist[I_EVENT_PHASE] & PHASE_RAMP) != 0;
    L.fail_kind = ist[I_FAIL_KIND]; L.fail_index = ist[I_FAIL_INDEX];
    L.rate_age = ist[I_RATE_AGE];
    L.t_new = L.t;
    L.cj = 0.0;
    L.steps_here = 0;
    /* the switch-back records carry over from the last call, so that a run answered in several
       calls (a progress bar's chunks) takes the steps of a run answered in one */
    if (ist[I_RECORDS]) {
        L.t_switched = st[S_T_SWITCHED]; L.ev_from = st[S_EV_FROM];
        L.n_back = ist[I_N_BACK]; L.k_back = ist[I_K_BACK]; L.steps_back = ist[I_STEPS_BACK];
        L.n_ev_back = ist[I_N_EV_BACK]; L.k_ev = ist[I_K_EV]; L.steps_ev = ist[I_STEPS_EV];
    } else {
        L.t_switched = NAN;
        L.n_back = 0; L.k_back = -1; L.steps_back = 0;
        L.n_ev_back = 0; L.k_ev = -1; L.steps_ev = 0; L.ev_from = NAN;
    }

    work_t w;
    setup_work(s, &w);
    if (L.restart_pending) /* still order 1 with D[1] = h y' */
        for (int64_t m = 0; m < n; m++) w.yp_restart[m] = D[n + m] / L.h;
    if (nr > 0 && ist[I_RECORDS] && s->stats[ST_STEPS] > 0) {
        /* the switching functions where the last call left them, at its last step's corrected
           (y, y'): the polynomial's y' there is not the corrector's, and a g that reads y' would
           differ in its last bits from what one call would have compared against */
        memcpy(w.g_old, w.g_kept, nr * sizeof(double));
    } else if (nr > 0) {
        if (s->stats[ST_STEPS] > 0) {
            dense_output(n, L.t, L.t, L.h, L.order, D, w.yo, w.ypo);
        } else {
            for (int64_t m = 0; m < n; m++) { w.yo[m] = D[m]; w.ypo[m] = D[n + m] / L.h; }
        }
        s->roots(L.t, w.yo, w.ypo, s->p, w.g_old);
    }

    if (ist[I_EV_ORDER] > 0) /* output times the last call left before its last event's root */
        L.k_out = emit_event_rows(s, &w, L.k_out, st[S_EV_T], st[S_EV_ANCHOR], st[S_EV_H], ist[I_EV_ORDER],
                                  w.D_event, w.m_event, st[S_EV_TTOL]);
    int status = OK;
    int64_t k_reached = L.k_out;
    for (;;) {
        L.k_out = emit_outputs(s, L.k_out, L.t, L.h, L.order, D, s->stats[ST_STEPS] > 0);
        if (L.k_out >= s->n_out) break;
        /* max_steps bounds the steps between two output times (IDA's mxstep per tout), so a
           run fails or not whatever number of calls its output times are answered in */
        if (L.k_out != k_reached) { k_reached = L.k_out; L.steps_here = 0; }
        if (L.steps_here >= s->max_steps) { status = TOO_MANY; break; }
        if (s->t_stop > L.t && s->t_stop - L.t < hmin_at(L.t)) {
            /* t_stop closer than the smallest step (a run 1e-300 s long): it has arrived, as a
               step ending that close to it has (complete_step) */
            L.t = s->t_stop;
            continue;
        }
        begin_step(s, &w, &L);
        int r = take_step(s, &w, &L);
        if (r == UNDERFLOW || r == SINGULAR) { status = r; break; }
        if (r == CHATTERED) { status = CHATTER; break; }
        if (r == RESTARTED) {
            enter_restart(s, &w, &L);
            continue;
        }
        if (complete_step(s, &w, &L) == CHATTERED) { status = CHATTER; break; }
    }
    st[S_T] = L.t; st[S_H] = L.h; st[S_CJ_LU] = L.cj_lu; st[S_SS] = L.ss; st[S_CJ_LAST] = L.cj_last;
    ist[I_ORDER] = L.order; ist[I_N_EQUAL] = L.n_equal; ist[I_LU_VALID] = L.lu_valid ? 1 : 0; ist[I_K_OUT] = L.k_out;
    ist[I_EVENT_PHASE] = (L.restart_pending ? PHASE_RESTART_PENDING : 0) + (L.ramp ? PHASE_RAMP : 0);
    ist[I_FAIL_KIND] = L.fail_kind; ist[I_FAIL_INDEX] = L.fail_index;
    st[S_T_SWITCHED] = L.t_switched; st[S_EV_FROM] = L.ev_from;
    ist[I_N_BACK] = L.n_back; ist[I_K_BACK] = L.k_back; ist[I_STEPS_BACK] = L.steps_back;
    ist[I_N_EV_BACK] = L.n_ev_back; ist[I_K_EV] = L.k_ev; ist[I_STEPS_EV] = L.steps_ev;
    ist[I_RECORDS] = 1;
    if (nr > 0) memcpy(w.g_kept, w.g_old, nr * sizeof(double));
    ist[I_RATE_AGE] = L.rate_age;
    return status;
}

/* Rows [t, outputs(t, y, y', p)] (n_val values) for each of n_t output times: the model's
   output kernel in one loop instead of a call from Python per row. */
void bdf_output_rows(res_fn fn, int64_t n_t, int64_t n, int64_t n_val, const double *t_out, const double *Y,
                     const double *YP, const double *p, double *rows, double *buf) {
    for (int64_t k = 0; k < n_t; k++) {
        fn(t_out[k], Y + k * n, YP + k * n, p, buf);
        rows[k * (1 + n_val)] = t_out[k];
        for (int64_t j = 0; j < n_val; j++) rows[k * (1 + n_val) + 1 + j] = buf[j];
    }
}

/* The output table as text: '%.17g' of every value, written exactly as a correctly rounding
   printf writes it (Python's '%' operator, glibc): 17 significant digits, which read back as the
   same float64. glibc's printf spends ~300 ns a value on it (the Robotino's 2501 x 80 table:
   60 ms); here a value in 1e-39 <= |x| < 1e17 costs one 64 x 128-bit product and its digits
   (~45 ns). Its digits are round(|x| 10^q), q = 16 - floor(log10 |x|) in 0..55: 10^q = 5^q 2^q
   and 5^55 < 2^128, so m 5^q (m the 53-bit significand) is an exact integer of at most 181 bits
   and the rounding (half to even, as printf) is decided on its exact bits. Other values go
   through snprintf, in the C locale's numbers whatever the process set (a German LC_NUMERIC
   would write 1,5e-300). */
#define TEXT_WIDTH 25 /* characters a value may take with its separator: "-4.9406564584124654e-324," */
#define POW5_MAX 55

static locale_t c_numbers; /* snprintf's numbers as in the C locale (0: none made) */

__attribute__((constructor)) static void c_numbers_make(void) {
    c_numbers = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
}

#ifdef __SIZEOF_INT128__ /* gcc and clang on 64-bit targets; elsewhere every value takes snprintf */
typedef struct { uint64_t w[3]; } u192_t;

static unsigned __int128 pow5_table[POW5_MAX + 1];

/* filled when the library is loaded, before any thread can format */
__attribute__((constructor)) static void pow5_fill(void) {
    unsigned __int128 v = 1;
    for (int q = 0; q <= POW5_MAX; q++, v *= 5) pow5_table[q] = v;
}

static u192_t mul_64_128(uint64_t m, unsigned __int128 a) {
    const unsigned __int128 lo = (unsigned __int128)m * (uint64_t)a;
    const unsigned __int128 hi = (unsigned __int128)m * (uint64_t)(a >> 64);
    const unsigned __int128 mid = (lo >> 64) + (uint64_t)hi;
    u192_t p = {{(uint64_t)lo, (uint64_t)mid, (uint64_t)(hi >> 64) + (uint64_t)(mid >> 64)}};
    return p;
}

/* bits r.. of p (0 < r < 192) as an integer the caller knows is below 2^64 */
static uint64_t shift_down(const u192_t *p, int r) {
    const int i = r >> 6, b = r & 63;
    const uint64_t hi = i < 2 ? p->w[i + 1] : 0;
    return b ? (p->w[i] >> b) | (hi << (64 - b)) : p->w[i];
}

static int bit_at(const u192_t *p, int r) { return (int)((p->w[r >> 6] >> (r & 63)) & 1u); }

static int any_below(const u192_t *p, int r) {
    const int i = r >> 6, b = r & 63;
    for (int j = 0; j < i; j++)
        if (p->w[j]) return 1;
    return b && (p->w[i] & ((UINT64_C(1) << b) - 1)) != 0;
}

/* The 17 digits (10^16 <= *digits < 10^17) and decimal exponent of finite a > 0, rounded half
   to even; 0 when a is outside the exact range. */
static int digits_17(double a, uint64_t *digits, int *exp10) {
    const uint64_t P16 = UINT64_C(10000000000000000), P17 = UINT64_C(100000000000000000);
    uint64_t bits;
    memcpy(&bits, &a, sizeof bits);
    const int biased = (int)(bits >> 52);
    if (biased == 0) return 0; /* subnormal: far below 1e-39 */
    const uint64_t m = (bits & ((UINT64_C(1) << 52) - 1)) | (UINT64_C(1) << 52);
    const int e = biased - 1075; /* a = m 2^e */
    /* floor((biased - 1023) log10 2) is floor(log10 a) or one less; the loop settles which */
    int k = ((biased - 1023) * 1233) >> 12;
    for (int tries = 0; tries < 3; tries++) {
        const int q = 16 - k;
        if (q < 0 || q > POW5_MAX) return 0;
        const u192_t v = mul_64_128(m, pow5_table[q]); /* a 10^q = v 2^(e + q) */
        const int s = e + q;
        uint64_t n;
        int up = 0;
        if (s >= 0) {
            n = v.w[0] << s; /* an integer below 10^18: v < 2^60 >> s */
        } else {
            if (-s >= 192) return 0;
            n = shift_down(&v, -s);
            up = bit_at(&v, -s - 1) && (any_below(&v, -s - 1) || (n & 1));
        }
        if (n < P16) { k--; continue; } /* a < 10^k */
        if (n >= P17) { k++; continue; }
        n += (uint64_t)up;
        if (n == P17) { n = P16; k++; } /* 9.99...95 rounds up to the next power of ten */
        *digits = n;
        *exp10 = k;
        return 1;
    }
    return 0;
}
#else
static int digits_17(double a, uint64_t *digits, int *exp10) {
    (void)a; (void)digits; (void)exp10;
    return 0;
}
#endif

/* '%.17g' of x into out (at most TEXT_WIDTH - 1 characters); its length */
static int format_17g(double x, char *out) {
    char *o = out;
    if (isnan(x)) { memcpy(o, "nan", 3); return 3; } /* Python writes NaN without its sign */
    if (signbit(x)) *o++ = '-';
    const double a = fabs(x);
    if (isinf(a)) { memcpy(o, "inf", 3); return (int)(o - out) + 3; }
    if (a == 0.0) { *o++ = '0'; return (int)(o - out); }
    uint64_t n;
    int k;
    if (!digits_17(a, &n, &k)) return (int)(o - out) + snprintf(o, TEXT_WIDTH, "%.17g", a);
    char d[17];
    for (int i = 16; i >= 0; i--, n /= 10) d[i] = (char)('0' + n % 10);
    int nd = 17; /* %g drops the fraction's trailing zeros */
    while (nd > 1 && d[nd - 1] == '0') nd--;
    if (k >= -4 && k < 17) { /* positional, as %f */
        if (k >= 0) {
            memcpy(o, d, (size_t)k + 1);
            o += k + 1;
            if (nd > k + 1) {
                *o++ = '.';
                memcpy(o, d + k + 1, (size_t)(nd - k - 1));
                o += nd - k - 1;
            }
        } else {
            *o++ = '0';
            *o++ = '.';
            for (int i = 0; i < -k - 1; i++) *o++ = '0';
            memcpy(o, d, (size_t)nd);
            o += nd;
        }
    } else { /* d.ddde+XX, as %e: a sign and at least two exponent digits */
        *o++ = d[0];
        if (nd > 1) {
            *o++ = '.';
            memcpy(o, d + 1, (size_t)nd - 1);
            o += nd - 1;
        }
        *o++ = 'e';
        *o++ = k < 0 ? '-' : '+';
        int x10 = k < 0 ? -k : k;
        if (x10 >= 100) { *o++ = (char)('0' + x10 / 100); x10 %= 100; }
        *o++ = (char)('0' + x10 / 10);
        *o++ = (char)('0' + x10 % 10);
    }
    return (int)(o - out);
}

/* rows x cols values (by rows) as CSV lines: '%.17g' joined by commas, each line ending in a
   newline (a row of no columns: an empty line). out holds rows max(cols, 1) TEXT_WIDTH
   characters; returns the number written. */
int64_t bdf_rows_text(int64_t rows, int64_t cols, const double *values, char *out) {
    char *o = out;
    const locale_t before = c_numbers ? uselocale(c_numbers) : (locale_t)0; /* this thread's only */
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t c = 0; c < cols; c++) {
            o += format_17g(values[r * cols + c], o);
            if (c + 1 < cols) *o++ = ',';
        }
        *o++ = '\n';
    }
    if (before) uselocale(before);
    return (int64_t)(o - out);
}

/* The modes kernel of a problem with switching functions but no modes (writes nothing). */
void bdf_no_modes(double t, const double *y, const double *yp, const double *p, double *out) {
    (void)t; (void)y; (void)yp; (void)p; (void)out;
}

/* ---------------------------------------------------------------------------------- */
/* consistent initial values                                                          */
/* ---------------------------------------------------------------------------------- */

/* bdf_consistent's outcomes: the values are consistent; dF/dy' differs from the one whose left
   null space the caller handed in (written to fyp_out, row-major, before anything moved); or
   the caller's own solve is to decide (a rank-deficient or underdetermined system, values not
   finite, no convergence: BDFSolver.consistent names what is wrong) */
enum { CI_OK = 0, CI_NEED_W = 1, CI_FALLBACK = 2 };

int64_t bdf_consistent_work_size(int64_t n, int64_t nnz, int64_t n_alg, int64_t m_w) {
    const int64_t m = n + m_w, k = n_alg + n;
    return nnz + 2 * n * n + m * k + m + 5 * n + 2 * k + k;
}

/* Least squares min |A x - b| for A (m x k, by columns, overwritten) of full column rank,
   m >= k: Householder QR with column pivoting. Returns 0, or -1 when the rank is below k by
   LAPACK's gelsd threshold (eps max(m, k) times the largest pivot): the minimum-norm answer
   of a rank-deficient system is the caller's. x: k values; perm, norms: k each. */
static int lstsq_qr(int64_t m, int64_t k, double *A, double *b, double *x, double *norms, int64_t *perm) {
    for (int64_t j = 0; j < k; j++) perm[j] = j;
    double r00 = 0.0;
    const double rcond = EPS * (double)(m > k ? m : k);
    for (int64_t j = 0; j < k; j++) {
        /* the column of largest remaining norm (recomputed: these systems are small) */
        int64_t best = j;
        double best_norm = -1.0;
        for (int64_t c = j; c < k; c++) {
            double s = 0.0;
            for (int64_t i = j; i < m; i++) s += A[c * m + i] * A[c * m + i];
            norms[c] = s;
            if (s > best_norm) { best_norm = s; best = c; }
        }
        if (best != j) {
            for (int64_t i = 0; i < m; i++) {
                double tmp = A[j * m + i]; A[j * m + i] = A[best * m + i]; A[best * m + i] = tmp;
            }
            int64_t tp = perm[j]; perm[j] = perm[best]; perm[best] = tp;
        }
        double *a = A + j * m;
        double alpha = sqrt(best_norm);
        if (j == 0) r00 = alpha;
        if (!(alpha > rcond * r00) || alpha == 0.0) return -1;
        if (a[j] > 0.0) alpha = -alpha;
        /* H = I - v v^T / (v^T v / 2)... with v = a[j:] - alpha e_j, beta = 1 / (alpha (alpha - a_j)) */
        double v0 = a[j] - alpha;
        double beta = -1.0 / (alpha * v0); /* 2 / (v^T v) with v^T v = 2 alpha (alpha - a_j) */
        a[j] = v0;
        for (int64_t c = j + 1; c < k; c++) {
            double *ac = A + c * m;
            double s = 0.0;
            for (int64_t i = j; i < m; i++) s += a[i] * ac[i];
            s *= beta;
            for (int64_t i = j; i < m; i++) ac[i] -= s * a[i];
        }
        double s = 0.0;
        for (int64_t i = j; i < m; i++) s += a[i] * b[i];
        s *= beta;
        for (int64_t i = j; i < m; i++) b[i] -= s * a[i];
        a[j] = alpha; /* R's diagonal; below it, v's tail (not read again) */
    }
    /* R z = (Q^T b)[0:k], x[perm] = z */
    for (int64_t j = k - 1; j >= 0; j--) {
        double s = b[j];
        for (int64_t c = j + 1; c < k; c++) s -= A[c * m + j] * norms[c];
        norms[j] = s / A[j * m + j];
    }
    for (int64_t j = 0; j < k; j++) x[perm[j]] = norms[j];
    return 0;
}

/* Consistent values at t0 as BDFSolver.consistent computes them (the algebraic y and all y',
   the differential y fixed): Newton on F = 0 with the hidden constraints w^T (Fy y' + Ft) = 0
   of each column w of W (the left null space of dF/dy', n x m_w by rows, computed by the
   caller for dF/dy' = fyp_key, row-major), each iteration a least-squares solve; Ft from the
   model's time_derivative kernel, else a central difference. y, yp are updated in place (on
   CI_OK only are they the answer). */
int64_t bdf_consistent(solver_t *s, double t0, double *y, double *yp, const int64_t *alg, int64_t n_alg,
                       const double *W, int64_t m_w, const double *fyp_key, double tol, int64_t maxiter,
                       double *work, double *fyp_out, res_fn time_derivative) {
    const int64_t n = s->n, m = n + m_w, k = n_alg + n;
    double *vals = work, *Fy = vals + s->nnz, *Fyp = Fy + n * n, *A = Fyp + n * n, *b = A + m * k;
    double *r = b + m, *r1 = r + n, *r2 = r1 + n, *Ft = r2 + n, *v = Ft + n, *x = v + n, *norms = x + k;
    int64_t *perm = (int64_t *)(norms + k);
    s->res(t0, y, yp, s->p, r);
    int64_t bad = -1;
    double y_max = 0.0;
    for (int64_t it = 0; it < maxiter; it++) {
        for (int64_t i = 0; i < n; i++)
            if (!isfinite(r[i])) return CI_FALLBACK;
        for (int64_t i = 0; i < s->nnz; i++) vals[i] = 0.0;
        s->jac(t0, y, yp, s->p, 0.0, vals);
        assemble(n, Fy, vals, s->indptr, s->indices, NULL);
        for (int64_t i = 0; i < s->nnz; i++) vals[i] = 0.0;
        s->jac(t0, y, yp, s->p, 1.0, vals);
        assemble(n, Fyp, vals, s->indptr, s->indices, NULL);
        int same = 1;
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) {
                double d = Fyp[j * n + i] - Fy[j * n + i];
                Fyp[j * n + i] = d;
                if (memcmp(&d, &fyp_key[i * n + j], sizeof(double)) != 0) same = 0;
            }
        if (!same) {
            if (it > 0) return CI_FALLBACK; /* dF/dy' moved with the iterate: the caller's solve */
            for (int64_t i = 0; i < n; i++)
                for (int64_t j = 0; j < n; j++) fyp_out[i * n + j] = Fyp[j * n + i];
            return CI_NEED_W;
        }
        if (m < k) return CI_FALLBACK; /* underdetermined: a minimum-norm answer */
        /* the model's own dF/dt; a central difference for the rows it leaves undefined (the dual-arm's
           d/dt of sqrt(u) at u = 0, where u' = 0 too) and for a model without one */
        int quotient = !time_derivative;
        if (time_derivative) {
            time_derivative(t0, y, yp, s->p, Ft);
            for (int64_t i = 0; i < n; i++) quotient |= !isfinite(Ft[i]);
        }
        if (quotient) {
            /* 1e-5 s, not 1e-5 |t0|: a difference over 60 s at t0 = 3e6 s (BDFSolver._time_step) */
            double eps = (t0 + pmax(1e-5, 64 * EPS * fabs(t0))) - t0;
            s->res(t0 + eps, y, yp, s->p, r1);
            s->res(t0 - eps, y, yp, s->p, r2);
            for (int64_t i = 0; i < n; i++)
                if (!time_derivative || !isfinite(Ft[i])) Ft[i] = (r1[i] - r2[i]) / ((t0 + eps) - (t0 - eps));
        }
        /* [[Fy_alg, Fyp], [0, W^T Fy]] x = -[r, W^T (Fy y' + Ft)], by columns */
        for (int64_t c = 0; c < n_alg; c++) {
            for (int64_t i = 0; i < n; i++) A[c * m + i] = Fy[alg[c] * n + i];
            for (int64_t i = n; i < m; i++) A[c * m + i] = 0.0;
        }
        for (int64_t j = 0; j < n; j++) {
            double *col = A + (n_alg + j) * m;
            for (int64_t i = 0; i < n; i++) col[i] = Fyp[j * n + i];
            for (int64_t l = 0; l < m_w; l++) {
                double acc = 0.0;
                for (int64_t i = 0; i < n; i++) acc += W[i * m_w + l] * Fy[j * n + i];
                col[n + l] = acc;
            }
        }
        for (int64_t i = 0; i < n; i++) {
            double acc = Ft[i];
            for (int64_t j = 0; j < n; j++) acc += Fy[j * n + i] * yp[j];
            v[i] = acc;
            b[i] = -r[i];
        }
        for (int64_t l = 0; l < m_w; l++) {
            double acc = 0.0;
            for (int64_t i = 0; i < n; i++) acc += W[i * m_w + l] * v[i];
            b[n + l] = -acc;
        }
        for (int64_t i = 0; i < m * k; i++)
            if (!isfinite(A[i])) return CI_FALLBACK;
        for (int64_t i = 0; i < m; i++)
            if (!isfinite(b[i])) return CI_FALLBACK;
        if (lstsq_qr(m, k, A, b, x, norms, perm) != 0) return CI_FALLBACK;
        for (int64_t c = 0; c < n_alg; c++) y[alg[c]] += x[c];
        for (int64_t j = 0; j < n; j++) yp[j] += x[n_alg + j];
        s->res(t0, y, yp, s->p, r);
        /* done when F is tiny or Newton has stalled (BDFSolver.consistent says why) */
        double yy = 0.0, pp = 0.0, xx = 0.0;
        for (int64_t i = 0; i < n; i++) { yy += y[i] * y[i]; pp += yp[i] * yp[i]; }
        for (int64_t j = 0; j < k; j++) xx += x[j] * x[j];
        double step_floor = 1e-12 * pmax(pmax(1.0, sqrt(yy)), sqrt(pp));
        bad = 0;
        y_max = 0.0;
        for (int64_t i = 0; i < n; i++) {
            if (fabs(r[i]) > fabs(r[bad]) || (isnan(r[i]) && !isnan(r[bad]))) bad = i;
            if (fabs(y[i]) > y_max) y_max = fabs(y[i]);
        }
        if (fabs(r[bad]) < tol * pmax(1.0, y_max) || sqrt(xx) <= step_floor) break;
    }
    if (bad < 0 || !(fabs(r[bad]) <= 1e-6 * pmax(1.0, y_max))) return CI_FALLBACK;
    return CI_OK;
}

/* ---------------------------------------------------------------------------------- */
/* a run's start                                                                      */
/* ---------------------------------------------------------------------------------- */

/* Start a run at (t0, y, y') at order 1 with step h0 (NaN: the step that moves the unknowns in
   the error test by about half their tolerance, 0.5 / RMS(y' / (atol + rtol |y|)), within
   [1e-8, min(1e-2, hmax)]); returns the step. clear: put every array a run reads back to a new
   solver's state first (BDFSolver.reset): counters, iteration matrix, pivots, sparse factors,
   KLU's numeric factorisation. */
double bdf_start(solver_t *s, double t0, const double *y, const double *yp, double h0, int64_t max_order,
                 int64_t clear) {
    const int64_t n = s->n;
    if (clear) {
        memset(s->stats, 0, N_STATS * sizeof(int64_t));
        memset(s->G, 0, (s->sparse ? 1 : n * n) * sizeof(double));
        memset(s->piv, 0, n * sizeof(int64_t));
        const int64_t ptrs = s->sparse == SPARSE_OWN ? n + 1 : 1;
        memset(s->Lp, 0, ptrs * sizeof(int64_t));
        memset(s->Up, 0, ptrs * sizeof(int64_t));
        memset(s->Li, 0, s->cap_l * sizeof(int64_t));
        memset(s->Lx, 0, s->cap_l * sizeof(double));
        memset(s->Ui, 0, s->cap_u * sizeof(int64_t));
        memset(s->Ux, 0, s->cap_u * sizeof(double));
        memset(s->prow, 0, n * sizeof(int64_t));
        memset(s->pinv, 0, n * sizeof(int64_t));
        memset(s->xw, 0, n * sizeof(double));
        bdf_release(s, 1);
    }
    double h = h0;
    if (isnan(h)) {
        double sum = 0.0;
        int64_t count = 0;
        for (int64_t i = 0; i < n; i++)
            if (s->diff[i]) {
                double v = yp[i] / (s->atol[i] + s->rtol * fabs(y[i]));
                sum += v * v;
                count++;
            }
        double ypn = count ? sqrt(sum / (double)count) : 0.0;
        h = ypn > 0.0 ? 0.5 / ypn : INFINITY;
        /* at least 100 hmin, as a restart's first step: 1e-8 alone is below hmin from
           t0 = 4.5e6 s on, and the run ended before its first step */
        h = pmax(pmax(pmin(pmin(h, 1e-2), s->hmax), 1e-8), 100.0 * hmin_at(t0));
    }
    memset(s->D, 0, NROWS * n * sizeof(double));
    for (int64_t m = 0; m < n; m++) { s->D[m] = y[m]; s->D[n + m] = yp[m] * h; }
    memset(s->st, 0, N_FLOAT_STATE * sizeof(double));
    s->st[S_T] = t0;
    s->st[S_H] = h;
    memset(s->ist, 0, N_INT_STATE * sizeof(int64_t));
    s->ist[I_ORDER] = 1;
    s->ist[I_MAX_ORDER] = max_order;
    s->ist[I_FAIL_KIND] = FAIL_NONE;
    return h;
}
