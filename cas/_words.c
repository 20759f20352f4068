/* The terms of a text for the search index, in one pass: the native half of cas/words.py.
 *
 * terms(data, window, max_windows, max_chain) -> (keys, masks, lines, width, spans)
 *
 * Exactly what cas.words.python_terms computes for the ASCII runs of a text (the module
 * docstring there defines every term); runs holding non-ASCII bytes are returned as spans
 * (start, end, window bit) for Python to split into Unicode words, since Unicode's notion of a
 * word belongs to Python's tables. keys: the terms' 64-bit FNV-1a keys, ascending; masks: each
 * key's windows. The tests compare this with the Python on random texts.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL
#define MAX_CHAIN_LIMIT 8

static inline int is_upper(unsigned char c) { return c >= 'A' && c <= 'Z'; }
static inline int is_lower(unsigned char c) { return c >= 'a' && c <= 'z'; }
static inline int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
static inline int is_token(unsigned char c) {
    return is_upper(c) || is_lower(c) || is_digit(c) || c == '_' || c >= 0x80;
}
static inline int is_ident_start(unsigned char c) { return is_upper(c) || is_lower(c) || c == '_'; }
static inline int is_blank(unsigned char c) { return c == ' ' || c == '\t'; }
static inline unsigned char lower(unsigned char c) { return is_upper(c) ? (unsigned char)(c + 32) : c; }

/* Each byte's class, for the scanning loop: one load instead of a chain of comparisons. */
enum { C_UPPER = 1, C_LOWER = 2, C_DIGIT = 4, C_UNDER = 8, C_HIGH = 16, C_NEWLINE = 32 };
#define C_TOKEN (C_UPPER | C_LOWER | C_DIGIT | C_UNDER | C_HIGH)
static unsigned char CLASS[256];
static unsigned char LOWERED[256];

static void classes_init(void) {
    for (int c = 0; c < 256; c++) {
        unsigned char k = 0;
        if (is_upper((unsigned char)c)) k = C_UPPER;
        else if (is_lower((unsigned char)c)) k = C_LOWER;
        else if (is_digit((unsigned char)c)) k = C_DIGIT;
        else if (c == '_') k = C_UNDER;
        else if (c >= 0x80) k = C_HIGH;
        else if (c == '\n') k = C_NEWLINE;
        CLASS[c] = k;
        LOWERED[c] = lower((unsigned char)c);
    }
}

static inline uint64_t fnv_lower(uint64_t h, const unsigned char *p, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) h = (h ^ lower(p[i])) * FNV_PRIME;
    return h;
}

/* --- a set of keys, each with a mask: open addressing, power-of-two capacity --------------- */

typedef struct {
    uint64_t key;
    uint32_t mask;
    uint32_t used;
} slot_t;

typedef struct {
    slot_t *slots;
    size_t cap, n;
} table_t;

/* A growing array of `size`-byte items with room for *cap, doubled (from 64): the new block,
   or NULL when out of memory, the old one then freed (whoever fails drops the whole result). */
static void *doubled(void *items, size_t *cap, size_t size) {
    size_t grown = *cap ? *cap * 2 : 64;
    void *more = realloc(items, grown * size);
    if (!more) {
        free(items);
        return NULL;
    }
    *cap = grown;
    return more;
}
/* Whether `items` (with `count` used of `cap`, `per` elements an item) has room for one more,
   grown if need be. */
#define ROOM_FOR_ONE(items, cap, count, per) \
    ((count) < (cap) || ((items) = doubled((items), &(cap), (per) * sizeof *(items))) != NULL)

static int table_init(table_t *t, size_t cap) {
    t->cap = cap;
    t->n = 0;
    t->slots = calloc(cap, sizeof(slot_t));
    return t->slots != NULL;
}

static void table_free(table_t *t) { free(t->slots); }

static inline size_t slot_of(uint64_t key, size_t cap) {
    return (size_t)((key * 0x9E3779B97F4A7C15ULL) >> 17) & (cap - 1);
}

static int table_grow(table_t *t) {
    table_t bigger;
    if (!table_init(&bigger, t->cap * 2)) return 0;
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->slots[i].used) continue;
        size_t j = slot_of(t->slots[i].key, bigger.cap);
        while (bigger.slots[j].used) j = (j + 1) & (bigger.cap - 1);
        bigger.slots[j] = t->slots[i];
        bigger.n++;
    }
    table_free(t);
    *t = bigger;
    return 1;
}

static inline int table_add(table_t *t, uint64_t key, uint32_t bit) {
    if ((t->n + 1) * 4 > t->cap * 3 && !table_grow(t)) return 0;
    size_t j = slot_of(key, t->cap);
    slot_t *slots = t->slots;
    while (slots[j].used) {
        if (slots[j].key == key) {
            slots[j].mask |= bit;
            return 1;
        }
        j = (j + 1) & (t->cap - 1);
    }
    slots[j].used = 1;
    slots[j].key = key;
    slots[j].mask = bit;
    t->n++;
    return 1;
}

/* --- the pieces of a term ------------------------------------------------------------------ */

/* The declaration keywords (cas.words.DEF_KEYWORDS), by length. */
static const char *const KEYWORDS[12][5] = {
    {NULL},
    {NULL},
    {"fn", NULL},
    {"def", "let", "var", NULL},
    {"func", "type", "enum", "impl", NULL},
    {"class", "trait", "const", NULL},
    {"struct", "module", "object", "record", NULL},
    {NULL},
    {"function", "protocol", "defmacro", NULL},
    {"interface", "extension", NULL},
    {NULL},
    {"macro_rules", NULL},
};

static int is_def_keyword(const unsigned char *p, Py_ssize_t n) {
    if (n < 2 || n > 11) return 0;
    for (const char *const *k = KEYWORDS[n]; *k; k++) {
        if ((*k)[0] == (char)p[0] && memcmp(*k, p, (size_t)n) == 0) return 1;
    }
    return 0;
}

static inline Py_ssize_t skip_blanks(const unsigned char *d, Py_ssize_t n, Py_ssize_t at) {
    while (at < n && is_blank(d[at])) at++;
    return at;
}

/* The words of an identifier (cas.words.split_name), each added when there are two or more. */
static int add_parts(table_t *t, const unsigned char *p, Py_ssize_t n, uint32_t bit) {
    uint64_t words[64];
    int count = 0, overflow = 0;
    Py_ssize_t i = 0;
    /* first pass counts (and keeps up to 64 keys); a longer identifier is hashed twice */
    for (int pass = 0; pass < 2; pass++) {
        i = 0;
        count = 0;
        while (i < n) {
            unsigned char c = p[i];
            Py_ssize_t s = i, e;
            if (c == '_') {
                i++;
                continue;
            }
            if (is_upper(c)) {
                Py_ssize_t j = i;
                while (j < n && is_upper(p[j])) j++;
                if (j - i >= 2 && j < n && is_lower(p[j])) {
                    e = j - 1; /* an acronym before a capitalized word: HTTPServer */
                } else if (i + 1 < n && is_lower(p[i + 1])) {
                    e = i + 1;
                    while (e < n && is_lower(p[e])) e++;
                } else {
                    e = j;
                }
            } else if (is_lower(c)) {
                e = i;
                while (e < n && is_lower(p[e])) e++;
            } else if (is_digit(c)) {
                e = i;
                while (e < n && is_digit(p[e])) e++;
            } else {
                i++;
                continue;
            }
            uint64_t h = fnv_lower(FNV_OFFSET, p + s, e - s);
            if (pass == 0) {
                if (count < 64) words[count] = h;
                else overflow = 1;
            } else if (!table_add(t, h, bit)) {
                return 0;
            }
            count++;
            i = e;
        }
        if (pass == 0) {
            if (count < 2) return 1;
            if (!overflow) {
                for (int k = 0; k < count; k++)
                    if (!table_add(t, words[k], bit)) return 0;
                return 1;
            }
        }
    }
    return 1;
}

/* Whether an identifier of letters is one capitalized word (Name): a capital, then small
 * letters only. */
static int single_capital(const unsigned char *p, Py_ssize_t n) {
    for (Py_ssize_t k = 1; k < n; k++)
        if (!is_lower(p[k])) return 0;
    return 1;
}

/* Where a name assigned first on a line may start (cas.words._name_starts). */
static Py_ssize_t after_word(const unsigned char *d, Py_ssize_t n, Py_ssize_t at, const char *w) {
    Py_ssize_t len = (Py_ssize_t)strlen(w);
    if (at + len > n || memcmp(d + at, w, (size_t)len) != 0) return -1;
    Py_ssize_t after = skip_blanks(d, n, at + len);
    return after > at + len ? after : -1;
}

typedef struct {
    Py_ssize_t line_start; /* the line these were found for, or -1 */
    Py_ssize_t at[4];
} starts_t;

static int is_name_start(const unsigned char *d, Py_ssize_t n, Py_ssize_t line_start,
                         Py_ssize_t start, starts_t *cache) {
    if (cache->line_start != line_start) {
        Py_ssize_t first = skip_blanks(d, n, line_start);
        Py_ssize_t ex = after_word(d, n, first, "export");
        cache->line_start = line_start;
        cache->at[0] = first;
        cache->at[1] = ex;
        cache->at[2] = after_word(d, n, first, "pub");
        cache->at[3] = ex >= 0 ? after_word(d, n, ex, "pub") : -1;
    }
    return start == cache->at[0] || start == cache->at[1] || start == cache->at[2] ||
           start == cache->at[3];
}

/* The definition term of the identifier d[start:end], as a key, or 0 when it makes none. */
static int definition(const unsigned char *d, Py_ssize_t n, Py_ssize_t start, Py_ssize_t end,
                      Py_ssize_t line_start, starts_t *starts, uint64_t *out) {
    unsigned char marker = (line_start < n && is_blank(d[line_start])) ? 2 : 1;
    if (is_def_keyword(d + start, end - start)) {
        Py_ssize_t at = end;
        if (end - start == 11 && memcmp(d + start, "macro_rules", 11) == 0) {
            if (at >= n || d[at] != '!') return 0;
            at++;
        }
        Py_ssize_t blanks = skip_blanks(d, n, at);
        if (blanks == at) return 0;
        at = blanks;
        if (at < n && d[at] == '(') {
            Py_ssize_t close = at;
            while (close < n && d[close] != ')' && d[close] != '\n') close++;
            if (close >= n || d[close] != ')') return 0;
            at = skip_blanks(d, n, close + 1);
        }
        if (at >= n || !is_ident_start(d[at])) return 0;
        Py_ssize_t e = at;
        while (e < n && is_token(d[e])) e++;
        for (Py_ssize_t k = at; k < e; k++)
            if (d[k] >= 0x80) return 0;
        uint64_t h = (FNV_OFFSET ^ marker) * FNV_PRIME;
        *out = fnv_lower(h, d + at, e - at);
        return 1;
    }
    if (!is_name_start(d, n, line_start, start, starts)) return 0;
    Py_ssize_t at = skip_blanks(d, n, end);
    if (at < n && d[at] == ':') {
        while (at < n && d[at] != '=' && d[at] != '\n') at++;
        if (at >= n || d[at] != '=') return 0;
    }
    if (at < n && d[at] == '=' && at + 1 < n && d[at + 1] != '=') {
        uint64_t h = (FNV_OFFSET ^ marker) * FNV_PRIME;
        *out = fnv_lower(h, d + start, end - start);
        return 1;
    }
    return 0;
}

/* --- the pass ------------------------------------------------------------------------------ */

static PyObject *terms(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer buf;
    Py_ssize_t window, max_windows, max_chain;
    if (!PyArg_ParseTuple(args, "y*nnn", &buf, &window, &max_windows, &max_chain)) return NULL;
    if (max_windows < 1 || max_windows > 32 || window < 1 || max_chain < 1 ||
        max_chain > MAX_CHAIN_LIMIT) {
        PyBuffer_Release(&buf);
        PyErr_SetString(PyExc_ValueError, "terms: window, max_windows or max_chain out of range");
        return NULL;
    }
    const unsigned char *d = buf.buf;
    Py_ssize_t n = buf.len;
    Py_ssize_t lines = 0;
    if (n) {
        const unsigned char *q = d, *stop = d + n;
        while ((q = memchr(q, '\n', (size_t)(stop - q))) != NULL) {
            lines++;
            q++;
        }
        if (d[n - 1] != '\n') lines++;
    }
    Py_ssize_t wide = (lines + max_windows - 1) / max_windows;
    if (wide < window) wide = window;

    table_t t;
    Py_ssize_t *span_buf = NULL;
    size_t nspans = 0, span_cap = 0;
    if (!table_init(&t, 1024)) {
        table_free(&t);
        PyBuffer_Release(&buf);
        return PyErr_NoMemory();
    }
    int ok = 1;
    Py_ssize_t line = 0, line_start = 0, i = 0;
    Py_ssize_t chain_start[MAX_CHAIN_LIMIT], chain_len[MAX_CHAIN_LIMIT];
    int chain = 0;
    Py_ssize_t chain_end = -1;
    starts_t starts = {-1, {-1, -1, -1, -1}};
    uint32_t window_bit = 1;
    Py_ssize_t next_window = wide;
    Py_BEGIN_ALLOW_THREADS
    while (i < n && ok) {
        unsigned char c = d[i];
        unsigned char cls = CLASS[c];
        if (!(cls & C_TOKEN)) {
            if (cls == C_NEWLINE) {
                line_start = i + 1;
                if (++line == next_window) { /* line / wide, without dividing */
                    window_bit <<= 1;
                    next_window += wide;
                }
            }
            i++;
            continue;
        }
        Py_ssize_t start = i;
        uint64_t h = FNV_OFFSET;
        /* the classes met: C_UPPER, C_LOWER, C_DIGIT, C_HIGH; C_UNDER after the first byte */
        int kinds = cls & ~C_UNDER;
        h = (h ^ LOWERED[c]) * FNV_PRIME;
        i++;
        while (i < n && (CLASS[d[i]] & C_TOKEN)) {
            unsigned char x = d[i];
            kinds |= CLASS[x];
            h = (h ^ LOWERED[x]) * FNV_PRIME;
            i++;
        }
        int ascii = !(kinds & C_HIGH);
        uint32_t bit = window_bit;
        if (!ascii) {
            if (nspans == span_cap) {
                size_t cap = span_cap ? span_cap * 2 : 16;
                Py_ssize_t *grown = realloc(span_buf, cap * 3 * sizeof(Py_ssize_t));
                if (!grown) {
                    ok = 0;
                    break;
                }
                span_buf = grown;
                span_cap = cap;
            }
            span_buf[3 * nspans] = start;
            span_buf[3 * nspans + 1] = i;
            span_buf[3 * nspans + 2] = (Py_ssize_t)bit;
            nspans++;
            chain = 0;
            chain_end = -1;
            continue;
        }
        if (!table_add(&t, h, bit)) {
            ok = 0;
            break;
        }
        if (!is_ident_start(c)) {
            chain = 0;
            chain_end = -1;
            continue;
        }
        /* a compound has two words or more: an inner underscore, a capital after a small letter
         * or a digit, letters and digits; one word alone (self, HTTP, Name) has no parts */
        int compound = (kinds & C_UNDER) || ((kinds & C_DIGIT) && (kinds & (C_UPPER | C_LOWER))) ||
                       ((kinds & C_UPPER) && (kinds & C_LOWER) &&
                        !(is_upper(c) && single_capital(d + start, i - start)));
        if (compound && !add_parts(&t, d + start, i - start, bit)) {
            ok = 0;
            break;
        }
        int joined = chain_end >= 0 &&
                     ((start - chain_end == 1 && d[chain_end] == '.') ||
                      (start - chain_end == 2 && d[chain_end] == ':' && d[chain_end + 1] == ':'));
        if (!joined) chain = 0;
        if (chain == max_chain) {
            memmove(chain_start, chain_start + 1, sizeof(Py_ssize_t) * (size_t)(max_chain - 1));
            memmove(chain_len, chain_len + 1, sizeof(Py_ssize_t) * (size_t)(max_chain - 1));
            chain--;
        }
        chain_start[chain] = start;
        chain_len[chain] = i - start;
        chain++;
        for (int k = chain - 2; k >= 0; k--) { /* the names ending here, two parts and more */
            uint64_t ch = FNV_OFFSET;
            for (int m = k; m < chain; m++) {
                if (m > k) ch = (ch ^ '.') * FNV_PRIME;
                ch = fnv_lower(ch, d + chain_start[m], chain_len[m]);
            }
            if (!table_add(&t, ch, bit)) ok = 0;
        }
        chain_end = i;
        uint64_t def;
        if (ok && definition(d, n, start, i, line_start, &starts, &def) && !table_add(&t, def, bit)) ok = 0;
    }
    Py_END_ALLOW_THREADS
    PyObject *spans = ok ? PyList_New((Py_ssize_t)nspans) : NULL;
    for (size_t j = 0; spans && j < nspans; j++) {
        PyObject *span = Py_BuildValue("(nnn)", span_buf[3 * j], span_buf[3 * j + 1],
                                       span_buf[3 * j + 2]);
        if (!span) {
            Py_CLEAR(spans);
            break;
        }
        PyList_SET_ITEM(spans, (Py_ssize_t)j, span);
    }
    free(span_buf);
    if (!spans) {
        table_free(&t);
        PyBuffer_Release(&buf);
        return PyErr_Occurred() ? NULL : PyErr_NoMemory();
    }
    /* the keys in the table's order (a function of the text alone), each with its mask */
    PyObject *keys = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(t.n * 8));
    PyObject *masks = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(t.n * 4));
    if (!keys || !masks) {
        table_free(&t);
        Py_XDECREF(keys);
        Py_XDECREF(masks);
        Py_DECREF(spans);
        PyBuffer_Release(&buf);
        return NULL;
    }
    unsigned char *kp = (unsigned char *)PyBytes_AS_STRING(keys);
    unsigned char *mp = (unsigned char *)PyBytes_AS_STRING(masks);
    size_t o = 0;
    for (size_t j = 0; j < t.cap; j++) { /* little-endian, whatever the machine */
        if (!t.slots[j].used) continue;
        uint64_t k = t.slots[j].key;
        uint32_t m = t.slots[j].mask;
        for (int b = 0; b < 8; b++) kp[8 * o + (size_t)b] = (unsigned char)(k >> (8 * b));
        for (int b = 0; b < 4; b++) mp[4 * o + (size_t)b] = (unsigned char)(m >> (8 * b));
        o++;
    }
    table_free(&t);
    PyBuffer_Release(&buf);
    return Py_BuildValue("(NNnnN)", keys, masks, lines, wide, spans);
}

/* --- a segment's postings from many bodies' terms ------------------------------------------ */

typedef struct {
    uint64_t key;
    uint32_t doc, mask;
} posting_t;

/* Stable LSD radix sort of src[0:n] by the key's bits below `bits`, `digit` bits a pass (at
 * most 16), using dst[0:n] as scratch; passes where every key has the same digit are skipped.
 * The result is in src or dst: returns which. */
static posting_t *lsd_postings(posting_t *src, posting_t *dst, size_t n, int bits, int digit,
                               size_t *count) {
    size_t radix = (size_t)1 << digit, mask = radix - 1;
    for (int shift = 0; shift < bits; shift += digit) {
        memset(count, 0, radix * sizeof(size_t));
        for (size_t i = 0; i < n; i++) count[(src[i].key >> shift) & mask]++;
        int skip = 0;
        for (size_t b = 0; b < radix; b++)
            if (count[b] == n) skip = 1;
        if (skip) continue;
        size_t at = 0;
        for (size_t b = 0; b < radix; b++) {
            size_t c = count[b];
            count[b] = at;
            at += c;
        }
        for (size_t i = 0; i < n; i++) dst[count[(src[i].key >> shift) & mask]++] = src[i];
        posting_t *swap = src;
        src = dst;
        dst = swap;
    }
    return src;
}

/* Stable sort of postings by key (equal keys keep their order). A large array is first split
 * by the key's top byte (one stable pass), then each part sorted on the other 56 bits while
 * it fits in the core's cache: an LSD sort of the whole array, 8 passes scattering it over
 * 256 places each, spent most of its time waiting for memory. */
static int sort_postings(posting_t *p, size_t n) {
    posting_t *tmp = malloc((n ? n : 1) * sizeof(posting_t));
    size_t *count = malloc(((size_t)1 << 14) * sizeof(size_t));
    if (!tmp || !count) {
        free(tmp);
        free(count);
        return 0;
    }
    if (n <= (1u << 16)) {
        posting_t *out = lsd_postings(p, tmp, n, 64, 8, count);
        if (out != p) memcpy(p, out, n * sizeof(posting_t));
        free(tmp);
        free(count);
        return 1;
    }
    size_t start[257] = {0};
    for (size_t i = 0; i < n; i++) start[(p[i].key >> 56) + 1]++;
    for (int b = 0; b < 256; b++) start[b + 1] += start[b];
    size_t at[256];
    memcpy(at, start, sizeof at);
    for (size_t i = 0; i < n; i++) tmp[at[p[i].key >> 56]++] = p[i];
    for (int b = 0; b < 256; b++) {
        size_t lo = start[b], len = start[b + 1] - lo;
        /* 56 bits in four passes of 14: a part's thousands of postings, 16,384 places each */
        posting_t *out = lsd_postings(tmp + lo, p + lo, len, 56, 14, count);
        if (out != p + lo) memcpy(p + lo, out, len * sizeof(posting_t));
    }
    free(tmp);
    free(count);
    return 1;
}

/* Little-endian integers in and out of bytes: a load or store where the machine is
 * little-endian (a byte at a time, as before, compiled to a loop of shifts). */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define LE64(v) __builtin_bswap64(v)
#define LE32(v) __builtin_bswap32(v)
#else
#define LE64(v) (v)
#define LE32(v) (v)
#endif
static inline void put_u64(unsigned char *at, uint64_t v) {
    v = LE64(v);
    memcpy(at, &v, 8);
}
static inline void put_u32(unsigned char *at, uint32_t v) {
    v = LE32(v);
    memcpy(at, &v, 4);
}
static inline uint64_t get_u64(const unsigned char *at) {
    uint64_t v;
    memcpy(&v, at, 8);
    return LE64(v);
}
static inline uint32_t get_u32(const unsigned char *at) {
    uint32_t v;
    memcpy(&v, at, 4);
    return LE32(v);
}

/* build(keys_list, masks_list) -> (keys, offsets, docs, masks): the postings of bodies
 * 0..n-1, given each body's keys (u64) and masks (u32) little-endian; keys ascending and
 * unique, offsets[i]..offsets[i+1] the postings of keys[i], each (body, mask) by body. */
static PyObject *build(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *key_list, *mask_list;
    if (!PyArg_ParseTuple(args, "O!O!", &PyList_Type, &key_list, &PyList_Type, &mask_list))
        return NULL;
    Py_ssize_t docs = PyList_GET_SIZE(key_list);
    if (PyList_GET_SIZE(mask_list) != docs || docs > 0xFFFFFFFFLL) {
        PyErr_SetString(PyExc_ValueError, "build: one masks per keys, at most 2**32 bodies");
        return NULL;
    }
    /* Each body's keys and masks are read where they are (bytes, or an array's own buffer:
     * no copy of every body's terms is made to call this). */
    size_t total = 0;
    for (Py_ssize_t i = 0; i < docs; i++) {
        Py_buffer k, m;
        if (PyObject_GetBuffer(PyList_GET_ITEM(key_list, i), &k, PyBUF_SIMPLE) < 0) return NULL;
        if (PyObject_GetBuffer(PyList_GET_ITEM(mask_list, i), &m, PyBUF_SIMPLE) < 0) {
            PyBuffer_Release(&k);
            return NULL;
        }
        int bad = k.len % 8 || m.len * 2 != k.len;
        total += (size_t)k.len / 8;
        PyBuffer_Release(&k);
        PyBuffer_Release(&m);
        if (bad) {
            PyErr_SetString(PyExc_ValueError, "build: keys of 8 bytes, masks of 4, as many");
            return NULL;
        }
    }
    posting_t *p = malloc((total ? total : 1) * sizeof(posting_t));
    if (!p) return PyErr_NoMemory();
    size_t at = 0;
    for (Py_ssize_t i = 0; i < docs; i++) {
        Py_buffer kb, mb;
        if (PyObject_GetBuffer(PyList_GET_ITEM(key_list, i), &kb, PyBUF_SIMPLE) < 0) {
            free(p);
            return NULL;
        }
        if (PyObject_GetBuffer(PyList_GET_ITEM(mask_list, i), &mb, PyBUF_SIMPLE) < 0) {
            PyBuffer_Release(&kb);
            free(p);
            return NULL;
        }
        const unsigned char *k = kb.buf, *m = mb.buf;
        size_t n = (size_t)kb.len / 8;
        if (at + n > total || (size_t)mb.len != 4 * n) { /* changed since they were measured */
            PyBuffer_Release(&kb);
            PyBuffer_Release(&mb);
            free(p);
            PyErr_SetString(PyExc_ValueError, "build: the terms changed while read");
            return NULL;
        }
        for (size_t j = 0; j < n; j++) {
            p[at].key = get_u64(k + 8 * j);
            p[at].mask = get_u32(m + 4 * j);
            p[at].doc = (uint32_t)i;
            at++;
        }
        PyBuffer_Release(&kb);
        PyBuffer_Release(&mb);
    }
    total = at;
    int ok;
    Py_BEGIN_ALLOW_THREADS
    ok = sort_postings(p, total);
    Py_END_ALLOW_THREADS
    if (!ok) {
        free(p);
        return PyErr_NoMemory();
    }
    size_t unique = 0;
    for (size_t i = 0; i < total; i++)
        if (i == 0 || p[i].key != p[i - 1].key) unique++;
    PyObject *keys = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(unique * 8));
    PyObject *offsets = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)((unique + 1) * 8));
    PyObject *pdocs = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(total * 4));
    PyObject *pmasks = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(total * 4));
    if (!keys || !offsets || !pdocs || !pmasks) {
        free(p);
        Py_XDECREF(keys);
        Py_XDECREF(offsets);
        Py_XDECREF(pdocs);
        Py_XDECREF(pmasks);
        return NULL;
    }
    unsigned char *kp = (unsigned char *)PyBytes_AS_STRING(keys);
    unsigned char *op = (unsigned char *)PyBytes_AS_STRING(offsets);
    unsigned char *dp = (unsigned char *)PyBytes_AS_STRING(pdocs);
    unsigned char *mp = (unsigned char *)PyBytes_AS_STRING(pmasks);
    size_t u = 0;
    for (size_t i = 0; i < total; i++) {
        if (i == 0 || p[i].key != p[i - 1].key) {
            put_u64(kp + 8 * u, p[i].key);
            put_u64(op + 8 * u, i);
            u++;
        }
        put_u32(dp + 4 * i, p[i].doc);
        put_u32(mp + 4 * i, p[i].mask);
    }
    put_u64(op + 8 * unique, total);
    free(p);
    return Py_BuildValue("(NNNN)", keys, offsets, pdocs, pmasks);
}

/* merge(parts) -> (keys, offsets, docs, masks): one segment's postings from several. Each part
 * is (doc_map, keys, offsets, docs, masks) of a segment, doc_map giving each of its bodies its
 * ordinal in the merged segment (u32, 0xFFFFFFFF: dropped). Within a key, postings come out
 * ordered by the new ordinal. */
typedef struct {
    Py_buffer map, keys, offsets, docs, masks;
    size_t nkeys, at;
} part_t;

static int compare_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static PyObject *merge(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *list;
    if (!PyArg_ParseTuple(args, "O!", &PyList_Type, &list)) return NULL;
    Py_ssize_t k = PyList_GET_SIZE(list);
    part_t *parts = calloc((size_t)(k ? k : 1), sizeof(part_t));
    if (!parts) return PyErr_NoMemory();
    Py_ssize_t got = 0;
    size_t max_postings = 0, max_keys = 0;
    PyObject *result = NULL;
    uint64_t *scratch = NULL;
    unsigned char *kp = NULL, *op = NULL, *dp = NULL, *mp = NULL;
    for (; got < k; got++) {
        part_t *q = &parts[got];
        if (!PyArg_ParseTuple(PyList_GET_ITEM(list, got), "y*y*y*y*y*", &q->map, &q->keys,
                              &q->offsets, &q->docs, &q->masks))
            goto done;
        q->nkeys = (size_t)q->keys.len / 8;
        if (q->keys.len % 8 || (size_t)q->offsets.len != (q->nkeys + 1) * 8 ||
            q->docs.len != q->masks.len || q->docs.len % 4 || q->map.len % 4) {
            got++;
            PyErr_SetString(PyExc_ValueError, "merge: inconsistent part");
            goto done;
        }
        size_t np = (size_t)q->docs.len / 4;
        size_t last = get_u64((const unsigned char *)q->offsets.buf + 8 * q->nkeys);
        if (last != np) {
            got++;
            PyErr_SetString(PyExc_ValueError, "merge: offsets do not end at the postings' count");
            goto done;
        }
        max_postings += np;
        max_keys += q->nkeys;
    }
    scratch = malloc((max_postings ? max_postings : 1) * sizeof(uint64_t));
    kp = malloc((max_keys ? max_keys : 1) * 8);
    op = malloc((max_keys + 1) * 8);
    dp = malloc((max_postings ? max_postings : 1) * 4);
    mp = malloc((max_postings ? max_postings : 1) * 4);
    if (!scratch || !kp || !op || !dp || !mp) {
        PyErr_NoMemory();
        goto done;
    }
    size_t nout = 0, pout = 0;
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    for (;;) {
        int found = 0;
        uint64_t low = 0;
        for (Py_ssize_t i = 0; i < k; i++) {
            part_t *q = &parts[i];
            if (q->at >= q->nkeys) continue;
            uint64_t key = get_u64((const unsigned char *)q->keys.buf + 8 * q->at);
            if (!found || key < low) low = key;
            found = 1;
        }
        if (!found) break;
        size_t n = 0;
        for (Py_ssize_t i = 0; i < k; i++) {
            part_t *q = &parts[i];
            if (q->at >= q->nkeys) continue;
            const unsigned char *keys = q->keys.buf, *offs = q->offsets.buf;
            if (get_u64(keys + 8 * q->at) != low) continue;
            size_t from = get_u64(offs + 8 * q->at), to = get_u64(offs + 8 * (q->at + 1));
            size_t ndocs = (size_t)q->map.len / 4;
            if (from > to || to > (size_t)q->docs.len / 4) {
                bad = 1;
                break;
            }
            for (size_t j = from; j < to; j++) {
                uint32_t old = get_u32((const unsigned char *)q->docs.buf + 4 * j);
                if (old >= ndocs) {
                    bad = 1;
                    break;
                }
                uint32_t now = get_u32((const unsigned char *)q->map.buf + 4 * old);
                if (now == 0xFFFFFFFFu) continue;
                uint32_t mask = get_u32((const unsigned char *)q->masks.buf + 4 * j);
                scratch[n++] = ((uint64_t)now << 32) | mask;
            }
            q->at++;
        }
        if (bad) break;
        if (!n) continue;
        qsort(scratch, n, sizeof(uint64_t), compare_u64);
        put_u64(kp + 8 * nout, low);
        put_u64(op + 8 * nout, pout);
        nout++;
        for (size_t j = 0; j < n; j++) { /* a body in two parts is kept once */
            if (j && (scratch[j] >> 32) == (scratch[j - 1] >> 32)) continue;
            put_u32(dp + 4 * pout, (uint32_t)(scratch[j] >> 32));
            put_u32(mp + 4 * pout, (uint32_t)scratch[j]);
            pout++;
        }
    }
    Py_END_ALLOW_THREADS
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "merge: a posting names no body of its part");
        goto done;
    }
    put_u64(op + 8 * nout, pout);
    result = Py_BuildValue("(y#y#y#y#)", (const char *)kp, (Py_ssize_t)(nout * 8),
                           (const char *)op, (Py_ssize_t)((nout + 1) * 8), (const char *)dp,
                           (Py_ssize_t)(pout * 4), (const char *)mp, (Py_ssize_t)(pout * 4));
done:
    for (Py_ssize_t i = 0; i < got && i < k; i++) {
        part_t *q = &parts[i];
        if (q->map.buf) PyBuffer_Release(&q->map);
        if (q->keys.buf) PyBuffer_Release(&q->keys);
        if (q->offsets.buf) PyBuffer_Release(&q->offsets);
        if (q->docs.buf) PyBuffer_Release(&q->docs);
        if (q->masks.buf) PyBuffer_Release(&q->masks);
    }
    free(parts);
    free(scratch);
    free(kp);
    free(op);
    free(dp);
    free(mp);
    return result;
}

/* --- the packer's lexicon: identifiers with their counts, comments, declarations -------------- */

/* zlib's CRC-32 and Adler-32, computed here so that the fingerprints equal Python's
 * (crc32(name) << 32 | adler32(name), packer.lexicon.fingerprint) with no library. */
static uint32_t CRC_TABLE[256];
static int crc_ready = 0;

static void crc_init(void) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        CRC_TABLE[n] = c;
    }
    crc_ready = 1;
}

static uint64_t fingerprint(const unsigned char *p, Py_ssize_t n) {
    uint32_t crc = 0xFFFFFFFFu, a = 1, b = 0;
    while (n > 0) {
        /* Adler-32's sums fit 32 bits for 5552 bytes before they must be reduced */
        Py_ssize_t block = n < 5552 ? n : 5552;
        for (Py_ssize_t i = 0; i < block; i++) {
            crc = CRC_TABLE[(crc ^ p[i]) & 255] ^ (crc >> 8);
            a += p[i];
            b += a;
        }
        a %= 65521u;
        b %= 65521u;
        p += block;
        n -= block;
    }
    return ((uint64_t)(crc ^ 0xFFFFFFFFu) << 32) | ((b << 16) | a);
}

static int in_sorted(const unsigned char *keys, Py_ssize_t n, uint64_t key) {
    Py_ssize_t lo = 0, hi = n;
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        uint64_t v = get_u64(keys + 8 * mid);
        if (v < key) lo = mid + 1;
        else hi = mid;
    }
    return lo < n && get_u64(keys + 8 * lo) == key;
}

#define C_WORD (C_UPPER | C_LOWER | C_DIGIT | C_UNDER)

/* One distinct identifier of a text, found by its bytes: where it first is and what it counts
 * for. The fingerprint is computed once per identifier, not per use. */
typedef struct {
    uint64_t hash; /* FNV-1a of its bytes, never 0: 0 marks a free slot */
    const unsigned char *text;
    uint32_t len;
    int32_t order; /* its place among the references, or -1: not one */
    int32_t want;  /* its place among the wanted names, or -1 */
    uint32_t shaped; /* of min_len or more, with an uppercase letter, a digit or _ */
} ident_t;

typedef struct {
    ident_t *slots;
    size_t cap, n;
} idents_t;

/* The table doubles when three quarters full; it starts small for a small text. */
static int idents_grow(idents_t *t, size_t bytes) {
    size_t cap = t->cap * 2;
    if (!t->cap)
        for (cap = 64; cap < 4096 && cap * 16 < bytes;) cap *= 2;
    ident_t *bigger = calloc(cap, sizeof(ident_t));
    if (!bigger) return 0;
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->slots[i].hash) continue;
        size_t j = slot_of(t->slots[i].hash, cap);
        while (bigger[j].hash) j = (j + 1) & (cap - 1);
        bigger[j] = t->slots[i];
    }
    free(t->slots);
    t->slots = bigger;
    t->cap = cap;
    return 1;
}

typedef struct {
    idents_t t;
    uint64_t *order; /* the references' fingerprints, by first use */
    uint32_t *counts;
    size_t n, cap;
} refs_t;

/* Adds the identifiers of d[0:n] to r: in code (prose 0) each use counts, and a wanted name's
 * uses go to want[]; in prose only identifiers shaped like names are references, a new one
 * counts once, and a wanted name's uses go to said[]. */
static int add_refs(refs_t *r, const unsigned char *d, Py_ssize_t n, int prose, Py_ssize_t min_len,
                    const unsigned char *exclude, Py_ssize_t nex, const unsigned char *wanted,
                    Py_ssize_t nwant, uint32_t *want, uint32_t *said) {
    Py_ssize_t i = 0;
    while (i < n) {
        unsigned char cls = CLASS[d[i]];
        if (!(cls & C_WORD)) {
            i++;
            continue;
        }
        Py_ssize_t start = i;
        int kinds = 0;
        uint64_t h = FNV_OFFSET;
        while (i < n && (CLASS[d[i]] & C_WORD)) {
            kinds |= CLASS[d[i]];
            h = (h ^ d[i]) * FNV_PRIME;
            i++;
        }
        if (cls & C_DIGIT) continue; /* a number, or a word that starts with a digit */
        if (!h) h = 1;
        Py_ssize_t len = i - start;
        size_t j = slot_of(h, r->t.cap);
        ident_t *s;
        for (;;) {
            s = &r->t.slots[j];
            if (!s->hash || (s->hash == h && s->len == (uint32_t)len &&
                             memcmp(s->text, d + start, (size_t)len) == 0))
                break;
            j = (j + 1) & (r->t.cap - 1);
        }
        if (s->hash) { /* seen before */
            if (s->want >= 0) (prose ? said : want)[s->want]++;
            else if (s->order >= 0 && !prose) r->counts[s->order]++;
            continue;
        }
        uint64_t fp = fingerprint(d + start, len);
        int32_t w = -1;
        for (Py_ssize_t k = 0; k < nwant; k++)
            if (get_u64(wanted + 8 * k) == fp) {
                w = (int32_t)k;
                break;
            }
        int32_t place = -1;
        int shaped = (kinds & (C_UPPER | C_DIGIT | C_UNDER)) != 0;
        if (w >= 0) {
            (prose ? said : want)[w]++;
        } else if (len >= min_len && (!prose || shaped) && !(nex && in_sorted(exclude, nex, fp))) {
            if (r->n == r->cap) {
                size_t grown = r->cap ? r->cap * 2 : 256;
                uint64_t *o2 = realloc(r->order, grown * sizeof(uint64_t));
                if (!o2) return 0;
                r->order = o2;
                uint32_t *c2 = realloc(r->counts, grown * sizeof(uint32_t));
                if (!c2) return 0;
                r->counts = c2;
                r->cap = grown;
            }
            place = (int32_t)r->n;
            r->order[r->n] = fp;
            r->counts[r->n] = 1;
            r->n++;
        }
        s->hash = h;
        s->text = d + start;
        s->len = (uint32_t)len;
        s->order = place;
        s->want = w;
        s->shaped = (unsigned char)(shaped && len >= min_len);
        if (++r->t.n * 4 > r->t.cap * 3 && !idents_grow(&r->t, 0)) return 0;
    }
    return 1;
}

static int nwant_too_many(const Py_buffer *wanted) { return wanted->len / 8 > 0x7FFFFFFF; }

/* refs(code, prose, min_len, max_refs, exclude, wanted) -> (fps, counts, uses)
 * The references of a file (packer.lexicon._words): the identifiers of code (runs of
 * [A-Za-z0-9_] that start with a letter or _) of min_len characters or more, and those of
 * prose that hold an uppercase letter, a digit or _, each once in order of first use, neither
 * in exclude (sorted u64 fingerprints) nor wanted (u64 fingerprints of names bound by an
 * import); a use in code counts one, a name found in prose alone counts one. When there are
 * more than max_refs, the most used are kept (the first used among equals), in their order.
 * fps: u64 each, counts: u16 each (at most 65535), uses: u32 for each wanted name, its uses in
 * code, or 1 when it has none there but prose names it and it is shaped as above. All
 * little-endian. */
static PyObject *refs(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer code, prose, exclude, wanted;
    Py_ssize_t min_len, max_refs;
    if (!PyArg_ParseTuple(args, "y*y*nny*y*", &code, &prose, &min_len, &max_refs, &exclude,
                          &wanted))
        return NULL;
    if (code.len > 0xFFFFFFFFLL || prose.len > 0xFFFFFFFFLL || nwant_too_many(&wanted)) {
        PyBuffer_Release(&code);
        PyBuffer_Release(&prose);
        PyBuffer_Release(&exclude);
        PyBuffer_Release(&wanted);
        PyErr_SetString(PyExc_ValueError, "refs: a text of 4 GiB or more, or too many names");
        return NULL;
    }
    if (!crc_ready) crc_init();
    Py_ssize_t nex = exclude.len / 8, nwant = wanted.len / 8;
    refs_t r = {{NULL, 0, 0}, NULL, NULL, 0, 0};
    uint32_t *want = calloc((size_t)(nwant ? 2 * nwant : 1), sizeof(uint32_t));
    uint32_t *said = want + nwant;
    uint64_t *keep = NULL; /* when some are dropped: the places of those kept */
    size_t kept = 0;
    int ok = idents_grow(&r.t, (size_t)(code.len + prose.len)) && want != NULL;
    Py_BEGIN_ALLOW_THREADS
    ok = ok &&
         add_refs(&r, code.buf, code.len, 0, min_len, exclude.buf, nex, wanted.buf, nwant, want,
                  said) &&
         add_refs(&r, prose.buf, prose.len, 1, min_len, exclude.buf, nex, wanted.buf, nwant, want,
                  said);
    if (ok) {
        /* a wanted name only mentioned in prose counts once, as any shaped name there */
        for (size_t j = 0; j < r.t.cap; j++) {
            ident_t *s = &r.t.slots[j];
            if (s->hash && s->want >= 0 && !want[s->want] && said[s->want] && s->shaped)
                want[s->want] = 1;
        }
        kept = r.n;
        if ((Py_ssize_t)r.n > max_refs && max_refs >= 0) {
            keep = malloc(r.n * sizeof(uint64_t));
            if (!keep) {
                ok = 0;
            } else { /* by count, most first, then by place; those kept back in place order */
                for (size_t k = 0; k < r.n; k++)
                    keep[k] = ((uint64_t)(0xFFFFFFFFu - r.counts[k]) << 32) | (uint64_t)k;
                qsort(keep, r.n, sizeof(uint64_t), compare_u64);
                kept = (size_t)max_refs;
                for (size_t k = 0; k < kept; k++) keep[k] &= 0xFFFFFFFFu;
                qsort(keep, kept, sizeof(uint64_t), compare_u64);
            }
        }
    }
    Py_END_ALLOW_THREADS
    PyObject *result = NULL;
    if (ok) {
        PyObject *fps = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(kept * 8));
        PyObject *cnt = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(kept * 2));
        PyObject *wc = PyBytes_FromStringAndSize(NULL, nwant * 4);
        if (fps && cnt && wc) {
            unsigned char *f = (unsigned char *)PyBytes_AS_STRING(fps);
            unsigned char *c = (unsigned char *)PyBytes_AS_STRING(cnt);
            for (size_t k = 0; k < kept; k++) {
                size_t at = keep ? (size_t)keep[k] : k;
                uint32_t count = r.counts[at] > 65535 ? 65535 : r.counts[at];
                put_u64(f + 8 * k, r.order[at]);
                c[2 * k] = (unsigned char)(count & 255);
                c[2 * k + 1] = (unsigned char)(count >> 8);
            }
            for (Py_ssize_t k = 0; k < nwant; k++)
                put_u32((unsigned char *)PyBytes_AS_STRING(wc) + 4 * k, want[k]);
            result = Py_BuildValue("(NNN)", fps, cnt, wc);
        } else {
            Py_XDECREF(fps);
            Py_XDECREF(cnt);
            Py_XDECREF(wc);
        }
    } else {
        PyErr_NoMemory();
    }
    free(r.t.slots);
    free(r.order);
    free(r.counts);
    free(want);
    free(keep);
    PyBuffer_Release(&code);
    PyBuffer_Release(&prose);
    PyBuffer_Release(&exclude);
    PyBuffer_Release(&wanted);
    return result;
}

/* fingerprints(names) -> (fps, shapes): for names joined by newlines, each name's
 * fingerprint (u64, little-endian) and its shape byte (packer.lexicon.shape: 0 plain, 1
 * structured, 2 specific). */
static PyObject *fingerprints(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer buf;
    if (!PyArg_ParseTuple(args, "y*", &buf)) return NULL;
    if (!crc_ready) crc_init();
    const unsigned char *d = buf.buf;
    Py_ssize_t n = buf.len, count = n ? 1 : 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (d[i] == '\n') count++;
    PyObject *fps = PyBytes_FromStringAndSize(NULL, count * 8);
    PyObject *shapes = PyBytes_FromStringAndSize(NULL, count);
    if (!fps || !shapes) {
        Py_XDECREF(fps);
        Py_XDECREF(shapes);
        PyBuffer_Release(&buf);
        return NULL;
    }
    unsigned char *fp_out = (unsigned char *)PyBytes_AS_STRING(fps);
    unsigned char *shape_out = (unsigned char *)PyBytes_AS_STRING(shapes);
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t start = 0, k = 0;
    while (k < count) {
        const unsigned char *nl = memchr(d + start, '\n', (size_t)(n - start));
        Py_ssize_t end = nl ? nl - d : n;
        const unsigned char *p = d + start;
        Py_ssize_t len = end - start;
        put_u64(fp_out + 8 * k, fingerprint(p, len));
        /* structured: not lowercase in Python's sense (a cased letter and none uppercase), an
         * underscore inside once the outer ones are cut, or a digit */
        int upper = 0, lower = 0, digit = 0, inner = 0;
        Py_ssize_t lo = 0, hi = len;
        while (lo < hi && p[lo] == '_') lo++;
        while (hi > lo && p[hi - 1] == '_') hi--;
        for (Py_ssize_t i = 0; i < len; i++) {
            unsigned char c = p[i];
            if (is_upper(c)) upper = 1;
            else if (is_lower(c)) lower = 1;
            else if (is_digit(c)) digit = 1;
            else if (c == '_' && i >= lo && i < hi) inner = 1;
        }
        int structured = upper || !lower || inner || digit;
        shape_out[k] = (unsigned char)(structured ? (len >= 8 ? 2 : 1) : 0);
        start = end + 1;
        k++;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&buf);
    return Py_BuildValue("(NN)", fps, shapes);
}

/* comments(data, slash) -> (code, comments, count): a text cut into its code and its
 * comments (packer.lexicon._prose): with slash, "//" to the end of a line and "/" "*" to the
 * next "*" "/" (a block never closed is not a comment); else "#" to the end of a line. The code is the text
 * with each comment replaced by one space, the comments are joined by newlines; count is how
 * many were found (0: the code is the text, and None stands for it). */
static PyObject *comments(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer buf;
    int slash;
    if (!PyArg_ParseTuple(args, "y*p", &buf, &slash)) return NULL;
    const unsigned char *d = buf.buf;
    Py_ssize_t n = buf.len;
    Py_ssize_t *spans = NULL; /* start, end of each comment */
    size_t count = 0, cap = 0;
    Py_ssize_t said = 0; /* bytes of comments */
    int ok = 1;
    Py_BEGIN_ALLOW_THREADS
    const unsigned char marker = slash ? '/' : '#';
    Py_ssize_t i = 0, unclosed = n; /* no end of a block starts at or after this */
    while (i < n) {
        const unsigned char *at = memchr(d + i, marker, (size_t)(n - i));
        if (!at) break;
        Py_ssize_t s = at - d, e;
        if (!slash || (s + 1 < n && d[s + 1] == '/')) {
            const unsigned char *nl = memchr(d + s, '\n', (size_t)(n - s));
            e = nl ? nl - d : n;
        } else if (s + 1 < n && d[s + 1] == '*' && s + 2 < unclosed) {
            e = -1;
            for (Py_ssize_t j = s + 2; j + 1 < n; j++) {
                const unsigned char *star = memchr(d + j, '*', (size_t)(n - 1 - j));
                if (!star) break;
                j = star - d;
                if (d[j + 1] == '/') {
                    e = j + 2;
                    break;
                }
            }
            if (e < 0) {
                unclosed = s + 2;
                i = s + 1;
                continue;
            }
        } else {
            i = s + 1;
            continue;
        }
        if (!ROOM_FOR_ONE(spans, cap, count, 2)) {
            ok = 0;
            break;
        }
        spans[2 * count] = s;
        spans[2 * count + 1] = e;
        count++;
        said += e - s;
        i = e;
    }
    Py_END_ALLOW_THREADS
    PyObject *result = NULL;
    if (!ok) {
        PyErr_NoMemory();
    } else if (!count) {
        result = Py_BuildValue("(Oy#n)", Py_None, "", (Py_ssize_t)0, (Py_ssize_t)0);
    } else {
        Py_ssize_t code_len = n - said + (Py_ssize_t)count;
        Py_ssize_t text_len = said + (Py_ssize_t)count - 1;
        PyObject *code = PyBytes_FromStringAndSize(NULL, code_len);
        PyObject *text = PyBytes_FromStringAndSize(NULL, text_len);
        if (code && text) {
            unsigned char *c = (unsigned char *)PyBytes_AS_STRING(code);
            unsigned char *t = (unsigned char *)PyBytes_AS_STRING(text);
            Py_ssize_t from = 0;
            for (size_t k = 0; k < count; k++) {
                Py_ssize_t s = spans[2 * k], e = spans[2 * k + 1];
                memcpy(c, d + from, (size_t)(s - from));
                c += s - from;
                *c++ = ' ';
                if (k) *t++ = '\n';
                memcpy(t, d + s, (size_t)(e - s));
                t += e - s;
                from = e;
            }
            memcpy(c, d + from, (size_t)(n - from));
            result = Py_BuildValue("(NNn)", code, text, (Py_ssize_t)count);
        } else {
            Py_XDECREF(code);
            Py_XDECREF(text);
        }
    }
    free(spans);
    PyBuffer_Release(&buf);
    return result;
}

/* --- declarations: a keyword, a gap, a name, on a line with nothing but modifiers before -- */

/* The gaps between a declaration's keyword and its name, and the names' forms, in the order
 * of packer.lang.record.GAPS and NAMES: what each regular expression there matches, here. */
enum { GAP_BLANKS, GAP_ANY_BLANKS, GAP_STAR, GAP_RECEIVER, GAPS };
enum { NAME_IDENT, NAME_JS, NAME_DOTTED, NAMES };
#define MAX_DECLS 32
#define MAX_MODIFIERS 64
#define MAX_PREFIX 160 /* packer.lexicon._MAX_PREFIX */

static inline int is_ws(unsigned char c) { /* what bytes.split() splits on */
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == 0x0b || c == 0x0c;
}
static inline int is_word(unsigned char c) { return (CLASS[c] & C_WORD) != 0; }
static inline int is_js_word(unsigned char c) { return is_word(c) || c == '$'; }

/* The end of the name of form `form` at d[at], or -1 when none starts there; *name_start is
 * where the name itself starts (the last part of a dotted one). */
static Py_ssize_t name_end(const unsigned char *d, Py_ssize_t n, Py_ssize_t at, int form,
                           Py_ssize_t *name_start) {
    if (at >= n) return -1;
    if (form == NAME_JS) {
        if (!(is_ident_start(d[at]) || d[at] == '$')) return -1;
        Py_ssize_t e = at + 1;
        while (e < n && is_js_word(d[e])) e++;
        *name_start = at;
        return e;
    }
    if (!is_ident_start(d[at])) return -1;
    Py_ssize_t e = at + 1;
    while (e < n && is_word(d[e])) e++;
    *name_start = at;
    if (form == NAME_DOTTED) /* a.b:c: the last identifier of the chain */
        while (e + 1 < n && (d[e] == '.' || d[e] == ':') && is_ident_start(d[e + 1])) {
            *name_start = e + 1;
            e += 2;
            while (e < n && is_word(d[e])) e++;
        }
    return e;
}

static inline Py_ssize_t blanks_from(const unsigned char *d, Py_ssize_t n, Py_ssize_t at) {
    while (at < n && is_blank(d[at])) at++;
    return at;
}

/* Where the name after a keyword ending at `at` ends, by the declaration's gap and form, or
 * -1 when the declaration's pattern does not match there. */
static Py_ssize_t declared(const unsigned char *d, Py_ssize_t n, Py_ssize_t at, int gap,
                           int form, Py_ssize_t *name_start) {
    Py_ssize_t j = blanks_from(d, n, at);
    switch (gap) {
    case GAP_BLANKS:
        return j > at ? name_end(d, n, j, form, name_start) : -1;
    case GAP_ANY_BLANKS:
        return name_end(d, n, j, form, name_start);
    case GAP_STAR: /* a generator's star, or blanks */
        if (j < n && d[j] == '*') {
            Py_ssize_t e = name_end(d, n, blanks_from(d, n, j + 1), form, name_start);
            if (e >= 0) return e;
        }
        return j > at ? name_end(d, n, j, form, name_start) : -1;
    case GAP_RECEIVER: /* (r *T): a Go method's receiver */
        if (j >= n || d[j] != '(') return -1;
        for (j++; j < n && d[j] != ')' && d[j] != '\n'; j++) {
        }
        if (j >= n || d[j] != ')') return -1;
        return name_end(d, n, blanks_from(d, n, j + 1), form, name_start);
    }
    return -1;
}

typedef struct {
    const unsigned char *p;
    Py_ssize_t len;
} word_t;

/* The words of a line's prefix as bytes.split() gives them, after pub(...) became
 * "restricted" (packer.lexicon._PUB_RESTRICTED); written into `out` (room for 4 * MAX_PREFIX
 * bytes), at most MAX_PREFIX words. Returns how many. */
static int prefix_words(const unsigned char *p, Py_ssize_t len, unsigned char *out,
                        word_t *words) {
    Py_ssize_t m = 0;
    for (Py_ssize_t i = 0; i < len;) {
        if (i + 4 <= len && memcmp(p + i, "pub(", 4) == 0) {
            const unsigned char *close = memchr(p + i + 4, ')', (size_t)(len - i - 4));
            if (close) {
                memcpy(out + m, "restricted", 10);
                m += 10;
                i = (close - p) + 1;
                continue;
            }
        }
        out[m++] = p[i++];
    }
    int count = 0;
    for (Py_ssize_t i = 0; i < m;) {
        while (i < m && is_ws(out[i])) i++;
        if (i >= m) break;
        Py_ssize_t s = i;
        while (i < m && !is_ws(out[i])) i++;
        words[count].p = out + s;
        words[count].len = i - s;
        count++;
    }
    return count;
}

typedef struct {
    Py_ssize_t pos, name_start, name_end, prefix_start; /* prefix_start: -1 when none */
    int decl, indented;
} found_t;

/* declarations(data, decls, modifiers, keywords, bare_indented) -> [(index, position, name,
 * indented, words)]: what packer.lexicon._python_declarations yields, for the declarations
 * (keyword, gap, form, top) of `decls`, in their order and each by position; `index` is the
 * declaration's place in `decls`, `words` the modifiers before its keyword. */
static PyObject *declarations(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer buf;
    PyObject *decl_seq, *modifier_seq, *keywords;
    int bare_indented;
    if (!PyArg_ParseTuple(args, "y*O!O!O!p", &buf, &PyTuple_Type, &decl_seq, &PyTuple_Type,
                          &modifier_seq, &PyFrozenSet_Type, &keywords, &bare_indented))
        return NULL;
    Py_ssize_t ndecls = PyTuple_GET_SIZE(decl_seq), nmods = PyTuple_GET_SIZE(modifier_seq);
    const unsigned char *kw[MAX_DECLS];
    Py_ssize_t kwlen[MAX_DECLS], resume[MAX_DECLS];
    /* the declarations whose keyword starts with a byte, and those whose keyword's second byte
     * is one (or which have none: `single`) */
    uint32_t first[256] = {0}, second[256] = {0}, single = 0;
    int gap[MAX_DECLS], form[MAX_DECLS], top[MAX_DECLS];
    word_t mods[MAX_MODIFIERS];
    if (ndecls > MAX_DECLS || nmods > MAX_MODIFIERS) {
        PyBuffer_Release(&buf);
        PyErr_SetString(PyExc_ValueError, "declarations: too many declarations or modifiers");
        return NULL;
    }
    for (Py_ssize_t k = 0; k < ndecls; k++) {
        PyObject *kwd;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(decl_seq, k), "O!iip", &PyBytes_Type, &kwd,
                              &gap[k], &form[k], &top[k])) {
            PyBuffer_Release(&buf);
            return NULL;
        }
        kw[k] = (const unsigned char *)PyBytes_AS_STRING(kwd);
        kwlen[k] = PyBytes_GET_SIZE(kwd);
        if (!kwlen[k] || gap[k] < 0 || gap[k] >= GAPS || form[k] < 0 || form[k] >= NAMES) {
            PyBuffer_Release(&buf);
            PyErr_SetString(PyExc_ValueError, "declarations: an empty keyword, or no such gap or name");
            return NULL;
        }
        first[kw[k][0]] |= 1u << k;
        if (kwlen[k] > 1) {
            second[kw[k][1]] |= 1u << k;
        } else {
            single |= 1u << k;
            for (int b = 0; b < 256; b++) second[b] |= 1u << k;
        }
        resume[k] = 0;
    }
    for (Py_ssize_t k = 0; k < nmods; k++) {
        PyObject *m = PyTuple_GET_ITEM(modifier_seq, k);
        if (!PyBytes_Check(m)) {
            PyBuffer_Release(&buf);
            PyErr_SetString(PyExc_TypeError, "declarations: modifiers are bytes");
            return NULL;
        }
        mods[k].p = (const unsigned char *)PyBytes_AS_STRING(m);
        mods[k].len = PyBytes_GET_SIZE(m);
    }
    const unsigned char *d = buf.buf;
    Py_ssize_t n = buf.len;
    found_t *found = NULL;
    size_t count = 0, cap = 0;
    int ok = 1;
    Py_BEGIN_ALLOW_THREADS
    unsigned char scratch[4 * MAX_PREFIX];
    word_t words[MAX_PREFIX];
    /* every place a keyword starts, found by its first two bytes; each declaration's matches
     * are those its expression's search finds: each after the previous one's end */
    for (Py_ssize_t i = 0; i < n && ok; i++) {
        uint32_t candidates = first[d[i]] & (i + 1 < n ? second[d[i + 1]] : single);
        while (candidates) {
            int k = __builtin_ctz(candidates);
            candidates &= candidates - 1;
            if (i < resume[k] || i + kwlen[k] > n || memcmp(d + i, kw[k], (size_t)kwlen[k]))
                continue;
            Py_ssize_t ns = 0, ne = declared(d, n, i + kwlen[k], gap[k], form[k], &ns);
            if (ne < 0) continue;
            resume[k] = ne; /* the expression's next match starts after this one */
            unsigned char before = d[i > 0 ? i - 1 : n - 1];
            Py_ssize_t prefix_start = -1;
            int indented = 0;
            if (before == ' ' || before == '\t') {
                Py_ssize_t lo = i - MAX_PREFIX > 0 ? i - MAX_PREFIX : 0, ls = i - 1;
                while (ls >= lo && d[ls] != '\n') ls--;
                if (ls < lo) continue; /* a longer prefix: not a declaration */
                Py_ssize_t s = blanks_from(d, i, ls + 1);
                indented = s > ls + 1;
                if (indented && (top[k] || (s == i && !bare_indented))) continue;
                int nw = prefix_words(d + s, i - s, scratch, words), all = 1;
                for (int w = 0; w < nw && all; w++) {
                    int known = words[w].p[0] == '"';
                    for (Py_ssize_t m = 0; m < nmods && !known; m++)
                        known = mods[m].len == words[w].len &&
                                memcmp(mods[m].p, words[w].p, (size_t)words[w].len) == 0;
                    all = known;
                }
                if (!all) continue;
                prefix_start = nw ? s : -1;
            } else if (before != '\n') {
                continue; /* glued to what precedes it */
            }
            if (!ROOM_FOR_ONE(found, cap, count, 1)) {
                ok = 0;
                break;
            }
            found[count].pos = i;
            found[count].name_start = ns;
            found[count].name_end = ne;
            found[count].prefix_start = prefix_start;
            found[count].decl = k;
            found[count].indented = indented;
            count++;
        }
    }
    Py_END_ALLOW_THREADS
    PyObject *result = ok ? PyList_New(0) : NULL;
    unsigned char scratch[4 * MAX_PREFIX];
    word_t words[MAX_PREFIX];
    /* by declaration, then by position: the order the Python reference yields them in */
    for (size_t at = 0; result && at < (size_t)ndecls * count; at++) {
        found_t *f = &found[at % count];
        if ((size_t)f->decl != at / count) continue;
        PyObject *name = PyBytes_FromStringAndSize((const char *)d + f->name_start,
                                                   f->name_end - f->name_start);
        int reserved = name ? PySet_Contains(keywords, name) : -1;
        PyObject *list = NULL, *item = NULL;
        if (reserved == 0) {
            if (f->prefix_start < 0) {
                list = PyList_New(0);
            } else {
                int nw = prefix_words(d + f->prefix_start, f->pos - f->prefix_start, scratch,
                                      words);
                list = PyList_New(nw);
                for (int w = 0; list && w < nw; w++) {
                    PyObject *word = PyBytes_FromStringAndSize((const char *)words[w].p,
                                                               words[w].len);
                    if (!word) Py_CLEAR(list);
                    else PyList_SET_ITEM(list, w, word);
                }
            }
            if (list)
                item = Py_BuildValue("(nnOOO)", (Py_ssize_t)f->decl, f->pos, name,
                                     f->indented ? Py_True : Py_False, list);
            if (!item || PyList_Append(result, item) < 0) Py_CLEAR(result);
        } else if (reserved < 0) {
            Py_CLEAR(result);
        }
        Py_XDECREF(item);
        Py_XDECREF(list);
        Py_XDECREF(name);
        if (!result) break;
    }
    if (!ok) PyErr_NoMemory();
    free(found);
    PyBuffer_Release(&buf);
    return result;
}

/* --- Python: its defs and classes, and the names assigned at the start of a line ----------- */

typedef struct {
    Py_ssize_t pos, indent, name_start, name_end;
    int is_class;
} header_t;

/* Where the name after keyword `kw` at d[i] ends (`kw[ \t]+` then an identifier), or -1. */
static Py_ssize_t keyword_name(const unsigned char *d, Py_ssize_t n, Py_ssize_t i, const char *kw,
                               Py_ssize_t kwlen, Py_ssize_t *name_start) {
    if (i + kwlen > n || memcmp(d + i, kw, (size_t)kwlen) != 0) return -1;
    Py_ssize_t j = i + kwlen;
    if (j >= n || !is_blank(d[j])) return -1;
    j = blanks_from(d, n, j);
    if (j >= n || !is_ident_start(d[j])) return -1;
    *name_start = j;
    while (j < n && is_word(d[j])) j++;
    return j;
}

/* The indentation of a def or class at d[pos] (packer.lexicon._python_headers): its line's
 * prefix (at most MAX_PREFIX - 1 bytes) all blanks, or white space around one "async"; -1
 * when it is neither. */
static Py_ssize_t header_indent(const unsigned char *d, Py_ssize_t pos) {
    Py_ssize_t lo = pos > MAX_PREFIX ? pos - MAX_PREFIX : 0, line = pos - 1;
    while (line >= lo && d[line] != '\n') line--;
    if (line < lo) return -1;
    Py_ssize_t s = line + 1, k = s;
    while (k < pos && is_blank(d[k])) k++;
    if (k == pos) return pos - s;
    k = s;
    while (k < pos && is_ws(d[k])) k++;
    Py_ssize_t indent = k - s;
    if (pos - k < 5 || memcmp(d + k, "async", 5) != 0) return -1;
    for (k += 5; k < pos; k++)
        if (!is_ws(d[k])) return -1;
    return indent;
}

/* python_names(data) -> (headers, assigned): what packer.lexicon._python_headers gives,
 * [(position, indentation, name, is a class)] by position, and the names that
 * packer.lexicon._PY_ASSIGN finds (a name at the start of a line assigned with "=", after an
 * optional annotation), each once, in order of first assignment. */
static PyObject *python_names(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer buf;
    if (!PyArg_ParseTuple(args, "y*", &buf)) return NULL;
    const unsigned char *d = buf.buf;
    Py_ssize_t n = buf.len;
    header_t *found = NULL;
    Py_ssize_t *assigned = NULL; /* start, end of each assigned name */
    size_t count = 0, cap = 0, nassigned = 0, acap = 0;
    int ok = 1;
    Py_BEGIN_ALLOW_THREADS
    /* each keyword's matches as its expression's search finds them: each after the previous
     * one's end */
    Py_ssize_t resume_def = 0, resume_class = 0;
    for (Py_ssize_t i = 0; i < n && ok; i++) {
        unsigned char c = d[i];
        if (c == '\n' && i + 1 < n && is_ident_start(d[i + 1])) {
            /* \n name [ \t]* (: [^\n=]+)? = (?!=) */
            Py_ssize_t e = i + 2;
            while (e < n && is_word(d[e])) e++;
            Py_ssize_t j = blanks_from(d, n, e);
            if (j < n && d[j] == ':') {
                Py_ssize_t k = j + 1;
                while (k < n && d[k] != '\n' && d[k] != '=') k++;
                j = k > j + 1 ? k : n;
            }
            if (j < n && d[j] == '=' && (j + 1 >= n || d[j + 1] != '=')) {
                if (!ROOM_FOR_ONE(assigned, acap, nassigned, 2)) {
                    ok = 0;
                    break;
                }
                assigned[2 * nassigned] = i + 1;
                assigned[2 * nassigned + 1] = e;
                nassigned++;
            }
            continue;
        }
        int is_class = c == 'c';
        if (c != 'd' && !is_class) continue;
        if (i < (is_class ? resume_class : resume_def)) continue;
        Py_ssize_t ns = 0, ne = is_class ? keyword_name(d, n, i, "class", 5, &ns)
                                         : keyword_name(d, n, i, "def", 3, &ns);
        if (ne < 0) continue;
        if (is_class) resume_class = ne;
        else resume_def = ne;
        Py_ssize_t indent = header_indent(d, i);
        if (indent < 0) continue;
        if (!ROOM_FOR_ONE(found, cap, count, 1)) {
            ok = 0;
            break;
        }
        found[count].pos = i;
        found[count].indent = indent;
        found[count].name_start = ns;
        found[count].name_end = ne;
        found[count].is_class = is_class;
        count++;
    }
    Py_END_ALLOW_THREADS
    PyObject *headers = ok ? PyList_New((Py_ssize_t)count) : NULL;
    PyObject *names = ok ? PyList_New(0) : NULL;
    for (size_t k = 0; headers && k < count; k++) {
        header_t *f = &found[k];
        PyObject *item = Py_BuildValue("(nny#O)", f->pos, f->indent, (const char *)d + f->name_start,
                                       f->name_end - f->name_start, f->is_class ? Py_True : Py_False);
        if (!item) Py_CLEAR(headers);
        else PyList_SET_ITEM(headers, (Py_ssize_t)k, item);
    }
    for (size_t k = 0; names && k < nassigned; k++) {
        PyObject *name = PyBytes_FromStringAndSize((const char *)d + assigned[2 * k],
                                                   assigned[2 * k + 1] - assigned[2 * k]);
        if (!name || PyList_Append(names, name) < 0) Py_CLEAR(names);
        Py_XDECREF(name);
    }
    free(found);
    free(assigned);
    PyBuffer_Release(&buf);
    PyObject *result = NULL;
    if (headers && names) result = Py_BuildValue("(OO)", headers, names);
    else if (!ok) PyErr_NoMemory();
    Py_XDECREF(headers);
    Py_XDECREF(names);
    return result;
}

/* Whether d[lo:hi] holds a line that starts with a statement (packer.lexicon._STATEMENT: a
 * newline, then a byte that is none of blank, newline, '#', '@', ')', ']', '}'). */
static int statement_between(const unsigned char *d, Py_ssize_t lo, Py_ssize_t hi) {
    for (Py_ssize_t k = lo; k + 2 <= hi; k++) {
        if (d[k] != '\n') continue;
        unsigned char c = d[k + 1];
        if (c != ' ' && c != '\t' && c != '\n' && c != '#' && c != '@' && c != ')' && c != ']' &&
            c != '}')
            return 1;
    }
    return 0;
}

typedef struct {
    Py_ssize_t indent;
    int is_class, private;
} block_t;

/* python_defs(data) -> (top_exported, top_private, member_exported, member_private, assigned)
 * What packer.lexicon._python reads from the defs and classes python_names finds, in one pass:
 * each def or class not nested in a function and not a dunder, by where it is declared (at the
 * top level, or as a member of a class) and whether it is exported (not private, nor in a
 * private class); a top-level statement since the previous one closes every block. Names in
 * order, repeated as declared; assigned: as python_names gives it. */
static PyObject *python_defs(PyObject *self, PyObject *args) {
    PyObject *found = python_names(self, args);
    if (!found) return NULL;
    Py_buffer buf;
    if (!PyArg_ParseTuple(args, "y*", &buf)) {
        Py_DECREF(found);
        return NULL;
    }
    const unsigned char *d = buf.buf;
    PyObject *headers = PyTuple_GET_ITEM(found, 0);
    Py_ssize_t count = PyList_GET_SIZE(headers);
    PyObject *out[4] = {PyList_New(0), PyList_New(0), PyList_New(0), PyList_New(0)};
    block_t *stack = malloc((size_t)(count ? count : 1) * sizeof(block_t));
    PyObject *result = NULL;
    int ok = out[0] && out[1] && out[2] && out[3] && stack;
    Py_ssize_t depth = 0, previous = 0;
    for (Py_ssize_t k = 0; ok && k < count; k++) {
        PyObject *h = PyList_GET_ITEM(headers, k);
        Py_ssize_t pos = PyLong_AsSsize_t(PyTuple_GET_ITEM(h, 0));
        Py_ssize_t indent = PyLong_AsSsize_t(PyTuple_GET_ITEM(h, 1));
        PyObject *name = PyTuple_GET_ITEM(h, 2);
        int is_class = PyTuple_GET_ITEM(h, 3) == Py_True;
        const char *nm = PyBytes_AS_STRING(name);
        Py_ssize_t len = PyBytes_GET_SIZE(name);
        if (depth && indent && statement_between(d, previous, pos)) depth = 0;
        previous = pos;
        while (depth && stack[depth - 1].indent >= indent) depth--;
        int dunder = len >= 2 && nm[0] == '_' && nm[1] == '_' && nm[len - 2] == '_' &&
                     nm[len - 1] == '_';
        int private = len >= 1 && nm[0] == '_' && !dunder;
        if (depth) {
            if (!stack[depth - 1].is_class) { /* nested in a function: a local helper */
                stack[depth].indent = indent;
                stack[depth].is_class = 0;
                stack[depth].private = 1;
                depth++;
                continue;
            }
            private = private || stack[depth - 1].private;
        }
        if (!dunder && PyList_Append(out[(depth ? 2 : 0) + (private ? 1 : 0)], name) < 0) ok = 0;
        stack[depth].indent = indent;
        stack[depth].is_class = is_class;
        stack[depth].private = private;
        depth++;
    }
    if (ok)
        result = Py_BuildValue("(OOOOO)", out[0], out[1], out[2], out[3], PyTuple_GET_ITEM(found, 1));
    else if (!stack)
        PyErr_NoMemory();
    for (int i = 0; i < 4; i++) Py_XDECREF(out[i]);
    free(stack);
    PyBuffer_Release(&buf);
    Py_DECREF(found);
    return result;
}

/* --- scoring a query over a search's bodies (cas/textindex.py, packer/search.py) ---------- */

/* gather(out, docmap, docs, masks) -> int
 *
 * One segment's postings of one term, laid over the bodies of a search: for posting j, body
 * docmap[docs[j]] (none when negative) gets masks[j] unless an earlier segment gave it one
 * (out nonzero). docs and masks: little-endian uint32 (a segment's bytes); docmap: native
 * int32, one per body of the segment; out: native uint32, one per body of the search. Returns
 * how many bodies it gave a mask, or -1 when a posting names a body the segment lacks. */
static PyObject *gather(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer out, docmap, docs, masks;
    if (!PyArg_ParseTuple(args, "w*y*y*y*", &out, &docmap, &docs, &masks)) return NULL;
    long long given = 0;
    if (out.len % 4 || docmap.len % 4 || docs.len % 4 || docs.len != masks.len) {
        PyErr_SetString(PyExc_ValueError, "gather: buffers of the wrong size");
        given = -2;
    } else {
        uint32_t *o = out.buf;
        const int32_t *map = docmap.buf;
        const unsigned char *dp = docs.buf, *mp = masks.buf;
        size_t nout = (size_t)out.len / 4, nmap = (size_t)docmap.len / 4;
        size_t np = (size_t)docs.len / 4;
        for (size_t j = 0; j < np; j++) {
            uint32_t doc = get_u32(dp + 4 * j);
            if (doc >= nmap) {
                given = -1;
                break;
            }
            int32_t b = map[doc];
            if (b < 0 || (size_t)b >= nout || o[b]) continue;
            uint32_t m = get_u32(mp + 4 * j);
            if (m) {
                o[b] = m;
                given++;
            }
        }
    }
    PyBuffer_Release(&out);
    PyBuffer_Release(&docmap);
    PyBuffer_Release(&docs);
    PyBuffer_Release(&masks);
    if (given == -2) return NULL;
    return PyLong_FromLongLong(given);
}

/* path_scores(weights, masks, path_body, gains, hits) -> (paths, values)
 *
 * Each path of a search that scores and its score (packer/search.py says how). A body's score:
 * its best window (the sum of the weights of the terms it holds), plus a sixteenth of the
 * weight its other windows hold, at most half the best. weights: one int per term; masks: per
 * term, native uint32 per body (0: the body does not hold it), all of one length. A path's
 * score: its body's (path_body: native uint32 body number per path), plus, for each list of
 * hits (native uint32 path numbers) that names it, that list's gain. paths: native uint32
 * path numbers scoring above 0, ascending; values: native int64, one per path. */
static PyObject *path_scores(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *wlist, *mlist, *glist, *hlist;
    Py_buffer pb;
    if (!PyArg_ParseTuple(args, "O!O!y*O!O!", &PyList_Type, &wlist, &PyList_Type, &mlist, &pb,
                          &PyList_Type, &glist, &PyList_Type, &hlist))
        return NULL;
    Py_ssize_t t = PyList_GET_SIZE(wlist), g = PyList_GET_SIZE(glist);
    size_t npaths = (size_t)pb.len / 4, nbodies = 0;
    const uint32_t *path_body = pb.buf;
    long long *w = calloc((size_t)(t ? t : 1), sizeof(long long));
    Py_buffer *bufs = calloc((size_t)(t ? t : 1), sizeof(Py_buffer));
    const uint32_t **m = calloc((size_t)(t ? t : 1), sizeof(uint32_t *));
    int64_t *body_value = NULL, *value = NULL;
    uint32_t *paths = NULL;
    int64_t *values = NULL;
    PyObject *result = NULL;
    Py_ssize_t got = 0;
    if (!w || !bufs || !m) {
        PyErr_NoMemory();
        goto done;
    }
    if (t != PyList_GET_SIZE(mlist) || g != PyList_GET_SIZE(hlist) || pb.len % 4) {
        PyErr_SetString(PyExc_ValueError, "path_scores: lists of different lengths");
        goto done;
    }
    for (; got < t; got++) {
        w[got] = PyLong_AsLongLong(PyList_GET_ITEM(wlist, got));
        if (w[got] == -1 && PyErr_Occurred()) goto done;
        if (PyObject_GetBuffer(PyList_GET_ITEM(mlist, got), &bufs[got], PyBUF_SIMPLE) < 0) goto done;
        size_t len = (size_t)bufs[got].len / 4;
        if (bufs[got].len % 4 || (got && len != nbodies)) {
            got++;
            PyErr_SetString(PyExc_ValueError, "path_scores: mask arrays of different sizes");
            goto done;
        }
        nbodies = len;
        m[got] = bufs[got].buf;
    }
    body_value = calloc(nbodies ? nbodies : 1, sizeof(int64_t));
    value = calloc(npaths ? npaths : 1, sizeof(int64_t));
    paths = malloc((npaths ? npaths : 1) * sizeof(uint32_t));
    values = malloc((npaths ? npaths : 1) * sizeof(int64_t));
    if (!body_value || !value || !paths || !values) {
        PyErr_NoMemory();
        goto done;
    }
    for (size_t i = 0; i < npaths; i++) {
        if (t && path_body[i] >= nbodies) {
            PyErr_SetString(PyExc_ValueError, "path_scores: a path of no body");
            goto done;
        }
    }
    for (Py_ssize_t k = 0; k < g; k++) {
        long long gain = PyLong_AsLongLong(PyList_GET_ITEM(glist, k));
        if (gain == -1 && PyErr_Occurred()) goto done;
        Py_buffer hb;
        if (PyObject_GetBuffer(PyList_GET_ITEM(hlist, k), &hb, PyBUF_SIMPLE) < 0) goto done;
        const uint32_t *h = hb.buf;
        size_t nh = (size_t)hb.len / 4;
        int bad = hb.len % 4 != 0;
        for (size_t j = 0; !bad && j < nh; j++) {
            if (h[j] >= npaths) bad = 1;
            else value[h[j]] += gain;
        }
        PyBuffer_Release(&hb);
        if (bad) {
            PyErr_SetString(PyExc_ValueError, "path_scores: a hit names no path");
            goto done;
        }
    }
    size_t count = 0;
    Py_BEGIN_ALLOW_THREADS
    for (size_t b = 0; b < nbodies; b++) {
        uint32_t either = 0;
        for (Py_ssize_t k = 0; k < t; k++) either |= m[k][b];
        if (!either) continue;
        long long best = 0, total = 0;
        for (Py_ssize_t k = 0; k < t; k++) total += w[k] * (long long)__builtin_popcount(m[k][b]);
        while (either) {
            uint32_t low = either & (~either + 1);
            long long here = 0;
            for (Py_ssize_t k = 0; k < t; k++)
                if (m[k][b] & low) here += w[k];
            if (here > best) best = here;
            either ^= low;
        }
        long long rest = (total - best) / 16, half = best / 2;
        body_value[b] = best + (rest < half ? rest : half);
    }
    for (size_t i = 0; i < npaths; i++) {
        int64_t v = value[i] + (t ? body_value[path_body[i]] : 0);
        if (v > 0) {
            paths[count] = (uint32_t)i;
            values[count] = v;
            count++;
        }
    }
    Py_END_ALLOW_THREADS
    result = Py_BuildValue("(y#y#)", (const char *)paths, (Py_ssize_t)(count * sizeof(uint32_t)),
                           (const char *)values, (Py_ssize_t)(count * sizeof(int64_t)));
done:
    for (Py_ssize_t k = 0; k < got; k++) PyBuffer_Release(&bufs[k]);
    PyBuffer_Release(&pb);
    free(w);
    free(bufs);
    free(m);
    free(body_value);
    free(value);
    free(paths);
    free(values);
    return result;
}

/* at_least(values, n) -> (floor, places)
 *
 * The n-th largest of values (native int64; the smallest when there are fewer), and the places
 * (native uint32, ascending) of those at least as large: where the best n of a search's scores
 * are, found without sorting them (packer/search.py). */
static PyObject *at_least(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer vb;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "y*n", &vb, &n)) return NULL;
    size_t count = (size_t)vb.len / 8;
    if (vb.len % 8 || n < 1 || count == 0) {
        PyBuffer_Release(&vb);
        PyErr_SetString(PyExc_ValueError, "at_least: int64 values, at least one, and n >= 1");
        return NULL;
    }
    const int64_t *values = vb.buf;
    int64_t *work = malloc(count * sizeof(int64_t));
    uint32_t *places = malloc(count * sizeof(uint32_t));
    if (!work || !places) {
        free(work);
        free(places);
        PyBuffer_Release(&vb);
        return PyErr_NoMemory();
    }
    memcpy(work, values, count * sizeof(int64_t));
    size_t k = (size_t)n <= count ? (size_t)n - 1 : count - 1;  /* descending rank wanted */
    size_t lo = 0, hi = count - 1;
    while (lo < hi) {  /* quickselect, descending, middle pivot */
        int64_t pivot = work[lo + (hi - lo) / 2];
        size_t i = lo, j = hi;
        while (i <= j) {
            while (work[i] > pivot) i++;
            while (work[j] < pivot) j--;
            if (i <= j) {
                int64_t t = work[i];
                work[i] = work[j];
                work[j] = t;
                i++;
                if (j == 0) break;
                j--;
            }
        }
        if (k <= j && j != (size_t)-1) hi = j;
        else if (k >= i) lo = i;
        else break;
    }
    int64_t floor = work[k];
    size_t found = 0;
    for (size_t i = 0; i < count; i++)
        if (values[i] >= floor) places[found++] = (uint32_t)i;
    PyObject *result = Py_BuildValue("(Ly#)", (long long)floor, (const char *)places,
                                     (Py_ssize_t)(found * sizeof(uint32_t)));
    free(work);
    free(places);
    PyBuffer_Release(&vb);
    return result;
}

/* --- digests looked up among others: what a search's bodies are numbered by ------------------ */

/* Two 32-byte digests compared by their bytes: the first eight as one big-endian number. */
static inline int digest_cmp(const unsigned char *a, const unsigned char *b) {
    uint64_t x, y;
    memcpy(&x, a, 8);
    memcpy(&y, b, 8);
#if defined(__GNUC__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    x = __builtin_bswap64(x);
    y = __builtin_bswap64(y);
#else
    if (x != y) return memcmp(a, b, 8);
#endif
    if (x != y) return x < y ? -1 : 1;
    return memcmp(a + 8, b + 8, 24);
}

/* The places 0..n-1 of n digests sorted by their bytes, equal ones by place: a stable merge
 * sort, the same order whatever the input, in n log n steps. NULL when out of memory. */
static uint32_t *sorted_places(const unsigned char *base, size_t n) {
    uint32_t *a = malloc((n ? n : 1) * sizeof(uint32_t));
    uint32_t *b = malloc((n ? n : 1) * sizeof(uint32_t));
    if (!a || !b) {
        free(a);
        free(b);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) a[i] = (uint32_t)i;
    for (size_t width = 1; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = lo + width < n ? lo + width : n;
            size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                b[k++] = digest_cmp(base + 32 * (size_t)a[j], base + 32 * (size_t)a[i]) < 0 ? a[j++] : a[i++];
            while (i < mid) b[k++] = a[i++];
            while (j < hi) b[k++] = a[j++];
        }
        uint32_t *t = a;
        a = b;
        b = t;
    }
    free(b);
    return a;
}

/* digest_bodies(digests) -> (body, firsts, ascending, distinct)
 *
 * The bodies of a list of paths' digests (32 bytes each, end to end), numbered in the order of
 * their first paths: body, native uint32 per path, its body's number; firsts, native uint32 per
 * body, the place of its first path; ascending, native uint32, the bodies' numbers in the
 * ascending order of their digests (what digest_numbers looks them up by); distinct, the
 * bodies' digests end to end, in the order of their numbers. */
static PyObject *digest_bodies(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer db;
    if (!PyArg_ParseTuple(args, "y*", &db)) return NULL;
    if (db.len % 32 || (size_t)db.len / 32 >= UINT32_MAX) {
        PyBuffer_Release(&db);
        PyErr_SetString(PyExc_ValueError, "digest_bodies: 32-byte digests, fewer than 2**32");
        return NULL;
    }
    size_t n = (size_t)db.len / 32, u = 0;
    const unsigned char *base = db.buf;
    uint32_t *order = sorted_places(base, n);
    uint32_t *first = malloc((n ? n : 1) * sizeof(uint32_t));  /* per place: its run's first */
    uint32_t *body = malloc((n ? n : 1) * sizeof(uint32_t));
    uint32_t *firsts = malloc((n ? n : 1) * sizeof(uint32_t));
    uint32_t *ascending = malloc((n ? n : 1) * sizeof(uint32_t));
    PyObject *result = NULL;
    if (!order || !first || !body || !firsts || !ascending) {
        PyErr_NoMemory();
        goto done;
    }
    for (size_t k = 0; k < n;) {  /* each run of equal digests: its lowest place is its first */
        size_t end = k + 1;
        while (end < n && digest_cmp(base + 32 * (size_t)order[end], base + 32 * (size_t)order[k]) == 0) end++;
        for (size_t r = k; r < end; r++) first[order[r]] = order[k];
        k = end;
    }
    for (size_t i = 0; i < n; i++) {  /* numbered in the order of first places */
        if (first[i] == i) {
            body[i] = (uint32_t)u;
            firsts[u++] = (uint32_t)i;
        } else {
            body[i] = body[first[i]];
        }
    }
    size_t a = 0;
    for (size_t k = 0; k < n; k++)
        if (first[order[k]] == order[k]) ascending[a++] = body[order[k]];
    PyObject *distinct = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(u * 32));
    if (!distinct) goto done;
    for (size_t k = 0; k < u; k++)
        memcpy(PyBytes_AS_STRING(distinct) + 32 * k, base + 32 * (size_t)firsts[k], 32);
    result = Py_BuildValue(
        "(y#y#y#N)", (const char *)body, (Py_ssize_t)(n * 4), (const char *)firsts,
        (Py_ssize_t)(u * 4), (const char *)ascending, (Py_ssize_t)(a * 4), distinct);
done:
    free(order);
    free(first);
    free(body);
    free(firsts);
    free(ascending);
    PyBuffer_Release(&db);
    return result;
}

/* digest_numbers(digests, ascending, probes) -> numbers
 *
 * For each 32-byte digest of probes, its place among digests (distinct, end to end; ascending:
 * their places in the ascending order of their bytes, as digest_bodies gives them), or -1 where
 * it is not there. numbers: native int32, one per probe. Probes in ascending order (a
 * segment's) are merged in one pass; any other probe is found by a binary search. */
static PyObject *digest_numbers(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer db, ob, pb;
    if (!PyArg_ParseTuple(args, "y*y*y*", &db, &ob, &pb)) return NULL;
    size_t n = (size_t)db.len / 32, m = (size_t)pb.len / 32;
    PyObject *result = NULL;
    if (db.len % 32 || pb.len % 32 || ob.len != (Py_ssize_t)(n * sizeof(uint32_t)) || n > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "digest_numbers: 32-byte digests and their order");
        goto done;
    }
    const unsigned char *base = db.buf, *probes = pb.buf;
    const uint32_t *order = ob.buf;
    for (size_t i = 0; i < n; i++) {
        if (order[i] >= n) {
            PyErr_SetString(PyExc_ValueError, "digest_numbers: an order of other digests");
            goto done;
        }
    }
    result = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(m * sizeof(int32_t)));
    if (!result) goto done;
    int32_t *out = (int32_t *)PyBytes_AS_STRING(result);
    size_t at = 0;  /* the first place whose digest is not below the last probe */
    for (size_t p = 0; p < m; p++) {
        const unsigned char *want = probes + 32 * p;
        if (p == 0 || digest_cmp(want, probes + 32 * (p - 1)) < 0) {
            size_t lo = 0, hi = n;  /* not ascending here: a binary search */
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (digest_cmp(base + 32 * (size_t)order[mid], want) < 0) lo = mid + 1;
                else hi = mid;
            }
            at = lo;
        } else {
            while (at < n && digest_cmp(base + 32 * (size_t)order[at], want) < 0) at++;
        }
        out[p] = at < n && digest_cmp(base + 32 * (size_t)order[at], want) == 0 ? (int32_t)order[at] : -1;
    }
done:
    PyBuffer_Release(&db);
    PyBuffer_Release(&ob);
    PyBuffer_Release(&pb);
    return result;
}

/* unheld(n, maps) -> places
 *
 * The numbers 0..n-1 that no map holds (maps: native int32 each, -1 for none; numbers outside
 * 0..n-1 are ignored), ascending, as native uint32. */
static PyObject *unheld(PyObject *self, PyObject *args) {
    (void)self;
    Py_ssize_t n;
    PyObject *maps;
    if (!PyArg_ParseTuple(args, "nO", &n, &maps)) return NULL;
    if (n < 0 || n >= (Py_ssize_t)UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "unheld: a count from 0 to 2**32");
        return NULL;
    }
    PyObject *seq = PySequence_Fast(maps, "unheld: a sequence of maps");
    if (!seq) return NULL;
    unsigned char *held = calloc((size_t)n ? (size_t)n : 1, 1);
    if (!held) {
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    Py_ssize_t count = PySequence_Fast_GET_SIZE(seq);
    for (Py_ssize_t i = 0; i < count; i++) {
        Py_buffer mb;
        if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(seq, i), &mb, PyBUF_SIMPLE) < 0) {
            free(held);
            Py_DECREF(seq);
            return NULL;
        }
        const unsigned char *mp = mb.buf;
        for (Py_ssize_t j = 0; j + 4 <= mb.len; j += 4) {
            int32_t v;
            memcpy(&v, mp + j, 4);
            if (v >= 0 && v < n) held[v] = 1;
        }
        PyBuffer_Release(&mb);
    }
    Py_DECREF(seq);
    size_t missing = 0;
    for (Py_ssize_t i = 0; i < n; i++) missing += !held[i];
    PyObject *result = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(missing * 4));
    if (result) {
        uint32_t *out = (uint32_t *)PyBytes_AS_STRING(result);
        size_t k = 0;
        for (Py_ssize_t i = 0; i < n; i++)
            if (!held[i]) out[k++] = (uint32_t)i;
    }
    free(held);
    return result;
}

/* places(numbers, wanted) -> places: the places (native uint32s, ascending) of the native uint32s
   of numbers that are among those of wanted: each of a few bodies' paths, in one pass (a search
   looks up the paths of the bodies that define a name, packer/search.py). The wanted are marked
   in a table of one byte per number up to the largest (body numbers: a few KiB), or, should the
   largest pass 2**24, sorted and halved. */
static int cmp_u32(const void *a, const void *b) {
    uint32_t x, y;
    memcpy(&x, a, 4);
    memcpy(&y, b, 4);
    return (x > y) - (x < y);
}

static PyObject *places(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer nb, wb;
    if (!PyArg_ParseTuple(args, "y*y*", &nb, &wb)) return NULL;
    PyObject *result = NULL;
    unsigned char *table = NULL;
    uint32_t *sorted = NULL;
    Py_ssize_t count = nb.len / 4, nwanted = wb.len / 4;
    uint64_t top = 0; /* one past the largest wanted */
    const unsigned char *wp = wb.buf, *np = nb.buf;
    for (Py_ssize_t j = 0; j < nwanted; j++) {
        uint32_t v;
        memcpy(&v, wp + 4 * j, 4);
        if ((uint64_t)v + 1 > top) top = (uint64_t)v + 1;
    }
    if (count > (Py_ssize_t)UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "places: more than 2**32 numbers");
        goto done;
    }
    int by_table = top <= ((uint64_t)1 << 24);
    if (by_table) {
        table = calloc(top ? (size_t)top : 1, 1);
        if (!table) {
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t j = 0; j < nwanted; j++) {
            uint32_t v;
            memcpy(&v, wp + 4 * j, 4);
            table[v] = 1;
        }
    } else {
        sorted = malloc((size_t)nwanted * 4);
        if (!sorted) {
            PyErr_NoMemory();
            goto done;
        }
        memcpy(sorted, wp, (size_t)nwanted * 4);
        qsort(sorted, (size_t)nwanted, 4, cmp_u32);
    }
    /* two passes: count, then fill */
    size_t found = 0;
    uint32_t *out = NULL;
    for (int pass = 0; pass < 2; pass++) {
        size_t k = 0;
        for (Py_ssize_t i = 0; i < count; i++) {
            uint32_t v;
            memcpy(&v, np + 4 * i, 4);
            int hit;
            if (by_table) {
                hit = v < top && table[v];
            } else {
                Py_ssize_t lo = 0, hi = nwanted;
                while (lo < hi) {
                    Py_ssize_t mid = lo + (hi - lo) / 2;
                    if (sorted[mid] < v) lo = mid + 1;
                    else hi = mid;
                }
                hit = lo < nwanted && sorted[lo] == v;
            }
            if (hit) {
                if (pass) out[k] = (uint32_t)i;
                k++;
            }
        }
        if (!pass) {
            found = k;
            result = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(found * 4));
            if (!result) goto done;
            out = (uint32_t *)PyBytes_AS_STRING(result);
        }
    }
done:
    free(table);
    free(sorted);
    PyBuffer_Release(&nb);
    PyBuffer_Release(&wb);
    return result;
}

/* all_below(numbers, limit) -> bool: whether every native uint32 of numbers is below limit. */
static PyObject *all_below(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer nb;
    unsigned long long limit;
    if (!PyArg_ParseTuple(args, "y*K", &nb, &limit)) return NULL;
    int ok = nb.len % 4 == 0;
    const unsigned char *p = nb.buf;
    for (Py_ssize_t j = 0; ok && j < nb.len; j += 4) {
        uint32_t v;
        memcpy(&v, p + j, 4);
        ok = v < limit;
    }
    PyBuffer_Release(&nb);
    return PyBool_FromLong(ok);
}

/* --- a line's key ------------------------------------------------------------------------ */

/* text_key(text) -> int: FNV-1a (64 bits) of the text's UTF-8 bytes, as cas.words.key gives for
 * text.encode(); a text that is not valid UTF-8 (a lone surrogate) raises UnicodeEncodeError.
 * packer/pricing.py keys the token counts of the lines it prices by it. */
static PyObject *text_key(PyObject *self, PyObject *arg) {
    (void)self;
    Py_ssize_t n;
    const char *p = PyUnicode_AsUTF8AndSize(arg, &n);
    if (!p) return NULL;
    uint64_t h = FNV_OFFSET;
    for (Py_ssize_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * FNV_PRIME;
    return PyLong_FromUnsignedLongLong(h);
}

/* --- references joined to the names defined: the rating's first filter --------------------- */

/* keyed_hits(fps, families, salt, factor, bitmap, shift, keys, sizes, max_size, starts,
 *            bucket_shift) -> (refs, places)
 * For each reference i, its fingerprint fps[i] (u64) keyed by its family families[i] (i64):
 * key = fps[i] ^ families[i] * salt. It is kept when the bitmap has the key's slot
 * (key * factor) >> shift set (one bit a slot, slot s at bit s % 8 of byte s / 8) and the sorted
 * keys (u64) hold the key at a place whose size (i64) is at most max_size: i and that place,
 * both i64, in the order of i. The keys are searched within their bucket, the keys whose top
 * bits (key >> bucket_shift) are b: keys[starts[b]:starts[b + 1]] (starts: u32, one more than
 * the buckets). All arithmetic wraps at 64 bits and the arrays are in the machine's order, as
 * numpy holds them (packer/rating.py, whose numpy steps compute the same). A bitmap of bits and
 * buckets keep what each reference touches small: over millions of references, misses of the
 * cache were most of the time a byte a slot and a search of all the keys took. */
static PyObject *keyed_hits(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer fps, fams, bitmap, keys, sizes, starts;
    unsigned long long salt, factor;
    int shift, bucket_shift;
    long long max_size;
    if (!PyArg_ParseTuple(args, "y*y*KKy*iy*y*Ly*i", &fps, &fams, &salt, &factor, &bitmap, &shift,
                          &keys, &sizes, &max_size, &starts, &bucket_shift))
        return NULL;
    PyObject *result = NULL;
    int64_t *refs = NULL, *places = NULL;
    size_t found = 0, cap = 0;
    Py_ssize_t n = fps.len / 8, nk = keys.len / 8;
    if (fps.len % 8 || fams.len != fps.len || keys.len % 8 || sizes.len != keys.len ||
        shift < 4 || shift > 63 || bitmap.len != ((Py_ssize_t)1 << (64 - shift)) / 8 ||
        bucket_shift < 44 || bucket_shift > 63 ||
        starts.len != 4 * (((Py_ssize_t)1 << (64 - bucket_shift)) + 1)) {
        PyErr_SetString(PyExc_ValueError, "keyed_hits: arrays of mismatched sizes");
        goto done;
    }
    const unsigned char *st = starts.buf;
    int ok = 1;
    Py_BEGIN_ALLOW_THREADS
    const unsigned char *fp = fps.buf, *fa = fams.buf, *kp = keys.buf, *sp = sizes.buf;
    const unsigned char *bits = bitmap.buf;
    for (Py_ssize_t i = 0; i < n && ok; i++) {
        uint64_t f, family;
        memcpy(&f, fp + 8 * i, 8);
        memcpy(&family, fa + 8 * i, 8);
        uint64_t key = f ^ (family * (uint64_t)salt);
        uint64_t slot = (key * (uint64_t)factor) >> shift;
        if (!((bits[slot >> 3] >> (slot & 7)) & 1)) continue;
        uint64_t bucket = key >> bucket_shift;
        uint32_t lo32, hi32;
        memcpy(&lo32, st + 4 * bucket, 4);
        memcpy(&hi32, st + 4 * (bucket + 1), 4);
        /* within the keys whatever the starts say: a bucket is searched, never read past */
        if (hi32 > (uint64_t)nk) hi32 = (uint32_t)nk;
        Py_ssize_t lo = lo32, hi = hi32;
        while (lo < hi) {
            Py_ssize_t mid = lo + (hi - lo) / 2;
            uint64_t k;
            memcpy(&k, kp + 8 * mid, 8);
            if (k < key) lo = mid + 1;
            else hi = mid;
        }
        if (lo >= (Py_ssize_t)hi32) continue;
        uint64_t k;
        int64_t size;
        memcpy(&k, kp + 8 * lo, 8);
        memcpy(&size, sp + 8 * lo, 8);
        if (k != key || size > max_size) continue;
        if (found == cap) {
            size_t grown = cap ? cap * 2 : 1024;
            int64_t *r2 = realloc(refs, grown * sizeof(int64_t));
            if (!r2) { ok = 0; break; }
            refs = r2;
            int64_t *p2 = realloc(places, grown * sizeof(int64_t));
            if (!p2) { ok = 0; break; }
            places = p2;
            cap = grown;
        }
        refs[found] = (int64_t)i;
        places[found] = (int64_t)lo;
        found++;
    }
    Py_END_ALLOW_THREADS
    if (!ok) {
        PyErr_NoMemory();
        goto done;
    }
    PyObject *r = PyBytes_FromStringAndSize((const char *)refs, (Py_ssize_t)(found * 8));
    PyObject *g = PyBytes_FromStringAndSize((const char *)places, (Py_ssize_t)(found * 8));
    if (r && g) result = Py_BuildValue("(NN)", r, g);
    else {
        Py_XDECREF(r);
        Py_XDECREF(g);
    }
done:
    free(refs);
    free(places);
    PyBuffer_Release(&fps);
    PyBuffer_Release(&fams);
    PyBuffer_Release(&bitmap);
    PyBuffer_Release(&keys);
    PyBuffer_Release(&sizes);
    PyBuffer_Release(&starts);
    return result;
}

/* --- Go's uses of imported names (packer/lexicon.py, `_go_qualified`) ------------------------ */

static inline int is_ascii_word(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* qualified(data, locals): each `local.Name` of `data` where `local` is one of the tuple of bytes
 * `locals`, standing after neither an ASCII word byte nor a dot, and `Name` is an ASCII capital
 * then word bytes. Returns (uses, text): `uses` a list of (index into locals, Name) in order,
 * `text` the data with those names cut out (None when there is none). */
static PyObject *qualified(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer buf;
    PyObject *locals;
    if (!PyArg_ParseTuple(args, "y*O!", &buf, &PyTuple_Type, &locals)) return NULL;
    Py_ssize_t nl = PyTuple_GET_SIZE(locals);
    for (Py_ssize_t k = 0; k < nl; k++) {
        if (!PyBytes_Check(PyTuple_GET_ITEM(locals, k))) {
            PyBuffer_Release(&buf);
            PyErr_SetString(PyExc_TypeError, "qualified: locals must be bytes");
            return NULL;
        }
    }
    const unsigned char *d = buf.buf;
    Py_ssize_t n = buf.len;
    PyObject *uses = PyList_New(0);
    Py_ssize_t *spans = NULL;
    size_t nspans = 0, cap = 0;
    int ok = uses != NULL;
    const unsigned char *q = d, *stop = d + n;
    while (ok && q < stop && (q = memchr(q, '.', (size_t)(stop - q))) != NULL) {
        Py_ssize_t dot = q - d;
        q++;
        if (dot + 1 >= n || d[dot + 1] < 'A' || d[dot + 1] > 'Z') continue;
        Py_ssize_t s = dot;
        while (s > 0 && is_ascii_word(d[s - 1])) s--;
        if (s == dot || (s > 0 && d[s - 1] == '.')) continue;
        Py_ssize_t found = -1;
        for (Py_ssize_t k = 0; k < nl; k++) {
            PyObject *item = PyTuple_GET_ITEM(locals, k);
            if (PyBytes_GET_SIZE(item) == dot - s &&
                memcmp(PyBytes_AS_STRING(item), d + s, (size_t)(dot - s)) == 0) {
                found = k;
                break;
            }
        }
        if (found < 0) continue;
        Py_ssize_t e = dot + 2;
        while (e < n && is_ascii_word(d[e])) e++;
        if (!ROOM_FOR_ONE(spans, cap, nspans, 2)) {
            ok = 0;
            PyErr_NoMemory();
            break;
        }
        spans[2 * nspans] = dot + 1;
        spans[2 * nspans + 1] = e;
        nspans++;
        PyObject *use = Py_BuildValue("(ny#)", found, (const char *)(d + dot + 1), e - dot - 1);
        if (!use || PyList_Append(uses, use) < 0) ok = 0;
        Py_XDECREF(use);
        q = d + e;
    }
    PyObject *result = NULL;
    if (ok) {
        PyObject *text;
        if (!nspans) {
            text = Py_NewRef(Py_None);
        } else {
            Py_ssize_t cut = 0;
            for (size_t k = 0; k < nspans; k++) cut += spans[2 * k + 1] - spans[2 * k];
            text = PyBytes_FromStringAndSize(NULL, n - cut);
            if (text) {
                char *out = PyBytes_AS_STRING(text);
                Py_ssize_t pos = 0;
                for (size_t k = 0; k < nspans; k++) {
                    memcpy(out, d + pos, (size_t)(spans[2 * k] - pos));
                    out += spans[2 * k] - pos;
                    pos = spans[2 * k + 1];
                }
                memcpy(out, d + pos, (size_t)(n - pos));
            }
        }
        if (text) result = Py_BuildValue("(ON)", uses, text);
    }
    Py_XDECREF(uses);
    free(spans);
    PyBuffer_Release(&buf);
    return result;
}

/* --- search by meaning (packer/embedding.py) ---------------------------------------------- */

/* row_sums(table, ids, bounds, dim) -> bytes: for each text i, the sum of the table's rows
 * ids[bounds[i]:bounds[i + 1]], dim int64 each (native order). table: rows of dim int32; ids:
 * uint32 row numbers (each below the table's rows, checked); bounds: n + 1 int64, ascending.
 * Exact integer sums: the same as numpy's add.reduceat over the gathered rows. */
static PyObject *row_sums(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer tb, ib, bb;
    Py_ssize_t dim;
    if (!PyArg_ParseTuple(args, "y*y*y*n", &tb, &ib, &bb, &dim)) return NULL;
    PyObject *out = NULL;
    Py_ssize_t rows = dim > 0 ? tb.len / (Py_ssize_t)(4 * dim) : 0;
    Py_ssize_t nids = ib.len / 4, n = bb.len / 8 - 1;
    if (dim <= 0 || tb.len % (4 * dim) || ib.len % 4 || bb.len % 8 || n < 0) {
        PyErr_SetString(PyExc_ValueError, "row_sums: sizes do not fit");
        goto done;
    }
    const int32_t *table = tb.buf;
    const uint32_t *ids = ib.buf;
    const int64_t *bounds = bb.buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (bounds[i] < 0 || bounds[i] > bounds[i + 1] || bounds[i + 1] > nids) {
            PyErr_SetString(PyExc_ValueError, "row_sums: bounds out of order");
            goto done;
        }
    }
    for (Py_ssize_t j = 0; j < nids; j++) {
        if ((Py_ssize_t)ids[j] >= rows) {
            PyErr_SetString(PyExc_ValueError, "row_sums: a row number past the table");
            goto done;
        }
    }
    out = PyBytes_FromStringAndSize(NULL, n * dim * 8);
    if (!out) goto done;
    int64_t *sums = (int64_t *)PyBytes_AS_STRING(out);
    Py_BEGIN_ALLOW_THREADS
    memset(sums, 0, (size_t)(n * dim) * 8);
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t *acc = sums + i * dim;
        for (int64_t j = bounds[i]; j < bounds[i + 1]; j++) {
            const int32_t *row = table + (Py_ssize_t)ids[j] * dim;
            for (Py_ssize_t d = 0; d < dim; d++) acc[d] += row[d];
        }
    }
    Py_END_ALLOW_THREADS
done:
    PyBuffer_Release(&tb);
    PyBuffer_Release(&ib);
    PyBuffer_Release(&bb);
    return out;
}

/* cosines(matrix, query, dim) -> bytes: for each row of matrix (rows of dim signed bytes) its
 * cosine with query (dim signed bytes) in millionths, floor(dot / sqrt(nq * nd) * 1e6) in IEEE
 * double (0 where a norm is 0), int64 each (native order). The dot products and norms are exact
 * integers and the three float operations correctly rounded, so every machine gets the same
 * values, and numpy's the same as these (packer/embedding.py, `scores`). */
static PyObject *cosines(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer mb, qb;
    Py_ssize_t dim;
    if (!PyArg_ParseTuple(args, "y*y*n", &mb, &qb, &dim)) return NULL;
    PyObject *out = NULL;
    if (dim <= 0 || qb.len != dim || mb.len % dim) {
        PyErr_SetString(PyExc_ValueError, "cosines: sizes do not fit");
        goto done;
    }
    Py_ssize_t n = mb.len / dim;
    out = PyBytes_FromStringAndSize(NULL, n * 8);
    if (!out) goto done;
    int64_t *res = (int64_t *)PyBytes_AS_STRING(out);
    const int8_t *q = qb.buf;
    const int8_t *m = mb.buf;
    Py_BEGIN_ALLOW_THREADS
    int64_t nq = 0;
    for (Py_ssize_t d = 0; d < dim; d++) nq += (int64_t)q[d] * q[d];
    for (Py_ssize_t i = 0; i < n; i++) {
        const int8_t *row = m + i * dim;
        int32_t dot = 0, nd = 0;
        for (Py_ssize_t d = 0; d < dim; d++) {
            dot += (int32_t)row[d] * q[d];
            nd += (int32_t)row[d] * row[d];
        }
        double c = 0.0;
        if (nq && nd) {
            volatile double denom = sqrt((double)(nq * (int64_t)nd));
            volatile double ratio = (double)dot / denom;
            c = floor(ratio * 1e6);
        }
        res[i] = (int64_t)c;
    }
    Py_END_ALLOW_THREADS
done:
    PyBuffer_Release(&mb);
    PyBuffer_Release(&qb);
    return out;
}

/* bpe(symbols, keys, values) -> bytes: byte-pair merges of one word (packer/embedding.py).
 * symbols: the word's initial token ids (uint32 each, native order); keys: the merge table's
 * pairs (left << 32 | right), uint64 ascending; values: each pair's (rank << 32 | merged id).
 * Repeatedly merges the adjacent pair of lowest rank, the leftmost of equals, until no pair
 * has a rank: exactly the Python loop it stands in for (a test compares both on many words).
 * Returns the final ids (uint32 each). */
static int bpe_find(const uint64_t *keys, Py_ssize_t n, uint64_t key, uint64_t *found, const uint64_t *vals) {
    Py_ssize_t lo = 0, hi = n;
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (keys[mid] < key) lo = mid + 1; else hi = mid;
    }
    if (lo < n && keys[lo] == key) { *found = vals[lo]; return 1; }
    return 0;
}

static PyObject *bpe(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer sb, kb, vb;
    if (!PyArg_ParseTuple(args, "y*y*y*", &sb, &kb, &vb)) return NULL;
    PyObject *out = NULL;
    uint32_t *ids = NULL;
    if (sb.len % 4 || kb.len % 8 || kb.len != vb.len) {
        PyErr_SetString(PyExc_ValueError, "bpe: sizes do not fit");
        goto done;
    }
    Py_ssize_t n = sb.len / 4, nk = kb.len / 8;
    ids = malloc((size_t)(n ? n : 1) * 4);
    if (!ids) { PyErr_NoMemory(); goto done; }
    memcpy(ids, sb.buf, (size_t)n * 4);
    const uint64_t *keys = kb.buf, *vals = vb.buf;
    while (n > 1) {
        Py_ssize_t best = -1;
        uint64_t best_rank = UINT64_MAX, best_id = 0;
        for (Py_ssize_t i = 0; i + 1 < n; i++) {
            uint64_t v;
            if (bpe_find(keys, nk, ((uint64_t)ids[i] << 32) | ids[i + 1], &v, vals)) {
                if ((v >> 32) < best_rank) { best_rank = v >> 32; best = i; best_id = v & 0xFFFFFFFFu; }
            }
        }
        if (best < 0) break;
        ids[best] = (uint32_t)best_id;
        memmove(ids + best + 1, ids + best + 2, (size_t)(n - best - 2) * 4);
        n--;
    }
    out = PyBytes_FromStringAndSize((const char *)ids, n * 4);
done:
    free(ids);
    PyBuffer_Release(&sb);
    PyBuffer_Release(&kb);
    PyBuffer_Release(&vb);
    return out;
}

/* group_best(scores, bounds) -> bytes: for each group i of scores (int64, native order),
 * scores[bounds[i]:bounds[i + 1]] with bounds int64 ascending, the place of its best score,
 * the first of equals, as an int64 (-1 for an empty group): each file's best passage
 * (packer/vectors.py; a test compares it with the Python it stands in for). */
static PyObject *group_best(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer sb, bb;
    if (!PyArg_ParseTuple(args, "y*y*", &sb, &bb)) return NULL;
    PyObject *out = NULL;
    Py_ssize_t n = sb.len / 8, groups = bb.len / 8 - 1;
    if (sb.len % 8 || bb.len % 8 || groups < 0) {
        PyErr_SetString(PyExc_ValueError, "group_best: sizes do not fit");
        goto done;
    }
    const int64_t *scores = sb.buf, *bounds = bb.buf;
    for (Py_ssize_t g = 0; g < groups; g++) {
        if (bounds[g] < 0 || bounds[g] > bounds[g + 1] || bounds[g + 1] > n) {
            PyErr_SetString(PyExc_ValueError, "group_best: bounds out of order");
            goto done;
        }
    }
    out = PyBytes_FromStringAndSize(NULL, groups * 8);
    if (!out) goto done;
    int64_t *best = (int64_t *)PyBytes_AS_STRING(out);
    for (Py_ssize_t g = 0; g < groups; g++) {
        int64_t at = -1;
        for (int64_t i = bounds[g]; i < bounds[g + 1]; i++)
            if (at < 0 || scores[i] > scores[at]) at = i;
        best[g] = at;
    }
done:
    PyBuffer_Release(&sb);
    PyBuffer_Release(&bb);
    return out;
}

static PyMethodDef METHODS[] = {
    {"terms", terms, METH_VARARGS, "The terms of a text (see cas/words.py)."},
    {"build", build, METH_VARARGS, "A segment's postings from bodies' terms (cas/textindex.py)."},
    {"merge", merge, METH_VARARGS, "One segment's postings from several (cas/textindex.py)."},
    {"refs", refs, METH_VARARGS, "A text's identifiers and their counts (packer/lexicon.py)."},
    {"fingerprints", fingerprints, METH_VARARGS, "Names' fingerprints and shapes (packer/lexicon.py)."},
    {"comments", comments, METH_VARARGS, "A text's code and comments (packer/lexicon.py)."},
    {"declarations", declarations, METH_VARARGS, "A text's declarations (packer/lexicon.py)."},
    {"gather", gather, METH_VARARGS, "One segment's postings of a term over a search's bodies (cas/textindex.py)."},
    {"at_least", at_least, METH_VARARGS, "The n-th largest of some scores, and where those as large are (packer/search.py)."},
    {"path_scores", path_scores, METH_VARARGS, "Each path's score from its terms' windows (packer/search.py)."},
    {"digest_bodies", digest_bodies, METH_VARARGS, "Paths' digests as bodies numbered by their first paths (packer/search.py)."},
    {"digest_numbers", digest_numbers, METH_VARARGS, "Each probe digest's place among digests, or -1 (cas/textindex.py)."},
    {"unheld", unheld, METH_VARARGS, "The numbers below n that no map holds (cas/textindex.py)."},
    {"places", places, METH_VARARGS, "The places of the numbers among a few wanted (packer/search.py)."},
    {"all_below", all_below, METH_VARARGS, "Whether every uint32 is below a limit (packer/pathwords.py)."},
    {"python_names", python_names, METH_VARARGS, "A Python text's defs, classes and assignments (packer/lexicon.py)."},
    {"python_defs", python_defs, METH_VARARGS, "A Python text's defs and classes by place and visibility (packer/lexicon.py)."},
    {"keyed_hits", keyed_hits, METH_VARARGS, "References whose keyed names are defined (packer/rating.py)."},
    {"text_key", text_key, METH_O, "FNV-1a of a text's UTF-8 bytes (packer/pricing.py)."},
    {"qualified", qualified, METH_VARARGS, "Go's uses of imported names (packer/lexicon.py)."},
    {"row_sums", row_sums, METH_VARARGS, "Each text's sum of embedding rows (packer/embedding.py)."},
    {"cosines", cosines, METH_VARARGS, "Each row's cosine with a query, in millionths (packer/embedding.py)."},
    {"bpe", bpe, METH_VARARGS, "Byte-pair merges of one word's token ids (packer/embedding.py)."},
    {"group_best", group_best, METH_VARARGS, "Each group's best score's place (packer/vectors.py)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_words", NULL, -1, METHODS,
                                     NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__words(void) {
    classes_init();
    return PyModule_Create(&MODULE);
}
