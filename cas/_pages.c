/* The native half of the data file's walk (cas/datafile.py): one table's tree, checked.
 *
 * walk_table(fd, psize, in_file, live, root, depth, key_size) -> bool
 *
 * Follows the B-tree of one table from page ``root`` exactly as cas.datafile._Walker.tree does
 * for a table (branch pages, leaf pages, the overflow pages of large values), with the same
 * checks, marking each page it reaches in ``live`` (a bytearray, one byte per page). True when
 * every check passed. False at the first fault of any kind, with ``live`` partly marked: the
 * caller restores it and walks that table again in Python, which names the fault. Pages are
 * read with pread, in the byte order of this machine (that of the file LMDB wrote here), with
 * the GIL released. depth: the tree's depth as its record gives it (every leaf lies at it, every
 * branch above it). key_size: the size every key of the table has, or -1 for none.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HEADER 16
#define NODE 8
#define MAX_DEPTH 32
#define P_BRANCH 0x01
#define P_LEAF 0x02
#define P_OVERFLOW 0x04
#define F_BIGDATA 0x01

static inline uint16_t u16(const unsigned char *p) {
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}
static inline uint32_t u32(const unsigned char *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}
static inline uint64_t u64(const unsigned char *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* Exactly ``size`` bytes at ``offset``, or 0. */
static int read_full(int fd, unsigned char *buf, size_t size, uint64_t offset) {
    size_t done = 0;
    while (done < size) {
        ssize_t got = pread(fd, buf + done, size - done, (off_t)(offset + done));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return 0;
        done += (size_t)got;
    }
    return 1;
}

typedef struct {
    uint64_t pgno;
    int depth;
} Item;

typedef struct {
    int fd;
    uint64_t psize, in_file;
    unsigned char *live;
    int depth;
    long key_size;
    unsigned char *page;
    Item *stack;
    size_t used, cap;
} Walk;

static int push(Walk *w, uint64_t pgno, int depth) {
    if (w->used == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 256;
        Item *grown = realloc(w->stack, cap * sizeof(Item));
        if (!grown) return 0;
        w->stack = grown;
        w->cap = cap;
    }
    w->stack[w->used].pgno = pgno;
    w->stack[w->used].depth = depth;
    w->used++;
    return 1;
}

/* Pages [first, end) lie in the file and none is in use yet. */
static int free_run(const Walk *w, uint64_t first, uint64_t end) {
    if (first < 2 || end > w->in_file || end < first) return 0;
    for (uint64_t p = first; p < end; p++)
        if (w->live[p]) return 0;
    return 1;
}

static int overflow(Walk *w, const unsigned char *buf, uint64_t data, uint64_t size) {
    uint64_t psize = w->psize;
    if (data + 8 > psize) return 0;
    uint64_t first = u64(buf + data);
    uint64_t pages = (HEADER - 1 + size) / psize + 1;
    uint64_t end = first + pages;
    if (end < first || !free_run(w, first, end)) return 0;
    memset(w->live + first, 1, (size_t)pages);
    unsigned char head[HEADER];
    if (!read_full(w->fd, head, HEADER, first * psize)) return 0;
    uint16_t flags = u16(head + 10);
    return u64(head) == first && flags == P_OVERFLOW && u32(head + 12) == pages;
}

static int walk(Walk *w, uint64_t root) {
    uint64_t psize = w->psize;
    if (!push(w, root, 1)) return 0;
    while (w->used) {
        Item it = w->stack[--w->used];
        if (it.depth > MAX_DEPTH) return 0;
        if (!free_run(w, it.pgno, it.pgno + 1)) return 0;
        w->live[it.pgno] = 1;
        const unsigned char *buf = w->page;
        if (!read_full(w->fd, w->page, psize, it.pgno * psize)) return 0;
        uint16_t flags = u16(buf + 10), lower = u16(buf + 12), upper = u16(buf + 14);
        if (u64(buf) != it.pgno) return 0;
        if (flags != P_BRANCH && flags != P_LEAF) return 0;
        if ((flags == P_LEAF) != (it.depth == w->depth)) return 0;
        if (!(HEADER <= lower && lower <= upper && upper <= psize) || (lower - HEADER) % 2)
            return 0;
        size_t count = (size_t)(lower - HEADER) / 2;
        if (flags == P_BRANCH) {
            if (count == 0) return 0;
            for (size_t i = 0; i < count; i++) {
                uint64_t off = u16(buf + HEADER + 2 * i);
                if (off < upper || off + NODE > psize) return 0;
                uint64_t lo = u16(buf + off), hi = u16(buf + off + 2), top = u16(buf + off + 4);
                uint64_t ksize = u16(buf + off + 6);
                if (off + NODE + ksize > psize) return 0;
                if (!push(w, lo | hi << 16 | top << 32, it.depth + 1)) return 0;
            }
            continue;
        }
        /* A leaf: every node's bounds first, then the overflow values (as the Python). */
        for (size_t i = 0; i < count; i++) {
            uint64_t off = u16(buf + HEADER + 2 * i);
            if (off < upper || off > psize - NODE) return 0;
            uint64_t size = (uint64_t)u16(buf + off) | (uint64_t)u16(buf + off + 2) << 16;
            uint16_t nflags = u16(buf + off + 4);
            uint64_t ksize = u16(buf + off + 6);
            uint64_t data = off + NODE + ksize;
            if (w->key_size >= 0 && ksize != (uint64_t)w->key_size) return 0;
            if (nflags == 0) {
                if (data + size > psize) return 0;
            } else if (nflags != F_BIGDATA || data + 8 > psize) {
                return 0;
            }
        }
        for (size_t i = 0; i < count; i++) {
            uint64_t off = u16(buf + HEADER + 2 * i);
            if (u16(buf + off + 4) != F_BIGDATA) continue;
            uint64_t size = (uint64_t)u16(buf + off) | (uint64_t)u16(buf + off + 2) << 16;
            uint64_t data = off + NODE + u16(buf + off + 6);
            if (!overflow(w, buf, data, size)) return 0;
        }
    }
    return 1;
}

static PyObject *walk_table(PyObject *self, PyObject *args) {
    (void)self;
    int fd;
    unsigned long long psize, in_file, root;
    int depth;
    long key_size;
    Py_buffer live;
    if (!PyArg_ParseTuple(args, "iKKw*Kil", &fd, &psize, &in_file, &live, &root, &depth, &key_size))
        return NULL;
    if (psize < HEADER + NODE || psize > (1u << 16) || in_file > (unsigned long long)live.len) {
        PyBuffer_Release(&live);
        Py_RETURN_FALSE; /* not a file this walk knows: the Python walks it */
    }
    Walk w = {fd, psize, in_file, live.buf, depth, key_size, NULL, NULL, 0, 0};
    w.page = malloc((size_t)psize);
    int ok = 0;
    if (w.page) {
        Py_BEGIN_ALLOW_THREADS
        ok = walk(&w, root);
        Py_END_ALLOW_THREADS
    }
    int no_memory = w.page == NULL;
    free(w.page);
    free(w.stack);
    PyBuffer_Release(&live);
    if (no_memory) return PyErr_NoMemory();
    return PyBool_FromLong(ok);
}

static PyMethodDef METHODS[] = {
    {"walk_table", walk_table, METH_VARARGS, "One table's tree of the data file, checked (cas/datafile.py)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_pages", NULL, -1, METHODS, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__pages(void) { return PyModule_Create(&MODULE); }
