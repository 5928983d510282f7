/* A sysroot folder's common reads in native code: the plain regular files of one folder
 * (texts: a CPU's topology files) and, for each entry of a folder, one small file and the
 * targets of the links in one sub-folder (children: proc/PID/comm and proc/PID/fd of every
 * process doctor scans). walker.py's _OpenFolder._plain_texts and DirRoot.read_children say
 * what each answer is; their pure-Python paths give the same answers and run where this is
 * not built (tests/host/test_walk_native.py runs both).
 *
 * The same bounds as the Python: every folder is opened with O_NOFOLLOW | O_DIRECTORY (a
 * link is never followed, ELOOP), a file is stat'ed before it is opened and opened only when
 * it is a regular file under the size cap (never a FIFO or a device), with O_NOFOLLOW |
 * O_NONBLOCK, and read in one read of its size + 1 (one that has grown is not answered here).
 * Whatever is unusual (a link, an error other than absence, a file past the cap) is answered
 * with True: "ask the root by its path", whose closed-world walk decides. */

#define _GNU_SOURCE
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifdef SYS_openat2
#include <linux/openat2.h>
#endif

#define DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
#define FILE_FLAGS (O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
#define SMALL 4096 /* files this short are read into the stack */

static int openat2_broken; /* openat2 refused (ENOSYS, a seccomp filter): never tried again */

static int retry_open(int at, const char *name, int flags)
{
    int fd;
    do
        fd = openat(at, name, flags);
    while (fd < 0 && errno == EINTR);
    return fd;
}

/* A name the Python path would take as one plain component: no "/", not "", ".", "..". */
static int plain(const char *name)
{
    return name[0] && !strchr(name, '/') && strcmp(name, ".") && strcmp(name, "..");
}

/* Open the folder `under` (plain components joined by "/"; else EINVAL) below `at`: one openat2 that
 * refuses any link on the way and anything leaving `at` (RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH),
 * else component by component with O_NOFOLLOW. -1 with errno set on failure (the component
 * walk's errno: ELOOP for a link, ENOENT for an absent folder). */
static int open_under(int at, const char *under)
{
    char part[NAME_MAX + 1];
    const char *p = under;
    int fd = at, next;
    for (const char *q = under;;) { /* "", ".", ".." as a component: not a plain walk */
        const char *slash = strchr(q, '/');
        size_t len = slash ? (size_t)(slash - q) : strlen(q);
        if (len == 0 || (q[0] == '.' && (len == 1 || (len == 2 && q[1] == '.')))) {
            errno = EINVAL;
            return -1;
        }
        if (!slash)
            break;
        q = slash + 1;
    }
#ifdef SYS_openat2
    if (!openat2_broken) {
        /* one system call instead of an open and a close per folder on the way */
        struct open_how how = {
            .flags = DIR_FLAGS,
            .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
        };
        long got;
        do
            got = syscall(SYS_openat2, at, under, &how, sizeof how);
        while (got < 0 && errno == EINTR);
        if (got >= 0)
            return (int)got;
        if (errno == ENOENT)
            return -1; /* the walk stops at the first link (ELOOP), so no link led here: an
                        * entry on the way is absent, as the component walk would find */
        if (errno == ENOSYS || errno == EPERM)
            openat2_broken = 1;
        /* any other failure: the component walk below decides, and says why */
    }
#endif
    while (*p) {
        const char *slash = strchr(p, '/');
        size_t len = slash ? (size_t)(slash - p) : strlen(p);
        if (len == 0 || len > NAME_MAX) {
            errno = len ? ENAMETOOLONG : EINVAL;
            goto fail;
        }
        memcpy(part, p, len);
        part[len] = 0;
        if (!plain(part)) {
            errno = EINVAL;
            goto fail;
        }
        next = retry_open(fd, part, DIR_FLAGS);
        if (next < 0)
            goto fail;
        if (fd != at)
            close(fd);
        fd = next;
        p += len + (slash != NULL);
    }
    if (fd == at) {
        errno = EINVAL;
        return -1;
    }
    return fd;
fail:
    if (fd != at) {
        int saved = errno;
        close(fd);
        errno = saved;
    }
    return -1;
}

/* What absence answers in small_file: True (ask by path) wherever, None where the stat finds
 * none (as _OpenFolder.read_text), or None also where the file goes between stat and open (as
 * DirRoot.read_children) */
enum { ABSENT_BY_PATH = 0, ABSENT_AT_STAT = 1, ABSENT_ANYWHERE = 2 };

/* What one small file of the folder `at` holds, as Python's read answers it:
 * a str (decoded UTF-8, errors replaced), Py_None when absent (as `absent` says; else True),
 * "" when a regular file is shorter than skip_below, or Py_True: ask by path.
 * NULL with an exception set on a failed allocation. */
static PyObject *small_file(int at, const char *name, Py_ssize_t cap, Py_ssize_t skip_below,
                            int absent)
{
    struct stat st;
    char small[SMALL + 1], *buf = small;
    ssize_t got;
    int fd;
    PyObject *text;
    if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        if (errno == ENOENT && absent != ABSENT_BY_PATH)
            Py_RETURN_NONE;
        Py_RETURN_TRUE;
    }
    if (!S_ISREG(st.st_mode))
        Py_RETURN_TRUE;
    if (st.st_size < skip_below)
        return PyUnicode_FromStringAndSize("", 0);
    if (st.st_size >= cap)
        Py_RETURN_TRUE;
    fd = retry_open(at, name, FILE_FLAGS);
    if (fd < 0) {
        if (errno == ENOENT && absent == ABSENT_ANYWHERE)
            Py_RETURN_NONE; /* removed since the stat */
        Py_RETURN_TRUE;
    }
    if (st.st_size >= SMALL) {
        buf = PyMem_Malloc((size_t)st.st_size + 1);
        if (buf == NULL) {
            close(fd);
            return PyErr_NoMemory();
        }
    }
    do
        got = read(fd, buf, (size_t)st.st_size + 1);
    while (got < 0 && errno == EINTR);
    close(fd);
    if (got < 0 || got > st.st_size)
        text = Py_NewRef(Py_True); /* unreadable, or grown since the stat: the full read */
    else
        text = PyUnicode_DecodeUTF8(buf, got, "replace");
    if (buf != small)
        PyMem_Free(buf);
    return text;
}

/* texts(dir_fd, under, names, cap, absent=0) -> list of str | True (True: ask the root by
 * its path; None for a file the stat finds absent, where `absent`), or -1 when a folder of
 * `under` is absent, -2 when it is a link, "", ".", ".." or cannot be opened. */
static PyObject *texts(PyObject *self, PyObject *args)
{
    int at, fd, absent = 0;
    const char *under;
    PyObject *names, *out;
    Py_ssize_t cap, n, i;
    (void)self;
    if (!PyArg_ParseTuple(args, "isO!n|p", &at, &under, &PyTuple_Type, &names, &cap, &absent))
        return NULL;
    if (under[0]) {
        fd = open_under(at, under);
        if (fd < 0)
            return PyLong_FromLong(errno == ENOENT ? -1 : -2);
    } else {
        fd = at;
    }
    n = PyTuple_GET_SIZE(names);
    out = PyList_New(n);
    if (out == NULL)
        goto done;
    for (i = 0; i < n; i++) {
        PyObject *bytes = NULL, *text;
        if (!PyUnicode_FSConverter(PyTuple_GET_ITEM(names, i), &bytes)) {
            Py_CLEAR(out);
            goto done;
        }
        text = plain(PyBytes_AS_STRING(bytes))
                   ? small_file(fd, PyBytes_AS_STRING(bytes), cap, 0,
                                absent ? ABSENT_AT_STAT : ABSENT_BY_PATH)
                   : Py_NewRef(Py_True);
        Py_DECREF(bytes);
        if (text == NULL) {
            Py_CLEAR(out);
            goto done;
        }
        PyList_SET_ITEM(out, i, text);
    }
done:
    if (fd != at)
        close(fd);
    return out;
}

/* files(top_fd, rels, cap) -> list of str | None | True, one for each path of rels (relative to
 * the folder top_fd): DirRoot.read_files in one call. A path's folder is opened with open_under
 * (one openat2) and kept for the paths after it in the same folder; a file in it is small_file's
 * (None where the stat finds none), None for every file of an absent folder, True (ask the root
 * by its path) for a folder that is a link or no plain path, and for a path with no folder. */
static PyObject *files(PyObject *self, PyObject *args)
{
    int top, fd = -1, folder_errno = 0;
    PyObject *rels, *out = NULL, *folder = NULL; /* folder: the bytes of the open one's path */
    Py_ssize_t cap, n, i;
    (void)self;
    if (!PyArg_ParseTuple(args, "iO!n", &top, &PyList_Type, &rels, &cap))
        return NULL;
    n = PyList_GET_SIZE(rels);
    out = PyList_New(n);
    if (out == NULL)
        return NULL;
    for (i = 0; i < n; i++) {
        PyObject *bytes = NULL, *text;
        const char *rel, *slash;
        Py_ssize_t cut;
        if ((i & 1023) == 1023) { /* as children(): other threads run, Ctrl-C stops it */
            Py_BEGIN_ALLOW_THREADS
            Py_END_ALLOW_THREADS
            if (PyErr_CheckSignals() < 0)
                goto fail;
        }
        if (!PyUnicode_FSConverter(PyList_GET_ITEM(rels, i), &bytes))
            goto fail;
        rel = PyBytes_AS_STRING(bytes);
        slash = strrchr(rel, '/');
        if (slash == NULL || slash == rel || !plain(slash + 1)) {
            Py_DECREF(bytes);
            PyList_SET_ITEM(out, i, Py_NewRef(Py_True));
            continue;
        }
        cut = slash - rel;
        if (folder == NULL || PyBytes_GET_SIZE(folder) != cut ||
            memcmp(PyBytes_AS_STRING(folder), rel, (size_t)cut) != 0) {
            if (fd >= 0)
                close(fd);
            Py_XDECREF(folder);
            folder = PyBytes_FromStringAndSize(rel, cut);
            if (folder == NULL) {
                fd = -1;
                Py_DECREF(bytes);
                goto fail;
            }
            fd = open_under(top, PyBytes_AS_STRING(folder));
            folder_errno = fd < 0 ? errno : 0;
        }
        if (fd >= 0)
            text = small_file(fd, slash + 1, cap, 0, ABSENT_AT_STAT);
        else /* absent folder: absent file; a link, "..", a file on the way: by its path */
            text = Py_NewRef(folder_errno == ENOENT ? Py_None : Py_True);
        Py_DECREF(bytes);
        if (text == NULL)
            goto fail;
        PyList_SET_ITEM(out, i, text);
    }
    goto done;
fail:
    Py_CLEAR(out);
done:
    if (fd >= 0)
        close(fd);
    Py_XDECREF(folder);
    return out;
}

/* Linux's directory entry as getdents64 returns it */
struct dirent64_linux {
    unsigned long long d_ino;
    long long d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

#define ENTRIES_BUF 32768 /* getdents64's buffer: one per children() call */

/* The names in the open folder fd, sorted (as sorted(os.listdir)); Py_None when it cannot be
 * listed; NULL with an exception set on a failed allocation. fd stays open. */
static PyObject *sorted_names(int fd, char *entries_buf)
{
    PyObject *entries = PyList_New(0);
    if (entries == NULL)
        return NULL;
    for (;;) {
        long got, pos;
        do
            got = syscall(SYS_getdents64, fd, entries_buf, ENTRIES_BUF);
        while (got < 0 && errno == EINTR);
        if (got < 0) { /* a listing that fails part way: None, as os.listdir's OSError */
            Py_DECREF(entries);
            Py_RETURN_NONE;
        }
        if (got == 0)
            break;
        for (pos = 0; pos < got;) {
            struct dirent64_linux *ent = (struct dirent64_linux *)(entries_buf + pos);
            PyObject *name;
            pos += ent->d_reclen;
            if (!strcmp(ent->d_name, ".") || !strcmp(ent->d_name, ".."))
                continue;
            name = PyUnicode_DecodeFSDefault(ent->d_name);
            if (name == NULL || PyList_Append(entries, name) < 0) {
                Py_XDECREF(name);
                Py_DECREF(entries);
                return NULL;
            }
            Py_DECREF(name);
        }
    }
    if (PyList_Sort(entries) < 0) { /* str order, as sorted() of os.listdir's names */
        Py_DECREF(entries);
        return NULL;
    }
    return entries;
}

/* The targets of the links in the open folder fd, by sorted name (as sorted(os.listdir)):
 * a list, or Py_None when it cannot be listed. Closes fd. The folder is listed with
 * getdents64 itself into entries_buf (ENTRIES_BUF bytes): opendir would add an fstat and two
 * fcntl calls per folder. */
static PyObject *link_targets(int fd, char *entries_buf)
{
    PyObject *entries, *out = NULL;
    Py_ssize_t i, n;
    char target[PATH_MAX];
    entries = sorted_names(fd, entries_buf);
    if (entries == NULL || entries == Py_None) {
        out = entries; /* None: unlistable; NULL: the exception stands */
        entries = NULL;
        goto done;
    }
    out = PyList_New(0);
    if (out == NULL)
        goto done;
    n = PyList_GET_SIZE(entries);
    for (i = 0; i < n; i++) {
        PyObject *bytes = NULL, *got;
        ssize_t len;
        if (!PyUnicode_FSConverter(PyList_GET_ITEM(entries, i), &bytes)) {
            Py_CLEAR(out);
            goto done;
        }
        /* as os.readlink: at most PATH_MAX bytes of the target */
        len = readlinkat(fd, PyBytes_AS_STRING(bytes), target, sizeof target);
        Py_DECREF(bytes);
        if (len < 0)
            continue; /* closed meanwhile, or not a link */
        got = PyUnicode_DecodeFSDefaultAndSize(target, len);
        if (got == NULL || PyList_Append(out, got) < 0) {
            Py_XDECREF(got);
            Py_CLEAR(out);
            goto done;
        }
        Py_DECREF(got);
    }
done:
    Py_XDECREF(entries);
    close(fd);
    return out;
}

/* children(top_fd, names, file, links, skip_below, cap) -> list of (text, targets), one for
 * each name: text as small_file answers (None when file is None), targets a list of link
 * targets, None when absent or unlistable, True: ask the root by its path. An entry that is
 * not a plain folder (absent: (None, None)) answers (True, True). */
static PyObject *children(PyObject *self, PyObject *args)
{
    int top;
    PyObject *names, *file_obj, *out = NULL, *file_bytes = NULL;
    const char *file = NULL, *links;
    char *entries_buf = NULL;
    Py_ssize_t skip_below, cap, n, i;
    (void)self;
    if (!PyArg_ParseTuple(args, "iO!Osnn", &top, &PyList_Type, &names, &file_obj, &links,
                          &skip_below, &cap))
        return NULL;
    if (file_obj != Py_None) {
        if (!PyUnicode_FSConverter(file_obj, &file_bytes))
            return NULL;
        file = PyBytes_AS_STRING(file_bytes);
    }
    entries_buf = PyMem_Malloc(ENTRIES_BUF);
    if (entries_buf == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    n = PyList_GET_SIZE(names);
    out = PyList_New(n);
    if (out == NULL)
        goto done;
    for (i = 0; i < n; i++) {
        PyObject *bytes = NULL, *text = NULL, *targets = NULL, *row;
        int d, fd;
        if ((i & 255) == 255) {
            /* every 256 entries (about 5 ms, Python's switch interval): other threads get the
             * GIL, and Ctrl-C stops a scan of 100,000 processes */
            Py_BEGIN_ALLOW_THREADS
            Py_END_ALLOW_THREADS
            if (PyErr_CheckSignals() < 0) {
                Py_CLEAR(out);
                goto done;
            }
        }
        if (!PyUnicode_FSConverter(PyList_GET_ITEM(names, i), &bytes)) {
            Py_CLEAR(out);
            goto done;
        }
        if (!plain(PyBytes_AS_STRING(bytes))) {
            d = -1;
            errno = EINVAL;
        } else {
            d = retry_open(top, PyBytes_AS_STRING(bytes), DIR_FLAGS);
        }
        Py_DECREF(bytes);
        if (d < 0) {
            if (errno == ENOENT)
                row = PyTuple_Pack(2, Py_None, Py_None);
            else /* a link (ELOOP), not a folder, unreadable: by its path */
                row = PyTuple_Pack(2, file ? Py_True : Py_None, Py_True);
            if (row == NULL) {
                Py_CLEAR(out);
                goto done;
            }
            PyList_SET_ITEM(out, i, row);
            continue;
        }
        text = file ? small_file(d, file, cap, skip_below, ABSENT_ANYWHERE) : Py_NewRef(Py_None);
        if (text != NULL) {
            fd = retry_open(d, links, DIR_FLAGS);
            if (fd >= 0)
                targets = link_targets(fd, entries_buf);
            else if (errno == ENOENT)
                targets = Py_NewRef(Py_None);
            else /* a link (ELOOP), not a folder: by its path */
                targets = Py_NewRef(Py_True);
        }
        close(d);
        if (text == NULL || targets == NULL) {
            Py_XDECREF(text);
            Py_CLEAR(out);
            goto done;
        }
        row = PyTuple_Pack(2, text, targets);
        Py_DECREF(text);
        Py_DECREF(targets);
        if (row == NULL) {
            Py_CLEAR(out);
            goto done;
        }
        PyList_SET_ITEM(out, i, row);
    }
done:
    PyMem_Free(entries_buf);
    Py_XDECREF(file_bytes);
    return out;
}

/* folders(top_fd, rels) -> list of (list of names | None | True), one for each folder of rels
 * (relative to the folder top_fd): its names sorted (DirRoot.listdir), None where it is absent
 * or cannot be listed, True (ask the root by its path) where it is a link or no plain path. */
static PyObject *folders(PyObject *self, PyObject *args)
{
    int top;
    PyObject *rels, *out = NULL;
    char *entries_buf;
    Py_ssize_t n, i;
    (void)self;
    if (!PyArg_ParseTuple(args, "iO!", &top, &PyList_Type, &rels))
        return NULL;
    entries_buf = PyMem_Malloc(ENTRIES_BUF);
    if (entries_buf == NULL)
        return PyErr_NoMemory();
    n = PyList_GET_SIZE(rels);
    out = PyList_New(n);
    if (out == NULL)
        goto done;
    for (i = 0; i < n; i++) {
        PyObject *bytes = NULL, *names;
        int fd;
        if (!PyUnicode_FSConverter(PyList_GET_ITEM(rels, i), &bytes)) {
            Py_CLEAR(out);
            goto done;
        }
        fd = open_under(top, PyBytes_AS_STRING(bytes));
        Py_DECREF(bytes);
        if (fd < 0) {
            names = Py_NewRef(errno == ENOENT ? Py_None : Py_True);
        } else {
            names = sorted_names(fd, entries_buf);
            close(fd);
        }
        if (names == NULL) {
            Py_CLEAR(out);
            goto done;
        }
        PyList_SET_ITEM(out, i, names);
    }
done:
    PyMem_Free(entries_buf);
    return out;
}

static PyMethodDef methods[] = {
    {"files", files, METH_VARARGS,
     "files(top_fd, rels, cap) -> list: see walker.DirRoot.read_files"},
    {"folders", folders, METH_VARARGS,
     "folders(top_fd, rels) -> list: see walker.DirRoot.listdirs"},
    {"texts", texts, METH_VARARGS,
     "texts(dir_fd, under, names, cap, absent=False) -> list | -1 | -2: see "
     "walker._OpenFolder.read_texts"},
    {"children", children, METH_VARARGS,
     "children(top_fd, names, file, links, skip_below, cap) -> list: see "
     "walker.DirRoot.read_children"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_walkc", "a sysroot folder's common reads in native code", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__walkc(void)
{
    return PyModule_Create(&module);
}
