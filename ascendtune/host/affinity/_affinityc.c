/* bind's per-thread loops in native code: each thread's mask read, compared and written
 * (pool_pass) or read and compared (survey) without a Python set built per call. bind.py's
 * _pool_loop and _survey_pool say what each answer is for; their pure-Python paths give the same
 * answers and run where this is not built (tests/host/test_affinity_native.py runs both).
 *
 * Plain C99 on Linux's sched_getaffinity/sched_setaffinity. Masks are cpu_set_t buffers of the
 * size the kernel accepts (found once); a mask read is handed back as a frozenset of CPU numbers,
 * built once per run of equal masks (a process has a handful of distinct ones). */

#define _GNU_SOURCE
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <sched.h>
#include <string.h>

static size_t mask_size; /* bytes of a cpu_set_t the kernel accepts; 0 until found */

/* the smallest buffer sched_getaffinity fills (the kernel refuses one below its CPU count) */
static int find_size(void)
{
    size_t size;
    if (mask_size)
        return 0;
    for (size = 128; size <= (1 << 16); size *= 2) {
        cpu_set_t *buf = CPU_ALLOC(size * 8);
        int rc;
        if (buf == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        rc = sched_getaffinity(0, size, buf);
        CPU_FREE(buf);
        if (rc == 0) {
            mask_size = size;
            return 0;
        }
        if (errno != EINVAL)
            break;
    }
    PyErr_SetFromErrno(PyExc_OSError);
    return -1;
}

/* `want`, an iterable of CPU numbers, into buf (zeroed first); ValueError for a CPU outside it */
static int encode(PyObject *want, cpu_set_t *buf)
{
    PyObject *it = PyObject_GetIter(want), *item;
    CPU_ZERO_S(mask_size, buf);
    if (it == NULL)
        return -1;
    while ((item = PyIter_Next(it)) != NULL) {
        long cpu = PyLong_AsLong(item);
        Py_DECREF(item);
        if (cpu == -1 && PyErr_Occurred())
            break;
        if (cpu < 0 || (size_t)cpu >= mask_size * 8) {
            PyErr_SetString(PyExc_ValueError, "a CPU number outside the kernel's mask");
            break;
        }
        CPU_SET_S((size_t)cpu, mask_size, buf);
    }
    Py_DECREF(it);
    return PyErr_Occurred() ? -1 : 0;
}

static PyObject *decode(const cpu_set_t *buf)
{
    PyObject *cpus = PyList_New(0), *out;
    size_t cpu;
    if (cpus == NULL)
        return NULL;
    for (cpu = 0; cpu < mask_size * 8; cpu++) {
        if (CPU_ISSET_S(cpu, mask_size, buf)) {
            PyObject *n = PyLong_FromSize_t(cpu);
            if (n == NULL || PyList_Append(cpus, n) < 0) {
                Py_XDECREF(n);
                Py_DECREF(cpus);
                return NULL;
            }
            Py_DECREF(n);
        }
    }
    out = PyFrozenSet_New(cpus);
    Py_DECREF(cpus);
    return out;
}

/* a thread id from the list, as os.sched_getaffinity takes it */
static int tid_at(PyObject *tids, Py_ssize_t i, pid_t *tid)
{
    long v = PyLong_AsLong(PyList_GET_ITEM(tids, i));
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (v < 0 || v != (long)(pid_t)v) {
        PyErr_SetString(PyExc_OverflowError, "a thread id out of range");
        return -1;
    }
    *tid = (pid_t)v;
    return 0;
}

/* Buffers for one call: want, the mask read, and the last mask handed back */
struct bufs {
    cpu_set_t *want, *cur, *last;
};

static int bufs_open(struct bufs *b, PyObject *want)
{
    b->want = b->cur = b->last = NULL;
    if (find_size() < 0)
        return -1;
    b->want = CPU_ALLOC(mask_size * 8);
    b->cur = CPU_ALLOC(mask_size * 8);
    b->last = CPU_ALLOC(mask_size * 8);
    if (b->want == NULL || b->cur == NULL || b->last == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    CPU_ZERO_S(mask_size, b->cur);
    CPU_ZERO_S(mask_size, b->last);
    return encode(want, b->want);
}

static void bufs_close(struct bufs *b)
{
    if (b->want)
        CPU_FREE(b->want);
    if (b->cur)
        CPU_FREE(b->cur);
    if (b->last)
        CPU_FREE(b->last);
}

/* -- pool_pass(tids, at, want) -> (written, runs, bad) ------------------------------------- */

static PyObject *pool_pass(PyObject *self, PyObject *args)
{
    PyObject *tids, *want, *written = NULL, *runs = NULL, *out = NULL, *old = NULL;
    Py_ssize_t at, i, bad = -1;
    struct bufs b;
    (void)self;
    if (!PyArg_ParseTuple(args, "O!nO", &PyList_Type, &tids, &at, &want))
        return NULL;
    if (bufs_open(&b, want) < 0)
        goto done;
    written = PyList_New(0);
    runs = PyList_New(0);
    if (written == NULL || runs == NULL)
        goto done;
    for (i = at < 0 ? 0 : at; i < PyList_GET_SIZE(tids); i++) {
        pid_t tid;
        PyObject *n;
        if (tid_at(tids, i, &tid) < 0)
            goto done;
        if (sched_getaffinity(tid, mask_size, b.cur) != 0) {
            bad = i;
            break;
        }
        if (CPU_EQUAL_S(mask_size, b.cur, b.want))
            continue;
        if (sched_setaffinity(tid, mask_size, b.want) != 0) {
            bad = i;
            break;
        }
        if (old == NULL || !CPU_EQUAL_S(mask_size, b.cur, b.last)) {
            /* a new run of equal old masks starts here */
            PyObject *run;
            Py_XDECREF(old);
            old = decode(b.cur);
            if (old == NULL)
                goto done;
            memcpy(b.last, b.cur, mask_size);
            run = Py_BuildValue("(nO)", PyList_GET_SIZE(written), old);
            if (run == NULL || PyList_Append(runs, run) < 0) {
                Py_XDECREF(run);
                goto done;
            }
            Py_DECREF(run);
        }
        n = PyList_GET_ITEM(tids, i);
        if (PyList_Append(written, n) < 0)
            goto done;
    }
    out = Py_BuildValue("(OOn)", written, runs, bad);
done:
    bufs_close(&b);
    Py_XDECREF(old);
    Py_XDECREF(written);
    Py_XDECREF(runs);
    return out;
}

/* -- survey(tids, want) -> (gone, off) ----------------------------------------------------- */

static PyObject *survey(PyObject *self, PyObject *args)
{
    PyObject *tids, *want, *gone = NULL, *off = NULL, *out = NULL, *last = NULL;
    Py_ssize_t i;
    struct bufs b;
    (void)self;
    if (!PyArg_ParseTuple(args, "O!O", &PyList_Type, &tids, &want))
        return NULL;
    if (bufs_open(&b, want) < 0)
        goto done;
    gone = PyList_New(0);
    off = PyList_New(0);
    if (gone == NULL || off == NULL)
        goto done;
    for (i = 0; i < PyList_GET_SIZE(tids); i++) {
        pid_t tid;
        PyObject *pair;
        if (tid_at(tids, i, &tid) < 0)
            goto done;
        if (sched_getaffinity(tid, mask_size, b.cur) != 0) {
            if (errno == ESRCH) { /* exited */
                if (PyList_Append(gone, PyList_GET_ITEM(tids, i)) < 0)
                    goto done;
                continue;
            }
            PyErr_SetFromErrno(PyExc_OSError);
            goto done;
        }
        if (CPU_EQUAL_S(mask_size, b.cur, b.want))
            continue;
        if (last == NULL || !CPU_EQUAL_S(mask_size, b.cur, b.last)) {
            Py_XDECREF(last);
            last = decode(b.cur);
            if (last == NULL)
                goto done;
            memcpy(b.last, b.cur, mask_size);
        }
        pair = Py_BuildValue("(OO)", PyList_GET_ITEM(tids, i), last);
        if (pair == NULL || PyList_Append(off, pair) < 0) {
            Py_XDECREF(pair);
            goto done;
        }
        Py_DECREF(pair);
    }
    out = Py_BuildValue("(OO)", gone, off);
done:
    bufs_close(&b);
    Py_XDECREF(last);
    Py_XDECREF(gone);
    Py_XDECREF(off);
    return out;
}

static PyMethodDef methods[] = {
    {"pool_pass", pool_pass, METH_VARARGS,
     "pool_pass(tids, at, want) -> (written, runs, bad): see bind._pool_loop"},
    {"survey", survey, METH_VARARGS, "survey(tids, want) -> (gone, off): see bind._survey_pool"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_affinityc", "bind's per-thread mask loops in native code", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__affinityc(void)
{
    return PyModule_Create(&module);
}
