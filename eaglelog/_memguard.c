/* eaglelog._memguard: memory kept back for the report of running out of it.
 *
 * Under an address-space limit (RLIMIT_AS: `ulimit -v`, common on shared login nodes) a
 * process that runs out of memory gets a MemoryError, and the command line says so in one
 * line.  But the error is raised with the memory still taken (the frames the traceback holds
 * keep their arrays), and CPython 3.11-3.13 then need memory to unwind: each `except`,
 * `finally` and `with` on the way up pushes its position as an int object, and when that
 * allocation fails the interpreter looks for the same handler again, for ever (CPython
 * gh-132508; fixed with tagged ints for 3.14).  A summary with 25-26 MiB to spare hung so.
 *
 * take(n) lowers the soft limit by n bytes and wraps Python's allocators: an allocation of
 * the three domains that fails gives a quarter of the n bytes back (the soft limit goes up by
 * it; after four, to what it was) and still fails.  So the unwinding of its MemoryError, and
 * the error's one line, have memory to run in.  Without a finite soft limit take() does
 * nothing: no limit to run into, and the allocators stay as they are (no cost).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <sys/resource.h>

static PyMemAllocatorEx prev_raw, prev_mem, prev_obj;
#define TRANCHES 4                  /* the reserve, given back a quarter at a time */
static rlim_t saved_soft;           /* the soft limit before the reserve was taken */
static rlim_t tranche;              /* bytes given back at each failed allocation */
static int left;                    /* tranches still kept back */
static int hooked;                  /* the allocators are wrapped (they stay wrapped) */
static int released;                /* some of it was given back (an allocation failed) */
static int failed;                  /* an allocation, or an arena's mapping, failed */

/* The soft limit with k tranches still kept back. */
static int keep_back(int k)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) != 0)
        return -1;
    rl.rlim_cur = saved_soft - (rlim_t)k * tranche;
    return setrlimit(RLIMIT_AS, &rl);
}

/* Give a tranche back: 1 when this call did.  The allocation that failed is not tried again:
 * it fails, and the MemoryError it raises unwinds in the memory given back (tried again, it
 * mostly succeeded, and the command went on until that memory was gone too, and hung).  A
 * quarter at a time: with two scan threads, the one still scanning took all of a reserve
 * given back at once before the other's unwinding was done, and the unwinding hung; each
 * failure now gives the next quarter, as the hanging loop's retry would need. */
static int give_back(void)
{
    int k = __atomic_load_n(&left, __ATOMIC_SEQ_CST);
    while (k > 0) {
        if (__atomic_compare_exchange_n(&left, &k, k - 1, 0, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST)) {
            if (keep_back(k - 1) != 0)
                return 0;
            __atomic_store_n(&released, 1, __ATOMIC_SEQ_CST);
            return 1;
        }
    }
    return 0;
}

/* An allocation failed: noted, and a quarter given back (unless the domain below, which this
 * one calls, gave it: k0 is what was left before the call). */
static void failed_here(int k0)
{
    __atomic_store_n(&failed, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&left, __ATOMIC_SEQ_CST) == k0)
        give_back();
}

static void *g_malloc(void *ctx, size_t n)
{
    PyMemAllocatorEx *a = ctx;
    int k0 = __atomic_load_n(&left, __ATOMIC_SEQ_CST);
    void *p = a->malloc(a->ctx, n);
    if (p == NULL)
        failed_here(k0);
    return p;
}

static void *g_calloc(void *ctx, size_t k, size_t n)
{
    PyMemAllocatorEx *a = ctx;
    int k0 = __atomic_load_n(&left, __ATOMIC_SEQ_CST);
    void *p = a->calloc(a->ctx, k, n);
    if (p == NULL)
        failed_here(k0);
    return p;
}

static void *g_realloc(void *ctx, void *q, size_t n)
{
    PyMemAllocatorEx *a = ctx;
    int k0 = __atomic_load_n(&left, __ATOMIC_SEQ_CST);
    void *p = a->realloc(a->ctx, q, n);
    if (p == NULL)
        failed_here(k0);
    return p;
}

static void g_free(void *ctx, void *q)
{
    PyMemAllocatorEx *a = ctx;
    a->free(a->ctx, q);
}

/* The arena allocator (pymalloc's arenas, and in 3.11 the frames' data stack) is watched,
 * not given to: an arena that cannot be mapped is no failed allocation (pymalloc takes the
 * block from the RAW domain instead), and a reserve given back there went, a quarter at a
 * time, before any MemoryError.  But a thread's first deep call that cannot map its stack
 * chunk raises "SystemError: error return without exception set": the command line calls
 * that out of memory once something failed here (state()['failed']). */
static PyObjectArenaAllocator prev_arena;

static void *g_arena_alloc(void *ctx, size_t n)
{
    void *p = prev_arena.alloc(prev_arena.ctx, n);
    if (p == NULL)
        __atomic_store_n(&failed, 1, __ATOMIC_SEQ_CST);
    return p;
}

static void g_arena_free(void *ctx, void *q, size_t n)
{
    prev_arena.free(prev_arena.ctx, q, n);
}

static void wrap(PyMemAllocatorDomain domain, PyMemAllocatorEx *prev)
{
    PyMemAllocatorEx mine = {prev, g_malloc, g_calloc, g_realloc, g_free};
    PyMem_GetAllocator(domain, prev);
    PyMem_SetAllocator(domain, &mine);
}

static PyObject *take(PyObject *self, PyObject *arg)
{
    unsigned long long n = PyLong_AsUnsignedLongLong(arg);
    if (n == (unsigned long long)-1 && PyErr_Occurred())
        return NULL;
    if (left > 0)
        Py_RETURN_FALSE;
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) != 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur <= n || n < TRANCHES)
        Py_RETURN_FALSE;
    if (!hooked) {
        /* (the wrapping happens once, with the GIL held; a wrapper only calls on) */
        wrap(PYMEM_DOMAIN_RAW, &prev_raw);
        wrap(PYMEM_DOMAIN_MEM, &prev_mem);
        wrap(PYMEM_DOMAIN_OBJ, &prev_obj);
        PyObject_GetArenaAllocator(&prev_arena);
        PyObjectArenaAllocator arena = {NULL, g_arena_alloc, g_arena_free};
        PyObject_SetArenaAllocator(&arena);
        hooked = 1;
    }
    saved_soft = rl.rlim_cur;
    tranche = (rlim_t)(n / TRANCHES);
    if (keep_back(TRANCHES) != 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    released = failed = 0;
    __atomic_store_n(&left, TRANCHES, __ATOMIC_SEQ_CST);
    Py_RETURN_TRUE;
}

static PyObject *give(PyObject *self, PyObject *unused)
{
    int k = __atomic_exchange_n(&left, 0, __ATOMIC_SEQ_CST);
    if (k == 0)
        Py_RETURN_FALSE;
    if (keep_back(0) != 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    Py_RETURN_TRUE;
}

static PyObject *state(PyObject *self, PyObject *unused)
{
    return Py_BuildValue("{s:O,s:O,s:i,s:O}", "taken", left > 0 ? Py_True : Py_False,
                         "released", released ? Py_True : Py_False, "left", left,
                         "failed", failed ? Py_True : Py_False);
}

static PyMethodDef methods[] = {
    {"take", take, METH_O,
     "take(n) -> bool: lower the soft address-space limit by n bytes, given back a quarter "
     "at each allocation that fails; False (nothing done) without a finite limit or when "
     "taken."},
    {"give_back", give, METH_NOARGS,
     "give_back() -> bool: the soft limit back to what it was; False when nothing was kept."},
    {"state", state, METH_NOARGS,
     "state() -> {'taken': bool, 'released': bool, 'left': quarters still kept back, "
     "'failed': an allocation or an arena's mapping failed}"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_memguard",
                                    "Memory kept back for the report of running out of it.",
                                    -1, methods};

PyMODINIT_FUNC PyInit__memguard(void)
{
    return PyModule_Create(&module);
}
