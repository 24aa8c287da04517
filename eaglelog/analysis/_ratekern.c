/* The rate model's passes over every decode window (eaglelog/analysis/rate.py), in C.

   A large log has millions of windows, and the fit passes over them a few dozen times.  In
   numpy each pass built the design matrix a block at a time and made several full-length
   temporaries; here each is one loop that reads the windows' own arrays and makes nothing.

   - moments: the weighted moments of the design over the windows a mask keeps, Σ ω z zᵀ and
     Σ ω z y (rate._gram).  Summed a block of BLOCK kept windows at a time, the blocks in
     window order: the same sums as numpy's within rounding (its BLAS sums in an order of its
     own, which depends on the CPU), and the same on every machine.
   - times: the design's columns times coefficients for every window, Z @ coef (rate._times).
     Element by element the operations numpy made, in its order: bit-identical.
   - within_quad: within_cov's term for a quadratic cycle c(B) (rate._within), element by
     element as numpy made it: bit-identical.

   The design's columns (codes): 0 the intercept, 1 u = (b − c0) / c1, 2 u², 3 … 7 the
   prefill regressors x[:, code − 3], stored by the windows that hold any (rows ascending,
   vals rows × 5 in C order: rate_windows.PrefillWork).

   The longest passes split over threads (set_threads; "threads" below) where every number
   stays as one thread makes it: the same results for every thread count
   (tests/test_ratekern_threads.py).

   The module is optional (setup.py): without a C compiler rate.py makes the same passes in
   numpy, which the tests also use as the oracle (tests/test_ratekern.py). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <pthread.h>

#define N_X 5
#define MAXP 8
#define BLOCK 4096

typedef struct {
    const int64_t *rows;
    const double *vals;
    Py_ssize_t m, k;
} Sparse;

static const double ZERO[N_X] = {0};   /* the prefill row of a window without one */

/* the cursor of s placed for window lo (the first prefill row at or after it) */
static Sparse sparse_from(const Sparse *s, Py_ssize_t lo) {
    Sparse c = *s;
    Py_ssize_t a = 0, b = s->m;
    while (a < b) {
        Py_ssize_t mid = a + (b - a) / 2;
        if (s->rows[mid] < lo) a = mid + 1;
        else b = mid;
    }
    c.k = a;
    return c;
}

/* the prefill row of window i (NULL: none), for i ascending */
static inline const double *sparse_at(Sparse *s, Py_ssize_t i) {
    while (s->k < s->m && s->rows[s->k] < i) s->k++;
    if (s->k < s->m && s->rows[s->k] == i) return s->vals + s->k * N_X;
    return NULL;
}

/* Σ_j coef[j] z_j of one window, in rate._times's order (an x column whose coefficient is 0 is
   not added) */
static inline double zdot(const int *cols, int p, const double *coef, double u,
                          const double *x) {
    double o = 0.0;
    for (int j = 0; j < p; j++) {
        int c = cols[j];
        double v = coef[j];
        if (c == 0) o += v;
        else if (c == 1) o += v * u;
        else if (c == 2) o += v * (u * u);
        else if (v != 0.0) o += v * x[c - 3];
    }
    return o;
}

/* column c of the design at one window (rate._column) */
static inline double zcol(int c, double u, const double *x) {
    return c == 0 ? 1.0 : c == 1 ? u : c == 2 ? u * u : x[c - 3];
}

/* x · β of one window (PrefillWork.dot: xb0, the product of a window without prefill work) */
static inline double xdot(const double *x, const double *beta, double xb0) {
    if (!x) return xb0;
    double o = x[0] * beta[0];
    for (int j = 1; j < N_X; j++) o += x[j] * beta[j];
    return o;
}

static int check(Py_buffer *v, Py_ssize_t itemsize, Py_ssize_t n, const char *name) {
    if (v->len != n * itemsize) {
        PyErr_Format(PyExc_ValueError, "%s: %zd bytes, expected %zd", name, v->len,
                     n * itemsize);
        return -1;
    }
    return 0;
}

/* an optional buffer argument (None: none): *held says whether the caller is to release it;
   −1 with an exception set, else 0 */
static int opt_buffer(PyObject *o, Py_buffer *b, int *held) {
    *held = 0;
    if (o == Py_None) return 0;
    if (PyObject_GetBuffer(o, b, PyBUF_SIMPLE) < 0) return -1;
    *held = 1;
    return 0;
}

/* a step argument: None, one float for every window (rate.StatedStep: *is_const, *cst), or
   a buffer of every window's (*have_buf, released by the caller); 0 on success */
static int step_arg(PyObject *o, Py_buffer *b, int *have_buf, int *is_const, double *cst) {
    if (PyFloat_Check(o)) {
        *cst = PyFloat_AS_DOUBLE(o);
        *is_const = 1;
    } else if (o != Py_None) {
        if (PyObject_GetBuffer(o, b, PyBUF_SIMPLE) < 0) return -1;
        *have_buf = 1;
    }
    return 0;
}

/* bucket codes: int64, or int8 (rate.window_buckets keeps them a byte a window): which, from
   the buffer's length; 0 on success */
static int code_width(Py_buffer *v, Py_ssize_t n, int *width) {
    if (v->len == n * 8) *width = 8;
    else if (v->len == n) *width = 1;
    else {
        PyErr_Format(PyExc_ValueError, "codes: %zd bytes, expected %zd (int64) or %zd (int8)",
                     v->len, n * 8, n);
        return -1;
    }
    return 0;
}

static inline int64_t code_at(const void *buf, int width, Py_ssize_t i) {
    return width == 8 ? ((const int64_t *)buf)[i] : (int64_t)((const int8_t *)buf)[i];
}

static int read_cols(Py_buffer *cb, int *cols, int *p) {
    if (cb->len < 1 || cb->len > MAXP) {
        PyErr_SetString(PyExc_ValueError, "cols: 1 to 8 column codes");
        return -1;
    }
    *p = (int)cb->len;
    for (int j = 0; j < *p; j++) {
        cols[j] = ((const unsigned char *)cb->buf)[j];
        if (cols[j] > 2 + N_X) {
            PyErr_SetString(PyExc_ValueError, "cols: a code above 7");
            return -1;
        }
    }
    return 0;
}

/* ---- threads: a long pass in chunks, one thread each (set_threads) ----
   A kernel that takes them splits its windows so that every number is made in the order and
   the grouping it has on one thread: an output per window by ranges of windows; sums of
   blocks block by block, the blocks then added in their order by the caller; numpy's pairwise
   sum at its own halvings; counts and selections (exact in any order).  So the results are the
   same, to the bit, for every thread count (tests/test_ratekern.py). */
#define MAXT 8
static int THREADS = 1;
static Py_ssize_t PAR_MIN = 1 << 18;    /* windows below which one thread makes the whole pass */
static Py_ssize_t PAR_EACH = 1 << 16;   /* and at least this many a thread */

typedef void (*chunk_fn)(void *ctx, int t);
typedef struct { chunk_fn fn; void *ctx; int t; } Job;

static void *job_main(void *p) {
    Job *j = p;
    j->fn(j->ctx, j->t);
    return NULL;
}

/* fn(ctx, t) for t = 0 … nt − 1: t = 0 on this thread, the others each on a thread of its own
   (one that cannot start runs here after); called without the GIL */
static void par_run(int nt, chunk_fn fn, void *ctx) {
    pthread_t th[MAXT];
    Job jobs[MAXT];
    int started[MAXT] = {0};
    for (int t = 1; t < nt; t++) {
        jobs[t].fn = fn;
        jobs[t].ctx = ctx;
        jobs[t].t = t;
        started[t] = pthread_create(&th[t], NULL, job_main, &jobs[t]) == 0;
    }
    fn(ctx, 0);
    for (int t = 1; t < nt; t++) {
        if (started[t]) pthread_join(th[t], NULL);
        else fn(ctx, t);
    }
}

/* the threads for a pass over n windows (or n units of work) */
static int threads_for(Py_ssize_t n) {
    if (n < PAR_MIN) return 1;
    Py_ssize_t most = n / PAR_EACH;
    return (int)(THREADS < most ? THREADS : most);
}

/* chunk t of nt over [0, n) */
static inline Py_ssize_t chunk_at(Py_ssize_t n, int t, int nt) {
    return n / nt * t + n % nt * t / nt;         /* ⌊n t / nt⌋ */
}

/* The windows a mask keeps, a stretch at a time: idx[0 … k) of the next IDX_BLOCK windows
   from *i (which moves past them), found without a branch on the mask.  A loop over them
   then skips nothing: a mask of the used windows is as often false as true, in no order a
   branch predictor can learn, and each wrong guess cost about as much as a window's sums. */
#define IDX_BLOCK 1024
static inline int kept_next(const char *uv, Py_ssize_t *i, Py_ssize_t end, Py_ssize_t *idx) {
    Py_ssize_t lo = *i, hi = end - lo > IDX_BLOCK ? lo + IDX_BLOCK : end;
    int k = 0;
    for (Py_ssize_t j = lo; j < hi; j++) {
        idx[k] = j;
        k += uv[j] != 0;
    }
    *i = hi;
    return k;
}

/* set_threads(n[, least]) -> n as set (1 … 8); least: the windows a pass needs for threads
   (a quarter of it each; the tests' small passes), 2^18 by default */
static PyObject *set_threads(PyObject *self, PyObject *args) {
    int n;
    Py_ssize_t least = 1 << 18;
    if (!PyArg_ParseTuple(args, "i|n", &n, &least)) return NULL;
    THREADS = n < 1 ? 1 : n > MAXT ? MAXT : n;
    PAR_MIN = least < 1 ? 1 : least;
    PAR_EACH = PAR_MIN / 4 ? PAR_MIN / 4 : 1;
    return PyLong_FromLong(THREADS);
}

static int sparse_init(Sparse *s, Py_buffer *rows, Py_buffer *vals) {
    s->m = rows->len / 8;
    s->rows = rows->buf;
    s->vals = vals->buf;
    s->k = 0;
    if (vals->len != s->m * N_X * 8) {
        PyErr_SetString(PyExc_ValueError, "xvals: not rows × 5 float64");
        return -1;
    }
    return 0;
}

/* the moments of every column, by code (T[c][d] = Σ ω z_c z_d, R[c] = Σ ω z_c y): the smooth
   control's on every kept window, the prefill columns' only on the windows that hold prefill
   work (elsewhere their products are 0: most windows of a busy log).  A product is (z_c ω) z_d,
   c before d in code order.  Summed a block of BLOCK kept windows at a time (a shorter chain of
   roundings), the blocks then added in their order: block q's sums are MPart q, the last one
   the kept windows after the last whole block (none, if they are a whole number of blocks). */
typedef struct {
    double s[9];                /* Σ ω, ω u, ω u², ω u², ω u³, ω u⁴; Σ ω y, ω u y, ω u² y */
    double X[N_X][MAXP], RX[N_X];
} MPart;

typedef struct {
    const double *bv, *ov, *yv, *beta;
    const char *uv;
    double xb0, c0, c1;
    const Sparse *sp;
    const Py_ssize_t *from;     /* thread t: windows from[t] … from[t + 1], blocks q0[t] … */
    const Py_ssize_t *q0;
    MPart *parts;
} Moments;

static void moments_chunk(void *ctx, int t) {
    const Moments *M = ctx;
    Sparse sp = sparse_from(M->sp, M->from[t]);
    const int64_t *rows = sp.rows;
    const double *vals = sp.vals, *bv = M->bv, *ov = M->ov, *yv = M->yv, *beta = M->beta;
    const char *uv = M->uv;
    const double c0 = M->c0, c1 = M->c1, xb0 = M->xb0;
    Py_ssize_t m = sp.m, k = sp.k, end = M->from[t + 1];
    MPart *P = M->parts + M->q0[t];       /* (zeroed; a thread's kept windows fill its blocks
                                             exactly, but the last's: the rest is its last) */
    /* (the sums in locals, each block's stored when it is full and at the end: in the
       MPart they were memory the windows' arrays might alias, read and written each time) */
    double s00 = 0, s01 = 0, s02 = 0, s11 = 0, s12 = 0, s22 = 0, r0 = 0, r1 = 0, r2 = 0;
    double X[N_X][MAXP], RX[N_X];
    memset(X, 0, sizeof X);
    memset(RX, 0, sizeof RX);
    int inblock = 0;
    Py_ssize_t idx[IDX_BLOCK];
    for (Py_ssize_t at = M->from[t]; at < end;) {
        int nk = kept_next(uv, &at, end, idx);
        for (int q = 0; q < nk; q++) {
            Py_ssize_t i = idx[q];
            while (k < m && rows[k] < i) k++;
            int held = k < m && rows[k] == i;
            double u = (bv[i] - c0) / c1, u2 = u * u, w = ov[i];
            double w1 = u * w, w2 = u2 * w, yi = yv ? yv[i] : 0.0;
            if (beta) yi -= xdot(held ? vals + k * N_X : NULL, beta, xb0);   /* y − x·β */
            s00 += w; s01 += w * u; s02 += w * u2;
            s11 += w1 * u; s12 += w1 * u2; s22 += w2 * u2;
            r0 += w * yi; r1 += w1 * yi; r2 += w2 * yi;
            if (held) {
                const double *x = vals + k * N_X;
                for (int a = 0; a < N_X; a++) {
                    double xa = x[a], wa = xa * w;
                    X[a][0] += w * xa;
                    X[a][1] += w1 * xa;
                    X[a][2] += w2 * xa;
                    for (int b = a; b < N_X; b++) X[a][3 + b] += wa * x[b];
                    RX[a] += wa * yi;
                }
            }
            if (++inblock == BLOCK) {
                double *S = P->s;
                S[0] = s00; S[1] = s01; S[2] = s02; S[3] = s11; S[4] = s12; S[5] = s22;
                S[6] = r0; S[7] = r1; S[8] = r2;
                memcpy(P->X, X, sizeof X);
                memcpy(P->RX, RX, sizeof RX);
                P++;
                inblock = 0;
                s00 = s01 = s02 = s11 = s12 = s22 = r0 = r1 = r2 = 0;
                memset(X, 0, sizeof X);
                memset(RX, 0, sizeof RX);
            }
        }
    }
    if (inblock) {                       /* (the rest after the last whole block) */
        double *S = P->s;
        S[0] = s00; S[1] = s01; S[2] = s02; S[3] = s11; S[4] = s12; S[5] = s22;
        S[6] = r0; S[7] = r1; S[8] = r2;
        memcpy(P->X, X, sizeof X);
        memcpy(P->RX, RX, sizeof RX);
    }
}

/* T and R (zeroed by the caller) from the windows; −1: no memory */
static int moments_all(Py_ssize_t n, const double *bv, const double *ov, const char *uv,
                       const double *yv, const double *beta, double xb0, Sparse *sp,
                       double c0, double c1, double T[MAXP][MAXP], double R[MAXP]) {
    Py_ssize_t kept = 0;
    for (Py_ssize_t i = 0; i < n; i++) kept += uv[i] != 0;
    Py_ssize_t nparts = kept / BLOCK + 1, whole = kept / BLOCK;
    int nt = threads_for(kept);
    if (nt > whole) nt = whole > 0 ? (int)whole : 1;
    Py_ssize_t from[MAXT + 1], q0[MAXT + 1];
    MPart *parts = calloc(nparts, sizeof(MPart));
    if (!parts) return -1;
    /* thread t: whole blocks q0[t] … q0[t + 1] (the last thread also the rest), from the
       window that begins block q0[t] */
    for (int t = 0; t <= nt; t++) q0[t] = t == nt ? nparts : whole * t / nt;
    from[0] = 0;
    from[nt] = n;
    if (nt > 1) {
        Py_ssize_t c = 0;
        int t = 1;
        for (Py_ssize_t i = 0; i < n && t < nt; i++) {    /* (no branch on the mask) */
            int kept = uv[i] != 0;
            if (kept & (c == q0[t] * BLOCK)) from[t++] = i;
            c += kept;
        }
    }
    Moments M = {bv, ov, yv, beta, uv, xb0, c0, c1, sp, from, q0, parts};
    if (nt > 1) par_run(nt, moments_chunk, &M);
    else moments_chunk(&M, 0);
    for (Py_ssize_t q = 0; q < nparts; q++) {
        const MPart *P = parts + q;
        const double *S = P->s;
        T[0][0] += S[0]; T[0][1] += S[1]; T[0][2] += S[2];
        T[1][1] += S[3]; T[1][2] += S[4]; T[2][2] += S[5];
        R[0] += S[6]; R[1] += S[7]; R[2] += S[8];
        for (int a = 0; a < N_X; a++) {
            for (int c = 0; c < 3; c++) T[c][3 + a] += P->X[a][c];
            for (int b = a; b < N_X; b++) T[3 + a][3 + b] += P->X[a][3 + b];
            R[3 + a] += P->RX[a];
        }
    }
    free(parts);
    for (int c = 0; c < MAXP; c++)
        for (int d = 0; d < c; d++) T[c][d] = T[d][c];
    return 0;
}

/* moments(b, omega, use, y or None, xrows, xvals, c0, c1, cols, A, rhs[, beta, xb0]): A (p × p)
   and rhs (p) are filled (not added to); with beta, the right-hand side is of y − x·β (xb0 the
   product of a window without prefill work: PrefillWork.dot's) */
static PyObject *moments(PyObject *self, PyObject *args) {
    Py_buffer b, om, use, xr, xv, cb, Ab, rb, yb, bb;
    PyObject *yo, *bo = Py_None;
    double c0, c1, xb0 = 0.0;
    if (!PyArg_ParseTuple(args, "y*y*y*Oy*y*ddy*w*w*|Od", &b, &om, &use, &yo, &xr, &xv, &c0,
                          &c1, &cb, &Ab, &rb, &bo, &xb0))
        return NULL;
    int have_y = yo != Py_None, have_b = 0;
    PyObject *ret = NULL;
    if (have_y && PyObject_GetBuffer(yo, &yb, PyBUF_SIMPLE) < 0) goto done_noy;
    if (have_y && bo != Py_None) {
        if (PyObject_GetBuffer(bo, &bb, PyBUF_SIMPLE) < 0) goto done;
        have_b = 1;
        if (check(&bb, 8, N_X, "beta") < 0) goto done;
    }
    Py_ssize_t n = b.len / 8;
    int cols[MAXP], p;
    Sparse s;
    if (read_cols(&cb, cols, &p) < 0 || check(&om, 8, n, "omega") < 0 ||
        check(&use, 1, n, "use") < 0 || (have_y && check(&yb, 8, n, "y") < 0) ||
        check(&Ab, 8, (Py_ssize_t)p * p, "A") < 0 || check(&rb, 8, p, "rhs") < 0 ||
        sparse_init(&s, &xr, &xv) < 0)
        goto done;
    {
        const double *bv = b.buf, *ov = om.buf, *yv = have_y ? yb.buf : NULL;
        const char *uv = use.buf;
        double *A = Ab.buf, *rhs = rb.buf;
        double T[MAXP][MAXP], R[MAXP];
        memset(T, 0, sizeof T);
        memset(R, 0, sizeof R);
        int got;
        Py_BEGIN_ALLOW_THREADS
        got = moments_all(n, bv, ov, uv, yv, have_b ? bb.buf : NULL, xb0, &s, c0, c1, T, R);
        for (int j = 0; j < p; j++) {
            for (int k = 0; k < p; k++) A[j * p + k] = T[cols[j]][cols[k]];
            rhs[j] = yv ? R[cols[j]] : 0.0;
        }
        Py_END_ALLOW_THREADS
        if (got < 0) {
            PyErr_NoMemory();
            goto done;
        }
    }
    Py_INCREF(Py_None);
    ret = Py_None;
done:
    if (have_b) PyBuffer_Release(&bb);
    if (have_y) PyBuffer_Release(&yb);
done_noy:
    PyBuffer_Release(&b); PyBuffer_Release(&om); PyBuffer_Release(&use);
    PyBuffer_Release(&xr); PyBuffer_Release(&xv); PyBuffer_Release(&cb);
    PyBuffer_Release(&Ab); PyBuffer_Release(&rb);
    return ret;
}

/* times(b, xrows, xvals, c0, c1, cols, coef, out): out[i] = Σ_j coef[j] z_j(i), in numpy's
   order (rate._times: an x column whose coefficient is 0 is not added) */
static PyObject *times(PyObject *self, PyObject *args) {
    Py_buffer b, xr, xv, cb, cf, ob;
    double c0, c1;
    if (!PyArg_ParseTuple(args, "y*y*y*ddy*y*w*", &b, &xr, &xv, &c0, &c1, &cb, &cf, &ob))
        return NULL;
    PyObject *ret = NULL;
    Py_ssize_t n = b.len / 8;
    int cols[MAXP], p;
    Sparse s;
    if (read_cols(&cb, cols, &p) < 0 || check(&cf, 8, p, "coef") < 0 ||
        check(&ob, 8, n, "out") < 0 || sparse_init(&s, &xr, &xv) < 0)
        goto done;
    {
        const double *bv = b.buf, *coef = cf.buf;
        double *out = ob.buf;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++) {
            const double *x = sparse_at(&s, i);
            double o = zdot(cols, p, coef, (bv[i] - c0) / c1, x ? x : ZERO);
            out[i] = o;
        }
        Py_END_ALLOW_THREADS
    }
    Py_INCREF(Py_None);
    ret = Py_None;
done:
    PyBuffer_Release(&b); PyBuffer_Release(&xr); PyBuffer_Release(&xv);
    PyBuffer_Release(&cb); PyBuffer_Release(&cf); PyBuffer_Release(&ob);
    return ret;
}

/* numpy's clip of floats: NaN in x propagates, a NaN bound wins over a number */
static inline double npclip(double x, double lo, double hi) {
    double v = isnan(x) ? x : (x > lo ? x : lo);
    return isnan(v) ? v : (v < hi ? v : hi);
}

/* numpy's maximum and minimum: NaN propagates */
static inline double npmax(double a, double b) {
    return (a >= b || isnan(a)) ? a : b;
}
static inline double npmin(double a, double b) {
    return (a <= b || isnan(a)) ? a : b;
}

typedef struct { double g0, g1, g2, c0, c1; } Quad;

static inline double qc(const Quad *q, double B) {
    double u = (B - q->c0) / q->c1;
    return q->g0 + q->g1 * u + q->g2 * u * u;
}

static inline double qdc(const Quad *q, double B) {
    return (q->g1 + 2 * q->g2 * (B - q->c0) / q->c1) / q->c1;
}

/* within_cov's term of one window for a quadratic cycle (rate._within): the windows' r, rp
   (float32), b, nin (float32, or none) and measured (bool, or none), the curve, and the
   vacancy's gap (1 − gap) */
typedef struct {
    const double *r, *b;
    const float *rp, *nin;
    const char *meas;
    Quad q;
    double vac;
} QuadCov;

static inline double quad_cov(const QuadCov *c, Py_ssize_t i) {
    const double sixth = 1.0 / 6.0;
    double ri = c->r[i], rpi = (double)c->rp[i], b = c->b[i];
    double ni = c->nin ? (double)c->nin[i] : 0.0;
    double d = ri - rpi;
    int moved = d != 0;
    if (!(isfinite(d) && b > 0 && (moved || ni > 0)))
        return 0.0;
    /* the step: p (1 − p) (r − r′)² at the secant slope of c from r′ to r */
    double lo = npmin(rpi, ri), hi = npmax(rpi, ri);
    double span = moved ? hi - lo : 1.0;
    double chi = qc(&c->q, hi);
    double sec = (chi - qc(&c->q, lo)) / span;
    sec = npclip(sec, 0.0, npmax(chi, 0.0) / (hi > 0 ? hi : 1.0));
    double p = npclip((b - rpi) / (moved ? d : 1.0), 0.0, 1.0);
    if (c->meas) {
        p *= 1 - p;
        if (!c->meas[i]) p = sixth;
    } else {
        p = sixth;
    }
    double cov = sec * p * d * d * (moved ? 1.0 : 0.0);
    /* the joins beyond the rise: one iteration's share each, at the slope of c at b */
    double pairs = npmax(npmin(ni, ni - d), 0.0);
    double slope = npclip(qdc(&c->q, b), 0.0, npmax(qc(&c->q, b), 0.0) / b);
    cov += slope * pairs * c->vac;
    cov /= b;
    return isfinite(cov) ? cov : 0.0;
}

/* The buffers a QuadCov reads, from within_quad's arguments (r, rp, b, nin or None, measured
   or None, g0, g1, g2, c0, c1, gap): read_quad fills both (0, or −1 with an exception set and
   nothing held), release_quad lets go of them. */
typedef struct {
    Py_buffer r, rp, b, nin, m;
    int have_nin, have_m;
} QuadBufs;

static int read_quad(PyObject *args, QuadBufs *qb, QuadCov *c, Py_ssize_t *n) {
    PyObject *nino, *mo;
    double gap;
    if (!PyArg_ParseTuple(args, "y*y*y*OOdddddd", &qb->r, &qb->rp, &qb->b, &nino, &mo,
                          &c->q.g0, &c->q.g1, &c->q.g2, &c->q.c0, &c->q.c1, &gap))
        return -1;
    qb->have_nin = qb->have_m = 0;
    if (nino != Py_None) {
        if (PyObject_GetBuffer(nino, &qb->nin, PyBUF_SIMPLE) < 0) goto fail;
        qb->have_nin = 1;
    }
    if (mo != Py_None) {
        if (PyObject_GetBuffer(mo, &qb->m, PyBUF_SIMPLE) < 0) goto fail;
        qb->have_m = 1;
    }
    *n = qb->r.len / 8;
    if (check(&qb->rp, 4, *n, "rp") < 0 || check(&qb->b, 8, *n, "b") < 0 ||
        (qb->have_nin && check(&qb->nin, 4, *n, "nin") < 0) ||
        (qb->have_m && check(&qb->m, 1, *n, "measured") < 0))
        goto fail;
    c->r = qb->r.buf;
    c->b = qb->b.buf;
    c->rp = qb->rp.buf;
    c->nin = qb->have_nin ? qb->nin.buf : NULL;
    c->meas = qb->have_m ? qb->m.buf : NULL;
    c->vac = gap * (1 - gap);
    return 0;
fail:
    if (qb->have_nin) PyBuffer_Release(&qb->nin);
    if (qb->have_m) PyBuffer_Release(&qb->m);
    PyBuffer_Release(&qb->r); PyBuffer_Release(&qb->rp); PyBuffer_Release(&qb->b);
    return -1;
}

static void release_quad(QuadBufs *qb) {
    if (qb->have_nin) PyBuffer_Release(&qb->nin);
    if (qb->have_m) PyBuffer_Release(&qb->m);
    PyBuffer_Release(&qb->r); PyBuffer_Release(&qb->rp); PyBuffer_Release(&qb->b);
}

typedef struct {
    const QuadCov *c;
    double *out;
    Py_ssize_t n;
    int nt;
} WithinQuad;

static void within_quad_chunk(void *ctx, int t) {
    const WithinQuad *W = ctx;
    const QuadCov c = *W->c;
    double *out = W->out;
    Py_ssize_t hi = chunk_at(W->n, t + 1, W->nt);      /* (bounds and fields in locals: the
                                                          stores could alias them) */
    for (Py_ssize_t i = chunk_at(W->n, t, W->nt); i < hi; i++)
        out[i] = quad_cov(&c, i);
}

/* within_quad(r, rp (float32), b, nin (float32) or None, measured (bool) or None, g0, g1, g2,
   c0, c1, gap, out): rate._within for c(B) = g0 + g1 u + g2 u², u = (B − c0) / c1 */
static PyObject *within_quad(PyObject *self, PyObject *args) {
    Py_ssize_t na = PyTuple_GET_SIZE(args);
    if (na != 12) {
        PyErr_SetString(PyExc_TypeError, "within_quad: 12 arguments");
        return NULL;
    }
    PyObject *qargs = PyTuple_GetSlice(args, 0, 11);
    if (!qargs) return NULL;
    QuadBufs qb;
    QuadCov c;
    Py_ssize_t n;
    int got = read_quad(qargs, &qb, &c, &n);
    Py_DECREF(qargs);
    if (got < 0) return NULL;
    Py_buffer ob;
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(args, 11), &ob, PyBUF_WRITABLE) < 0) {
        release_quad(&qb);
        return NULL;
    }
    PyObject *ret = NULL;
    if (check(&ob, 8, n, "out") == 0) {
        WithinQuad W = {&c, ob.buf, n, threads_for(n)};
        Py_BEGIN_ALLOW_THREADS
        par_run(W.nt, within_quad_chunk, &W);
        Py_END_ALLOW_THREADS
        Py_INCREF(Py_None);
        ret = Py_None;
    }
    PyBuffer_Release(&ob);
    release_quad(&qb);
    return ret;
}

/* point_sums(b, y, om, rs or None, interval, use, st, nb, xrows, xvals, cols, gamma, ns, c0,
   c1, cor (an array, within_quad's first 11 arguments as a tuple: each window's term made
   where it is read, no array of them; or None), beta, xb0, step (an array, one float for every window, or None), Og, Wg,
   OEg, SX, WX, X1) -> (mix, n_use, zi_sum,
   step_sum, gmax, negs): the sums rate._point_and_terms makes over the used windows, in one
   pass.  Per stratum g (st; −1 goes to bin nb, placed after the largest used code by the
   caller), in window order as np.bincount sums them: Og Σ ω, Wg Σ w, OEg Σ ω e, SX[i] Σ z_i ω
   (nb + 1 each; SX p × (nb + 1)); WX[i] Σ w z_i and X1[i] Σ z_i; mix Σ w (Z_s γ_s + cor);
   zi_sum Σ (y − x·β); step_sum Σ w step.  e = y − Z γ (γ over ``cols``, the first ns of them
   the smooth control), w = rs or b × interval.  Sequential sums (a bincount's are too). */
static PyObject *point_sums(PyObject *self, PyObject *args) {
    Py_buffer b, y, om, use, st, xr, xv, cb, gm, bt, Og, Wg, OEg, SX, WX, X1;
    Py_buffer rsb, corb, stepb;
    PyObject *rso, *coro, *stepo;
    double interval, c0, c1, xb0;
    Py_ssize_t nb;
    int ns;
    if (!PyArg_ParseTuple(args, "y*y*y*Ody*y*ny*y*y*y*iddOy*dOw*w*w*w*w*w*", &b, &y, &om, &rso,
                          &interval, &use, &st, &nb, &xr, &xv, &cb, &gm, &ns, &c0, &c1, &coro,
                          &bt, &xb0, &stepo, &Og, &Wg, &OEg, &SX, &WX, &X1))
        return NULL;
    PyObject *ret = NULL;
    int have_rs, have_cor = 0, have_step = 0, have_quad = 0;
    QuadBufs qb;
    QuadCov qcov;
    Py_ssize_t nq = 0;
    if (opt_buffer(rso, &rsb, &have_rs) < 0) goto done;
    if (PyTuple_Check(coro)) {
        if (read_quad(coro, &qb, &qcov, &nq) < 0) goto done;
        have_quad = 1;
    } else if (coro != Py_None) {
        if (PyObject_GetBuffer(coro, &corb, PyBUF_SIMPLE) < 0) goto done;
        have_cor = 1;
    }
    int const_step = 0;
    double cst = 0.0;
    if (step_arg(stepo, &stepb, &have_step, &const_step, &cst) < 0) goto done;
    Py_ssize_t n = b.len / 8, nbins = nb + 1;
    int cols[MAXP], p;
    Sparse s;
    if (read_cols(&cb, cols, &p) < 0 || sparse_init(&s, &xr, &xv) < 0 ||
        check(&y, 8, n, "y") < 0 || check(&om, 8, n, "om") < 0 ||
        check(&use, 1, n, "use") < 0 || check(&st, 4, n, "st") < 0 ||
        check(&gm, 8, p, "gamma") < 0 || check(&bt, 8, N_X, "beta") < 0 ||
        (have_rs && check(&rsb, 8, n, "rs") < 0) || (have_cor && check(&corb, 8, n, "cor") < 0) ||
        (have_step && check(&stepb, 8, n, "step") < 0) ||
        (have_quad && check(&qb.r, 8, n, "cor's r") < 0) ||
        check(&Og, 8, nbins, "Og") < 0 || check(&Wg, 8, nbins, "Wg") < 0 ||
        check(&OEg, 8, nbins, "OEg") < 0 || check(&SX, 8, p * nbins, "SX") < 0 ||
        check(&WX, 8, p, "WX") < 0 || check(&X1, 8, p, "X1") < 0)
        goto done;
    if (ns < 0 || ns > p) {
        PyErr_SetString(PyExc_ValueError, "ns: 0 to p");
        goto done;
    }
    {
        const double *bv = b.buf, *yv = y.buf, *ov = om.buf, *gamma = gm.buf, *beta = bt.buf;
        const double *rs = have_rs ? rsb.buf : NULL, *cor = have_cor ? corb.buf : NULL;
        const double *step = have_step ? stepb.buf : NULL;
        const char *uv = use.buf;
        const int32_t *sv = st.buf;
        double *og = Og.buf, *wg = Wg.buf, *oeg = OEg.buf, *sx = SX.buf, *wx = WX.buf;
        double *x1 = X1.buf;
        double mix = 0.0, zi = 0.0, stp = 0.0, nuse = 0.0;
        Py_ssize_t gmax = -1;
        int negs = 0, bad = 0;
        memset(og, 0, 8 * nbins); memset(wg, 0, 8 * nbins); memset(oeg, 0, 8 * nbins);
        memset(sx, 0, 8 * p * nbins); memset(wx, 0, 8 * p); memset(x1, 0, 8 * p);
        Py_BEGIN_ALLOW_THREADS
        Py_ssize_t idx[IDX_BLOCK];
        for (Py_ssize_t at = 0; at < n && !bad;) {
            int nk = kept_next(uv, &at, n, idx);       /* (the used windows, in order) */
            for (int q = 0; q < nk; q++) {
                Py_ssize_t i = idx[q];
                const double *x = sparse_at(&s, i);
                Py_ssize_t g = sv[i];
                if (g < 0) {
                    g = nb;
                    negs = 1;
                } else if (g >= nb) {
                    bad = 1;
                    break;
                } else if (g > gmax) {
                    gmax = g;
                }
                double u = (bv[i] - c0) / c1, w = rs ? rs[i] : bv[i] * interval, o = ov[i];
                const double *xz = x ? x : ZERO;
                double e = yv[i] - zdot(cols, p, gamma, u, xz);
                og[g] += o;
                wg[g] += w;
                oeg[g] += o * e;
                double fit = zdot(cols, ns, gamma, u, xz);
                if (cor) fit += cor[i];
                else if (have_quad) fit += quad_cov(&qcov, i);
                mix += w * fit;
                for (int j = 0; j < p; j++) {
                    double z = zcol(cols[j], u, xz);
                    sx[j * nbins + g] += z * o;
                    if (j < ns) wx[j] += w * z;
                    else x1[j] += z;
                }
                zi += yv[i] - xdot(x, beta, xb0);
                if (step) stp += w * step[i];
                else if (const_step) stp += w * cst;
                nuse += 1;
            }
        }
        Py_END_ALLOW_THREADS
        if (bad) {
            PyErr_SetString(PyExc_ValueError, "st: a code at or above nb");
            goto done;
        }
        ret = Py_BuildValue("ddddni", mix, nuse, zi, stp, gmax, negs);
    }
done:
    if (have_rs) PyBuffer_Release(&rsb);
    if (have_cor) PyBuffer_Release(&corb);
    if (have_quad) release_quad(&qb);
    if (have_step) PyBuffer_Release(&stepb);
    PyBuffer_Release(&b); PyBuffer_Release(&y); PyBuffer_Release(&om); PyBuffer_Release(&use);
    PyBuffer_Release(&st); PyBuffer_Release(&xr); PyBuffer_Release(&xv); PyBuffer_Release(&cb);
    PyBuffer_Release(&gm); PyBuffer_Release(&bt); PyBuffer_Release(&Og); PyBuffer_Release(&Wg);
    PyBuffer_Release(&OEg); PyBuffer_Release(&SX); PyBuffer_Release(&WX);
    PyBuffer_Release(&X1);
    return ret;
}

typedef struct {
    const double *bv, *yv, *av, *ov, *gamma, *cx, *c1x, *share, *eg, *inv, *beta, *rs;
    const char *uv, *avm;
    const int32_t *sv;
    double *out;
    const Sparse *sp;
    const int *cols;
    int p;
    Py_ssize_t ng, gneg;
    double interval, xb0, c0, c1, cyc, cyc_it, n1, tau, Wa;
    int do_cycle, do_acc;
    Py_ssize_t ncount, k;
    int nt;
    Py_ssize_t from[MAXT + 1], q0[MAXT + 1];
    int bad[MAXT];
} Terms;

static void terms_chunk(void *ctx, int t) {
    Terms *T = ctx;
    const double *bv = T->bv, *yv = T->yv, *av = T->av, *ov = T->ov, *gamma = T->gamma;
    const double *cx = T->cx, *c1x = T->c1x, *share = T->share, *eg = T->eg, *inv = T->inv;
    const double *beta = T->beta, *rs = T->rs;
    const int *cols = T->cols;
    int p = T->p;
    Py_ssize_t ncount = T->ncount, k = T->k, blk = T->q0[t];
    Py_ssize_t j = (blk * ncount + k - 1) / k;
    /* (window j's block, j k / n, kept as it goes: it moves on at the first j whose block is
       the next one, ⌈(blk + 1) n / k⌉) */
    Py_ssize_t next = blk + 1 < k ? ((blk + 1) * ncount + k - 1) / k : ncount;
    Sparse s = sparse_from(T->sp, T->from[t]);
    for (Py_ssize_t i = T->from[t]; i < T->from[t + 1]; i++) {
        int u_ = T->uv[i], a_ = T->avm[i];
        if (!u_ && !a_) continue;
        while (j >= next) {
            blk++;
            next = blk + 1 < k ? ((blk + 1) * ncount + k - 1) / k : ncount;
        }
        double *row = T->out + 4 * blk;
        j++;
        double dev = 0.0, tt = 0.0, zi = 0.0;
        double w = rs ? rs[i] : bv[i] * T->interval;
        if (T->do_acc && a_) dev = w * (av[i] - T->tau) / T->Wa / T->tau;
        if (T->do_cycle) {
            const double *x = sparse_at(&s, i);
            const double *xz = x ? x : ZERO;
            double u = (bv[i] - T->c0) / T->c1, o = ov[i], e = 0.0, direct = 0.0;
            if (u_) {
                Py_ssize_t g = T->sv[i] < 0 ? T->gneg : T->sv[i];
                if (g >= T->ng) {
                    T->bad[t] = 1;
                    return;
                }
                e = yv[i] - zdot(cols, p, gamma, u, xz);
                direct = share[g] * o * (e - eg[g]) * inv[g];
                zi = (yv[i] - xdot(x, beta, T->xb0) - T->cyc_it) / T->n1;
            }
            double ve = o * e;
            tt = (direct - zdot(cols, p, cx, u, xz) * ve) / T->cyc;
            zi = (zi - zdot(cols, p, c1x, u, xz) * ve) / T->cyc_it;
        }
        row[0] += dev;
        row[1] += tt;
        row[2] += dev - tt;
        row[3] += zi;
    }
}

/* term_sums(b, y, a, om, rs or None, interval, use, acc, st, gneg, xrows, xvals, cols, gamma,
   cx, c1x, share, eg, inv, beta, xb0, c0, c1, cyc, cyc_it, n1, tau, Wa, cycle, accept, n, out):
   the terms of the logarithms of rate._point_and_terms's outputs, per window that counts (use
   or acc), summed over k = out's rows blocks of consecutive such windows (window j of the n
   that count goes to block j k / n: stats.block_sums).  Columns: 0 the accept length's, 1 the
   cycle's, 2 the rate's (0 − 1, per window), 3 the per-iteration cycle's.  Each window's
   term is made with numpy's operations in numpy's order. */
static PyObject *term_sums(PyObject *self, PyObject *args) {
    Py_buffer b, y, a, om, use, acc, st, xr, xv, cb, gm, cxb, c1b, shb, egb, invb, bt, ob;
    PyObject *rso;
    Py_buffer rsb;
    double interval, xb0, c0, c1, cyc, cyc_it, n1, tau, Wa;
    Py_ssize_t gneg, ncount;
    int do_cycle, do_acc;
    if (!PyArg_ParseTuple(args, "y*y*y*y*Ody*y*y*ny*y*y*y*y*y*y*y*y*y*ddddddddiinw*", &b, &y,
                          &a, &om, &rso, &interval, &use, &acc, &st, &gneg, &xr, &xv, &cb,
                          &gm, &cxb, &c1b, &shb, &egb, &invb, &bt, &xb0, &c0, &c1, &cyc,
                          &cyc_it, &n1, &tau, &Wa, &do_cycle, &do_acc, &ncount, &ob))
        return NULL;
    PyObject *ret = NULL;
    int have_rs;
    if (opt_buffer(rso, &rsb, &have_rs) < 0) goto done;
    Py_ssize_t n = b.len / 8, ng = shb.len / 8, k = ob.len / 32;
    int cols[MAXP], p;
    Sparse s;
    if (read_cols(&cb, cols, &p) < 0 || sparse_init(&s, &xr, &xv) < 0 ||
        check(&y, 8, n, "y") < 0 || check(&a, 8, n, "a") < 0 || check(&om, 8, n, "om") < 0 ||
        check(&use, 1, n, "use") < 0 || check(&acc, 1, n, "acc") < 0 ||
        check(&st, 4, n, "st") < 0 || check(&gm, 8, p, "gamma") < 0 ||
        check(&cxb, 8, p, "cx") < 0 || check(&c1b, 8, p, "c1x") < 0 ||
        check(&egb, 8, ng, "eg") < 0 || check(&invb, 8, ng, "inv") < 0 ||
        check(&bt, 8, N_X, "beta") < 0 || (have_rs && check(&rsb, 8, n, "rs") < 0))
        goto done;
    if (ncount < 0 || k > ncount || (ncount > 0 && k < 1)) {
        PyErr_SetString(PyExc_ValueError, "out: 1 to n blocks of 4 sums");
        goto done;
    }
    if (do_cycle && (gneg < 0 || gneg >= ng)) {
        PyErr_SetString(PyExc_ValueError, "gneg: not a stratum");
        goto done;
    }
    {
        const char *uv = use.buf, *avm = acc.buf;
        Py_ssize_t count = 0;
        for (Py_ssize_t i = 0; i < n; i++) count += uv[i] || avm[i];
        if (count != ncount) {
            PyErr_SetString(PyExc_ValueError, "n: not the number of windows that count");
            goto done;
        }
        Terms T = {b.buf, y.buf, a.buf, om.buf, gm.buf, cxb.buf, c1b.buf, shb.buf, egb.buf,
                   invb.buf, bt.buf, have_rs ? rsb.buf : NULL, uv, avm, st.buf, ob.buf, &s,
                   cols, p, ng, gneg, interval, xb0, c0, c1, cyc, cyc_it, n1, tau, Wa,
                   do_cycle, do_acc, ncount, k};
        /* thread t: blocks q0[t] … q0[t + 1], from the window that begins block q0[t] (the
           first j of block q is ⌈q n / k⌉) */
        int nt = threads_for(ncount);
        if (nt > k) nt = k > 0 ? (int)k : 1;
        T.nt = nt;
        T.from[0] = 0;
        T.from[nt] = n;
        for (int t = 0; t <= nt; t++) T.q0[t] = k * t / nt;
        if (nt > 1) {
            Py_ssize_t j = 0;
            int t = 1;
            Py_ssize_t first = (T.q0[1] * ncount + k - 1) / k;    /* (block q0[t]'s first j) */
            for (Py_ssize_t i = 0; i < n && t < nt; i++) {
                int counts = (uv[i] | avm[i]) != 0;
                if (counts & (j == first)) {
                    T.from[t++] = i;
                    if (t < nt) first = (T.q0[t] * ncount + k - 1) / k;
                }
                j += counts;
            }
        }
        memset(ob.buf, 0, 32 * k);
        if (ncount > 0) {
            Py_BEGIN_ALLOW_THREADS
            par_run(nt, terms_chunk, &T);
            Py_END_ALLOW_THREADS
        }
        for (int t = 0; t < nt; t++)
            if (T.bad[t]) {
                PyErr_SetString(PyExc_ValueError, "st: a code beyond the strata");
                goto done;
            }
    }
    Py_INCREF(Py_None);
    ret = Py_None;
done:
    if (have_rs) PyBuffer_Release(&rsb);
    PyBuffer_Release(&b); PyBuffer_Release(&y); PyBuffer_Release(&a); PyBuffer_Release(&om);
    PyBuffer_Release(&use); PyBuffer_Release(&acc); PyBuffer_Release(&st);
    PyBuffer_Release(&xr); PyBuffer_Release(&xv); PyBuffer_Release(&cb); PyBuffer_Release(&gm);
    PyBuffer_Release(&cxb); PyBuffer_Release(&c1b); PyBuffer_Release(&shb);
    PyBuffer_Release(&egb); PyBuffer_Release(&invb); PyBuffer_Release(&bt);
    PyBuffer_Release(&ob);
    return ret;
}

/* ranges(use, r, b, xrows, xvals, xlo, xhi) -> (r_lo, r_hi, r_levels, b_lo, b_hi, held, used):
   what rate._choose reads of the used windows, in one pass: the least and largest finite
   printed batch (±inf: none) and how many distinct values it takes (1, 2, 3: three or more),
   the least and largest mean batch (NaN if any is NaN, as numpy's min and max), and per
   prefill regressor the least and largest over the used windows holding prefill work (xlo,
   xhi: 5 each, ±inf where none; NaN propagates), with how many those are and how many are
   used. */
static PyObject *ranges(PyObject *self, PyObject *args) {
    Py_buffer use, r, b, xr, xv, lob, hib;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*w*w*", &use, &r, &b, &xr, &xv, &lob, &hib))
        return NULL;
    PyObject *ret = NULL;
    Py_ssize_t n = use.len;
    Sparse s;
    if (check(&r, 8, n, "r") < 0 || check(&b, 8, n, "b") < 0 ||
        check(&lob, 8, N_X, "xlo") < 0 || check(&hib, 8, N_X, "xhi") < 0 ||
        sparse_init(&s, &xr, &xv) < 0)
        goto done;
    {
        const char *uv = use.buf;
        const double *rv = r.buf, *bv = b.buf;
        double *xlo = lob.buf, *xhi = hib.buf;
        double v1 = 0, v2 = 0, blo = INFINITY, bhi = -INFINITY, rlo = INFINITY, rhi = -INFINITY;
        int distinct = 0, bnan = 0;
        Py_ssize_t held = 0, used = 0;
        for (int j = 0; j < N_X; j++) {
            xlo[j] = INFINITY;
            xhi[j] = -INFINITY;
        }
        Py_ssize_t idx[IDX_BLOCK];
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t at = 0; at < n;) {
            int nk = kept_next(uv, &at, n, idx);
            for (int q = 0; q < nk; q++) {
                Py_ssize_t i = idx[q];
                used++;
                double ri = rv[i], bi = bv[i];
                if (isfinite(ri) && distinct < 3) {
                    if (distinct == 0) {
                        v1 = ri;
                        distinct = 1;
                    } else if (ri != v1 && (distinct == 1 || ri != v2)) {
                        if (distinct == 1) {
                            v2 = ri;
                            distinct = 2;
                        } else {
                            distinct = 3;
                        }
                    }
                }
                if (isfinite(ri)) {
                    if (ri < rlo) rlo = ri;
                    if (ri > rhi) rhi = ri;
                }
                if (isnan(bi)) bnan = 1;
                else {
                    if (bi < blo) blo = bi;
                    if (bi > bhi) bhi = bi;
                }
                const double *x = sparse_at(&s, i);
                if (x) {
                    held++;
                    for (int j = 0; j < N_X; j++) {
                        double v = x[j];
                        if (isnan(v) || isnan(xlo[j])) xlo[j] = xhi[j] = NAN;
                        else {
                            if (v < xlo[j]) xlo[j] = v;
                            if (v > xhi[j]) xhi[j] = v;
                        }
                    }
                }
            }
        }
        Py_END_ALLOW_THREADS
        if (bnan) blo = bhi = NAN;
        ret = Py_BuildValue("ddiddnn", rlo, rhi, distinct, blo, bhi, held, used);
    }
done:
    PyBuffer_Release(&use); PyBuffer_Release(&r); PyBuffer_Release(&b);
    PyBuffer_Release(&xr); PyBuffer_Release(&xv); PyBuffer_Release(&lob);
    PyBuffer_Release(&hib);
    return ret;
}

#define BT 12   /* bucket_totals' sums per bucket */

/* bucket_totals(codes (int64 or int8), use, acc, w, y, xrows, xvals, beta, xb0, cov or None, a, step
   (an array, one float for every window, or None), out) -> None: rate.by_bucket's sums per bucket (out: buckets × BT), over the windows
   that count (use or acc) of each code ≥ 0, in window order: 0 their number, 1 Σ w, 2 the
   cycle's (use), 3 Σ w there, 4 Σ w (zi + cov) there, 5 Σ zi there (zi = y − x·β), 6 the
   accept length's (acc), 7 Σ w there, 8 Σ w a there, 9 the cycle's windows with a finite
   step, 10 Σ w there, 11 Σ w step there. */
static PyObject *bucket_totals(PyObject *self, PyObject *args) {
    Py_buffer cb, use, acc, w, y, xr, xv, bt, a, ob, covb, stb;
    PyObject *covo, *sto;
    double xb0;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*y*dOy*Ow*", &cb, &use, &acc, &w, &y, &xr, &xv,
                          &bt, &xb0, &covo, &a, &sto, &ob))
        return NULL;
    PyObject *ret = NULL;
    int have_cov = 0, have_st = 0;
    if (covo != Py_None) {
        if (PyObject_GetBuffer(covo, &covb, PyBUF_SIMPLE) < 0) goto done;
        have_cov = 1;
    }
    int const_st = 0;
    double cst = 0.0;
    if (step_arg(sto, &stb, &have_st, &const_st, &cst) < 0) goto done;
    Py_ssize_t n = use.len, nb = ob.len / (8 * BT);
    Sparse s;
    int cw = 8;
    if (code_width(&cb, n, &cw) < 0 || check(&acc, 1, n, "acc") < 0 ||
        check(&w, 8, n, "w") < 0 || check(&y, 8, n, "y") < 0 || check(&a, 8, n, "a") < 0 ||
        check(&bt, 8, N_X, "beta") < 0 || check(&ob, 8, nb * BT, "out") < 0 ||
        (have_cov && check(&covb, 8, n, "cov") < 0) ||
        (have_st && check(&stb, 8, n, "step") < 0) || sparse_init(&s, &xr, &xv) < 0)
        goto done;
    {
        const void *codes = cb.buf;
        const char *uv = use.buf, *av = acc.buf;
        const double *wv = w.buf, *yv = y.buf, *beta = bt.buf, *aa = a.buf;
        const double *cov = have_cov ? covb.buf : NULL, *step = have_st ? stb.buf : NULL;
        double *out = ob.buf;
        int bad = 0;
        memset(out, 0, 8 * nb * BT);
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++) {
            int u_ = uv[i], a_ = av[i];
            int64_t g = code_at(codes, cw, i);
            if ((!u_ && !a_) || g < 0) continue;
            if (g >= nb) {
                bad = 1;
                break;
            }
            double *o = out + g * BT, wi = wv[i];
            o[0] += 1;
            o[1] += wi;
            if (u_) {
                double zi = yv[i] - xdot(sparse_at(&s, i), beta, xb0);
                double zg = cov ? zi + cov[i] : zi;
                o[2] += 1;
                o[3] += wi;
                o[4] += wi * zg;
                o[5] += zi;
                double sti = step ? step[i] : cst;
                if ((step || const_st) && isfinite(sti)) {
                    o[9] += 1;
                    o[10] += wi;
                    o[11] += wi * sti;
                }
            }
            if (a_) {
                o[6] += 1;
                o[7] += wi;
                o[8] += wi * aa[i];
            }
        }
        Py_END_ALLOW_THREADS
        if (bad) {
            PyErr_SetString(PyExc_ValueError, "codes: a bucket beyond out's rows");
            goto done;
        }
    }
    Py_INCREF(Py_None);
    ret = Py_None;
done:
    if (have_cov) PyBuffer_Release(&covb);
    if (have_st) PyBuffer_Release(&stb);
    PyBuffer_Release(&cb); PyBuffer_Release(&use); PyBuffer_Release(&acc);
    PyBuffer_Release(&w); PyBuffer_Release(&y); PyBuffer_Release(&xr); PyBuffer_Release(&xv);
    PyBuffer_Release(&bt); PyBuffer_Release(&a); PyBuffer_Release(&ob);
    return ret;
}

/* bucket_terms(codes, use, acc, w, y, xrows, xvals, beta, xb0, cov or None, a, par, out):
   each bucket's terms summed over blocks of its windows that count, in window order (window
   j of a bucket's n goes to its block j k / n: stats.block_sums).  par: buckets × 7 (n, k,
   the first row of out, c, Wu, t, Wa: c NaN where the bucket has no cycle, t where it has no
   accept length); out: Σ k rows × 3 (the cycle's w (zg − c) / Wu / c on use,
   the accept length's w (a − t) / Wa / t on acc, the rate's: accept − cycle). */
static PyObject *bucket_terms(PyObject *self, PyObject *args) {
    Py_buffer cb, use, acc, w, y, xr, xv, bt, a, pb, ob, covb;
    PyObject *covo;
    double xb0;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*y*dOy*y*w*", &cb, &use, &acc, &w, &y, &xr, &xv,
                          &bt, &xb0, &covo, &a, &pb, &ob))
        return NULL;
    PyObject *ret = NULL;
    int have_cov = 0;
    int64_t *seen = NULL;
    if (covo != Py_None) {
        if (PyObject_GetBuffer(covo, &covb, PyBUF_SIMPLE) < 0) goto done;
        have_cov = 1;
    }
    Py_ssize_t n = use.len, nb = pb.len / (8 * 7), rows = ob.len / 24;
    Sparse s;
    int cw = 8;
    if (code_width(&cb, n, &cw) < 0 || check(&acc, 1, n, "acc") < 0 ||
        check(&w, 8, n, "w") < 0 || check(&y, 8, n, "y") < 0 || check(&a, 8, n, "a") < 0 ||
        check(&bt, 8, N_X, "beta") < 0 || check(&pb, 8, nb * 7, "par") < 0 ||
        check(&ob, 8, rows * 3, "out") < 0 || (have_cov && check(&covb, 8, n, "cov") < 0) ||
        sparse_init(&s, &xr, &xv) < 0)
        goto done;
    const double *par = pb.buf;
    for (Py_ssize_t g = 0; g < nb; g++) {
        const double *q = par + 7 * g;
        if (q[0] < 0 || q[1] < 0 || q[1] > q[0] || (q[0] > 0 && q[1] < 1) || q[2] < 0 ||
            q[2] + q[1] > rows) {
            PyErr_SetString(PyExc_ValueError, "par: a bucket's blocks outside out");
            goto done;
        }
    }
    seen = PyMem_Calloc(nb ? nb : 1, sizeof(int64_t));
    if (!seen) {
        PyErr_NoMemory();
        goto done;
    }
    {
        const void *codes = cb.buf;
        const char *uv = use.buf, *av = acc.buf;
        const double *wv = w.buf, *yv = y.buf, *beta = bt.buf, *aa = a.buf;
        const double *cov = have_cov ? covb.buf : NULL;
        double *out = ob.buf;
        int bad = 0;
        memset(out, 0, 24 * rows);
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++) {
            int u_ = uv[i], a_ = av[i];
            int64_t g = code_at(codes, cw, i);
            if ((!u_ && !a_) || g < 0) continue;
            if (g >= nb) {
                bad = 1;
                break;
            }
            const double *q = par + 7 * g;
            int64_t ng = (int64_t)q[0], kg = (int64_t)q[1], j = seen[g]++;
            if (j >= ng) {
                bad = 2;
                break;
            }
            double *o = out + 3 * ((int64_t)q[2] + (j * kg) / ng);
            double c = q[3], Wu = q[4], t = q[5], Wa = q[6], wi = wv[i];
            double tc = 0.0, ta = 0.0;
            if (!isnan(c) && u_) {
                double zi = yv[i] - xdot(sparse_at(&s, i), beta, xb0);
                double zg = cov ? zi + cov[i] : zi;
                tc = wi * (zg - c) / Wu / c;
            }
            if (!isnan(t) && a_) ta = wi * (aa[i] - t) / Wa / t;
            o[0] += tc;
            o[1] += ta;
            o[2] += ta - tc;
        }
        Py_END_ALLOW_THREADS
        if (bad) {
            PyErr_SetString(PyExc_ValueError, bad == 1 ? "codes: a bucket beyond par's rows" :
                            "par: a bucket's count short of its windows");
            goto done;
        }
    }
    Py_INCREF(Py_None);
    ret = Py_None;
done:
    PyMem_Free(seen);
    if (have_cov) PyBuffer_Release(&covb);
    PyBuffer_Release(&cb); PyBuffer_Release(&use); PyBuffer_Release(&acc);
    PyBuffer_Release(&w); PyBuffer_Release(&y); PyBuffer_Release(&xr); PyBuffer_Release(&xv);
    PyBuffer_Release(&bt); PyBuffer_Release(&a); PyBuffer_Release(&pb); PyBuffer_Release(&ob);
    return ret;
}

/* A column of numbers as a kernel reads it where the table keeps it: float64, int64 or int32
   (kind 0, 1, 2) and a mask (uint8, true: missing, read as NaN; empty: none) — a nullable
   integer column's own data and mask, no float copy of millions of lines.  (double) of an
   integer is pandas' to_numpy(dtype=float) of it, to the bit. */
typedef struct {
    const void *p;
    const unsigned char *mask;
    int kind;
} Num;

static const Py_ssize_t NUM_SIZE[3] = {8, 8, 4};

static inline double num_at(const Num *c, Py_ssize_t i) {
    if (c->mask && c->mask[i]) return NAN;
    if (c->kind == 1) return (double)((const int64_t *)c->p)[i];
    if (c->kind == 2) return (double)((const int32_t *)c->p)[i];
    return ((const double *)c->p)[i];
}

static int num_init(Num *c, Py_buffer *v, int kind, Py_buffer *m, Py_ssize_t n,
                    const char *name) {
    if (kind < 0 || kind > 2) {
        PyErr_Format(PyExc_ValueError, "%s: kind 0 (float64), 1 (int64) or 2 (int32)", name);
        return -1;
    }
    if (check(v, NUM_SIZE[kind], n, name) < 0) return -1;
    if (m->len != 0 && m->len != n) {
        PyErr_Format(PyExc_ValueError, "%s: a mask of %zd bytes, expected %zd or none", name,
                     m->len, n);
        return -1;
    }
    c->p = v->buf;
    c->kind = kind;
    c->mask = m->len ? m->buf : NULL;
    return 0;
}

/* kv_life_sums(kv, kv_kind, kv_mask, r, r_kind, r_mask, a, at, joins, jtok, interval, prompt,
   prompt_var) -> (a_run, Σ n, Σ n v, Σ s2): the sums of kv_life.kv_lifetime over one
   scheduler's decode lines (kv, r: Num columns; a float64), in two passes: a_run the mean
   accept length of the lines printing one (≥ 1; NaN: none); then per pair of lines the
   requests that finished (n, rounded half to even) and each one's verify steps v, each
   operation numpy's, in its order; s2 = n v² − prompt_var / a_run² (0 for a NaN prompt_var).
   The prefill lines' contributions come sparse: ``at`` the lines (ascending, each once) that
   prefill lines precede, ``joins`` and ``jtok`` their sums there (0 at every other line, as
   the dense arrays of numpy's path hold). */
static PyObject *kv_life_sums(PyObject *self, PyObject *args) {
    Py_buffer kb, kmb, rb, rmb, ab, atb, jb, tb;
    int kkind, rkind;
    double interval, prompt, pvar;
    if (!PyArg_ParseTuple(args, "y*iy*y*iy*y*y*y*y*ddd", &kb, &kkind, &kmb, &rb, &rkind, &rmb,
                          &ab, &atb, &jb, &tb, &interval, &prompt, &pvar))
        return NULL;    /* (pvar: prompt_var until a_run is known) */
    PyObject *ret = NULL;
    Py_ssize_t n = ab.len / 8, m = atb.len / 8;
    Num KV, R;
    if (check(&ab, 8, n, "a") < 0 || num_init(&KV, &kb, kkind, &kmb, n, "kv") < 0 ||
        num_init(&R, &rb, rkind, &rmb, n, "r") < 0 || check(&atb, 8, m, "at") < 0 ||
        check(&jb, 8, m, "joins") < 0 || check(&tb, 8, m, "jtok") < 0)
        goto done;
    {
        const double *a = ab.buf, *joins = jb.buf, *jtok = tb.buf;
        const int64_t *at = atb.buf;
        for (Py_ssize_t k = 0; k < m; k++)
            if (at[k] < 0 || at[k] >= n || (k && at[k] <= at[k - 1])) {
                PyErr_SetString(PyExc_ValueError, "at: lines ascending, each once, below n");
                goto done;
            }
        double asum = 0.0, sn = 0.0, snv = 0.0, ss2 = 0.0, a_run;
        Py_ssize_t acount = 0, k = 0;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++)
            if (a[i] >= 1) {
                asum += a[i];
                acount++;
            }
        a_run = acount ? asum / (double)acount : NAN;
        pvar = isfinite(pvar) ? pvar / (a_run * a_run) : 0.0;
        while (k < m && at[k] < 1) k++;         /* (the first line's: no window before it) */
        double kv_prev = n ? num_at(&KV, 0) : NAN, r_prev = n ? num_at(&R, 0) : NAN;
        for (Py_ssize_t i = 1; i < n; i++) {
            double ji = 0.0, ti = 0.0;
            if (k < m && at[k] == i) {
                ji = joins[k];
                ti = jtok[k];
                k++;
            }
            double ri = num_at(&R, i), kvi = num_at(&KV, i), rq = r_prev, kq = kv_prev;
            r_prev = ri;
            kv_prev = kvi;
            double bt = (ri + rq) / 2;
            double committed = (a[i] >= 1 ? a[i] : a_run) * bt * interval;
            double fin = rq + ji - ri;
            double length = committed + ti - (kvi - kq);
            if (!(isfinite(fin) && isfinite(length) && fin >= 1 && length > 0)) continue;
            double nn = nearbyint(fin);
            double out = length / nn - prompt;
            if (!(out >= 1.0) && !isnan(out)) out = 1.0;
            double v = out / a_run;
            sn += nn;
            snv += nn * v;
            ss2 += nn * v * v - pvar;
        }
        Py_END_ALLOW_THREADS
        ret = Py_BuildValue("dddd", a_run, sn, snv, ss2);
    }
done:
    PyBuffer_Release(&kb); PyBuffer_Release(&kmb); PyBuffer_Release(&rb);
    PyBuffer_Release(&rmb); PyBuffer_Release(&ab); PyBuffer_Release(&atb);
    PyBuffer_Release(&jb); PyBuffer_Release(&tb);
    return ret;
}

#define MAXF 16

/* product_sums(arrays, factors, out) -> None: out (k × m, C order) gets, for each product j
   of ``factors[j]`` consecutive arrays of ``arrays`` (float64, n each; multiplied left to
   right), its sum over k blocks of consecutive windows (window i to block i k / n: stats's
   _block_ids), each block's in window order: context._product_blocks's sums, to the bit. */
static PyObject *product_sums(PyObject *self, PyObject *args) {
    PyObject *arrs;
    Py_buffer fb, ob;
    if (!PyArg_ParseTuple(args, "O!y*w*", &PyTuple_Type, &arrs, &fb, &ob)) return NULL;
    PyObject *ret = NULL;
    Py_ssize_t na = PyTuple_GET_SIZE(arrs), m = fb.len, got = 0, n = -1;
    Py_buffer bufs[MAXF];
    const unsigned char *fac = fb.buf;
    Py_ssize_t need = 0;
    for (Py_ssize_t j = 0; j < m; j++) need += fac[j] ? fac[j] : 1000;
    if (need != na || na > MAXF || m < 1) {
        PyErr_SetString(PyExc_ValueError, "factors: each ≥ 1, summing to the arrays (≤ 16)");
        goto done;
    }
    for (; got < na; got++) {
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(arrs, got), &bufs[got], PyBUF_SIMPLE) < 0)
            goto done;
        if (n < 0) n = bufs[got].len / 8;
        if (bufs[got].len != n * 8) {
            got++;
            PyErr_SetString(PyExc_ValueError, "arrays: not all of one length");
            goto done;
        }
    }
    Py_ssize_t k = m ? ob.len / (8 * m) : 0;
    if (ob.len != k * m * 8 || k > n || (n > 0 && k < 1)) {
        PyErr_SetString(PyExc_ValueError, "out: 1 to n blocks × the products");
        goto done;
    }
    {
        double *out = ob.buf;
        const double *a[MAXF];
        for (Py_ssize_t q = 0; q < na; q++) a[q] = bufs[q].buf;
        memset(out, 0, 8 * k * m);
        Py_BEGIN_ALLOW_THREADS
        Py_ssize_t q = 0;
        for (Py_ssize_t j = 0; j < m; j++) {   /* (a product at a time: a tight loop each) */
            const double *x = a[q], *y = fac[j] > 1 ? a[q + 1] : NULL;
            const double *z = fac[j] > 2 ? a[q + 2] : NULL;
            Py_ssize_t blk = 0, next = k > 1 ? (n + k - 1) / k : n, i = 0;
            while (i < n) {
                double acc = 0.0;
                Py_ssize_t end = next < n ? next : n;
                if (fac[j] == 1)
                    for (; i < end; i++) acc += x[i];
                else if (fac[j] == 2)
                    for (; i < end; i++) acc += x[i] * y[i];
                else if (fac[j] == 3)
                    for (; i < end; i++) acc += x[i] * y[i] * z[i];
                else
                    for (; i < end; i++) {
                        double v = x[i];
                        for (int f = 1; f < fac[j]; f++) v *= a[q + f][i];
                        acc += v;
                    }
                out[blk * m + j] = acc;
                blk++;
                next = blk + 1 < k ? ((blk + 1) * n + k - 1) / k : n;
            }
            q += fac[j];
        }
        Py_END_ALLOW_THREADS
    }
    Py_INCREF(Py_None);
    ret = Py_None;
done:
    for (Py_ssize_t q = 0; q < got; q++) PyBuffer_Release(&bufs[q]);
    PyBuffer_Release(&fb);
    PyBuffer_Release(&ob);
    return ret;
}

/* ---- an exact median (np.median's number) by selection on the values' bit patterns ---- */

static inline uint64_t key_of(double x) {     /* (ordered as the doubles are; −0 before +0) */
    uint64_t u;
    memcpy(&u, &x, 8);
    return (u >> 63) ? ~u : (u | 0x8000000000000000ULL);
}

static inline double val_of(uint64_t k) {
    uint64_t u = (k >> 63) ? (k & 0x7FFFFFFFFFFFFFFFULL) : ~k;
    double x;
    memcpy(&x, &u, 8);
    return x;
}

/* the r-th smallest of a[0 … m) (reordered: a[r] is it, the rest on its sides) */
static uint64_t quickselect(uint64_t *a, Py_ssize_t m, Py_ssize_t r) {
    Py_ssize_t lo = 0, hi = m - 1;
    while (hi > lo) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        uint64_t x = a[lo], y = a[mid], z = a[hi];      /* median of three */
        uint64_t piv = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
        Py_ssize_t i = lo, j = hi;
        while (i <= j) {
            while (a[i] < piv) i++;
            while (a[j] > piv) j--;
            if (i <= j) {
                uint64_t t = a[i];
                a[i] = a[j];
                a[j] = t;
                i++;
                j--;
            }
        }
        if (r <= j) hi = j;
        else if (r >= i) lo = i;
        else return a[r];
    }
    return a[r];
}

/* masked_sum(v, mask[, w]) -> float: v[mask].sum() (with w: (v[mask] * w[mask]).sum()) as numpy gives it — the same pairwise sum
   (numpy's DOUBLE_pairwise_sum: 8 accumulators over blocks of at most 128, halves at multiples
   of 8 above) over the picked values in order, added to the reduction's 0.0 — without the
   copy of the picked values (a large log's millions of windows: 29 MB each).  The leaves of
   the halving are visited left to right, so one cursor through the mask feeds them. */
#define PICK_BUF 512
typedef struct {
    const double *v;
    const double *w;        /* NULL, or each picked value is v[i] × w[i] */
    const char *m;
    Py_ssize_t pos, n;      /* the next window to look at, and the windows' count */
    int at, got;            /* buf[at … got): the picked values taken, not yet summed */
    double buf[PICK_BUF];
} Picks;

/* the next picked values into buf, a stretch of windows at a time without a branch on the
   mask (every value is written; the count moves on where the mask holds) */
static void pick_refill(Picks *c) {
    int got = 0;
    Py_ssize_t i = c->pos;
    while (got == 0 && i < c->n) {
        Py_ssize_t end = i + PICK_BUF < c->n ? i + PICK_BUF : c->n;
        if (c->w)
            for (; i < end; i++) {
                c->buf[got] = c->v[i] * c->w[i];
                got += c->m[i] != 0;
            }
        else
            for (; i < end; i++) {
                c->buf[got] = c->v[i];
                got += c->m[i] != 0;
            }
    }
    c->pos = i;
    c->at = 0;
    c->got = got;
}

static inline double pick_next(Picks *c) {
    if (c->at == c->got) pick_refill(c);
    return c->buf[c->at++];
}

static double picks_pairwise(Picks *c, Py_ssize_t n) {
    if (n < 8) {
        double res = -0.0;
        for (Py_ssize_t i = 0; i < n; i++) res += pick_next(c);
        return res;
    } else if (n <= 128) {
        double r[8], res;
        Py_ssize_t i;
        for (int j = 0; j < 8; j++) r[j] = pick_next(c);
        for (i = 8; i < n - (n % 8); i += 8)
            for (int j = 0; j < 8; j++) r[j] += pick_next(c);
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++) res += pick_next(c);
        return res;
    } else {
        Py_ssize_t n2 = n / 2;
        n2 -= n2 % 8;
        double lo = picks_pairwise(c, n2);
        double hi = picks_pairwise(c, n - n2);
        return lo + hi;
    }
}

/* A long sum on threads: the halvings' first levels (as many leaves as threads, rounded down
   to a power of two) cut it into leaves, each summed by picks_pairwise on its own thread from
   its first picked value on, and the leaves added back up the same halvings. */
static void pw_leaves(Py_ssize_t start, Py_ssize_t n, int depth, Py_ssize_t *st,
                      Py_ssize_t *cn, int *k) {
    if (depth == 0 || n <= 128) {
        st[*k] = start;
        cn[(*k)++] = n;
        return;
    }
    Py_ssize_t n2 = n / 2;
    n2 -= n2 % 8;
    pw_leaves(start, n2, depth - 1, st, cn, k);
    pw_leaves(start + n2, n - n2, depth - 1, st, cn, k);
}

static double pw_join(Py_ssize_t n, int depth, const double *leaf, int *k) {
    if (depth == 0 || n <= 128) return leaf[(*k)++];
    Py_ssize_t n2 = n / 2;
    n2 -= n2 % 8;
    double lo = pw_join(n2, depth - 1, leaf, k);
    double hi = pw_join(n - n2, depth - 1, leaf, k);
    return lo + hi;
}

typedef struct {
    Picks *c;                   /* each leaf's cursor, at its first picked value */
    const Py_ssize_t *cnt;
    double *sum;
} PwLeaves;

static void pw_leaf(void *ctx, int t) {
    PwLeaves *L = ctx;
    L->sum[t] = picks_pairwise(&L->c[t], L->cnt[t]);
}

/* picks_pairwise of the k picked values of c from its start, on threads: each leaf's cursor
   starts at the window of its first picked value, found from the picks counted a block of
   windows at a time (cnt: PICK_BUF windows a block) */
static double picks_sum(const Picks *c, Py_ssize_t k, const Py_ssize_t *cnt) {
    int nt = threads_for(k), depth = 0;
    Picks *L = NULL;
    while ((2 << depth) <= nt) depth++;
    if (depth > 0) L = malloc(MAXT * sizeof(Picks));
    if (!L) {
        Picks one = *c;
        return picks_pairwise(&one, k);
    }
    Py_ssize_t st[MAXT], cn[MAXT];
    double sum[MAXT];
    int nl = 0;
    pw_leaves(0, k, depth, st, cn, &nl);
    Py_ssize_t seen = 0, blk = 0;
    for (int l = 0; l < nl; l++) {
        while (seen + cnt[blk] <= st[l]) seen += cnt[blk++];
        Py_ssize_t i = blk * PICK_BUF, s = seen;
        while (!c->m[i] || s < st[l]) s += c->m[i++] != 0;
        L[l] = *c;
        L[l].pos = i;
        L[l].at = L[l].got = 0;
    }
    PwLeaves P = {L, cn, sum};
    par_run(nl, pw_leaf, &P);
    free(L);
    int j = 0;
    return pw_join(k, depth, sum, &j);
}

static PyObject *masked_sum(PyObject *self, PyObject *args) {
    Py_buffer v, m, w;
    PyObject *wo = Py_None;
    if (!PyArg_ParseTuple(args, "y*y*|O", &v, &m, &wo)) return NULL;
    PyObject *ret = NULL;
    int have_w = 0;
    Py_ssize_t n = v.len / 8;
    if (wo != Py_None) {
        if (PyObject_GetBuffer(wo, &w, PyBUF_SIMPLE) < 0) goto done;
        have_w = 1;
    }
    if (check(&m, 1, n, "mask") == 0 && (!have_w || check(&w, 8, n, "w") == 0)) {
        const char *mv = m.buf;
        Py_ssize_t k = 0, nb = (n + PICK_BUF - 1) / PICK_BUF;
        Py_ssize_t *cnt = PyMem_Malloc((nb ? nb : 1) * sizeof(Py_ssize_t));
        Picks *c = PyMem_Malloc(sizeof(Picks));
        double out = 0.0;
        if (!cnt || !c) {
            PyMem_Free(cnt);
            PyMem_Free(c);
            PyErr_NoMemory();
            goto done;
        }
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t q = 0; q < nb; q++) {       /* (a byte count a block: vectorised) */
            Py_ssize_t lo = q * PICK_BUF, hi = lo + PICK_BUF < n ? lo + PICK_BUF : n, s = 0;
            for (Py_ssize_t i = lo; i < hi; i++) s += mv[i] != 0;
            cnt[q] = s;
            k += s;
        }
        c->v = v.buf;
        c->w = have_w ? (const double *)w.buf : NULL;
        c->m = mv;
        c->pos = 0;
        c->n = n;
        c->at = c->got = 0;
        out = 0.0 + picks_sum(c, k, cnt);
        Py_END_ALLOW_THREADS
        PyMem_Free(cnt);
        PyMem_Free(c);
        ret = PyFloat_FromDouble(out);
    }
done:
    if (have_w) PyBuffer_Release(&w);
    PyBuffer_Release(&v); PyBuffer_Release(&m);
    return ret;
}

/* median(values, sel, center) -> float: np.median of the values ``sel`` picks (None: all; a
   bool mask; or int64 positions) — of |value − center| when center is not NaN — the same
   number: the middle one, or the mean (a + b) / 2 of the middle two; NaN when any is NaN or
   none is picked.  A histogram of the top 16 bits finds the bucket(s) of the middle ranks,
   and a selection among that bucket's values alone finishes. */
/* median's passes on threads.  Each thread finds its share's least and largest value
   (med_range) and counts its values into a histogram of its own (med_hist), then copies those
   in the middle buckets to its own stretch of buf (med_gather).  The buckets divide the range
   the values span (a key minus the least, shifted to 16 bits), not the doubles' top bits: values
   close together (cycles of 25–35 ms) fill all 65,536 of them, not a few, so the increments do
   not queue on one counter and the middle bucket holds few values to select among.  The
   selection reads the values, not their order. */
typedef struct {
    const double *v;
    const char *mask;
    const int64_t *pos;
    Py_ssize_t count;
    double center;
    int center_on, nt, shift;
    uint64_t base;
    uint64_t *hist[MAXT];
    uint64_t lo[MAXT], hi[MAXT];
    Py_ssize_t m[MAXT];
    int nan[MAXT];
    Py_ssize_t b0, b1, off[MAXT + 1];
    uint64_t *buf;
} Med;

/* a thread's view of Med: its bounds and the fields its loop reads, in locals (the stores
   into the histogram or buf could alias Med's fields, which the loop would then read again) */
typedef struct {
    const double *v;
    const char *mask;
    const int64_t *pos;
    double center;
    int center_on, shift;
    uint64_t base;
    Py_ssize_t lo, hi;
} MedView;

static inline MedView med_view(const Med *M, int t) {
    MedView w = {M->v, M->mask, M->pos, M->center, M->center_on, M->shift, M->base,
                 chunk_at(M->count, t, M->nt), chunk_at(M->count, t + 1, M->nt)};
    return w;
}

/* value q (*x), and whether it is picked (1) or not (0): made either way, so that the loops
   below take the mask as data, not as a branch (a mask of the used windows is as often
   false as true, in no order a branch predictor can learn) */
static inline int med_value(const MedView *w, Py_ssize_t q, double *x) {
    Py_ssize_t i = w->pos ? w->pos[q] : q;
    *x = w->center_on ? fabs(w->v[i] - w->center) : w->v[i];
    return w->mask ? w->mask[i] != 0 : 1;
}

/* the shift that maps keys base … top to buckets 0 … 65535 */
static inline int span_shift(uint64_t span) {
    int bits = 0;
    while (bits < 64 && (span >> bits) > 65535) bits++;
    return bits;
}

static void med_range(void *ctx, int t) {
    Med *M = ctx;
    const MedView w = med_view(M, t);
    Py_ssize_t m = 0;
    uint64_t lo = UINT64_MAX, hi = 0;
    int nan = 0;
    double x;
    for (Py_ssize_t q = w.lo; q < w.hi; q++) {
        int picked = med_value(&w, q, &x);
        if (picked & (isnan(x) != 0)) {
            nan = 1;
            break;
        }
        uint64_t k = key_of(x);
        uint64_t kl = picked ? k : UINT64_MAX, kh = picked ? k : 0;
        lo = kl < lo ? kl : lo;
        hi = kh > hi ? kh : hi;
        m += picked;
    }
    M->nan[t] = nan;
    M->m[t] = m;
    M->lo[t] = lo;
    M->hi[t] = hi;
}

static void med_hist(void *ctx, int t) {
    Med *M = ctx;
    const MedView w = med_view(M, t);
    uint64_t *h = M->hist[t];
    double x;
    for (Py_ssize_t q = w.lo; q < w.hi; q++) {
        int picked = med_value(&w, q, &x);
        uint64_t b = (key_of(x) - w.base) >> w.shift;   /* (a value not picked may fall
                                                           outside the picked ones' range) */
        h[b < 65535 ? b : 65535] += picked;
    }
}

static void med_gather(void *ctx, int t) {
    Med *M = ctx;
    const MedView w = med_view(M, t);
    uint64_t *buf = M->buf;
    Py_ssize_t got = M->off[t];
    uint64_t b0 = (uint64_t)M->b0, width = (uint64_t)(M->b1 - M->b0);
    double x;
    for (Py_ssize_t q = w.lo; q < w.hi; q++) {
        int picked = med_value(&w, q, &x);
        uint64_t k = key_of(x);
        /* (picked and b0 ≤ bucket ≤ b1, as one test that is seldom true, so well predicted;
           each of its parts alone is wrong about half the time) */
        if (picked & (((k - w.base) >> w.shift) - b0 <= width)) buf[got++] = k;
    }
}

static PyObject *median(PyObject *self, PyObject *args) {
    Py_buffer vb, sb;
    PyObject *so;
    double center;
    if (!PyArg_ParseTuple(args, "y*Od", &vb, &so, &center)) return NULL;
    PyObject *ret = NULL;
    int mode = 0;                 /* 0 all, 1 mask, 2 positions */
    Py_ssize_t n = vb.len / 8, m = 0;
    uint64_t *hist = NULL, *buf = NULL;
    if (so != Py_None) {
        if (PyObject_GetBuffer(so, &sb, PyBUF_SIMPLE | PyBUF_FORMAT) < 0) goto done_nosel;
        mode = (sb.format && (sb.format[0] == '?' || sb.itemsize == 1)) ? 1 : 2;
        if ((mode == 1 && sb.len != n) || (mode == 2 && sb.len % 8)) {
            PyErr_SetString(PyExc_ValueError, "sel: a mask of the values or int64 positions");
            goto done;
        }
        if (mode == 2) {
            const int64_t *pos = sb.buf;
            for (Py_ssize_t q = 0; q < sb.len / 8; q++)
                if (pos[q] < 0 || pos[q] >= n) {
                    PyErr_SetString(PyExc_IndexError, "sel: a position outside the values");
                    goto done;
                }
        }
    }
    {
        Med M;
        memset(&M, 0, sizeof M);
        M.v = vb.buf;
        M.mask = mode == 1 ? sb.buf : NULL;
        M.pos = mode == 2 ? sb.buf : NULL;
        M.count = mode == 2 ? sb.len / 8 : n;
        M.center = center;
        M.center_on = !isnan(center);
        M.nt = threads_for(M.count);
        hist = PyMem_Calloc((size_t)M.nt * 65536, sizeof(uint64_t));
        if (!hist) {
            PyErr_NoMemory();
            goto done;
        }
        for (int t = 0; t < M.nt; t++) M.hist[t] = hist + (size_t)t * 65536;
        int nan = 0;
        double result = NAN;
        Py_BEGIN_ALLOW_THREADS
        par_run(M.nt, med_range, &M);
        uint64_t lo = UINT64_MAX, hi = 0;
        for (int t = 0; t < M.nt; t++) {
            nan |= M.nan[t];
            m += M.m[t];
            if (M.m[t]) {
                lo = M.lo[t] < lo ? M.lo[t] : lo;
                hi = M.hi[t] > hi ? M.hi[t] : hi;
            }
        }
        if (!nan && m > 0) {
            M.base = lo;
            M.shift = span_shift(hi - lo);
            par_run(M.nt, med_hist, &M);
            for (int t = 1; t < M.nt; t++)
                for (Py_ssize_t b = 0; b < 65536; b++) hist[b] += M.hist[t][b];
        }
        Py_END_ALLOW_THREADS
        if (!nan && m > 0) {
            /* the bucket b0 holding rank r0 and b1 holding r1 (ranks then relative to b0) */
            Py_ssize_t r0 = (m - 1) / 2, r1 = m / 2, below = 0, b0 = 0, b1, b;
            while (below + (Py_ssize_t)hist[b0] <= r0) below += hist[b0++];
            r0 -= below;
            r1 -= below;
            Py_ssize_t held = 0;
            b1 = b0;
            while (held + (Py_ssize_t)hist[b1] <= r1) held += hist[b1++];
            /* each thread's values in them go after the earlier threads' (a thread's counts
               are its histogram's; the first thread's, the sums' less the others') */
            Py_ssize_t size = 0;
            for (b = b0; b <= b1; b++) size += hist[b];
            M.b0 = b0;
            M.b1 = b1;
            M.off[M.nt] = size;
            for (int t = M.nt - 1; t > 0; t--) {
                Py_ssize_t own = 0;
                for (b = b0; b <= b1; b++) own += M.hist[t][b];
                M.off[t] = M.off[t + 1] - own;
            }
            M.off[0] = 0;
            buf = PyMem_Malloc((size ? size : 1) * sizeof(uint64_t));
            if (!buf) {
                PyErr_NoMemory();
                goto done;
            }
            M.buf = buf;
            Py_BEGIN_ALLOW_THREADS
            par_run(M.nt, med_gather, &M);
            Py_END_ALLOW_THREADS
            uint64_t k0 = quickselect(buf, size, r0), k1 = k0;
            if (r1 != r0) {          /* the next: the least of those after r0 */
                k1 = buf[r0 + 1];
                for (Py_ssize_t q = r0 + 2; q < size; q++)
                    if (buf[q] < k1) k1 = buf[q];
            }
            double a = val_of(k0), c = val_of(k1);
            result = r1 != r0 ? (a + c) / 2 : a;
        }
        ret = PyFloat_FromDouble(result);
    }
done:
    if (so != Py_None) PyBuffer_Release(&sb);
done_nosel:
    PyMem_Free(hist);
    PyMem_Free(buf);
    PyBuffer_Release(&vb);
    return ret;
}

typedef struct {
    const double *bv, *yv, *beta, *coef;
    double *fit, *res;
    const Sparse *sp;
    const int *cols;
    int p;
    double xb0, c0, c1;
    Py_ssize_t n;
    int nt;
} Resid;

static void resid_chunk(void *ctx, int t) {
    const Resid *R = ctx;
    Py_ssize_t lo = chunk_at(R->n, t, R->nt), hi = chunk_at(R->n, t + 1, R->nt);
    Sparse s = sparse_from(R->sp, lo);
    for (Py_ssize_t i = lo; i < hi; i++) {
        const double *x = sparse_at(&s, i);
        double f = zdot(R->cols, R->p, R->coef, (R->bv[i] - R->c0) / R->c1, x ? x : ZERO);
        R->fit[i] = f;
        R->res[i] = (R->yv[i] - xdot(x, R->beta, R->xb0)) - f;
    }
}

/* resid(b, y, xrows, xvals, beta, xb0, c0, c1, cols, coef, fitted, res): for every window the
   fitted cycle Z γ (cols, coef: the smooth control) and the residual (y − x·β) − Z γ, each made
   as rate.fit's residuals makes it (_times, then the subtraction) */
static PyObject *resid(PyObject *self, PyObject *args) {
    Py_buffer b, y, xr, xv, bt, cb, cf, fb, rb;
    double xb0, c0, c1;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*dddy*y*w*w*", &b, &y, &xr, &xv, &bt, &xb0, &c0, &c1,
                          &cb, &cf, &fb, &rb))
        return NULL;
    PyObject *ret = NULL;
    Py_ssize_t n = b.len / 8;
    int cols[MAXP], p;
    Sparse s;
    if (read_cols(&cb, cols, &p) < 0 || check(&y, 8, n, "y") < 0 ||
        check(&bt, 8, N_X, "beta") < 0 || check(&cf, 8, p, "coef") < 0 ||
        check(&fb, 8, n, "fitted") < 0 || check(&rb, 8, n, "res") < 0 ||
        sparse_init(&s, &xr, &xv) < 0)
        goto done;
    {
        Resid R = {b.buf, y.buf, bt.buf, cf.buf, fb.buf, rb.buf, &s, cols, p, xb0, c0, c1, n,
                   threads_for(n)};
        Py_BEGIN_ALLOW_THREADS
        par_run(R.nt, resid_chunk, &R);
        Py_END_ALLOW_THREADS
    }
    Py_INCREF(Py_None);
    ret = Py_None;
done:
    PyBuffer_Release(&b); PyBuffer_Release(&y); PyBuffer_Release(&xr); PyBuffer_Release(&xv);
    PyBuffer_Release(&bt); PyBuffer_Release(&cb); PyBuffer_Release(&cf); PyBuffer_Release(&fb);
    PyBuffer_Release(&rb);
    return ret;
}

#define MAXG 16

/* medians(values, codes, centers or None, out) -> None: np.median of the values of each group
   g = 0 … G − 1 (codes int32, −1: none; out: G float64) — of |value − centers[g]| with
   centers — the same numbers as median() group by group, in two passes over the values for
   every group at once (a 16-bit histogram each, then each group's middle bucket(s)). */
/* medians' passes on threads, as median's: per thread each group's range (meds_range), then
   a histogram of every group over its own range (meds_hist), then each thread's middle values
   of a group after the earlier threads' (meds_gather).  A window of no group (code −1) is
   counted into a row of its own after the groups', not skipped: no branch on the codes,
   whose −1s fall in no order a predictor can learn. */
typedef struct {
    const double *v, *cen;
    const int32_t *code;
    Py_ssize_t n;
    int G, nt;
    uint32_t *hist[MAXT];
    Py_ssize_t m[MAXT][MAXG];
    uint64_t lo[MAXT][MAXG], hi[MAXT][MAXG];
    int nan[MAXT][MAXG], bad[MAXT];
    uint64_t base[MAXG + 1];
    int shift[MAXG + 1];
    uint64_t b0[MAXG], width[MAXG];     /* a group not gathered: b0 beyond every bucket */
    Py_ssize_t at[MAXT][MAXG];
    uint64_t *buf;
} Meds;

static inline double meds_value(const Meds *M, Py_ssize_t i, int32_t g) {
    return M->cen ? fabs(M->v[i] - M->cen[g]) : M->v[i];
}

static void meds_range(void *ctx, int t) {
    Meds *M = ctx;
    const int32_t *code = M->code;
    int G = M->G;
    Py_ssize_t m[MAXG] = {0};
    uint64_t lo[MAXG], hi[MAXG];
    int nan[MAXG] = {0};
    for (int g = 0; g < G; g++) {
        lo[g] = UINT64_MAX;
        hi[g] = 0;
    }
    Py_ssize_t end = chunk_at(M->n, t + 1, M->nt);
    for (Py_ssize_t i = chunk_at(M->n, t, M->nt); i < end; i++) {
        int32_t g = code[i];
        if (g < 0) continue;
        if (g >= G) {
            M->bad[t] = 1;
            break;
        }
        double x = meds_value(M, i, g);
        uint64_t k = key_of(x);
        nan[g] |= isnan(x) != 0;
        lo[g] = k < lo[g] ? k : lo[g];
        hi[g] = k > hi[g] ? k : hi[g];
        m[g]++;
    }
    for (int g = 0; g < G; g++) {
        M->m[t][g] = m[g];
        M->lo[t][g] = lo[g];
        M->hi[t][g] = hi[g];
        M->nan[t][g] = nan[g];
    }
}

static void meds_hist(void *ctx, int t) {
    Meds *M = ctx;
    uint32_t *hist = M->hist[t];
    const int32_t *code = M->code;
    int G = M->G;
    Py_ssize_t end = chunk_at(M->n, t + 1, M->nt);
    for (Py_ssize_t i = chunk_at(M->n, t, M->nt); i < end; i++) {
        int32_t c = code[i];
        int32_t g = c < 0 ? G : c;
        double x = meds_value(M, i, c < 0 ? 0 : c);
        uint64_t b = (key_of(x) - M->base[g]) >> M->shift[g];
        hist[(size_t)g * 65536 + (b < 65535 ? b : 65535)]++;
    }
}

static void meds_gather(void *ctx, int t) {
    Meds *M = ctx;
    Py_ssize_t at[MAXG];
    memcpy(at, M->at[t], sizeof at);
    const int32_t *code = M->code;
    uint64_t *buf = M->buf;
    Py_ssize_t end = chunk_at(M->n, t + 1, M->nt);
    for (Py_ssize_t i = chunk_at(M->n, t, M->nt); i < end; i++) {
        int32_t c = code[i], g = c < 0 ? 0 : c;
        uint64_t k = key_of(meds_value(M, i, g));
        /* (in a group, and in its middle buckets: one test, seldom true) */
        if ((c >= 0) & (((k - M->base[g]) >> M->shift[g]) - M->b0[g] <= M->width[g]))
            buf[at[g]++] = k;
    }
}

static PyObject *medians(PyObject *self, PyObject *args) {
    Py_buffer vb, cb, ob, cenb;
    PyObject *ceno;
    if (!PyArg_ParseTuple(args, "y*y*Ow*", &vb, &cb, &ceno, &ob)) return NULL;
    PyObject *ret = NULL;
    int have_c = 0;
    uint32_t *hist = NULL;
    uint64_t *buf = NULL;
    if (ceno != Py_None) {
        if (PyObject_GetBuffer(ceno, &cenb, PyBUF_SIMPLE) < 0) goto done;
        have_c = 1;
    }
    Py_ssize_t n = vb.len / 8, G = ob.len / 8;
    if (check(&cb, 4, n, "codes") < 0 || (have_c && check(&cenb, 8, G, "centers") < 0))
        goto done;
    if (G < 1 || G > MAXG) {
        PyErr_SetString(PyExc_ValueError, "out: 1 to 16 groups");
        goto done;
    }
    {
        Meds M;
        memset(&M, 0, sizeof M);
        M.v = vb.buf;
        M.cen = have_c ? cenb.buf : NULL;
        M.code = cb.buf;
        M.n = n;
        M.G = (int)G;
        M.nt = threads_for(n);
        size_t rows = (size_t)(G + 1) * 65536;     /* (the groups', and the row of no group) */
        hist = PyMem_Calloc((size_t)M.nt * rows, sizeof(uint32_t));
        if (!hist) {
            PyErr_NoMemory();
            goto done;
        }
        for (int t = 0; t < M.nt; t++) M.hist[t] = hist + (size_t)t * rows;
        double *out = ob.buf;
        Py_ssize_t m[MAXG] = {0}, r0[MAXG], r1[MAXG], b0[MAXG], b1[MAXG], off[MAXG + 1];
        int nan[MAXG] = {0}, bad = 0;
        Py_BEGIN_ALLOW_THREADS
        par_run(M.nt, meds_range, &M);
        for (Py_ssize_t g = 0; g < G; g++) {
            uint64_t lo = UINT64_MAX, hi = 0;
            for (int t = 0; t < M.nt; t++) {
                bad |= M.bad[t];
                m[g] += M.m[t][g];
                nan[g] |= M.nan[t][g];
                if (M.m[t][g]) {
                    lo = M.lo[t][g] < lo ? M.lo[t][g] : lo;
                    hi = M.hi[t][g] > hi ? M.hi[t][g] : hi;
                }
            }
            M.base[g] = m[g] ? lo : 0;
            M.shift[g] = m[g] ? span_shift(hi - lo) : 48;
        }
        M.base[G] = 0;
        M.shift[G] = 48;
        if (!bad) {
            par_run(M.nt, meds_hist, &M);
            for (int t = 1; t < M.nt; t++)
                for (size_t q = 0; q < (size_t)G * 65536; q++) hist[q] += M.hist[t][q];
        }
        Py_END_ALLOW_THREADS
        if (bad) {
            PyErr_SetString(PyExc_ValueError, "codes: a group beyond out");
            goto done;
        }
        off[0] = 0;
        for (Py_ssize_t g = 0; g < G; g++) {
            Py_ssize_t size = 0;
            b0[g] = b1[g] = 0;
            if (m[g] && !nan[g]) {
                const uint32_t *h = hist + (size_t)g * 65536;
                Py_ssize_t below = 0, held = 0, b = 0;
                r0[g] = (m[g] - 1) / 2;
                r1[g] = m[g] / 2;
                while (below + (Py_ssize_t)h[b] <= r0[g]) below += h[b++];
                b0[g] = b;
                r0[g] -= below;
                r1[g] -= below;
                while (held + (Py_ssize_t)h[b] <= r1[g]) held += h[b++];
                b1[g] = b;
                for (b = b0[g]; b <= b1[g]; b++) size += h[b];
            }
            off[g + 1] = off[g] + size;
        }
        buf = PyMem_Malloc((off[G] ? off[G] : 1) * sizeof(uint64_t));
        if (!buf) {
            PyErr_NoMemory();
            goto done;
        }
        /* thread t's values of group g go to buf from at[t][g]: after the earlier threads' */
        for (Py_ssize_t g = 0; g < G; g++) {
            Py_ssize_t at = off[g + 1];
            int gathered = off[g + 1] > off[g];
            M.b0[g] = gathered ? (uint64_t)b0[g] : (uint64_t)1 << 62;
            M.width[g] = gathered ? (uint64_t)(b1[g] - b0[g]) : 0;
            for (int t = M.nt - 1; t > 0; t--) {
                if (gathered)
                    for (Py_ssize_t b = b0[g]; b <= b1[g]; b++)
                        at -= M.hist[t][(size_t)g * 65536 + b];
                M.at[t][g] = at;
            }
            M.at[0][g] = off[g];
        }
        M.buf = buf;
        Py_BEGIN_ALLOW_THREADS
        par_run(M.nt, meds_gather, &M);
        Py_END_ALLOW_THREADS
        Py_ssize_t got[MAXG];
        for (Py_ssize_t g = 0; g < G; g++) got[g] = off[g + 1] - off[g];
        for (Py_ssize_t g = 0; g < G; g++) {
            if (!m[g] || nan[g]) {
                out[g] = NAN;
                continue;
            }
            uint64_t *a = buf + off[g];
            uint64_t k0 = quickselect(a, got[g], r0[g]), k1 = k0;
            if (r1[g] != r0[g]) {
                k1 = a[r0[g] + 1];
                for (Py_ssize_t q = r0[g] + 2; q < got[g]; q++)
                    if (a[q] < k1) k1 = a[q];
            }
            double lo = val_of(k0), hi = val_of(k1);
            out[g] = r1[g] != r0[g] ? (lo + hi) / 2 : lo;
        }
    }
    Py_INCREF(Py_None);
    ret = Py_None;
done:
    if (have_c) PyBuffer_Release(&cenb);
    PyMem_Free(hist);
    PyMem_Free(buf);
    PyBuffer_Release(&vb); PyBuffer_Release(&cb); PyBuffer_Release(&ob);
    return ret;
}

/* ---- printed batch sizes: small non-negative integers, counted and looked up ---- */

#define INT_LIMIT (1 << 20)

/* int_range(r) -> (every finite value an integer in [0, 2^20), the largest (−1: none)) */
static PyObject *int_range(PyObject *self, PyObject *args) {
    Py_buffer rb;
    if (!PyArg_ParseTuple(args, "y*", &rb)) return NULL;
    const double *r = rb.buf;
    Py_ssize_t n = rb.len / 8;
    double hi = -1;
    int ok = 1;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        double v = r[i];
        if (!isfinite(v)) continue;
        if (!(v >= 0 && v < INT_LIMIT && v == floor(v))) {
            ok = 0;
            break;
        }
        if (v > hi) hi = v;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&rb);
    return Py_BuildValue("Nn", PyBool_FromLong(ok), (Py_ssize_t)hi);
}

/* int_table(r, mask or None, table, out or None) -> None: r's finite values (integers below
   len(table), int_range's) as positions in table (int64): without out, table[v] counts the
   windows of the mask printing v; with out (int32), out[i] = table[r[i]], −1 where r[i] is not
   finite */
static PyObject *int_table(PyObject *self, PyObject *args) {
    Py_buffer rb, tb, mb, ob;
    PyObject *mo, *oo;
    if (!PyArg_ParseTuple(args, "y*Ow*O", &rb, &mo, &tb, &oo)) return NULL;
    PyObject *ret = NULL;
    int have_m = 0, have_o = 0;
    Py_ssize_t n = rb.len / 8, k = tb.len / 8;
    if (mo != Py_None) {
        if (PyObject_GetBuffer(mo, &mb, PyBUF_SIMPLE) < 0) goto done;
        have_m = 1;
        if (check(&mb, 1, n, "mask") < 0) goto done;
    }
    if (oo != Py_None) {
        if (PyObject_GetBuffer(oo, &ob, PyBUF_WRITABLE) < 0) goto done;
        have_o = 1;
        if (check(&ob, 4, n, "out") < 0) goto done;
    }
    {
        const double *r = rb.buf;
        const char *m = have_m ? mb.buf : NULL;
        int64_t *t = tb.buf;
        int32_t *out = have_o ? ob.buf : NULL;
        int bad = 0;
        if (!out) memset(t, 0, 8 * k);
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++) {
            if (!isfinite(r[i])) {
                if (out) out[i] = -1;
                continue;
            }
            if (m && !m[i]) continue;
            Py_ssize_t v = (Py_ssize_t)r[i];
            if (v < 0 || v >= k) {
                bad = 1;
                break;
            }
            if (out) out[i] = (int32_t)t[v];
            else t[v]++;
        }
        Py_END_ALLOW_THREADS
        if (bad) {
            PyErr_SetString(PyExc_ValueError, "r: a value beyond the table");
            goto done;
        }
    }
    Py_INCREF(Py_None);
    ret = Py_None;
done:
    if (have_m) PyBuffer_Release(&mb);
    if (have_o) PyBuffer_Release(&ob);
    PyBuffer_Release(&rb); PyBuffer_Release(&tb);
    return ret;
}

/* within_clipped(res, fitted, lim0, share, w, use, strata, nb, out) -> None: rate.fit's
   warm-up input: each used window's residual clipped to ±max(lim0, share · |fitted|) (lim0:
   STALL_SIGMAS · mad), less its stratum's w-weighted mean of them (strata int32, codes < nb;
   −1 or not used: NaN) — numpy's operations in its order (np.clip, then within_strata: the
   sums in window order, as np.bincount makes them) */
static PyObject *within_clipped(PyObject *self, PyObject *args) {
    Py_buffer rb, fb, wb, ub, sb, ob;
    double lim0, share;
    Py_ssize_t nb;
    if (!PyArg_ParseTuple(args, "y*y*ddy*y*y*nw*", &rb, &fb, &lim0, &share, &wb, &ub, &sb, &nb,
                          &ob))
        return NULL;
    PyObject *ret = NULL;
    double *S = NULL;
    Py_ssize_t n = rb.len / 8;
    if (check(&fb, 8, n, "fitted") < 0 || check(&wb, 8, n, "w") < 0 ||
        check(&ub, 1, n, "use") < 0 || check(&sb, 4, n, "strata") < 0 ||
        check(&ob, 8, n, "out") < 0)
        goto done;
    if (nb < 0) {
        PyErr_SetString(PyExc_ValueError, "nb: the strata");
        goto done;
    }
    S = PyMem_Calloc(2 * (nb ? nb : 1), sizeof(double));
    if (!S) {
        PyErr_NoMemory();
        goto done;
    }
    {
        const double *res = rb.buf, *fit = fb.buf, *w = wb.buf;
        const char *use = ub.buf;
        const int32_t *st = sb.buf;
        double *out = ob.buf, *W = S + nb;
        int bad = 0;
        Py_ssize_t idx[IDX_BLOCK];
        Py_BEGIN_ALLOW_THREADS
        /* the sums over the used windows of a stratum, in window order (np.bincount's) */
        for (Py_ssize_t at = 0; at < n && !bad;) {
            int nk = kept_next(use, &at, n, idx);
            for (int q = 0; q < nk; q++) {
                Py_ssize_t i = idx[q];
                int32_t g = st[i];
                if (g < 0) continue;
                if (g >= nb) {
                    bad = 1;
                    break;
                }
                double lim = npmax(lim0, share * fabs(fit[i]));
                double z = npclip(res[i], -lim, lim);
                S[g] += w[i] * z;
                W[g] += w[i];
            }
        }
        for (Py_ssize_t g = 0; g < nb && !bad; g++)
            S[g] = S[g] / (W[g] > 1e-300 || isnan(W[g]) ? W[g] : 1e-300);
        /* then every window's: made for all, NaN taken where not used (no branch on use) */
        for (Py_ssize_t i = 0; i < n && !bad; i++) {
            int32_t g = st[i];
            int ok = (use[i] != 0) & (g >= 0);
            double lim = npmax(lim0, share * fabs(fit[i]));
            double z = npclip(res[i], -lim, lim) - S[ok ? g : 0];
            out[i] = ok ? z : NAN;
        }
        Py_END_ALLOW_THREADS
        if (bad) {
            PyErr_SetString(PyExc_ValueError, "strata: a code at or above nb");
            goto done;
        }
    }
    Py_INCREF(Py_None);
    ret = Py_None;
done:
    PyMem_Free(S);
    PyBuffer_Release(&rb); PyBuffer_Release(&fb); PyBuffer_Release(&wb);
    PyBuffer_Release(&ub); PyBuffer_Release(&sb); PyBuffer_Release(&ob);
    return ret;
}

/* five_means(z, w, out) -> n: the windows with a finite z and w > 0 (n of them), their first
   5 ⌊n / 5⌋ in groups of 5 consecutive ones: each group's Σ z w / Σ w into out (⌊n / 5⌋ at
   least), as rate.warmup_windows's np.add.reduceat sums them */
static PyObject *five_means(PyObject *self, PyObject *args) {
    Py_buffer zb, wb, ob;
    if (!PyArg_ParseTuple(args, "y*y*w*", &zb, &wb, &ob)) return NULL;
    PyObject *ret = NULL;
    Py_ssize_t n = zb.len / 8, cap = ob.len / 8, cnt = 0, k = 0;
    if (check(&wb, 8, n, "w") < 0) goto done;
    {
        const double *z = zb.buf, *w = wb.buf;
        double *out = ob.buf, szw = 0.0, sw = 0.0;
        int in = 0, bad = 0;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++) {
            if (!(isfinite(z[i]) && w[i] > 0)) continue;
            cnt++;
            if (in == 0) {
                szw = z[i] * w[i];
                sw = w[i];
            } else {
                szw += z[i] * w[i];
                sw += w[i];
            }
            if (++in == 5) {
                if (k >= cap) {
                    bad = 1;
                    break;
                }
                out[k++] = szw / sw;
                in = 0;
            }
        }
        Py_END_ALLOW_THREADS
        if (bad) {
            PyErr_SetString(PyExc_ValueError, "out: shorter than the groups");
            goto done;
        }
    }
    ret = PyLong_FromSsize_t(cnt);
done:
    PyBuffer_Release(&zb); PyBuffer_Release(&wb); PyBuffer_Release(&ob);
    return ret;
}

/* ---- the draft length from accept len / accept rate (analysis/draft_len.py) ---- */

/* a line's reading of K (mode 0: L / R; 1: 1 + (L − 1) / R) and its rounding tolerance
   (printed: half a unit of the 2nd decimal), numpy's operations in draft_len's order */
static inline double k_reading(double L, double R, int mode) {
    return mode ? 1 + (L - 1) / R : L / R;
}

static inline double k_tol(double L, double R, int mode, double printed) {
    if (!mode) return L / R * (printed / L + printed / R);
    double lm = L - 1 > 1e-9 ? L - 1 : 1e-9;
    return (L - 1) / R * (printed / lm + printed / R);
}

static inline int k_line(double L, double R) {
    return isfinite(L) && isfinite(R) && L >= 1 && R > 0;
}

/* k_readings(L, R, mode, out) -> m: the readings of the lines with both numbers (L ≥ 1,
   R > 0), in line order, into out[0 … m) */
static PyObject *k_readings(PyObject *self, PyObject *args) {
    Py_buffer lb, rb, ob;
    int mode;
    if (!PyArg_ParseTuple(args, "y*y*iw*", &lb, &rb, &mode, &ob)) return NULL;
    PyObject *ret = NULL;
    Py_ssize_t n = lb.len / 8, m = 0;
    if (check(&rb, 8, n, "R") < 0 || check(&ob, 8, n, "out") < 0) goto done;
    {
        const double *L = lb.buf, *R = rb.buf;
        double *out = ob.buf;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++)
            if (k_line(L[i], R[i])) out[m++] = k_reading(L[i], R[i], mode);
        Py_END_ALLOW_THREADS
    }
    ret = PyLong_FromSsize_t(m);
done:
    PyBuffer_Release(&lb); PyBuffer_Release(&rb); PyBuffer_Release(&ob);
    return ret;
}

/* k_hits(L, R, mode, k, printed) -> how many of those lines read k within their tolerance
   (|reading − k| ≤ tol + 1e-9) */
static PyObject *k_hits(PyObject *self, PyObject *args) {
    Py_buffer lb, rb;
    int mode;
    double k, printed;
    if (!PyArg_ParseTuple(args, "y*y*idd", &lb, &rb, &mode, &k, &printed)) return NULL;
    PyObject *ret = NULL;
    Py_ssize_t n = lb.len / 8, hits = 0;
    if (check(&rb, 8, n, "R") < 0) goto done;
    {
        const double *L = lb.buf, *R = rb.buf;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++)
            if (k_line(L[i], R[i]) &&
                fabs(k_reading(L[i], R[i], mode) - k) <= k_tol(L[i], R[i], mode, printed) + 1e-9)
                hits++;
        Py_END_ALLOW_THREADS
    }
    ret = PyLong_FromSsize_t(hits);
done:
    PyBuffer_Release(&lb); PyBuffer_Release(&rb);
    return ret;
}

/* rank_sums(series (int8), of_series (int64, a rank per series code), why (int8), skip (the
   why codes left out, bytes), y, a, b, rs or None, interval, tok, ms) -> the windows counted:
   ranks.aggregate's sums in one pass, without its arrays of every window.  A window counts
   where its why is not in skip, y is finite and > 0 and iters = w / b (b > 0, else 0) is > 0,
   w = rs or b × interval; it adds (a where finite, else 1) × w to tok[rank] and iters × y to
   ms[rank], in window order: np.bincount's sums of ranks._timed's arrays, to the bit. */
static PyObject *rank_sums(PyObject *self, PyObject *args) {
    Py_buffer sb, ob, wb, kb, yb, ab, bb, tb, mb, rsb;
    PyObject *rso;
    double interval;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*Odw*w*", &sb, &ob, &wb, &kb, &yb, &ab, &bb, &rso,
                          &interval, &tb, &mb))
        return NULL;
    PyObject *ret = NULL;
    int have_rs;
    if (opt_buffer(rso, &rsb, &have_rs) < 0) goto done;
    Py_ssize_t n = yb.len / 8, nr = ob.len / 8, nl = tb.len / 8;
    if (check(&sb, 1, n, "series") < 0 || check(&wb, 1, n, "why") < 0 ||
        check(&ab, 8, n, "a") < 0 || check(&bb, 8, n, "b") < 0 ||
        (have_rs && check(&rsb, 8, n, "rs") < 0) || check(&mb, 8, nl, "ms") < 0)
        goto done;
    {
        const int8_t *ser = sb.buf, *why = wb.buf;
        const int64_t *of = ob.buf;
        const char *skip = kb.buf;
        Py_ssize_t nskip = kb.len;
        const double *y = yb.buf, *a = ab.buf, *b = bb.buf, *rs = have_rs ? rsb.buf : NULL;
        double *tok = tb.buf, *ms = mb.buf;
        Py_ssize_t counted = 0;
        int bad = 0;
        for (Py_ssize_t q = 0; q < nr; q++)
            if (of[q] < 0 || of[q] >= nl) bad = 1;
        if (bad) {
            PyErr_SetString(PyExc_ValueError, "of_series: a rank outside tok");
            goto done;
        }
        memset(tok, 0, 8 * nl);
        memset(ms, 0, 8 * nl);
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++) {
            int left = 0;
            for (Py_ssize_t k = 0; k < nskip; k++)
                if (why[i] == skip[k]) left = 1;
            double yi = y[i];
            if (left || !isfinite(yi) || !(yi > 0)) continue;
            double bi = b[i], w = rs ? rs[i] : bi * interval;
            double iters = bi > 0 ? w / bi : 0.0;
            if (!(iters > 0)) continue;
            if (ser[i] < 0 || ser[i] >= nr) {
                bad = 1;
                break;
            }
            Py_ssize_t g = of[ser[i]];
            tok[g] += (isfinite(a[i]) ? a[i] : 1.0) * w;
            ms[g] += iters * yi;
            counted++;
        }
        Py_END_ALLOW_THREADS
        if (bad) {
            PyErr_SetString(PyExc_ValueError, "series: a code outside of_series");
            goto done;
        }
        ret = PyLong_FromSsize_t(counted);
    }
done:
    if (have_rs) PyBuffer_Release(&rsb);
    PyBuffer_Release(&sb); PyBuffer_Release(&ob); PyBuffer_Release(&wb); PyBuffer_Release(&kb);
    PyBuffer_Release(&yb); PyBuffer_Release(&ab); PyBuffer_Release(&bb); PyBuffer_Release(&tb);
    PyBuffer_Release(&mb);
    return ret;
}

static PyMethodDef methods[] = {
    {"moments", moments, METH_VARARGS, "Σ ω z zᵀ and Σ ω z y over the kept windows"},
    {"times", times, METH_VARARGS, "Z @ coef for every window"},
    {"within_quad", within_quad, METH_VARARGS, "within_cov's term for a quadratic cycle"},
    {"ranges", ranges, METH_VARARGS, "the ranges rate._choose reads of the used windows"},
    {"bucket_totals", bucket_totals, METH_VARARGS, "rate.by_bucket's sums per bucket"},
    {"bucket_terms", bucket_terms, METH_VARARGS, "each bucket's terms summed over its blocks"},
    {"kv_life_sums", kv_life_sums, METH_VARARGS, "kv_life.kv_lifetime's sums"},
    {"product_sums", product_sums, METH_VARARGS, "products' sums over blocks of windows"},
    {"rank_sums", rank_sums, METH_VARARGS, "ranks.aggregate's sums per rank, in one pass"},
    {"median", median, METH_VARARGS, "np.median of the picked values, by selection"},
    {"masked_sum", masked_sum, METH_VARARGS, "v[mask].sum() or (v*w)[mask].sum(), numpy's pairwise sum, no copy"},
    {"resid", resid, METH_VARARGS, "the fitted cycle and the residual of every window"},
    {"medians", medians, METH_VARARGS, "np.median of each group's values, in two passes"},
    {"int_range", int_range, METH_VARARGS, "whether every finite value is a small integer"},
    {"int_table", int_table, METH_VARARGS, "small integers counted into, or looked up in, a table"},
    {"within_clipped", within_clipped, METH_VARARGS, "the warm-up's clipped residuals"},
    {"five_means", five_means, METH_VARARGS, "the warm-up's means of 5 windows"},
    {"k_readings", k_readings, METH_VARARGS, "the lines' readings of K (draft_len)"},
    {"k_hits", k_hits, METH_VARARGS, "how many lines read K within their rounding"},
    {"point_sums", point_sums, METH_VARARGS, "the point estimate's sums over the used windows"},
    {"set_threads", set_threads, METH_VARARGS, "threads for a long pass (1 to 8); the number set"},
    {"term_sums", term_sums, METH_VARARGS, "the terms' sums over blocks of the windows that count"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_ratekern",
                                    "The rate model's passes over every window, in C.", -1,
                                    methods};

PyMODINIT_FUNC PyInit__ratekern(void) { return PyModule_Create(&module); }
