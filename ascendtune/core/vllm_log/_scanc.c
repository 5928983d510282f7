/* `log`'s scan of a block in native loops: newlines, the bytes records() removes, and the time
 * stamps judged (ascendtune/core/vllm_log/scan.py says what each answer is for; its pure-Python
 * path gives the same answers and runs where this is not built).
 *
 * Plain C99. A captured log is untrusted input: every read stays inside data[begin:end],
 * nothing recurses, nothing is allocated but the small answers. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

#define MAX_HEADS 16
#define KEY 14 /* `MM-DD HH:MM:SS` */

/* data[begin:end] of a bytes-like object, checked */
static int span(Py_buffer *buf, Py_ssize_t *begin, Py_ssize_t *end)
{
    if (*begin < 0 || *end > buf->len || *begin > *end) {
        PyErr_SetString(PyExc_ValueError, "begin and end must lie within the data");
        return -1;
    }
    return 0;
}

/* The loops over every byte are written so that a compiler vectorizes them (-O2/-O3: 16 or 32
 * bytes a step), over CHUNK bytes at a time so that a verdict is known early. */
#define CHUNK 4096

/* -- newlines(data, begin, end) -> int ------------------------------------------------------ */

static Py_ssize_t count_newlines(const unsigned char *d, Py_ssize_t i, Py_ssize_t end)
{
    Py_ssize_t n = 0;
    while (i < end) {
        /* counted in a byte: 240 bytes at a time, a multiple of any vector width */
        Py_ssize_t j, stop = end - i > 240 ? i + 240 : end;
        unsigned char k = 0;
        for (j = i; j < stop; j++)
            k = (unsigned char)(k + (d[j] == '\n'));
        n += k;
        i = stop;
    }
    return n;
}

static PyObject *newlines(PyObject *self, PyObject *args)
{
    Py_buffer buf;
    Py_ssize_t begin, end, n;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*nn:newlines", &buf, &begin, &end))
        return NULL;
    if (span(&buf, &begin, &end) < 0) {
        PyBuffer_Release(&buf);
        return NULL;
    }
    n = count_newlines((const unsigned char *)buf.buf, begin, end);
    PyBuffer_Release(&buf);
    return PyLong_FromSsize_t(n);
}

/* -- plain(data) -> bool, first_dirty(data, begin, end) -> int ----------------------------- */

/* whether d[i:stop] holds a byte records() removes (records.DIRTY: below a space but tab and
 * newline, and DEL), or (or_high) one past ASCII; a byte below a space or from DEL up is one
 * subtraction and one comparison */
static int any_dirty(const unsigned char *d, Py_ssize_t i, Py_ssize_t stop, int or_high)
{
    unsigned char bad = 0;
    if (or_high) {
        for (; i < stop; i++) {
            unsigned char c = d[i];
            bad |= ((unsigned char)(c - 0x20) >= 0x5f) & (c != '\t') & (c != '\n');
        }
    } else {
        for (; i < stop; i++) {
            unsigned char c = d[i];
            bad |= ((unsigned char)(c - 0x20) >= 0x5f) & (c < 0x80) & (c != '\t') & (c != '\n');
        }
    }
    return bad != 0;
}

static PyObject *plain(PyObject *self, PyObject *args)
{
    Py_buffer buf;
    Py_ssize_t i;
    int bad = 0;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*:plain", &buf))
        return NULL;
    for (i = 0; i < buf.len && !bad; i += CHUNK)
        bad = any_dirty(buf.buf, i, buf.len - i > CHUNK ? i + CHUNK : buf.len, 1);
    PyBuffer_Release(&buf);
    return PyBool_FromLong(!bad);
}

static PyObject *first_dirty(PyObject *self, PyObject *args)
{
    Py_buffer buf;
    Py_ssize_t begin, end, i, found = -1;
    const unsigned char *d;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*nn:first_dirty", &buf, &begin, &end))
        return NULL;
    if (span(&buf, &begin, &end) < 0) {
        PyBuffer_Release(&buf);
        return NULL;
    }
    d = buf.buf;
    for (i = begin; i < end && found < 0; i += 64) {
        Py_ssize_t j, stop = end - i > 64 ? i + 64 : end;
        if (!any_dirty(d, i, stop, 0))
            continue;
        for (j = i; j < stop && found < 0; j++)
            if (any_dirty(d, j, j + 1, 0))
                found = j;
    }
    PyBuffer_Release(&buf);
    return PyLong_FromSsize_t(found);
}

/* -- stamps(data, begin, end, heads, start, back_s) -> (verdict, top) ---------------------- */

static int is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

static int two(const unsigned char *p)
{
    return (p[0] - '0') * 10 + (p[1] - '0');
}

/* the form of the stamp at p (room bytes left): 1 a `MM-DD HH:MM:SS` whose bytes sort as its
 * time (scan._VALID), 2 a stamp of another form (scan._OTHER: a field out of range, or
 * `YYYY-MM-DD[ T]HH:MM:SS`), 0 none */
static int stamp_at(const unsigned char *p, Py_ssize_t room)
{
    if (room >= KEY && is_digit(p[0]) && is_digit(p[1]) && p[2] == '-' && is_digit(p[3]) &&
        is_digit(p[4]) && p[5] == ' ' && is_digit(p[6]) && is_digit(p[7]) && p[8] == ':' &&
        is_digit(p[9]) && is_digit(p[10]) && p[11] == ':' && is_digit(p[12]) &&
        is_digit(p[13])) {
        int hour_ok = p[6] < '2' || (p[6] == '2' && p[7] <= '3');
        return hour_ok && p[9] <= '5' && p[12] <= '5' ? 1 : 2;
    }
    if (room >= 19 && is_digit(p[0]) && is_digit(p[1]) && is_digit(p[2]) && is_digit(p[3]) &&
        p[4] == '-' && is_digit(p[5]) && is_digit(p[6]) && p[7] == '-' && is_digit(p[8]) &&
        is_digit(p[9]) && (p[10] == ' ' || p[10] == 'T') && is_digit(p[11]) &&
        is_digit(p[12]) && p[13] == ':' && is_digit(p[14]) && is_digit(p[15]) && p[16] == ':' &&
        is_digit(p[17]) && is_digit(p[18]))
        return 2;
    return 0;
}

/* whether the clock goes back by more than back_s from key top to key k (as
 * records.stamp_seconds reads them: the month, then the seconds since the month's start) */
static int goes_back(const unsigned char *top, const unsigned char *k, long back_s)
{
    long tm = two(top), km = two(k);
    long ts = ((two(top + 3) * 24L + two(top + 6)) * 60 + two(top + 9)) * 60 + two(top + 12);
    long ks = ((two(k + 3) * 24L + two(k + 6)) * 60 + two(k + 9)) * 60 + two(k + 12);
    return tm > km || (tm == km && ts - back_s > ks);
}

typedef struct {
    const unsigned char *s;
    Py_ssize_t n;
} Head;

/* the form of the stamp at d[s:end] if one of heads ends right before it, at or after begin */
static int headed_stamp(const unsigned char *d, Py_ssize_t begin, Py_ssize_t end, Py_ssize_t s,
                        const Head *heads, int n_heads)
{
    int k, form;
    if (s < begin || (form = stamp_at(d + s, end - s)) == 0)
        return 0;
    for (k = 0; k < n_heads; k++)
        if (heads[k].n <= s - begin && memcmp(d + s - heads[k].n, heads[k].s, (size_t)heads[k].n) == 0)
            return form;
    return 0;
}

/* Every stamp a level head introduces in d[begin:end], in order, found from the '-' each holds
 * (a `MM-DD` or `YYYY-MM-DD` right after a head; no two heads overlap, so each stamp is one
 * scan._WINDOWED_RE finds at its head's mark), judged as scan._judged does. */
static PyObject *stamps(PyObject *self, PyObject *args)
{
    Py_buffer buf;
    Py_ssize_t begin, end, at, n_heads, k;
    PyObject *head_tuple, *start, *out = NULL;
    const unsigned char *d, *run = NULL, *top = NULL;
    Head heads[MAX_HEADS];
    int verdict = 0, refuse_any = 0;
    long back_s;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*nnO!Ol:stamps", &buf, &begin, &end, &PyTuple_Type,
                          &head_tuple, &start, &back_s))
        return NULL;
    if (span(&buf, &begin, &end) < 0)
        goto done;
    n_heads = PyTuple_GET_SIZE(head_tuple);
    if (n_heads > MAX_HEADS) {
        PyErr_SetString(PyExc_ValueError, "too many heads");
        goto done;
    }
    for (k = 0; k < n_heads; k++) {
        PyObject *b = PyTuple_GET_ITEM(head_tuple, k);
        if (!PyBytes_Check(b)) {
            PyErr_SetString(PyExc_TypeError, "heads must be bytes");
            goto done;
        }
        heads[k].s = (const unsigned char *)PyBytes_AS_STRING(b);
        heads[k].n = PyBytes_GET_SIZE(b);
    }
    /* the clock the block's first stamp is judged against: None, that stamp itself; b"", a
     * clock no `MM-DD HH:MM:SS` says (any stamp refuses); else that key */
    if (PyBytes_Check(start) && PyBytes_GET_SIZE(start) == 0)
        refuse_any = 1;
    else if (PyBytes_Check(start) && PyBytes_GET_SIZE(start) == KEY &&
             stamp_at((const unsigned char *)PyBytes_AS_STRING(start), KEY) == 1)
        run = (const unsigned char *)PyBytes_AS_STRING(start);
    else if (start != Py_None) {
        PyErr_SetString(PyExc_ValueError, "start must be None, b'' or a valid MM-DD HH:MM:SS");
        goto done;
    }
    d = buf.buf;
    for (at = begin; at < end && verdict >= 0; at++) {
        const unsigned char *dash = memchr(d + at, '-', (size_t)(end - at));
        Py_ssize_t s;
        int form;
        if (dash == NULL)
            break;
        at = dash - d;
        s = at - 2; /* MM-DD */
        form = headed_stamp(d, begin, end, s, heads, (int)n_heads);
        if (form == 0) {
            s = at - 4; /* YYYY-MM-DD */
            form = headed_stamp(d, begin, end, s, heads, (int)n_heads);
        }
        if (form == 0)
            continue;
        if (form == 2 || refuse_any) {
            verdict = -1;
            break;
        }
        if (run == NULL || memcmp(d + s, run, KEY) >= 0)
            run = d + s;
        else if (goes_back(run, d + s, back_s))
            verdict = -1;
        if (top == NULL || memcmp(d + s, top, KEY) > 0)
            top = d + s;
        if (verdict == 0)
            verdict = 1;
    }
    if (verdict == 1)
        out = Py_BuildValue("(iy#)", verdict, (const char *)top, (Py_ssize_t)KEY);
    else
        out = Py_BuildValue("(iO)", verdict, Py_None);
done:
    PyBuffer_Release(&buf);
    return out;
}

static PyMethodDef methods[] = {
    {"newlines", newlines, METH_VARARGS, "newlines(data, begin, end): data.count(b'\\n', begin, end)"},
    {"plain", plain, METH_VARARGS, "plain(data): ASCII with none of the bytes records() removes"},
    {"first_dirty", first_dirty, METH_VARARGS,
     "first_dirty(data, begin, end): where the first byte records() removes is (-1: none)"},
    {"stamps", stamps, METH_VARARGS,
     "stamps(data, begin, end, heads, start, back_s) -> (verdict, top): see scan.py"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_scanc", "log's block scan in native loops", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__scanc(void)
{
    return PyModule_Create(&module);
}
