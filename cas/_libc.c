/* The C library calls cas makes for its memory (cas/residency.py), without ctypes: importing
 * ctypes and looking the functions up was some 3 ms of every command's start.
 *
 * madvise(start, length, advice) -> int    0, or -1 (errno is not kept)
 * mallopt(param, value) -> int             glibc only: 1 on success, 0 on error
 * malloc_trim(pad) -> int                  glibc only: 1 if memory was given back, else 0
 *
 * A function this C library lacks is not in the module (cas.residency then does without it).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <sys/mman.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

static PyObject *libc_madvise(PyObject *self, PyObject *args) {
    (void)self;
    unsigned long long start, length;
    int advice;
    if (!PyArg_ParseTuple(args, "KKi", &start, &length, &advice)) return NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = madvise((void *)(uintptr_t)start, (size_t)length, advice);
    Py_END_ALLOW_THREADS
    return PyLong_FromLong(rc);
}

#ifdef __GLIBC__
static PyObject *libc_mallopt(PyObject *self, PyObject *args) {
    (void)self;
    int param, value;
    if (!PyArg_ParseTuple(args, "ii", &param, &value)) return NULL;
    return PyLong_FromLong(mallopt(param, value));
}

static PyObject *libc_malloc_trim(PyObject *self, PyObject *args) {
    (void)self;
    unsigned long long pad;
    if (!PyArg_ParseTuple(args, "K", &pad)) return NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = malloc_trim((size_t)pad);
    Py_END_ALLOW_THREADS
    return PyLong_FromLong(rc);
}
#endif

static PyMethodDef METHODS[] = {
    {"madvise", libc_madvise, METH_VARARGS, "madvise(2) over [start, start + length)."},
#ifdef __GLIBC__
    {"mallopt", libc_mallopt, METH_VARARGS, "glibc's mallopt(3)."},
    {"malloc_trim", libc_malloc_trim, METH_VARARGS, "glibc's malloc_trim(3)."},
#endif
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_libc", NULL, -1, METHODS, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__libc(void) { return PyModule_Create(&MODULE); }
