/* The scanner's accelerator: the common record layouts, parsed in C with the GIL released.
 *
 * scan.py's Python parser is the reference and reads every layout of every release.  This module
 * recognises, strictly, the layouts most logs print:
 *   - 'Decode batch' / 'Prefill batch' lines whose prefix is nothing or one SGLang bracket with a
 *     date, and whose body is 'key: value' segments with keys from the Python key tables
 *     (sglang.DECODE_KEYS / PREFILL_KEYS, handed over at construction: one table, two readers);
 *   - EAGLE3_PROF blocks printed with print() (no prefix) or with one rank's logger prefix, whose
 *     lines all match the documented shapes (a block that breaks an identity is kept and listed
 *     for the Python parser to word the warning);
 *   - lines that carry no record marker at all (skipped, as in Python).
 * Anything else — another marker, an odd value, a block it cannot close, a line cut short — makes
 * scan() stop at the start of that line (of the block's header for a block) and return, so that
 * the Python parser reads it and the result is the same, row for row (tests/test_fastscan.py).
 *
 * Rows go into growable per-column arrays (int64 with INT64_MIN for NA, int32 with INT32_MIN
 * for NA (start-up numbers, rank tags), double with NaN for NA, int8 with -1 for NA, int32
 * category codes with -1 for NA); take_into() hands them over as
 * Column objects, without a copy.
 */
#define _GNU_SOURCE
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#include <math.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define NA_I64 INT64_MIN
/* numbers.MAX_COUNT and MAX_MEASURE: a count of requests, ranks or steps, and a measured
 * rate, length or time, beyond these is a damaged line (the Python parser reports it) */
#define MAX_COUNT 1000000
#define MAX_MEASURE 1e12
#define NA_I32 INT32_MIN      /* int32 values ('l': start-up numbers, rank tags) */
#define isdig(c) ((c) >= '0' && (c) <= '9')

/* ------------------------------------------------------------------ growable columns */
typedef struct {
    char *data;
    Py_ssize_t len;   /* bytes used */
    Py_ssize_t cap;
    int active;       /* a value column holds data once a line printed its key */
    int skip;         /* a column the caller did not ask for: never stored */
} Col;

static int col_size(char t) { return t == 'q' || t == 'd' ? 8 : t == 'i' || t == 'l' ? 4 : 1; }

/* Column storage: on Linux its own anonymous mappings, grown with mremap (the bytes already
 * written are never copied, and pages count only once written) and advised as huge pages
 * (a fault per 2 MiB, not per 4 KiB); elsewhere malloc. */
#ifdef __linux__
#include <sys/mman.h>
#include <unistd.h>
#define PAGE_ROUND(n) (((n) + 4095) & ~(Py_ssize_t)4095)
static void advise(void *q, Py_ssize_t cap) {
#ifdef MADV_HUGEPAGE
    if (cap >= (4 << 20)) madvise(q, (size_t)cap, MADV_HUGEPAGE);
#else
    (void)q; (void)cap;
#endif
}
/* A column's first storage is one 64 KiB mapping (col_grow); a small log's scan makes some
 * fifty and a batch of small logs (io/batch.py) frees them once their rows are copied.  On a
 * virtual machine a mapping made, first touched and unmapped cost 14 us: 0.6 ms of a 70 KB
 * log's scan.  Freed mappings of that size are kept here (at most POOL_MAX, 8 MiB) and handed
 * out again.  Nothing reads a column's bytes before writing them (fill_na, the staged rows),
 * so a reused mapping's old bytes are never seen.  The scan runs without the GIL: a mutex. */
#include <pthread.h>
#define POOL_CAP ((Py_ssize_t)1 << 16)
#define POOL_MAX 128
static char *POOL[POOL_MAX];
static int POOL_N = 0;
static pthread_mutex_t POOL_LOCK = PTHREAD_MUTEX_INITIALIZER;

static char *map_new(Py_ssize_t cap) {
    if (cap == POOL_CAP) {
        char *r = NULL;
        pthread_mutex_lock(&POOL_LOCK);
        if (POOL_N > 0) r = POOL[--POOL_N];
        pthread_mutex_unlock(&POOL_LOCK);
        if (r) return r;
    }
    void *q = mmap(NULL, (size_t)cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (q == MAP_FAILED) return NULL;
    advise(q, cap);
    return q;
}
/* p (old bytes mapped, the first used of them in use) grown to cap bytes */
static char *buf_resize(char *p, Py_ssize_t old, Py_ssize_t cap, Py_ssize_t used) {
    if (!p) return map_new(cap);
    void *q = mremap(p, (size_t)old, (size_t)cap, MREMAP_MAYMOVE);
    if (q == MAP_FAILED) {
        /* mremap moves one mapping (EFAULT across two): should p ever span several, the bytes
         * in use are copied to a new one rather than the scan failing */
        char *n = map_new(cap);
        if (!n) return NULL;
        if (used > 0) memcpy(n, p, (size_t)used);
        munmap(p, (size_t)old);
        return n;
    }
    advise(q, cap);
    return q;
}
/* p: one mapping of cap bytes (several: munmap them directly) */
static void buf_free(char *p, Py_ssize_t cap) {
    if (!p) return;
    if (cap == POOL_CAP) {
        int kept = 0;
        pthread_mutex_lock(&POOL_LOCK);
        if (POOL_N < POOL_MAX) { POOL[POOL_N++] = p; kept = 1; }
        pthread_mutex_unlock(&POOL_LOCK);
        if (kept) return;
    }
    munmap(p, (size_t)cap);
}
#else
#define PAGE_ROUND(n) (n)
static char *buf_resize(char *p, Py_ssize_t old, Py_ssize_t cap, Py_ssize_t used) {
    (void)old;
    (void)used;
    return realloc(p, (size_t)cap);
}
static void buf_free(char *p, Py_ssize_t cap) { (void)cap; free(p); }
#endif

static int col_grow(Col *c, Py_ssize_t need) {
    if (c->len + need <= c->cap) return 0;
    Py_ssize_t cap = c->cap ? c->cap : 1 << 16;
    while (cap < c->len + need) cap *= 2;
    char *p = buf_resize(c->data, c->cap, cap, c->cap);   /* a row may be staged past len */
    if (!p) return -1;
    c->data = p;
    c->cap = cap;
    return 0;
}

/* n bytes equal: short keys, compared inline (a libc call per key costs more than the compare) */
static inline int same(const char *a, const char *b, int n) {
    for (; n >= 8; a += 8, b += 8, n -= 8) {
        uint64_t x, y;
        memcpy(&x, a, 8);
        memcpy(&y, b, 8);
        if (x != y) return 0;
    }
    for (; n > 0; n--)
        if (*a++ != *b++) return 0;
    return 1;
}

/* ------------------------------------------------------------------ Column: a buffer owner */
/* The scanner's column arrays leave C without a copy: take_into() hands each over as a Column,
 * a Python object that owns the mapped array and exposes it through the buffer protocol
 * (numpy.frombuffer views it in place).  extend() appends another Column's bytes, growing in
 * place (mremap, so the bytes already there are not copied); absorb() moves another Column's
 * pages onto the end of ours.
 *
 * After absorb() an array spans several mappings (ours, then the other's pages), and mremap
 * moves or grows one mapping at a time: EFAULT across two (issue 13: the second absorb of
 * a parallel scan with three workers or more failed with MemoryError).  So a Column keeps the
 * offsets where one of its mappings may begin (maps[0] = 0; a superset is harmless, since a
 * range inside one mapping can be moved too) and moves them one by one when it grows. */
#define COL_MAX_MAPS 64
typedef struct {
    PyObject_HEAD
    char *data;
    Py_ssize_t len, cap;
    Py_ssize_t exports;   /* buffer views alive: no resizing meanwhile */
    int nmaps;            /* mappings the array may span (Linux), offsets in maps */
    Py_ssize_t maps[COL_MAX_MAPS];
} ColumnObject;

static PyTypeObject ColumnType;
static char EMPTY[8];
/* absorb() moves pages from this many bytes on (a smaller column is copied); tests lower it
 * (absorb_threshold()) so that small logs take the path large ones take */
static Py_ssize_t ABSORB_MIN = 1 << 20;

static ColumnObject *column_new(void) {
    ColumnObject *c = PyObject_New(ColumnObject, &ColumnType);
    if (c) { c->data = NULL; c->len = c->cap = 0; c->exports = 0; c->nmaps = 1; c->maps[0] = 0; }
    return c;
}

static void column_clear(ColumnObject *c) {
#ifdef __linux__
    if (c->nmaps > 1) {              /* munmap: several mappings at once are fine */
        if (c->data) munmap(c->data, (size_t)c->cap);
    } else
#endif
        buf_free(c->data, c->cap);
    c->data = NULL;
    c->len = c->cap = 0;
    c->nmaps = 1;
    c->maps[0] = 0;
}

static void Column_dealloc(ColumnObject *self) {
    column_clear(self);
    PyObject_Free(self);
}

static int Column_getbuffer(ColumnObject *self, Py_buffer *view, int flags) {
    int rc = PyBuffer_FillInfo(view, (PyObject *)self, self->data ? self->data : EMPTY,
                               self->len, 0, flags);
    if (rc == 0) self->exports++;
    return rc;
}

static void Column_releasebuffer(ColumnObject *self, Py_buffer *view) {
    (void)view;
    self->exports--;
}

#ifdef __linux__
/* Move the mappings of c that lie in [0, upto) to dst (page aligned, mapped, writable, upto
 * bytes), mapping by mapping; one that cannot be moved is copied (its bytes below used) and
 * unmapped.  c's mappings in [0, upto) are gone afterwards. */
static void move_maps(ColumnObject *c, Py_ssize_t upto, Py_ssize_t used, char *dst) {
    for (int i = 0; i < c->nmaps && c->maps[i] < upto; i++) {
        Py_ssize_t a = c->maps[i], b = i + 1 < c->nmaps ? c->maps[i + 1] : c->cap;
        if (b > upto) b = upto;
        if (b <= a) continue;
        if (mremap(c->data + a, (size_t)(b - a), (size_t)(b - a), MREMAP_MAYMOVE | MREMAP_FIXED,
                   dst + a) == MAP_FAILED) {
            Py_ssize_t n = (used < b ? used : b) - a;
            if (n > 0) memcpy(dst + a, c->data + a, (size_t)n);
            munmap(c->data + a, (size_t)(b - a));
        }
    }
}
#endif

/* c's storage grown to cap bytes (a page multiple), its bytes kept; -1: no memory */
static int column_resize(ColumnObject *c, Py_ssize_t cap) {
#ifdef __linux__
    if (c->data && c->nmaps > 1) {
        char *q = map_new(cap);
        if (!q) return -1;
        if (c->nmaps < COL_MAX_MAPS) {      /* the pages move: no byte is copied */
            move_maps(c, c->cap, c->len, q);
            c->maps[c->nmaps++] = c->cap;   /* the rest of q, a mapping of its own */
        } else {                            /* too many pieces: one copy makes it one again */
            memcpy(q, c->data, (size_t)c->len);
            munmap(c->data, (size_t)c->cap);
            c->nmaps = 1;
        }
        c->data = q;
        c->cap = cap;
        advise(q, cap);
        return 0;
    }
#endif
    char *p = buf_resize(c->data, c->cap, cap, c->len);
    if (!p) return -1;
    c->data = p;
    c->cap = cap;
    return 0;
}

static int column_reserve(ColumnObject *self, Py_ssize_t need) {
    if (self->exports) {
        PyErr_SetString(PyExc_BufferError, "Column: a view of it is alive; cannot grow");
        return -1;
    }
    if (self->len + need <= self->cap) return 0;
    Py_ssize_t cap = self->cap + self->cap / 2;
    if (cap < self->len + need) cap = self->len + need;
    cap = PAGE_ROUND(cap);
    if (column_resize(self, cap)) { PyErr_NoMemory(); return -1; }
    return 0;
}

static int column_append(ColumnObject *self, const char *src, Py_ssize_t n) {
    if (n <= 0) return 0;
    if (column_reserve(self, n)) return -1;
    memcpy(self->data + self->len, src, (size_t)n);
    self->len += n;
    return 0;
}

static void fill_na(char *p, char type, Py_ssize_t n);

/* extend(other): append other's bytes */
static PyObject *Column_extend(ColumnObject *self, PyObject *args) {
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "y*", &view)) return NULL;
    int rc = column_append(self, view.buf, view.len);
    PyBuffer_Release(&view);
    if (rc) return NULL;
    Py_RETURN_NONE;
}

#ifdef __linux__
/* absorb's page move; 0 done, -1 not done (other then holds its bytes from *skip on) */
static int absorb_pages(ColumnObject *self, ColumnObject *other, Py_ssize_t *skip) {
    Py_ssize_t page = (Py_ssize_t)sysconf(_SC_PAGESIZE);
    Py_ssize_t l1 = self->len, l2 = other->len;
    if (!self->data || !other->data || l2 < ABSORB_MIN || page <= 0 || 4096 % page != 0 ||
        self->nmaps + other->nmaps + 3 > COL_MAX_MAPS)
        return -1;
    Py_ssize_t o = l1 % page, base = l1 - o;
    Py_ssize_t moved = PAGE_ROUND(l2 + o), need = base + moved;
    if (moved > other->cap && column_resize(other, moved)) return -1;
    /* other's bytes shifted by o, our last partial page in front of them: other's pages
     * then follow our whole pages */
    memmove(other->data + o, other->data, (size_t)l2);
    memcpy(other->data, self->data + base, (size_t)o);
    *skip = o;
    if (need > self->cap && column_resize(self, need)) return -1;
    /* the offsets where our mappings begin afterwards: ours below base, other's from base,
     * ours again from need (when our storage went on past it) */
    Py_ssize_t maps[COL_MAX_MAPS];
    int k = 0;
    for (int i = 0; i < self->nmaps; i++)
        if (self->maps[i] < base) maps[k++] = self->maps[i];
    maps[k++] = base;
    for (int i = 1; i < other->nmaps; i++)
        if (other->maps[i] < moved) maps[k++] = base + other->maps[i];
    if (need < self->cap) {
        maps[k++] = need;
        for (int i = 0; i < self->nmaps; i++)
            if (self->maps[i] > need) maps[k++] = self->maps[i];
    }
    move_maps(other, moved, l2 + o, self->data + base);   /* over our pages from base */
    if (other->cap > moved) munmap(other->data + moved, (size_t)(other->cap - moved));
    other->data = NULL;
    other->len = other->cap = 0;
    other->nmaps = 1;
    other->maps[0] = 0;
    memcpy(self->maps, maps, (size_t)k * sizeof maps[0]);
    self->nmaps = k;
    self->len = l1 + l2;
    return 0;
}
#endif

/* absorb(other): append another Column's bytes and leave it empty.  On Linux its pages are
 * moved, not copied: its bytes are first shifted in place by our length modulo the page size
 * (and our last partial page copied in front of them), then mremap puts its pages right after
 * our whole pages.  A copy costs fresh pages, and on a virtual machine fresh pages are the
 * dearest thing a scan touches; a move costs a memmove within pages already there. */
static PyObject *Column_absorb(ColumnObject *self, PyObject *args) {
    ColumnObject *other;
    if (!PyArg_ParseTuple(args, "O!", &ColumnType, &other)) return NULL;
    if (self->exports || other->exports) {
        PyErr_SetString(PyExc_BufferError, "Column.absorb: a view of a column is alive");
        return NULL;
    }
    if (other == self) {
        PyErr_SetString(PyExc_ValueError, "Column.absorb: a column cannot absorb itself");
        return NULL;
    }
    if (!self->len) {                    /* nothing of ours: its storage becomes ours */
        column_clear(self);
        self->data = other->data;
        self->len = other->len;
        self->cap = other->cap;
        self->nmaps = other->nmaps;
        memcpy(self->maps, other->maps, (size_t)other->nmaps * sizeof other->maps[0]);
        other->data = NULL;
        column_clear(other);
        Py_RETURN_NONE;
    }
    Py_ssize_t skip = 0;                 /* other's bytes start at skip */
#ifdef __linux__
    if (absorb_pages(self, other, &skip) == 0) Py_RETURN_NONE;
#endif
    if (column_append(self, other->data + skip, other->len)) return NULL;   /* one copy */
    column_clear(other);
    Py_RETURN_NONE;
}

/* absorb_threshold([n]) -> the size from which absorb() moves pages (bytes); n >= 1 sets it */
static PyObject *absorb_threshold(PyObject *mod, PyObject *args) {
    (void)mod;
    Py_ssize_t n = 0, was = ABSORB_MIN;
    if (!PyArg_ParseTuple(args, "|n", &n)) return NULL;
    if (n < 0) {
        PyErr_SetString(PyExc_ValueError, "absorb_threshold(n): n >= 1");
        return NULL;
    }
    if (n) ABSORB_MIN = n;
    return PyLong_FromSsize_t(was);
}

/* mappings() -> the offsets where the mappings the array may span begin ((0,) unless absorb()
 * moved pages in) */
static PyObject *Column_mappings(ColumnObject *self, PyObject *noargs) {
    (void)noargs;
    PyObject *t = PyTuple_New(self->nmaps);
    for (int i = 0; t && i < self->nmaps; i++) {
        PyObject *x = PyLong_FromSsize_t(self->maps[i]);
        if (!x) { Py_CLEAR(t); break; }
        PyTuple_SET_ITEM(t, i, x);
    }
    return t;
}

/* Column.na(type, n): n missing values of element type 'q' | 'd' | 'i' | 'b' */
static PyObject *Column_na(PyObject *cls, PyObject *args) {
    (void)cls;
    const char *type;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "sn", &type, &n)) return NULL;
    if (n < 0 || !strchr("qdilb", type[0]) || !type[0]) {
        PyErr_SetString(PyExc_ValueError, "Column.na(type, n): type q, d, i, l or b; n >= 0");
        return NULL;
    }
    ColumnObject *c = column_new();
    if (!c) return NULL;
    if (column_reserve(c, n * col_size(type[0]))) { Py_DECREF(c); return NULL; }
    fill_na(c->data, type[0], n);
    c->len = n * col_size(type[0]);
    return (PyObject *)c;
}

static Py_ssize_t Column_length(ColumnObject *self) { return self->len; }

static PyBufferProcs Column_as_buffer = {(getbufferproc)Column_getbuffer,
                                         (releasebufferproc)Column_releasebuffer};
static PySequenceMethods Column_as_sequence = {.sq_length = (lenfunc)Column_length};
static PyMethodDef Column_methods[] = {
    {"extend", (PyCFunction)Column_extend, METH_VARARGS, "extend(buffer): append its bytes"},
    {"absorb", (PyCFunction)Column_absorb, METH_VARARGS,
     "absorb(column): append its bytes, moving its pages where it can; it is left empty"},
    {"mappings", (PyCFunction)Column_mappings, METH_NOARGS,
     "mappings() -> offsets where the mappings the array may span begin ((0,) unless absorb "
     "moved pages in)"},
    {"na", (PyCFunction)Column_na, METH_VARARGS | METH_CLASS,
     "Column.na(type, n): n missing values of element type q, d, i or b"},
    {NULL}};

static PyTypeObject ColumnType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "eaglelog.parsers._fastscan.Column",
    .tp_basicsize = sizeof(ColumnObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)Column_dealloc,
    .tp_as_buffer = &Column_as_buffer,
    .tp_as_sequence = &Column_as_sequence,
    .tp_methods = Column_methods,
    .tp_doc = "one column's array (bytes), owned here and viewed in place by numpy",
};

/* ------------------------------------------------------------------ interned labels */
#define MAX_LABELS 256
#define MAX_LABEL_LEN 96
typedef struct {
    int n;
    int len[MAX_LABELS];
    char text[MAX_LABELS][MAX_LABEL_LEN];
} Labels;

/* code of a label, adding it when new; -2 when the table is full or the label too long */
static int intern(Labels *L, const char *s, int n) {
    for (int i = 0; i < L->n; i++)
        if (L->len[i] == n && same(L->text[i], s, n)) return i;   /* (inline: a call per line cost more) */
    if (L->n >= MAX_LABELS || n >= MAX_LABEL_LEN) return -2;
    memcpy(L->text[L->n], s, (size_t)n);
    L->len[L->n] = n;
    return L->n++;
}

/* ------------------------------------------------------------------ tables */
/* fixed leading columns of the decode and prefill tables */
enum { LC_LINE, LC_STARTUP, LC_TS, LC_RANKS, LC_DP, LC_PP, LC_ATTN_CP, LC_MOE_DP, LC_TP, LC_EP,
       LC_ITER, LC_HEADER, LC_GRAPH_BACKEND, LC_GRAPH, LC_TRAILING, LC_WRAP, LC_FIXED };
static const char *LINE_FIXED_NAMES[LC_FIXED] = {
    "line_no", "startup", "timestamp", "ranks", "dp", "pp", "attn_cp", "moe_dp", "tp", "ep",
    "iter", "header", "graph_backend", "graph", "trailing_comma", "wrapper_time"};
static const char LINE_FIXED_TYPES[LC_FIXED] = "qlqillllllqbbbbq";
#define N_TAGS 6
static const char *TAG_NAMES[N_TAGS] = {"DP", "PP", "ATTN_CP", "MOE_DP", "TP", "EP"};
static const int TAG_LEN[N_TAGS] = {2, 2, 7, 6, 2, 2};

enum { PC_LINE, PC_STARTUP, PC_TS, PC_RANKS, PC_DP, PC_PP, PC_ATTN_CP, PC_MOE_DP, PC_TP, PC_EP,
       PC_MODE, PC_CYCLES, PC_TOKENS, PC_TOTAL, PC_ACCEPT, PC_EFF, PC_NPHASES, PC_PHASE_SUM,
       PC_END_LINE, PC_N };
static const char *PROF_NAMES[PC_N] = {
    "line_no", "startup", "timestamp", "ranks", "dp", "pp", "attn_cp", "moe_dp", "tp", "ep",
    "mode", "cycles", "tokens", "total_ms", "accept_len", "eff_tok_s", "n_phases",
    "phase_sum_ms", "end_line"};
static const char PROF_TYPES[PC_N] = "qlqilllllliqqdddqdq";

enum { HC_LINE, HC_STARTUP, HC_BLOCK, HC_PHASE, HC_MS, HC_PCT, HC_N };
static const char *PHASE_NAMES[HC_N] = {"line_no", "startup", "block", "phase", "ms_per_cycle",
                                        "pct"};
static const char PHASE_TYPES[HC_N] = "qlqidd";

#define MAX_KEYS 64
#define MAX_COLS (LC_FIXED + MAX_KEYS)
#define MAX_SEGS 48
enum { K_INT = 0, K_FLOAT = 1, K_PCT = 2, K_GRAPH = 3, K_NONE = 4, K_INT32 = 5 };

typedef struct {
    int nkeys;
    const char *key[MAX_KEYS];  /* owned copies */
    int klen[MAX_KEYS];
    int kind[MAX_KEYS];
    int plain[MAX_KEYS];        /* neither ':' in it nor a space first (parse_segments' guess) */
    int col[MAX_KEYS];          /* column index (>= LC_FIXED) */
    int ncols;                  /* LC_FIXED + value columns */
    PyObject *colnames;         /* tuple of every column name, fixed ones first */
    char coltype[MAX_COLS];
    Col cols[MAX_COLS];
    Py_ssize_t rows;
    Py_ssize_t room;            /* rows every active column has storage for (0: to be seen) */
    int nact;                   /* the active columns, in order: index, bytes, NA bit pattern */
    int act[MAX_COLS];
    int actsz[MAX_COLS];
    uint64_t actna[MAX_COLS];
    int guess[MAX_SEGS];        /* key index seen at segment i on the previous line */
    int queue_col;              /* column of '#queue-req' (a record needs it) */
} LineTable;

typedef struct {
    PyObject_HEAD
    LineTable decode, prefill;
    Col prof[PC_N];
    Py_ssize_t prof_rows;
    Col phase[HC_N];
    Py_ssize_t phase_rows;
    Labels ranks, phases, modes;
    char last_date[11];         /* '[YYYY-MM-DD' of the last bracket read, and its day number */
    int64_t last_days;
    int date_ok;
    /* the watch (set_watch): literals of the families this scan does not read, looked for in
     * the lines that hold no record and no marker (the walk has_marker makes anyway) */
    PyObject *watch;            /* tuple of bytes (owned: the pointers below are into it) */
    int wk;
    const char *wptr[64];
    int wlen[64];
    uint64_t wfirst[256];       /* bit i: literal i starts with this byte */
    struct LineSearch *wsearch; /* the markers and the watched literals in one walk (NULL:
                                 * none watched, or a literal too short for it) */
} FastScanner;


/* ------------------------------------------------------------------ numbers */
static const double POW10[23] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                                 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21,
                                 1e22};

/* Python's float() of the text [s, e), which matched [-+]?(\d+(\.\d*)?|\.\d+): exact (Clinger's
 * fast path, else strtod, both correctly rounded) */
static double to_double(const char *s, const char *e) {
    int neg = 0;
    const char *p = s;
    if (*p == '-' || *p == '+') { neg = *p == '-'; p++; }
    uint64_t m = 0;
    int digits = 0, frac = 0, seen_dot = 0;
    for (; p < e; p++) {
        if (*p == '.') { seen_dot = 1; continue; }
        if (digits == 0 && *p == '0') { if (seen_dot) frac++; continue; }
        if (digits >= 15) goto slow;
        m = m * 10 + (uint64_t)(*p - '0');
        digits++;
        if (seen_dot) frac++;
    }
    if (frac <= 22) {
        double v = (double)m / POW10[frac];
        return neg ? -v : v;
    }
slow:;
    char tmp[64];
    size_t n = (size_t)(e - s);
    if (n >= sizeof tmp) return NAN;
    memcpy(tmp, s, n);
    tmp[n] = 0;
    return strtod(tmp, NULL);
}

/* 0.5 * 10**-d, computed once with the same pow() as before (bit for bit) */
static double HALF_UNIT[41];

/* a number per eagle3_prof.py's _NUM (at most 30 digits before and 30 after the point), at
 * p, of at most 40 characters; returns its end or NULL; *hu = half a unit in its last printed
 * place (eagle3_prof.half_ulp) */
static const char *scan_num(const char *p, const char *e, double *v, double *hu) {
    const char *s = p;
    if (p < e && (*p == '-' || *p == '+')) p++;
    const char *d0 = p;
    while (p < e && *p >= '0' && *p <= '9') p++;
    int intd = (int)(p - d0);
    if (intd > 30) return NULL;
    const char *dot = NULL;
    if (p < e && *p == '.') {
        dot = p++;
        const char *f0 = p;
        while (p < e && *p >= '0' && *p <= '9') p++;
        if ((intd == 0 && p == f0) || p - f0 > 30) return NULL;
    } else if (intd == 0) {
        return NULL;
    }
    if (p - s > 40) return NULL;
    *v = to_double(s, p);
    if (hu) {
        Py_ssize_t d = dot ? p - dot - 1 : 0;
        *hu = !dot ? 0.5 : d < 41 ? HALF_UNIT[d] : 0.5 * pow(10.0, -(double)d);
    }
    return p;
}

/* a key/value integer: -?\d{1,18} */
static const char *scan_int(const char *p, const char *e, int64_t *v) {
    int neg = 0;
    if (p < e && *p == '-') { neg = 1; p++; }
    const char *d0 = p;
    int64_t x = 0;
    while (p < e && *p >= '0' && *p <= '9') {
        if (p - d0 >= 18) return NULL;
        x = x * 10 + (*p - '0');
        p++;
    }
    if (p == d0) return NULL;
    *v = neg ? -x : x;
    return p;
}

/* a count: \d{1,18}, no sign (eagle3_prof.HEADER_RX, sglang.DECODE_HEAD_RX: '-0' is not one) */
static const char *scan_count(const char *p, const char *e, int64_t *v) {
    if (p >= e || !isdig(*p)) return NULL;
    return scan_int(p, e, v);
}

/* a key/value float: -?\d+(\.\d+)?, its value read as it is matched: to_double's fast path
 * (the same significant digits, the same division), and to_double itself where that path does
 * not apply (more than 15 significant digits, more than 22 after the point) */
static const char *scan_dec(const char *p, const char *e, double *v) {
    const char *s = p;
    int neg = 0;
    if (p < e && *p == '-') { neg = 1; p++; }
    const char *d0 = p;
    uint64_t m = 0;
    int digits = 0, frac = 0, slow = 0;
    for (; p < e && isdig(*p); p++) {
        if (digits == 0 && *p == '0') continue;
        if (digits >= 15) { slow = 1; continue; }
        m = m * 10 + (uint64_t)(*p - '0');
        digits++;
    }
    if (p == d0) return NULL;
    if (p < e && *p == '.') {
        const char *f0 = ++p;
        for (; p < e && isdig(*p); p++) {
            if (digits == 0 && *p == '0') { frac++; continue; }
            if (digits >= 15) { slow = 1; continue; }
            m = m * 10 + (uint64_t)(*p - '0');
            digits++;
            frac++;
        }
        if (p == f0) return NULL;
    }
    if (p - s > 40) return NULL;
    if (slow || frac > 22) {
        *v = to_double(s, p);
    } else {
        double x = (double)m / POW10[frac];
        *v = neg ? -x : x;
    }
    return p;
}

/* ------------------------------------------------------------------ the SGLang bracket */
typedef struct {
    int64_t ts;        /* microseconds since 1970-01-01, NA_I64 when there is no bracket */
    int64_t wts;       /* a docker / Kubernetes stamp in front of it, in µs of its own clock
                        * (NA_I64: none, or whole seconds: prefix.read_prefix keeps no more) */
    int ranks;         /* label code, -1 none */
    int64_t tag[N_TAGS];
    const char *tags;  /* tags text as printed ("DP1 TP0"), for rank keys */
    int tags_len;
    int bracket;
} Prefix;

static int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
    y -= m <= 2;
    const int64_t era = (y >= 0 ? y : y - 399) / 400;
    const unsigned yoe = (unsigned)(y - era * 400);
    const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

/* prefix.valid_datetime's date: a calendar date in what datetime64[ns] holds (1678-2261) */
static int valid_date(int y, int mo, int d) {
    static const int mdays[13] = {0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo] || y < 1678 || y > 2261) return 0;
    return !(mo == 2 && d == 29 && !((y % 4 == 0 && y % 100 != 0) || y % 400 == 0));
}

static int dig(const char *p, int n, int *out) {
    int x = 0;
    for (int i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') return 0;
        x = x * 10 + (p[i] - '0');
    }
    *out = x;
    return 1;
}

/* '[YYYY-MM-DD HH:MM:SS[.,mmm]( TAGn)*]' at p, optionally followed by one space; returns the
 * body start or NULL.  Time-only brackets, unknown or repeated tags, impossible dates: NULL. */
static const char *read_bracket(FastScanner *self, const char *p, const char *e, Prefix *pf) {
    if (e - p < 21 || p[0] != '[') return NULL;
    int h, mi, s, ms = 0;
    int64_t days;
    if (self->date_ok && same(p, self->last_date, 11)) {   /* '[YYYY-MM-DD' as on the last line */
        days = self->last_days;
    } else {
        int y, mo, d;
        if (!dig(p + 1, 4, &y) || p[5] != '-' || !dig(p + 6, 2, &mo) || p[8] != '-' ||
            !dig(p + 9, 2, &d))
            return NULL;
        /* the Python parser reports any other date and keeps the record without a timestamp */
        if (!valid_date(y, mo, d)) return NULL;
        days = days_from_civil(y, (unsigned)mo, (unsigned)d);
        memcpy(self->last_date, p, 11);
        self->last_days = days;
        self->date_ok = 1;
    }
    if (p[11] != ' ' || !dig(p + 12, 2, &h) || p[14] != ':' || !dig(p + 15, 2, &mi) ||
        p[17] != ':' || !dig(p + 18, 2, &s) || h > 23 || mi > 59 || s > 59)
        return NULL;
    const char *q = p + 20;
    if (q < e && (*q == '.' || *q == ',')) {
        if (e - q < 4 || !dig(q + 1, 3, &ms)) return NULL;
        q += 4;
    }
    for (int i = 0; i < N_TAGS; i++) pf->tag[i] = NA_I64;
    const char *t0 = q;
    while (q < e && *q == ' ') {
        const char *n0 = ++q;
        while (q < e && ((*q >= 'A' && *q <= 'Z') || *q == '_')) q++;
        int nlen = (int)(q - n0);
        if (nlen == 0 || *n0 == '_') return NULL;
        const char *v0 = q;
        int64_t v = 0;
        while (q < e && *q >= '0' && *q <= '9') {
            if (q - v0 >= 9) return NULL;
            v = v * 10 + (*q - '0');
            q++;
        }
        if (q == v0) return NULL;
        int which = -1;
        for (int i = 0; i < N_TAGS; i++)
            if (TAG_LEN[i] == nlen && same(TAG_NAMES[i], n0, nlen))
                which = i;
        if (which < 0 || pf->tag[which] != NA_I64) return NULL;
        pf->tag[which] = v;
    }
    if (q >= e || *q != ']') return NULL;
    pf->tags = t0 + 1;
    pf->tags_len = (int)(q - t0) - 1;
    if (q == t0) {
        pf->tags_len = 0;
        pf->ranks = -1;
    } else {
        pf->ranks = intern(&self->ranks, pf->tags, pf->tags_len);
        if (pf->ranks < 0) return NULL;
    }
    pf->ts = (days * 86400 + h * 3600 + mi * 60 + s) *
             (int64_t)1000000 + (int64_t)ms * 1000;
    pf->bracket = 1;
    q++;
    if (q < e && *q == ' ') q++;
    return q;
}

/* 'YYYY-MM-DDTHH:MM:SS[.f…]Z ' (docker logs --timestamps; an offset '+HH:MM' for Z too) and a
 * CRI log file's 'stdout F ' or 'stderr F ' after it (sglang.md §1.3): returns what follows, and
 * the stamp in µs of its own clock (the offset ignored: only differences are used) when it has
 * a fraction of a second, as prefix._wrapper_time reads it (a fraction's first 6 digits);
 * NULL when the line does not start so (a partial CRI line, 'P', among them). */
static const char *read_wrapper(const char *p, const char *e, int64_t *wts) {
    int y, mo, d, h, mi, s;
    *wts = NA_I64;
    if (e - p < 21 || !dig(p, 4, &y) || p[4] != '-' || !dig(p + 5, 2, &mo) || p[7] != '-' ||
        !dig(p + 8, 2, &d) || p[10] != 'T' || !dig(p + 11, 2, &h) || p[13] != ':' ||
        !dig(p + 14, 2, &mi) || p[16] != ':' || !dig(p + 17, 2, &s))
        return NULL;
    int valid = valid_date(y, mo, d) && h <= 23 && mi <= 59 && s <= 59;
    const char *q = p + 19;
    int64_t us = 0;
    int nf = 0;
    if (q < e && *q == '.') {
        q++;
        while (q < e && isdig(*q)) {
            if (nf < 6) us = us * 10 + (*q - '0');
            nf++;
            q++;
        }
        if (nf == 0 || nf > 9) return NULL;
        for (int i = nf; i < 6; i++) us *= 10;
    }
    if (q < e && *q == 'Z') {
        q++;
    } else if (q < e && (*q == '+' || *q == '-')) {
        int oh, om;
        if (e - q < 5 || !dig(q + 1, 2, &oh)) return NULL;
        q += 3;
        if (q < e && *q == ':') q++;
        if (e - q < 2 || !dig(q, 2, &om)) return NULL;
        q += 2;
    } else {
        return NULL;
    }
    if (q >= e || *q != ' ') return NULL;
    q++;
    if (e - q >= 9 && (memcmp(q, "stdout ", 7) == 0 || memcmp(q, "stderr ", 7) == 0)) {
        if (q[7] != 'F' || q[8] != ' ') return NULL;
        q += 9;
    }
    if (valid && nf)
        *wts = (days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 + h * 3600 + mi * 60 + s) *
               (int64_t)1000000 + us;
    return q;
}

static void no_prefix(Prefix *pf) {
    pf->ts = NA_I64;
    pf->wts = NA_I64;
    pf->ranks = -1;
    for (int i = 0; i < N_TAGS; i++) pf->tag[i] = NA_I64;
    pf->tags = NULL;
    pf->tags_len = 0;
    pf->bracket = 0;
}

/* ------------------------------------------------------------------ markers */
#define N_MARKERS 9
static const char *MARKERS[N_MARKERS] = {"EAGLE3_PROF", "Decode batch", "Prefil", "server_args=",
                                         "Finish: obj=", "\"request.finished\"",
                                         "new fill batch. ", "#running-req: ",
                                         "Adaptive spec params updated: "};
static int MARKER_LEN[N_MARKERS];
static unsigned short FIRST[256];  /* bit k: MARKERS[k] starts with this byte */

static int has_marker(const char *p, const char *e) {
    for (; p < e; p++) {
        unsigned short f = FIRST[(unsigned char)*p];
        if (!f) continue;
        for (int k = 0; k < N_MARKERS; k++)
            if ((f >> k & 1) && e - p >= MARKER_LEN[k] &&
                memcmp(p, MARKERS[k], (size_t)MARKER_LEN[k]) == 0)
                return 1;
    }
    return 0;
}

/* The markers (and the watched literals, set_watch) in a line by one Wu–Manber walk: a window
 * as long as the shortest literal, shifted by the table of its last byte pair (most pairs are
 * in no literal: the window moves by its length less one), the literals whose pair it is at
 * the window's end checked in full.  has_marker and watch_line step a byte at a time and, for
 * the watch's 52 literals (first bytes ' ', 'a', 'n', 's' …), call memcmp at most bytes of a
 * line: a fifth of the scan of a log whose lines are a fifth access-log lines. */
#define LS_MAX (N_MARKERS + 64)
typedef struct LineSearch {
    int m;                      /* the window: the shortest literal (2 or more) */
    int nlit;                   /* literals 0 .. N_MARKERS-1 are the markers */
    const char *lit[LS_MAX];
    int len[LS_MAX];
    uint8_t next[LS_MAX];       /* the next literal of the same end pair, + 1 (0: none) */
    uint8_t head[65536];        /* the first literal whose window ends in this pair, + 1 */
    uint8_t shift[65536];
} LineSearch;

static LineSearch MARKER_SEARCH;   /* the markers alone (set up when the module loads) */

/* the tables for lits[0 .. k) (each at least 2 bytes); 0 ok, -1 when one is shorter */
static int ls_build(LineSearch *w, const char *const *lits, const int *lens, int k) {
    int m = 256;
    for (int i = 0; i < k; i++) {
        if (lens[i] < 2) return -1;
        if (lens[i] < m) m = lens[i];
    }
    w->m = m;
    w->nlit = k;
    memset(w->shift, m - 1, sizeof w->shift);
    memset(w->head, 0, sizeof w->head);
    for (int i = k - 1; i >= 0; i--) {
        const unsigned char *t = (const unsigned char *)lits[i];
        w->lit[i] = lits[i];
        w->len[i] = lens[i];
        for (int j = 0; j + 1 < m; j++) {
            unsigned h = (unsigned)t[j] << 8 | t[j + 1];
            int d = m - 2 - j;
            if (d < w->shift[h]) w->shift[h] = (uint8_t)d;
        }
        unsigned h = (unsigned)t[m - 2] << 8 | t[m - 1];
        w->next[i] = w->head[h];
        w->head[h] = (uint8_t)(i + 1);
    }
    return 0;
}

/* What [p, e) holds: 2 a marker, 1 a watched literal and no marker, 0 neither. */
static int ls_find(const LineSearch *w, const char *p, const char *e) {
    const unsigned char *t = (const unsigned char *)p;
    Py_ssize_t n = e - p, m = w->m;
    int found = 0;
    for (Py_ssize_t pos = 0; pos + m <= n;) {
        unsigned h = (unsigned)t[pos + m - 2] << 8 | t[pos + m - 1];
        int s = w->shift[h];
        if (s) { pos += s; continue; }
        for (int i = w->head[h]; i; i = w->next[i - 1]) {
            int len = w->len[i - 1];
            if (n - pos >= len && same(p + pos, w->lit[i - 1], len)) {
                if (i - 1 < N_MARKERS) return 2;
                found = 1;
            }
        }
        pos++;
    }
    return found;
}

/* '[' followed by 'dd:' or 'dddd-': something prefix.BRACKET_RX may read as a bracket */
static int has_time_bracket(const char *p, const char *e) {
    for (; (p = memchr(p, '[', (size_t)(e - p))) != NULL; p++) {
        if (e - p >= 4 && isdig(p[1]) && isdig(p[2]) && p[3] == ':') return 1;
        if (e - p >= 6 && isdig(p[1]) && isdig(p[2]) && isdig(p[3]) && isdig(p[4]) && p[5] == '-')
            return 1;
    }
    return 0;
}

/* ------------------------------------------------------------------ decode / prefill lines */
static int key_lookup(LineTable *T, int seg, const char *k, int n) {
    int g = seg < MAX_SEGS ? T->guess[seg] : -1;
    if (g >= 0 && T->klen[g] == n && same(T->key[g], k, n)) return g;
    for (int i = 0; i < T->nkeys; i++)
        if (T->klen[i] == n && same(T->key[i], k, n)) {
            if (seg < MAX_SEGS) T->guess[seg] = i;
            return i;
        }
    return -1;
}

#define STAGE(T, c, type) (((type *)(T)->cols[c].data)[(T)->rows])
/* store a value of the row being staged, in a column that holds data */
#define SETV(T, c, type, v) do { if ((T)->cols[c].active) STAGE(T, c, type) = (v); } while (0)

static void fill_na(char *p, char type, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++)
        switch (type) {
        case 'q': ((int64_t *)p)[i] = NA_I64; break;
        case 'd': ((double *)p)[i] = NAN; break;
        case 'i': ((int32_t *)p)[i] = -1; break;
        case 'l': ((int32_t *)p)[i] = NA_I32; break;
        default: ((int8_t *)p)[i] = -1;
        }
}

/* Add column c to T's list of active columns (kept in column order). */
static void note_active(LineTable *T, int c) {
    int i = T->nact;
    while (i > 0 && T->act[i - 1] > c) {
        T->act[i] = T->act[i - 1];
        T->actsz[i] = T->actsz[i - 1];
        T->actna[i] = T->actna[i - 1];
        i--;
    }
    uint64_t na = 0;
    fill_na((char *)&na, T->coltype[c], 1);
    T->act[i] = c;
    T->actsz[i] = col_size(T->coltype[c]);
    T->actna[i] = na;
    T->nact++;
}

/* A value column gets storage when a line first prints its key: NA for the rows before and
 * for the row being staged (the columns of keys a log never prints cost nothing). */
static int activate(LineTable *T, int c) {
    Col *col = &T->cols[c];
    if (col->active || col->skip) return 0;
    int sz = col_size(T->coltype[c]);
    if (col_grow(col, (T->rows + 1) * sz)) return -1;
    fill_na(col->data, T->coltype[c], T->rows + 1);
    col->len = T->rows * sz;
    col->active = 1;
    if (col->cap / sz < T->room) T->room = col->cap / sz;
    note_active(T, c);
    return 0;
}

/* Parse the segments of a decode/prefill body into the row at T->rows (columns already grown
 * and pre-filled with NA).  Returns 1 when the row is complete, 0 to decline the line. */
static int parse_segments(LineTable *T, const char *p, const char *e) {
    while (e > p && e[-1] == ' ') e--;
    int trailing = 0;
    if (e > p && e[-1] == ',') { trailing = 1; e--; }
    int seg = 0, have_queue = 0;
    while (p < e) {
        const char *k = p, *colon;
        int ki = seg < MAX_SEGS ? T->guess[seg] : -1;
        /* the key the previous line had here, followed by ':': the first colon (the key has
         * none), and the key that key_lookup finds first; otherwise the colon is looked for */
        if (ki >= 0 && T->plain[ki] && e - k > T->klen[ki] + 1 && k[T->klen[ki]] == ':' &&
            same(T->key[ki], k, T->klen[ki])) {
            colon = k + T->klen[ki];
            if (colon[1] != ' ') return 0;
        } else {
            colon = p;                         /* keys are short: a loop, not memchr */
            while (colon < e && *colon != ':') colon++;
            if (colon >= e || colon + 1 >= e || colon[1] != ' ' || colon == k || *k == ' ')
                return 0;
            ki = key_lookup(T, seg, k, (int)(colon - k));
            if (ki < 0) return 0;
        }
        const char *v = colon + 2, *end = NULL;
        int c = T->col[ki];
        if (T->kind[ki] == K_NONE) return 0;               /* a key whose lines Python reads */
        if (T->kind[ki] != K_GRAPH && !T->cols[c].active && activate(T, c)) return 0;
        switch (T->kind[ki]) {
        case K_INT: {
            int64_t x;
            end = scan_int(v, e, &x);
            if (end) SETV(T, c, int64_t, x);
            if (c == T->queue_col) have_queue = 1;
            break;
        }
        case K_INT32: {                /* a count small by nature (batch size): 32 bits */
            int64_t x;
            end = scan_int(v, e, &x);
            if (end && (x > MAX_COUNT || x < 0)) return 0;   /* numbers.to_int32: Python says so */
            if (end) SETV(T, c, int32_t, (int32_t)x);
            if (c == T->queue_col) have_queue = 1;
            break;
        }
        case K_FLOAT:
        case K_PCT: {
            double x;
            end = scan_dec(v, e, &x);
            if (end && !(x >= 0.0 && x <= MAX_MEASURE)) return 0;   /* numbers.to_measure */
            if (end && T->kind[ki] == K_PCT && end < e && *end == '%') end++;
            if (end) SETV(T, c, double, x);
            break;
        }
        case K_GRAPH:
            if (activate(T, LC_GRAPH) || activate(T, LC_GRAPH_BACKEND)) return 0;
            if (e - v >= 4 && memcmp(v, "True", 4) == 0) { end = v + 4; SETV(T, LC_GRAPH, int8_t, 1); }
            else if (e - v >= 5 && memcmp(v, "False", 5) == 0) { end = v + 5; SETV(T, LC_GRAPH, int8_t, 0); }
            if (end) SETV(T, LC_GRAPH_BACKEND, int8_t, (int8_t)c);  /* c holds the label index */
            break;
        default:
            return 0;
        }
        if (!end) return 0;
        seg++;
        if (end == e) break;
        if (e - end < 3 || end[0] != ',' || end[1] != ' ' || end[2] == ' ') return 0;
        p = end + 2;
    }
    if (!have_queue) return 0;
    SETV(T, LC_TRAILING, int8_t, (int8_t)trailing);
    return 1;
}

/* Storage and NA for the row at T->rows in every active column.  The columns are grown only
 * when the row is past T->room (the fewest rows any of them has room for): a check per row,
 * not a call per column; the NA of each type stored inline. */
static int grow_row(LineTable *T) {
    if (T->rows >= T->room) {
        Py_ssize_t room = PY_SSIZE_T_MAX;
        for (int i = 0; i < T->nact; i++) {
            Col *col = &T->cols[T->act[i]];
            if (col_grow(col, T->actsz[i])) return -1;
            if (col->cap / T->actsz[i] < room) room = col->cap / T->actsz[i];
        }
        T->room = room;
    }
    for (int i = 0; i < T->nact; i++) {
        Col *col = &T->cols[T->act[i]];
        char *q = col->data + col->len;
        switch (T->actsz[i]) {
        case 8: memcpy(q, &T->actna[i], 8); break;
        case 4: { uint32_t v = (uint32_t)T->actna[i]; memcpy(q, &v, 4); break; }
        default: *q = (char)T->actna[i];
        }
    }
    return 0;
}

static void commit_row(LineTable *T) {
    for (int i = 0; i < T->nact; i++) T->cols[T->act[i]].len += T->actsz[i];
    T->rows++;
}

static int stage_prefix(LineTable *T, const Prefix *pf, int64_t line_no, int64_t startup) {
    SETV(T, LC_LINE, int64_t, line_no);
    SETV(T, LC_STARTUP, int32_t, (int32_t)startup);
    SETV(T, LC_TS, int64_t, pf->ts);
    SETV(T, LC_RANKS, int32_t, pf->ranks);
    if (pf->wts != NA_I64) {
        if (activate(T, LC_WRAP)) return -1;
        SETV(T, LC_WRAP, int64_t, pf->wts);
    }
    for (int i = 0; i < N_TAGS; i++)
        if (pf->tag[i] != NA_I64) {
            if (activate(T, LC_DP + i)) return -1;
            SETV(T, LC_DP + i, int32_t, (int32_t)pf->tag[i]);   /* at most 9 digits */
        }
    return 0;
}

/* a 'Decode batch…' (decode=1) or 'Prefill batch…' body at p; 1 = row added, 0 = declined,
 * -1 = out of memory */
static int batch_line(FastScanner *self, int decode, const char *p, const char *e,
                      const Prefix *pf, int64_t line_no, int64_t startup) {
    LineTable *T = decode ? &self->decode : &self->prefill;
    if (decode) {
        if (e - p < 14 || memcmp(p, "Decode batch", 12) != 0) return 0;
        p += 12;
    } else {
        if (e - p < 14 || memcmp(p, "Prefil", 6) != 0) return 0;
        p += 6;
        if (*p == 'l') p++;
        if (e - p < 8 || memcmp(p, " batch", 6) != 0) return 0;
        p += 6;
    }
    int64_t iter = NA_I64;
    if (p < e && *p == ' ' && p + 1 < e && p[1] == '[') {
        p = scan_count(p + 2, e, &iter);
        if (!p || p >= e || *p != ']') return 0;
        p++;
    }
    if (e - p < 2 || (*p != '.' && *p != ',') || p[1] != ' ') return 0;
    char punct = *p;
    p += 2;
    if (grow_row(T)) return -1;
    if (!parse_segments(T, p, e)) return 0;
    if (stage_prefix(T, pf, line_no, startup)) return -1;
    if (iter != NA_I64) {
        if (activate(T, LC_ITER)) return -1;
        SETV(T, LC_ITER, int64_t, iter);
    }
    SETV(T, LC_HEADER, int8_t, iter != NA_I64 ? 2 : punct == '.' ? 0 : 1);
    commit_row(T);
    return 1;
}

/* ------------------------------------------------------------------ EAGLE3_PROF blocks */
typedef struct {
    int64_t line_no;
    int label;
    double ms, pct, ms_hu, pct_hu;
} PhaseLine;
#define MAX_PHASES 32

typedef struct {
    int64_t cycles, tokens;
    int mode;
    int nph;
    PhaseLine ph[MAX_PHASES];
    int has_total, has_accept, has_eff;
    double total, total_hu, accept, accept_hu, eff, eff_hu;
} Block;

/* 'EAGLE3_PROF (N cycles, M tok[, mode])' and the end of the line; 1 ok, 0 decline */
static int block_header(FastScanner *self, const char *p, const char *e, Block *b) {
    if (e - p < 13 || memcmp(p, "EAGLE3_PROF (", 13) != 0) return 0;
    p += 13;
    p = scan_count(p, e, &b->cycles);
    if (!p || e - p < 8 || memcmp(p, " cycles,", 8) != 0) return 0;
    p += 8;
    if (p >= e || *p != ' ') return 0;
    p++;
    p = scan_count(p, e, &b->tokens);
    if (!p || e - p < 4 || memcmp(p, " tok", 4) != 0) return 0;
    p += 4;
    if (e - p >= 3 && memcmp(p, "ens", 3) == 0) p += 3;
    b->mode = -1;
    if (p < e && *p == ',') {
        p++;
        while (p < e && *p == ' ') p++;
        const char *m0 = p;
        while (p < e && *p != ')') {
            if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e) return 0;
            p++;
        }
        const char *m1 = p;
        while (m1 > m0 && m1[-1] == ' ') m1--;
        if (m1 > m0) {
            b->mode = intern(&self->modes, m0, (int)(m1 - m0));
            if (b->mode < 0) return 0;
        }
    }
    if (p >= e || *p != ')') return 0;
    p++;
    return p == e;
}

/* one indented block line (body at p, already known to start with a space or tab) */
static int block_line(FastScanner *self, const char *p, const char *e, Block *b,
                      int64_t line_no) {
    while (p < e && (*p == ' ' || *p == '\t')) p++;
    const char *l0 = p;
    if (p >= e || *p == ':') return 0;
    while (p < e && *p != ':') {
        if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e) return 0;
        p++;
    }
    if (p >= e) return 0;
    const char *l1 = p;
    while (l1 > l0 && l1[-1] == ' ') l1--;
    int llen = (int)(l1 - l0);
    p++;
    while (p < e && (*p == ' ' || *p == '\t')) p++;
    double v, hu;
    p = scan_num(p, e, &v, &hu);
    if (!p) return 0;
    const char *after = p;
    while (p < e && (*p == ' ' || *p == '\t')) p++;
    if (e - p >= 6 && memcmp(p, "ms/cyc", 6) == 0) {
        p += 6;
        if (e - p >= 2 && memcmp(p, "le", 2) == 0) p += 2;
        const char *q = p;
        while (q < e && (*q == ' ' || *q == '\t')) q++;
        double pct = NAN, pct_hu = 0;
        if (q < e && *q == '(') {
            q++;
            while (q < e && (*q == ' ' || *q == '\t')) q++;
            q = scan_num(q, e, &pct, &pct_hu);
            if (!q) return 0;
            while (q < e && (*q == ' ' || *q == '\t')) q++;
            if (q >= e || *q != '%') return 0;
            q++;
            while (q < e && (*q == ' ' || *q == '\t')) q++;
            if (q >= e || *q != ')') return 0;
            q++;
        } else {
            q = p;
        }
        while (q < e && (*q == ' ' || *q == '\t')) q++;
        if (q != e) return 0;
        if (llen == 5 && memcmp(l0, "TOTAL", 5) == 0) {
            b->has_total = 1;
            b->total = v;
            b->total_hu = hu;
            return 1;
        }
        if (b->nph >= MAX_PHASES) return 0;
        PhaseLine *ph = &b->ph[b->nph];
        ph->label = intern(&self->phases, l0, llen);
        if (ph->label < 0) return 0;
        ph->line_no = line_no;
        ph->ms = v;
        ph->ms_hu = hu;
        ph->pct = pct;
        ph->pct_hu = pct_hu;
        b->nph++;
        return 1;
    }
    p = after;
    while (p < e && (*p == ' ' || *p == '\t')) p++;
    if (p != e) return 0;
    if (llen == 10 && memcmp(l0, "Accept len", 10) == 0) {
        b->has_accept = 1;
        b->accept = v;
        b->accept_hu = hu;
        return 1;
    }
    if (llen == 9 && memcmp(l0, "Eff tok/s", 9) == 0) {
        b->has_eff = 1;
        b->eff = v;
        b->eff_hu = hu;
        return 1;
    }
    return 0;
}

/* how many problems eagle3_prof.Block.identity_problems() lists: same arithmetic, same order */
static int identity_problems(const Block *b) {
    int n = 0;
    double total = b->total, h_t = b->total_hu;
    if (b->nph) {
        double s = 0, hsum = 0;
        for (int i = 0; i < b->nph; i++) s += b->ph[i].ms;
        for (int i = 0; i < b->nph; i++) hsum += b->ph[i].ms_hu;
        double tol = h_t + hsum + 1e-9;
        if (fabs(s - total) > tol) n++;
        if (total > 0)
            for (int i = 0; i < b->nph; i++) {
                const PhaseLine *ph = &b->ph[i];
                if (isnan(ph->pct)) continue;
                double want = 100.0 * ph->ms / total;
                double t2 = ph->pct_hu + 100.0 * (ph->ms_hu / total + ph->ms * h_t / (total * total)) + 1e-9;
                if (fabs(ph->pct - want) > t2) n++;
            }
    }
    if (b->cycles > 0) {
        double want = (double)b->tokens / (double)b->cycles;
        if (fabs(b->accept - want) > b->accept_hu + 1e-9) n++;
    }
    if (total > 0) {
        double want = 1000.0 * b->accept / total;
        double tol = b->eff_hu + 1000.0 * (b->accept_hu / total + b->accept * h_t / (total * total)) + 1e-9;
        if (fabs(b->eff - want) > tol) n++;
    }
    return n;
}

static int emit_block(FastScanner *self, const Block *b, const Prefix *pf, int64_t line_no,
                      int64_t end_line, int64_t startup) {
    for (int c = 0; c < PC_N; c++)
        if (col_grow(&self->prof[c], col_size(PROF_TYPES[c]))) return -1;
    for (int c = 0; c < HC_N; c++)
        if (col_grow(&self->phase[c], (Py_ssize_t)col_size(PHASE_TYPES[c]) * (b->nph + 1))) return -1;
#define PUT(cols, c, type, v) do { *(type *)((cols)[c].data + (cols)[c].len) = (v); (cols)[c].len += sizeof(type); } while (0)
    Col *P = self->prof;
    PUT(P, PC_LINE, int64_t, line_no);
    PUT(P, PC_STARTUP, int32_t, (int32_t)startup);
    PUT(P, PC_TS, int64_t, pf->ts);
    PUT(P, PC_RANKS, int32_t, pf->ranks);
    for (int i = 0; i < N_TAGS; i++)
        PUT(P, PC_DP + i, int32_t, pf->tag[i] == NA_I64 ? NA_I32 : (int32_t)pf->tag[i]);
    PUT(P, PC_MODE, int32_t, b->mode);
    PUT(P, PC_CYCLES, int64_t, b->cycles);
    PUT(P, PC_TOKENS, int64_t, b->tokens);
    PUT(P, PC_TOTAL, double, b->total);
    PUT(P, PC_ACCEPT, double, b->accept);
    PUT(P, PC_EFF, double, b->eff);
    PUT(P, PC_NPHASES, int64_t, b->nph);
    double s = 0;
    for (int i = 0; i < b->nph; i++) s += b->ph[i].ms;
    PUT(P, PC_PHASE_SUM, double, b->nph ? s : NAN);
    PUT(P, PC_END_LINE, int64_t, end_line);
    self->prof_rows++;
    Col *H = self->phase;
    for (int i = 0; i < b->nph; i++) {
        PUT(H, HC_LINE, int64_t, b->ph[i].line_no);
        PUT(H, HC_STARTUP, int32_t, (int32_t)startup);
        PUT(H, HC_BLOCK, int64_t, line_no);
        PUT(H, HC_PHASE, int32_t, b->ph[i].label);
        PUT(H, HC_MS, double, b->ph[i].ms);
        PUT(H, HC_PCT, double, b->ph[i].pct);
    }
    self->phase_rows += b->nph;
#undef PUT
    return 0;
}

/* ------------------------------------------------------------------ the line loop */
typedef struct {
    const char *buf;
    Py_ssize_t n;
    int64_t startup;
    /* out */
    Py_ssize_t pos;          /* start of the line the Python parser must read, or n */
    int64_t line_no;         /* its line number */
    int64_t consumed;
    int64_t first_skipped;   /* first non-blank line without a record, 0 if none */
    int64_t last_line;       /* last consumed line and the offset after it, 0 / -1 if none */
    Py_ssize_t last_end;
    int oom;
    Col bad;                 /* blocks that break an identity: (line, start, end, problems) */
    Py_ssize_t whit;         /* the first line holding a watched literal: its offset, or -1 */
    int64_t whit_line;
    int64_t blank;           /* blank lines passed ('' or a lone CR, as line_stats counts) */
} Run;

static int is_ws_line(const char *p, const char *e) {
    for (; p < e; p++)
        if (!(*p == ' ' || *p == '\t' || *p == '\r' || *p == '\x0b' || *p == '\x0c')) return 0;
    return 1;
}

/* every byte printable ASCII (0x20-0x7e); eight at a time: a byte below 0x20 or above 0x7e
 * sets its high bit in one of the two SWAR tests (both exact for these bounds) */
static int plain_ascii(const char *p, const char *e) {
#ifdef __SSE2__
    /* sixteen at a time: signed bytes above 0x1f and below 0x7f (0x80 and up are negative) */
    const __m128i lo = _mm_set1_epi8(0x1f), hi = _mm_set1_epi8(0x7f);
    for (; e - p >= 16; p += 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)p);
        if (_mm_movemask_epi8(_mm_and_si128(_mm_cmpgt_epi8(x, lo), _mm_cmplt_epi8(x, hi))) !=
            0xffff)
            return 0;
    }
#endif
    const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
    for (; e - p >= 8; p += 8) {
        uint64_t x;
        memcpy(&x, p, 8);
        if (((x - ones * 0x20) & ~x & high) | (((x + ones * (127 - 0x7e)) | x) & high)) return 0;
    }
    for (; p < e; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e) return 0;
    return 1;
}

/* What a line is to the fast path.  For a record line it is parsed and stored (rows committed):
 * returns 1.  A line with no marker: 2.  A line the Python parser must read: 0.  An EAGLE3_PROF
 * header: 3 (its prefix in *pf, body start in *body). */
static int watch_line(const FastScanner *self, const char *p, const char *e);

static int classify(FastScanner *self, Run *r, const char *ls, const char *le, int64_t line_no,
                    Prefix *pf, const char **body, int *watched) {
    const char *p = ls;
    no_prefix(pf);
    if (p < le && isdig(*p)) {                   /* docker logs --timestamps, a CRI log file */
        const char *q = read_wrapper(p, le, &pf->wts);
        if (q) p = q;
        else pf->wts = NA_I64;
    }
    if (p < le && *p == '[') {
        const char *q = read_bracket(self, p, le, pf);
        if (q) p = q;
        else no_prefix(pf);
    }
    if (p < le && (*p == 'D' || *p == 'P' || *p == 'E') && (pf->bracket || p == ls)) {
        if (*p == 'E') {
            if (le - p >= 11 && memcmp(p, "EAGLE3_PROF", 11) == 0 && plain_ascii(p, le)) {
                *body = p;
                return 3;
            }
        } else if (plain_ascii(p, le)) {
            int got = batch_line(self, *p == 'D', p, le, pf, line_no, r->startup);
            if (got < 0) { r->oom = 1; return 0; }
            if (got) return 1;
        }
    }
    if (self->wk && r->whit < 0) {              /* a line with no record: watched too */
        if (self->wsearch) {
            int f = ls_find(self->wsearch, ls, le);
            *watched = f == 1;
            return f == 2 ? 0 : 2;
        }
        if (has_marker(ls, le)) return 0;
        *watched = watch_line(self, ls, le);
        return 2;
    }
    return ls_find(&MARKER_SEARCH, ls, le) == 2 ? 0 : 2;
}

/* Whether the line [p, e) holds one of the watched literals. */
static int watch_line(const FastScanner *self, const char *p, const char *e) {
    for (; p < e; p++) {
        uint64_t f = self->wfirst[(unsigned char)*p];
        while (f) {
            int i = __builtin_ctzll(f);
            f &= f - 1;
            if (e - p >= self->wlen[i] && memcmp(p, self->wptr[i], (size_t)self->wlen[i]) == 0)
                return 1;
        }
    }
    return 0;
}

/* A complete block ends before the line at p (number ln): store it, count its lines as
 * consumed; a block that breaks an identity is kept and listed in r->bad for the Python parser to
 * word the warnings.  Returns the offset of p, or -1 to decline (incomplete block). */
static Py_ssize_t close_block(FastScanner *self, Run *r, const Block *b, const Prefix *hpf,
                              int64_t header_line, const char *hs, const char *p, int64_t ln,
                              int64_t consumed, int64_t *lines_after) {
    if (!b->has_total || !b->has_accept || !b->has_eff) return -1;
    int nprob = identity_problems(b);
    if (nprob) {
        if (col_grow(&r->bad, 4 * sizeof(int64_t))) { r->oom = 1; return -1; }
        int64_t *q = (int64_t *)(r->bad.data + r->bad.len);
        q[0] = header_line;
        q[1] = hs - r->buf;
        q[2] = p - r->buf;
        q[3] = nprob;
        r->bad.len += 4 * sizeof(int64_t);
    }
    if (emit_block(self, b, hpf, header_line, ln - 1, r->startup)) { r->oom = 1; return -1; }
    r->consumed += consumed;
    r->last_line = ln - 1;
    r->last_end = p - r->buf;
    *lines_after = ln - 1;
    return p - r->buf;
}

/* A block from its header line [hs, he) (body at b0).  Returns the offset of the line after the
 * block's last line (the terminating line is not consumed), or -1 to decline.  */
static Py_ssize_t try_block(FastScanner *self, Run *r, const Prefix *hpf, const char *hs,
                            const char *b0, const char *he, int64_t header_line,
                            int64_t *lines_after) {
    Block b;
    memset(&b, 0, sizeof b);
    if (!block_header(self, b0, he, &b)) return -1;
    const char *end = r->buf + r->n;
    const char *p = he + 1;
    int64_t ln = header_line;
    int64_t consumed = 1;
    for (;;) {
        if (p >= end) return -1;                    /* the block may go on in the next chunk */
        const char *le = memchr(p, '\n', (size_t)(end - p));
        if (!le) return -1;                         /* a line cut short */
        ln++;
        const char *body = p;
        if (hpf->bracket) {
            Prefix pf;
            const char *q = read_bracket(self, p, le, &pf);
            if (!q || pf.tags_len != hpf->tags_len ||
                memcmp(pf.tags, hpf->tags, (size_t)pf.tags_len) != 0)
                return -1;                          /* another rank, no prefix: interleaving */
            body = q;
            if (body < le && is_ws_line(body, le)) return -1;
        } else if (is_ws_line(p, le)) {             /* a blank line ends a print() block */
            return close_block(self, r, &b, hpf, header_line, hs, p, ln, consumed, lines_after);
        }
        if (body < le && (*body == ' ' || *body == '\t')) {      /* a block line */
            if (memchr(body, '[', (size_t)(le - body)) || !plain_ascii(body, le) ||
                memmem(body, (size_t)(le - body), "EAGLE3_PROF", 11) ||
                !block_line(self, body, le, &b, ln))
                return -1;
            consumed++;
            p = le + 1;
            continue;
        }
        /* A line that is not indented ends the block; the main loop reads it next.  The Python
         * parser closes the block on it too, unless its first marker is an EAGLE3_PROF header
         * that parser cannot read (the block then stays open there): such a line must be a
         * header the fast path reads. */
        if (!plain_ascii(p, le) || (hpf->bracket && has_time_bracket(body, le))) return -1;
        if (le - p >= 11 && memmem(p, (size_t)(le - p), "EAGLE3_PROF", 11)) {
            Prefix pf;
            const char *q = p;
            no_prefix(&pf);
            if (*q == '[') q = read_bracket(self, q, le, &pf);
            Block nb;
            memset(&nb, 0, sizeof nb);
            if (!q || !block_header(self, q, le, &nb)) return -1;
        }
        return close_block(self, r, &b, hpf, header_line, hs, p, ln, consumed, lines_after);
    }
}

static void run_scan(FastScanner *self, Run *r) {
    const char *buf = r->buf, *end = buf + r->n;
    const char *p = buf + r->pos;
    int64_t ln = r->line_no;
    while (p < end) {
        const char *le = memchr(p, '\n', (size_t)(end - p));
        if (!le) break;                                  /* unterminated: Python's */
        if (le == p || (le == p + 1 && *p == '\r')) {    /* blank */
            p = le + 1;
            ln++;
            r->blank++;
            continue;
        }
        Prefix pf;
        const char *body = NULL;
        int watched = 0;
        int kind = classify(self, r, p, le, ln, &pf, &body, &watched);
        if (r->oom) break;
        if (kind == 1) {
            r->consumed++;
            r->last_line = ln;
            r->last_end = le - buf + 1;
        } else if (kind == 2) {
            if (!r->first_skipped && !is_ws_line(p, le)) r->first_skipped = ln;
            if (watched) {
                r->whit = p - buf;
                r->whit_line = ln;
            }
        } else if (kind == 3) {
            int64_t last = ln;
            Py_ssize_t next = try_block(self, r, &pf, p, body, le, ln, &last);
            if (r->oom || next < 0) break;
            p = buf + next;
            ln = last + 1;
            continue;
        } else {
            break;
        }
        p = le + 1;
        ln++;
    }
    r->pos = p - buf;
    r->line_no = ln;
}

/* ------------------------------------------------------------------ Python type */
static void table_free(LineTable *T) {
    for (int c = 0; c < MAX_COLS; c++) buf_free(T->cols[c].data, T->cols[c].cap);
    for (int i = 0; i < T->nkeys; i++) free((void *)T->key[i]);
    Py_XDECREF(T->colnames);
}

static void FastScanner_dealloc(FastScanner *self) {
    Py_XDECREF(self->watch);
    PyMem_RawFree(self->wsearch);
    table_free(&self->decode);
    table_free(&self->prefill);
    for (int c = 0; c < PC_N; c++) buf_free(self->prof[c].data, self->prof[c].cap);
    for (int c = 0; c < HC_N; c++) buf_free(self->phase[c].data, self->phase[c].cap);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* keys: sequence of (key text, column name, kind) with kind 'int', 'float', 'pct', 'graph'
 * (a graph-backend label: its code is its rank among the graph keys) or anything else: a key
 * whose lines the Python parser reads */
static int table_init(LineTable *T, PyObject *keys) {
    memset(T, 0, sizeof *T);
    for (int c = 0; c < LC_FIXED; c++) {   /* rank tags, iter and graph: when printed */
        T->coltype[c] = LINE_FIXED_TYPES[c];
        T->cols[c].active = !((c >= LC_DP && c <= LC_EP) || c == LC_ITER || c == LC_GRAPH ||
                              c == LC_GRAPH_BACKEND || c == LC_WRAP);
    }
    T->ncols = LC_FIXED;
    T->queue_col = -1;
    for (int i = 0; i < MAX_SEGS; i++) T->guess[i] = -1;
    int ngraph = 0;
    PyObject *names = PyList_New(0);
    if (!names) return -1;
    PyObject *seq = PySequence_Fast(keys, "keys must be a sequence");
    if (!seq) { Py_DECREF(names); return -1; }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > MAX_KEYS) {
        PyErr_SetString(PyExc_ValueError, "too many keys");
        goto fail;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        const char *key, *colname, *kind;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "sss", &key, &colname, &kind))
            goto fail;
        int k = T->nkeys++;
        T->key[k] = strdup(key);
        T->klen[k] = (int)strlen(key);
        T->plain[k] = T->klen[k] > 0 && key[0] != ' ' && !strchr(key, ':');
        T->kind[k] = !strcmp(kind, "int") ? K_INT : !strcmp(kind, "int32") ? K_INT32
                   : !strcmp(kind, "float") ? K_FLOAT : !strcmp(kind, "pct") ? K_PCT
                   : !strcmp(kind, "graph") ? K_GRAPH : K_NONE;
        T->col[k] = -1;
        if (T->kind[k] == K_GRAPH) {   /* 'cuda graph: True': the code of the backend label */
            if (ngraph >= 100) { PyErr_SetString(PyExc_ValueError, "too many graph labels"); goto fail; }
            T->col[k] = ngraph++;
            continue;
        }
        if (T->kind[k] == K_NONE) continue;
        PyObject *name = PyUnicode_FromString(colname);
        if (!name) goto fail;
        int found = -1;
        for (Py_ssize_t j = 0; j < PyList_GET_SIZE(names); j++)
            if (PyUnicode_Compare(PyList_GET_ITEM(names, j), name) == 0) found = (int)j;
        if (found < 0) {
            if (T->ncols >= MAX_COLS) { Py_DECREF(name); PyErr_SetString(PyExc_ValueError, "too many columns"); goto fail; }
            found = (int)PyList_GET_SIZE(names);
            PyList_Append(names, name);
            T->coltype[T->ncols++] = T->kind[k] == K_INT ? 'q' : T->kind[k] == K_INT32 ? 'l'
                                     : 'd';
        }
        Py_DECREF(name);
        T->col[k] = LC_FIXED + found;
        if (!strcmp(colname, "queue_req")) T->queue_col = LC_FIXED + found;
    }
    Py_DECREF(seq);
    T->colnames = PyTuple_New(T->ncols);
    if (!T->colnames) { Py_DECREF(names); return -1; }
    for (int c = 0; c < T->ncols; c++) {
        PyObject *nm = c < LC_FIXED ? PyUnicode_FromString(LINE_FIXED_NAMES[c])
                                    : Py_NewRef(PyList_GET_ITEM(names, c - LC_FIXED));
        if (!nm) { Py_DECREF(names); return -1; }
        PyTuple_SET_ITEM(T->colnames, c, nm);
    }
    Py_DECREF(names);
    return 0;
fail:
    Py_DECREF(seq);
    Py_DECREF(names);
    return -1;
}

static int FastScanner_init(FastScanner *self, PyObject *args, PyObject *kw) {
    (void)kw;
    PyObject *dkeys, *pkeys, *keep = Py_None;
    if (!PyArg_ParseTuple(args, "OO|O", &dkeys, &pkeys, &keep)) return -1;
    table_free(&self->decode);
    table_free(&self->prefill);
    memset(&self->decode, 0, sizeof self->decode);
    memset(&self->prefill, 0, sizeof self->prefill);
    if (table_init(&self->decode, dkeys) || table_init(&self->prefill, pkeys)) return -1;
    /* keep: {table: columns} of the decode/prefill columns wanted (None: all) */
    LineTable *tabs[2] = {&self->decode, &self->prefill};
    const char *tnames[2] = {"decode", "prefill"};
    for (int t = 0; keep != Py_None && t < 2; t++) {
        PyObject *want = PyMapping_GetItemString(keep, tnames[t]);
        if (!want) { PyErr_Clear(); continue; }
        if (want == Py_None) { Py_DECREF(want); continue; }
        for (int c = 0; c < tabs[t]->ncols; c++) {
            int has = PySequence_Contains(want, PyTuple_GET_ITEM(tabs[t]->colnames, c));
            if (has < 0) { Py_DECREF(want); return -1; }
            if (!has) {
                tabs[t]->cols[c].skip = 1;
                tabs[t]->cols[c].active = 0;
            }
        }
        Py_DECREF(want);
    }
    for (int t = 0; t < 2; t++) {          /* the columns active from the start, listed */
        tabs[t]->nact = 0;
        for (int c = 0; c < tabs[t]->ncols; c++)
            if (tabs[t]->cols[c].active) note_active(tabs[t], c);
    }
    return 0;
}

/* scan(chunk, pos, line_no, startup) -> (pos, line_no, consumed, first_skipped, last_line,
 * last_end, bad_blocks: bytes of int64 quadruples, watched line's offset, its number, blank
 * lines).  Reads lines from byte pos (a line start; line_no is its number) until a line the
 * Python parser must read, or the end of the chunk, with the GIL released.  The lines it
 * passed are those from pos to the returned pos (as many as the line numbers advanced), the
 * blank ones among them counted: line_stats of the same bytes, without a walk of its own. */
static PyObject *FastScanner_scan(FastScanner *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t pos;
    long long line_no, startup;
    if (!PyArg_ParseTuple(args, "y*nLL", &view, &pos, &line_no, &startup)) return NULL;
    Run r;
    memset(&r, 0, sizeof r);
    r.buf = view.buf;
    r.n = view.len;
    r.pos = pos < 0 ? 0 : pos > view.len ? view.len : pos;
    r.line_no = line_no;
    r.startup = startup;
    r.last_end = -1;
    r.whit = -1;
    Py_BEGIN_ALLOW_THREADS
    run_scan(self, &r);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    if (r.oom) { buf_free(r.bad.data, r.bad.cap); return PyErr_NoMemory(); }
    /* the blocks that break an identity: int64 (header line, start, end, problems) each, as
     * bytes (a generated log has one a block: no tuple per block) */
    PyObject *bad = PyBytes_FromStringAndSize(r.bad.data ? r.bad.data : "", r.bad.len);
    buf_free(r.bad.data, r.bad.cap);
    if (!bad) return NULL;
    return Py_BuildValue("nLLLLnNnLL", r.pos, (long long)r.line_no, (long long)r.consumed,
                         (long long)r.first_skipped, (long long)r.last_line, r.last_end, bad,
                         r.whit, (long long)r.whit_line, (long long)r.blank);
}

/* set_watch(literals): the literals (a tuple of at most 64 non-empty bytes; () for none) that
 * scan() looks for in the lines without a record or a marker; it returns the first such line
 * of each call (its offset and number, -1 when none). */
static PyObject *FastScanner_set_watch(FastScanner *self, PyObject *args) {
    PyObject *lits;
    if (!PyArg_ParseTuple(args, "O!", &PyTuple_Type, &lits)) return NULL;
    Py_ssize_t k = PyTuple_GET_SIZE(lits);
    if (k > 64) {
        PyErr_SetString(PyExc_ValueError, "at most 64 literals");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < k; i++) {
        PyObject *b = PyTuple_GET_ITEM(lits, i);
        if (!PyBytes_Check(b) || PyBytes_GET_SIZE(b) < 1 || PyBytes_GET_SIZE(b) > INT32_MAX) {
            PyErr_SetString(PyExc_ValueError, "literals must be non-empty bytes");
            return NULL;
        }
    }
    Py_INCREF(lits);
    Py_XDECREF(self->watch);
    self->watch = lits;
    self->wk = (int)k;
    memset(self->wfirst, 0, sizeof self->wfirst);
    for (Py_ssize_t i = 0; i < k; i++) {
        PyObject *b = PyTuple_GET_ITEM(lits, i);
        self->wptr[i] = PyBytes_AS_STRING(b);
        self->wlen[i] = (int)PyBytes_GET_SIZE(b);
        self->wfirst[(unsigned char)self->wptr[i][0]] |= (uint64_t)1 << i;
    }
    /* the markers and these literals in one walk (ls_find); a literal of one byte: byte walks */
    PyMem_RawFree(self->wsearch);
    self->wsearch = NULL;
    if (k) {
        const char *lits[LS_MAX];
        int lens[LS_MAX];
        for (int i = 0; i < N_MARKERS; i++) { lits[i] = MARKERS[i]; lens[i] = MARKER_LEN[i]; }
        for (int i = 0; i < k; i++) { lits[N_MARKERS + i] = self->wptr[i]; lens[N_MARKERS + i] = self->wlen[i]; }
        self->wsearch = PyMem_RawMalloc(sizeof(LineSearch));   /* (none: the byte walks) */
        if (self->wsearch && ls_build(self->wsearch, lits, lens, N_MARKERS + (int)k)) {
            PyMem_RawFree(self->wsearch);
            self->wsearch = NULL;
        }
    }
    Py_RETURN_NONE;
}

static PyObject *types_of(int n, PyObject *names, const char **cnames, const char *types) {
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    for (int c = 0; c < n; c++) {
        PyObject *ty = PyUnicode_FromStringAndSize(&types[c], 1);
        int rc = !ty ? -1 : names ? PyDict_SetItem(d, PyTuple_GET_ITEM(names, c), ty)
                                  : PyDict_SetItemString(d, cnames[c], ty);
        Py_XDECREF(ty);
        if (rc) { Py_DECREF(d); return NULL; }
    }
    return d;
}

static PyObject *labels_list(const Labels *L) {
    PyObject *out = PyList_New(L->n);
    if (!out) return NULL;
    for (int i = 0; i < L->n; i++) {
        PyObject *s = PyUnicode_DecodeASCII(L->text[i], L->len[i], "strict");
        if (!s) { Py_DECREF(out); return NULL; }
        PyList_SET_ITEM(out, i, s);
    }
    return out;
}

/* Hand a column's rows to target[name], a Column: the array itself when target has none yet
 * (no copy; preceded by NA for the rows handed over before this column held data), else
 * appended to it.  The scanner's column is left empty. */
static int append_col(PyObject *target, PyObject *name, Col *c, char type, Py_ssize_t before) {
    PyObject *have = PyDict_GetItemWithError(target, name);
    if (!have && PyErr_Occurred()) return -1;
    if (have && !PyObject_TypeCheck(have, &ColumnType)) {
        PyErr_SetString(PyExc_TypeError, "take_into: columns must be Columns");
        return -1;
    }
    if (!have && before == 0) {           /* adopt the array */
        ColumnObject *col = column_new();
        if (!col) return -1;
        col->data = c->data;
        col->len = c->len;
        col->cap = c->cap;
        c->data = NULL;
        c->len = c->cap = 0;
        int rc = PyDict_SetItem(target, name, (PyObject *)col);
        Py_DECREF(col);
        return rc;
    }
    if (!have) {
        ColumnObject *col = column_new();
        if (!col) return -1;
        if (column_reserve(col, before * col_size(type) + c->len)) { Py_DECREF(col); return -1; }
        fill_na(col->data, type, before);
        col->len = before * col_size(type);
        int rc = PyDict_SetItem(target, name, (PyObject *)col);
        Py_DECREF(col);
        if (rc) return -1;
        have = (PyObject *)col;            /* borrowed from target */
    }
    if (column_append((ColumnObject *)have, c->data, c->len)) return -1;
    c->len = 0;
    return 0;
}

static PyObject *table_dict(PyObject *target, const char *table) {
    PyObject *d = PyDict_GetItemString(target, table);     /* borrowed */
    if (d) return d;
    d = PyDict_New();
    if (!d || PyDict_SetItemString(target, table, d)) { Py_XDECREF(d); return NULL; }
    Py_DECREF(d);
    return d;
}

/* take_into(target) hands the rows collected so far to target = {table: {column: Column,
 * "": rows}} (one growing array per column: no per-chunk objects); returns the labels. */
static PyObject *FastScanner_take_into(FastScanner *self, PyObject *args) {
    PyObject *target;
    if (!PyArg_ParseTuple(args, "O!", &PyDict_Type, &target)) return NULL;
    LineTable *tabs[2] = {&self->decode, &self->prefill};
    const char *tnames[4] = {"decode", "prefill", "prof", "prof_phases"};
    Py_ssize_t rows[4] = {self->decode.rows, self->prefill.rows, self->prof_rows, self->phase_rows};
    for (int t = 0; t < 4; t++) {
        if (!rows[t]) continue;
        PyObject *d = table_dict(target, tnames[t]);
        if (!d) return NULL;
        PyObject *had = PyDict_GetItemString(d, "");
        Py_ssize_t before = had ? PyLong_AsSsize_t(had) : 0;
        if (before < 0 && PyErr_Occurred()) return NULL;
        if (t < 2) {
            LineTable *T = tabs[t];
            for (int c = 0; c < T->ncols; c++)
                if (T->cols[c].active &&
                    append_col(d, PyTuple_GET_ITEM(T->colnames, c), &T->cols[c], T->coltype[c],
                               before))
                    return NULL;
            T->rows = 0;
            T->room = 0;                   /* (the columns were handed over: none is left) */
        } else {
            int n = t == 2 ? PC_N : HC_N;
            Col *cols = t == 2 ? self->prof : self->phase;
            const char **names = t == 2 ? PROF_NAMES : PHASE_NAMES;
            const char *types = t == 2 ? PROF_TYPES : PHASE_TYPES;
            for (int c = 0; c < n; c++) {
                PyObject *name = PyUnicode_FromString(names[c]);
                int rc = !name ? -1 : append_col(d, name, &cols[c], types[c], before);
                Py_XDECREF(name);
                if (rc) return NULL;
            }
        }
        PyObject *now = PyLong_FromSsize_t(before + rows[t]);
        if (!now || PyDict_SetItemString(d, "", now)) { Py_XDECREF(now); return NULL; }
        Py_DECREF(now);
    }
    self->prof_rows = self->phase_rows = 0;
    return Py_BuildValue("{s:N,s:N,s:N}", "ranks", labels_list(&self->ranks),
                         "phase", labels_list(&self->phases), "mode", labels_list(&self->modes));
}

/* types() -> {table: {column: 'q' int64 | 'l' int32 | 'd' double | 'i' int32 code | 'b' int8}} */
static PyObject *FastScanner_types(FastScanner *self, PyObject *noargs) {
    (void)noargs;
    return Py_BuildValue("{s:N,s:N,s:N,s:N}",
        "decode", types_of(self->decode.ncols, self->decode.colnames, NULL, self->decode.coltype),
        "prefill", types_of(self->prefill.ncols, self->prefill.colnames, NULL, self->prefill.coltype),
        "prof", types_of(PC_N, NULL, PROF_NAMES, PROF_TYPES),
        "prof_phases", types_of(HC_N, NULL, PHASE_NAMES, PHASE_TYPES));
}

/* line_stats(chunk[, start, end]) -> (newlines, blank lines) of chunk[start:end] (start a line
 * start); blank = '' or a lone CR, as scan.count_blank */
static PyObject *line_stats(PyObject *mod, PyObject *args) {
    (void)mod;
    Py_buffer view;
    Py_ssize_t a = 0, b = PY_SSIZE_T_MAX;
    if (!PyArg_ParseTuple(args, "y*|nn", &view, &a, &b)) return NULL;
    if (a < 0) a = 0;
    if (a > view.len) a = view.len;
    if (b > view.len) b = view.len;
    if (b < a) b = a;
    const char *p = (const char *)view.buf + a, *e = (const char *)view.buf + b;
    long long nl = 0, blank = 0;
    Py_BEGIN_ALLOW_THREADS
    const char *ls = p;
    while (ls < e) {
        const char *le = memchr(ls, '\n', (size_t)(e - ls));
        if (!le) break;
        nl++;
        if (le == ls || (le == ls + 1 && *ls == '\r')) blank++;
        ls = le + 1;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return Py_BuildValue("LL", nl, blank);
}

/* find_any(chunk, needles) -> the index of the first needle (in the tuple's order) that occurs
 * in chunk, or -1.  The literal watch for other servers' lines (parallel.py, SniffingScanner)
 * ran five bytes.find over every chunk of a large log holding the GIL, which the scan threads
 * then waited for; here the search releases it (glibc memmem). */
static PyObject *find_any(PyObject *mod, PyObject *args) {
    (void)mod;
    Py_buffer view;
    PyObject *needles;
    if (!PyArg_ParseTuple(args, "y*O!", &view, &PyTuple_Type, &needles)) return NULL;
    Py_ssize_t k = PyTuple_GET_SIZE(needles);
    const char *ptr[64];
    Py_ssize_t len[64];
    if (k > 64) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "at most 64 needles");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < k; i++) {
        PyObject *b = PyTuple_GET_ITEM(needles, i);
        if (!PyBytes_Check(b)) {
            PyBuffer_Release(&view);
            PyErr_SetString(PyExc_TypeError, "needles must be bytes");
            return NULL;
        }
        ptr[i] = PyBytes_AS_STRING(b);
        len[i] = PyBytes_GET_SIZE(b);
    }
    Py_ssize_t found = -1;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < k && found < 0; i++) {
        if (len[i] == 0 || memmem(view.buf, (size_t)view.len, ptr[i], (size_t)len[i]))
            found = i;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return PyLong_FromSsize_t(found);
}

/* first_any(chunk, needles, start=0) -> (offset, index) of the earliest occurrence at or after
 * start of any needle (the lowest index among those starting there), or (-1, -1).  One pass
 * for all of them (Wu–Manber: a shift table over the last byte pair of the window as long as
 * the shortest needle), where find_any makes one memmem pass per needle: the watch for the
 * families a scan does not read has dozens of literals (52 for an SGLang log: 3.8 ms per MiB by
 * memmem, one per needle; about 1).  The GIL is released.  (A C-accelerated SGLang scan watches
 * the lines it passes over instead: set_watch.) */
#define WM_MAX 64
#define WM_CACHE 16
static struct { PyObject *key; uint8_t *shift; uint64_t *bucket; } WM_CACHED[WM_CACHE];
static int WM_NCACHED = 0;
static PyObject *first_any(PyObject *mod, PyObject *args) {
    (void)mod;
    Py_buffer view;
    PyObject *needles;
    Py_ssize_t start = 0;
    if (!PyArg_ParseTuple(args, "y*O!|n", &view, &PyTuple_Type, &needles, &start)) return NULL;
    Py_ssize_t k = PyTuple_GET_SIZE(needles);
    const unsigned char *ptr[WM_MAX];
    Py_ssize_t len[WM_MAX];
    if (k > WM_MAX) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "at most 64 needles");
        return NULL;
    }
    Py_ssize_t m = PY_SSIZE_T_MAX;
    for (Py_ssize_t i = 0; i < k; i++) {
        PyObject *b = PyTuple_GET_ITEM(needles, i);
        if (!PyBytes_Check(b) || PyBytes_GET_SIZE(b) < 2) {
            PyBuffer_Release(&view);
            PyErr_SetString(PyExc_ValueError, "needles must be bytes of at least 2");
            return NULL;
        }
        ptr[i] = (const unsigned char *)PyBytes_AS_STRING(b);
        len[i] = PyBytes_GET_SIZE(b);
        if (len[i] < m) m = len[i];
    }
    Py_ssize_t n = view.len, found = -1, which = -1;
    if (start < 0) start = 0;
    if (k == 0 || start >= n) {
        PyBuffer_Release(&view);
        return Py_BuildValue("nn", found, which);
    }
    /* the tables of these needles: made once (the GIL held) and kept, for the few needle
     * tuples the sniffing asks about (each family's, for every input of a glob: making them
     * cost 6 us a call, five calls a small log); a tuple beyond WM_CACHE gets its own */
    uint8_t *shift = NULL;
    uint64_t *bucket = NULL;
    int own = 1;
    for (int c = 0; c < WM_NCACHED; c++) {
        int eq = WM_CACHED[c].key == needles ? 1
                 : PyObject_RichCompareBool(WM_CACHED[c].key, needles, Py_EQ);
        if (eq < 0) { PyBuffer_Release(&view); return NULL; }
        if (eq) { shift = WM_CACHED[c].shift; bucket = WM_CACHED[c].bucket; own = 0; break; }
    }
    if (own) {
        shift = PyMem_RawMalloc(65536);
        bucket = PyMem_RawCalloc(65536, sizeof(uint64_t));
        if (!shift || !bucket) {
            PyMem_RawFree(shift);
            PyMem_RawFree(bucket);
            PyBuffer_Release(&view);
            return PyErr_NoMemory();
        }
        /* the window is the m bytes at pos; its last pair decides the shift: the distance
         * from that pair to the end of the nearest place it takes in a needle's first m
         * bytes */
        Py_ssize_t deflt = m - 1 > 255 ? 255 : m - 1;
        memset(shift, (int)deflt, 65536);
        for (Py_ssize_t i = 0; i < k; i++)
            for (Py_ssize_t j = 0; j + 1 < m; j++) {
                unsigned h = (unsigned)ptr[i][j] << 8 | ptr[i][j + 1];
                Py_ssize_t d = m - 2 - j;
                if (d < shift[h]) shift[h] = (uint8_t)d;
                if (d == 0) bucket[h] |= (uint64_t)1 << i;
            }
        if (WM_NCACHED < WM_CACHE) {        /* kept for good: never freed, so never in use */
            Py_INCREF(needles);
            WM_CACHED[WM_NCACHED].key = needles;
            WM_CACHED[WM_NCACHED].shift = shift;
            WM_CACHED[WM_NCACHED].bucket = bucket;
            WM_NCACHED++;
            own = 0;
        }
    }
    const unsigned char *t = (const unsigned char *)view.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t pos = start; pos + m <= n;) {
        unsigned h = (unsigned)t[pos + m - 2] << 8 | t[pos + m - 1];
        uint8_t s = shift[h];
        if (s) { pos += s; continue; }
        uint64_t b = bucket[h];
        while (b) {
            int i = __builtin_ctzll(b);
            b &= b - 1;
            if (n - pos >= len[i] && memcmp(t + pos, ptr[i], (size_t)len[i]) == 0) {
                found = pos;
                which = i;
                break;
            }
        }
        if (found >= 0) break;
        pos++;
    }
    Py_END_ALLOW_THREADS
    if (own) {
        PyMem_RawFree(shift);
        PyMem_RawFree(bucket);
    }
    PyBuffer_Release(&view);
    return Py_BuildValue("nn", found, which);
}

static PyMethodDef FastScanner_methods[] = {
    {"scan", (PyCFunction)FastScanner_scan, METH_VARARGS, "scan(chunk, pos, line_no, startup)"},
    {"set_watch", (PyCFunction)FastScanner_set_watch, METH_VARARGS,
     "set_watch(literals): looked for in the lines without a record or a marker"},
    {"take_into", (PyCFunction)FastScanner_take_into, METH_VARARGS,
     "take_into({table: {column: Column, '': rows}}) -> labels"},
    {"types", (PyCFunction)FastScanner_types, METH_NOARGS, "column element types"},
    {NULL}};

static PyTypeObject FastScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "eaglelog.parsers._fastscan.FastScanner",
    .tp_basicsize = sizeof(FastScanner),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)FastScanner_init,
    .tp_dealloc = (destructor)FastScanner_dealloc,
    .tp_methods = FastScanner_methods,
    .tp_doc = "FastScanner(decode_keys, prefill_keys): the common layouts, in C",
};

static PyMethodDef module_methods[] = {
    {"line_stats", line_stats, METH_VARARGS,
     "line_stats(chunk[, start, end]) -> (newlines, blank lines) of chunk[start:end]"},
    {"first_any", first_any, METH_VARARGS,
     "first_any(chunk, needles, start=0) -> (offset, index) of the earliest needle, or (-1, -1)"},
    {"find_any", find_any, METH_VARARGS,
     "find_any(chunk, needles) -> index of the first needle found in chunk, or -1"},
    {"absorb_threshold", absorb_threshold, METH_VARARGS,
     "absorb_threshold([n]) -> bytes from which Column.absorb moves pages; n >= 1 sets it"},
    {NULL}};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "_fastscan",
                                       "C accelerator of eaglelog.parsers.scan", -1,
                                       module_methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__fastscan(void) {
    for (int d = 0; d < 41; d++) HALF_UNIT[d] = 0.5 * pow(10.0, -(double)d);
    for (int k = 0; k < N_MARKERS; k++) {
        MARKER_LEN[k] = (int)strlen(MARKERS[k]);
        FIRST[(unsigned char)MARKERS[k][0]] |= (unsigned short)(1u << k);
    }
    if (ls_build(&MARKER_SEARCH, MARKERS, MARKER_LEN, N_MARKERS)) return NULL;
    if (PyType_Ready(&FastScannerType) < 0 || PyType_Ready(&ColumnType) < 0) return NULL;
    PyObject *m = PyModule_Create(&moduledef);
    if (!m) return NULL;
    Py_INCREF(&FastScannerType);
    if (PyModule_AddObject(m, "FastScanner", (PyObject *)&FastScannerType) < 0) {
        Py_DECREF(&FastScannerType);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&ColumnType);
    if (PyModule_AddObject(m, "Column", (PyObject *)&ColumnType) < 0) {
        Py_DECREF(&ColumnType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
