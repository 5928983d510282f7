/* An archive's plain members in native code, read and written. Read: archive.open_archive hands it the inflated
 * tar stream's buffer and takes the run of members that follows as far as each is the plain
 * kind `ascendtune snapshot` writes (a ustar header with an ASCII name, an octal size and an
 * exact checksum; a regular file, or a symbolic link), kept in open_archive's dicts with
 * open_archive's own checks. It stops, before the member, at anything else: the end marker, a
 * PAX or GNU header, a prefix, a name that is not already as MemRoot keys it or holds "..", a
 * member past a cap, a header or data not whole in the buffer. open_archive's Python then reads
 * that member, and decides (tests/host/test_archive_native.py reads archives both ways).
 * Written (pack): the members of a snapshot's tar as snapshot._tar_pieces writes them, byte for
 * byte, up to one whose name or link target is not plain ASCII, which the Python writes. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdio.h>
#include <string.h>

#define BLOCK 512

/* A tar number field as int(field.split(b"\0", 1)[0], 8) reads it, for the plain form only:
 * spaces, octal digits, spaces. -1 for anything else (Python decides). */
static long long octal(const unsigned char *field, size_t len)
{
    size_t i = 0, end = 0;
    long long n = 0;
    int digits = 0;
    while (end < len && field[end])
        end++;
    while (i < end && field[i] == ' ')
        i++;
    for (; i < end && field[i] >= '0' && field[i] <= '7'; i++, digits++) {
        if (digits >= 21)
            return -1;
        n = n * 8 + (field[i] - '0');
    }
    while (i < end && field[i] == ' ')
        i++;
    return i == end && digits ? n : -1;
}

/* The text of a name field (up to its first NUL, within len) when it is ASCII with no NUL
 * before its end of field: a new str; NULL with no exception set for anything else. */
static PyObject *ascii_field(const unsigned char *field, size_t len, size_t *got)
{
    size_t n = 0;
    while (n < len && field[n]) {
        if (field[n] > 127)
            return NULL;
        n++;
    }
    *got = n;
    return PyUnicode_FromStringAndSize((const char *)field, (Py_ssize_t)n);
}

/* A name open_archive keeps as it is: what name.lstrip("./") leaves is not empty, holds no
 * ".." (as a component or not: a stop, never a decision), and is as MemRoot keys it (no "//",
 * no "/.", no trailing "/"). The offset of what lstrip leaves, or -1. */
static Py_ssize_t plain_name(const char *name, size_t len)
{
    size_t start = 0;
    while (start < len && (name[start] == '.' || name[start] == '/'))
        start++;
    if (start == len || name[len - 1] == '/')
        return -1;
    for (size_t i = start; i + 1 < len; i++)
        if ((name[i] == '/' && (name[i + 1] == '/' || name[i + 1] == '.')) ||
            (name[i] == '.' && name[i + 1] == '.'))
            return -1;
    return (Py_ssize_t)start;
}

/* members(buf, pos, files, links, names, max_members, max_file, kept, kept_cap, text_per_member)
 * -> (pos, kept): the plain members from pos on, each name appended to names and its text
 * (decoded UTF-8, errors replaced) or link target put in files or links, as open_archive does;
 * pos and kept where it stopped. A file is taken while kept + its size stays within
 * kept_cap + text_per_member * len(names), as open_archive bounds it; max_members, max_file
 * as there. */
static PyObject *members(PyObject *self, PyObject *args)
{
    Py_buffer view;
    PyObject *files, *links, *names;
    Py_ssize_t pos, max_members, max_file, kept, kept_cap, per_member;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*nO!O!O!nnnnn", &view, &pos, &PyDict_Type, &files,
                          &PyDict_Type, &links, &PyList_Type, &names, &max_members, &max_file,
                          &kept, &kept_cap, &per_member))
        return NULL;
    const unsigned char *buf = view.buf;
    Py_ssize_t len = view.len;
    if (pos < 0)
        pos = len;
    while (pos + BLOCK <= len) {
        const unsigned char *h = buf + pos;
        unsigned char kind = h[156];
        long long want, size, sum = 0;
        Py_ssize_t start, whole = 0, count = PyList_GET_SIZE(names);
        size_t name_len, link_len = 0;
        PyObject *name_obj, *key, *value;
        int err;
        if (kind != '0' && kind != '2')
            break; /* the end marker, a folder, a PAX or GNU header, ...: Python's */
        if (memcmp(h + 257, "ustar\0", 6) != 0 || h[345] != 0)
            break; /* not ustar, or a prefix */
        want = octal(h + 148, 8);
        size = octal(h + 124, 12);
        if (want < 0 || size < 0)
            break;
        for (int i = 0; i < BLOCK; i++)
            sum += (i >= 148 && i < 156) ? ' ' : h[i];
        if (sum != want)
            break; /* a signed sum, a damaged header: Python's */
        if (count >= max_members)
            break;
        if (kind == '0') {
            if (size > max_file || kept + size > kept_cap + per_member * (count + 1))
                break;
            whole = (Py_ssize_t)(size + (-size & (BLOCK - 1)));
            if (pos + BLOCK + whole > len)
                break; /* the data runs past the buffer: Python takes it */
        } else if (h[157]) {
            for (link_len = 0; link_len < 100 && h[157 + link_len]; link_len++)
                if (h[157 + link_len] > 127)
                    break;
            if (link_len < 100 && h[157 + link_len])
                break; /* a target no ASCII */
        }
        name_obj = ascii_field(h, 100, &name_len);
        if (name_obj == NULL) {
            if (PyErr_Occurred())
                goto fail;
            break;
        }
        start = plain_name((const char *)h, name_len);
        if (start < 0) {
            Py_DECREF(name_obj);
            break;
        }
        key = start ? PyUnicode_Substring(name_obj, start, (Py_ssize_t)name_len) : name_obj;
        if (start) {
            Py_DECREF(name_obj);
            if (key == NULL)
                goto fail;
        }
        if (kind == '0')
            value = PyUnicode_DecodeUTF8((const char *)h + BLOCK, (Py_ssize_t)size, "replace");
        else
            value = PyUnicode_FromStringAndSize((const char *)h + 157, (Py_ssize_t)link_len);
        if (value == NULL) {
            Py_DECREF(key);
            goto fail;
        }
        err = PyList_Append(names, key) < 0 ||
              PyDict_SetItem(kind == '0' ? files : links, key, value) < 0;
        Py_DECREF(key);
        Py_DECREF(value);
        if (err)
            goto fail;
        if (kind == '0') {
            kept += (Py_ssize_t)size;
            pos += BLOCK + whole;
        } else {
            pos += BLOCK; /* a link's data, if any, is not skipped: as open_archive reads it */
        }
    }
    PyBuffer_Release(&view);
    return Py_BuildValue("nn", pos, kept);
fail:
    PyBuffer_Release(&view);
    return NULL;
}

/* One member's ustar header as snapshot._header writes it for a plain member (mode 0600 for a
 * file, 0644 for a link; uid, gid and mtime 0, owner root:root, no prefix). */
static void ustar_header(unsigned char *h, const char *name, Py_ssize_t name_len, char kind,
                         long long size, const char *link, Py_ssize_t link_len)
{
    long sum = 0;
    memset(h, 0, BLOCK);
    memcpy(h, name, (size_t)name_len);
    memcpy(h + 100, kind == '0' ? "0000600" : "0000644", 8);
    memcpy(h + 108, "0000000", 8);
    memcpy(h + 116, "0000000", 8);
    snprintf((char *)h + 124, 12, "%011llo", size);
    memcpy(h + 136, "00000000000", 12);
    memset(h + 148, ' ', 8);
    h[156] = (unsigned char)kind;
    memcpy(h + 157, link, (size_t)link_len);
    memcpy(h + 257, "ustar\0" "00", 8);
    memcpy(h + 265, "root", 4);
    memcpy(h + 297, "root", 4);
    for (int i = 0; i < BLOCK; i++)
        sum += h[i];
    snprintf((char *)h + 148, 7, "%06lo", sum);
    h[155] = ' ';
}

/* An ASCII str's bytes and length when it has at most 100 characters; NULL otherwise. */
static const char *short_ascii(PyObject *s, Py_ssize_t *len)
{
    if (!PyUnicode_Check(s) || !PyUnicode_IS_ASCII(s) || PyUnicode_GET_LENGTH(s) > 100)
        return NULL;
    *len = PyUnicode_GET_LENGTH(s);
    return (const char *)PyUnicode_DATA(s);
}

/* pack(rels, start, files, links, room) -> (bytes, next): the tar of the members rels[start:]
 * (a link where links has the name, else the file's text as UTF-8), each as snapshot's
 * _tar_pieces writes it, up to the first whose name or target is no ASCII of at most 100
 * characters (next: its index, for the Python to write), or until room bytes or more are
 * made (next: the member after the one that filled it). */
static PyObject *pack(PyObject *self, PyObject *args)
{
    PyObject *rels, *files, *links, *out = NULL;
    Py_ssize_t start, room, n, i, used = 0, cap = 1 << 16;
    char *buf;
    (void)self;
    if (!PyArg_ParseTuple(args, "O!nO!O!n", &PyList_Type, &rels, &start, &PyDict_Type, &files,
                          &PyDict_Type, &links, &room))
        return NULL;
    buf = PyMem_Malloc((size_t)cap);
    if (buf == NULL)
        return PyErr_NoMemory();
    n = PyList_GET_SIZE(rels);
    for (i = start < 0 ? n : start; i < n && used < room; i++) {
        PyObject *rel = PyList_GET_ITEM(rels, i), *target, *text;
        const char *name, *link = "", *data = NULL;
        Py_ssize_t name_len, link_len = 0, size = 0, need;
        char kind = '0';
        name = short_ascii(rel, &name_len);
        if (name == NULL)
            break;
        target = PyDict_GetItemWithError(links, rel);
        if (target == NULL && PyErr_Occurred())
            goto fail;
        if (target != NULL && target != Py_None) {
            kind = '2';
            link = short_ascii(target, &link_len);
            if (link == NULL)
                break;
        } else {
            text = PyDict_GetItemWithError(files, rel);
            if (text == NULL) {
                if (!PyErr_Occurred())
                    PyErr_SetObject(PyExc_KeyError, rel);
                goto fail;
            }
            if (!PyUnicode_Check(text)) {
                PyErr_SetString(PyExc_TypeError, "a file's text is not a str");
                goto fail;
            }
            data = PyUnicode_AsUTF8AndSize(text, &size); /* a surrogate raises, as encode() */
            if (data == NULL)
                goto fail;
            if ((long long)size >= (1LL << 33))
                break;
        }
        need = BLOCK + size + (-size & (BLOCK - 1));
        if (used + need > cap) {
            char *grown;
            while (used + need > cap)
                cap *= 2;
            grown = PyMem_Realloc(buf, (size_t)cap);
            if (grown == NULL) {
                PyErr_NoMemory();
                goto fail;
            }
            buf = grown;
        }
        ustar_header((unsigned char *)buf + used, name, name_len, kind, size, link, link_len);
        memcpy(buf + used + BLOCK, data ? data : "", (size_t)size);
        memset(buf + used + BLOCK + size, 0, (size_t)(need - BLOCK - size));
        used += need;
    }
    out = Py_BuildValue("y#n", buf, used, i);
fail:
    PyMem_Free(buf);
    return out;
}

static PyMethodDef methods[] = {
    {"pack", pack, METH_VARARGS,
     "pack(rels, start, files, links, room) -> (bytes, next): see snapshot._tar_pieces"},
    {"members", members, METH_VARARGS,
     "members(buf, pos, files, links, names, max_members, max_file, kept, kept_cap, "
     "text_per_member) -> (pos, kept): see archive.open_archive"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_tarc", "an archive's plain members read in native code", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__tarc(void)
{
    return PyModule_Create(&module);
}
