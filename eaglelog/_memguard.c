/* eaglelog._memguard: memory kept back for the report of running out of it.
 *
 * Under an address-space limit (RLIMIT_AS: `ulimit -v`, common on shared login nodes) a
 * process that runs out of memory gets a MemoryError, and the command line says so in one
 * line.  But the error is raised with the memory still taken (the frames the traceback holds
 * keep their arrays), and CPython 3.11-3.13 then need memory to unwind: each `except`,
 * `finally` and `with` on the way up pushes its position as an int object, and when that
 * allocation fails the interpreter looks for the same handler again, for ever (CPython
 * gh-132508; fixed with tagged ints in 3.14).  A summary with 25-26 MiB to spare hung so.
 *
 * take(n) lowers the soft limit by n bytes and wraps Python's three allocator domains: the
 * first allocation that fails gives the n bytes back (the soft limit goes back up to what it
 * was), and still fails.  So the unwinding of its MemoryError, and the error's one line, have
 * n bytes to run in.  Without a finite soft limit take() does nothing: no limit to run into, and the
 * allocators stay as they are (no cost).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <sys/resource.h>

static PyMemAllocatorEx prev_raw, prev_mem, prev_obj;
static rlim_t saved_soft;           /* the soft limit before the reserve was taken */
static int armed;                   /* the reserve is taken and not yet given back */
static int hooked;                  /* the allocators are wrapped (they stay wrapped) */
static int released;                /* it was given back (an allocation failed) */

/* Give the reserve back: 1 when this call did.  The allocation that failed is not tried again:
 * it fails, and the MemoryError it raises unwinds in the memory given back (tried again, it
 * mostly succeeded, and the command went on until that memory was gone too, and hung). */
static int give_back(void)
{
    if (!__atomic_exchange_n(&armed, 0, __ATOMIC_SEQ_CST))
        return 0;
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) != 0)
        return 0;
    rl.rlim_cur = saved_soft;
    if (setrlimit(RLIMIT_AS, &rl) != 0)
        return 0;
    __atomic_store_n(&released, 1, __ATOMIC_SEQ_CST);
    return 1;
}

static void *g_malloc(void *ctx, size_t n)
{
    PyMemAllocatorEx *a = ctx;
    void *p = a->malloc(a->ctx, n);
    if (p == NULL)
        give_back();
    return p;
}

static void *g_calloc(void *ctx, size_t k, size_t n)
{
    PyMemAllocatorEx *a = ctx;
    void *p = a->calloc(a->ctx, k, n);
    if (p == NULL)
        give_back();
    return p;
}

static void *g_realloc(void *ctx, void *q, size_t n)
{
    PyMemAllocatorEx *a = ctx;
    void *p = a->realloc(a->ctx, q, n);
    if (p == NULL)
        give_back();
    return p;
}

static void g_free(void *ctx, void *q)
{
    PyMemAllocatorEx *a = ctx;
    a->free(a->ctx, q);
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
    if (armed)
        Py_RETURN_FALSE;
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) != 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur <= n)
        Py_RETURN_FALSE;
    if (!hooked) {
        /* (the wrapping happens once, with the GIL held; a wrapper only calls on) */
        wrap(PYMEM_DOMAIN_RAW, &prev_raw);
        wrap(PYMEM_DOMAIN_MEM, &prev_mem);
        wrap(PYMEM_DOMAIN_OBJ, &prev_obj);
        hooked = 1;
    }
    saved_soft = rl.rlim_cur;
    rl.rlim_cur -= n;
    if (setrlimit(RLIMIT_AS, &rl) != 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    released = 0;
    __atomic_store_n(&armed, 1, __ATOMIC_SEQ_CST);
    Py_RETURN_TRUE;
}

static PyObject *give(PyObject *self, PyObject *unused)
{
    return PyBool_FromLong(give_back());
}

static PyObject *state(PyObject *self, PyObject *unused)
{
    return Py_BuildValue("{s:O,s:O}", "taken", armed ? Py_True : Py_False,
                         "released", released ? Py_True : Py_False);
}

static PyMethodDef methods[] = {
    {"take", take, METH_O,
     "take(n) -> bool: lower the soft address-space limit by n bytes, given back at the first "
     "allocation that fails; False (nothing done) without a finite limit or when taken."},
    {"give_back", give, METH_NOARGS,
     "give_back() -> bool: the soft limit back to what it was; False when not taken."},
    {"state", state, METH_NOARGS,
     "state() -> {'taken': bool, 'released': bool}"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_memguard",
                                    "Memory kept back for the report of running out of it.",
                                    -1, methods};

PyMODINIT_FUNC PyInit__memguard(void)
{
    return PyModule_Create(&module);
}
