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

/* Stable LSD radix sort of postings by key, 8 bits a pass; passes where every key has the
 * same byte are skipped. */
static int sort_postings(posting_t *p, size_t n) {
    posting_t *tmp = malloc((n ? n : 1) * sizeof(posting_t));
    if (!tmp) return 0;
    posting_t *src = p, *dst = tmp;
    for (int shift = 0; shift < 64; shift += 8) {
        size_t count[256] = {0};
        for (size_t i = 0; i < n; i++) count[(src[i].key >> shift) & 255]++;
        int skip = 0;
        for (int b = 0; b < 256; b++)
            if (count[b] == n) skip = 1;
        if (skip) continue;
        size_t at = 0;
        for (int b = 0; b < 256; b++) {
            size_t c = count[b];
            count[b] = at;
            at += c;
        }
        for (size_t i = 0; i < n; i++) dst[count[(src[i].key >> shift) & 255]++] = src[i];
        posting_t *swap = src;
        src = dst;
        dst = swap;
    }
    if (src != p) memcpy(p, src, n * sizeof(posting_t));
    free(tmp);
    return 1;
}

static void put_u64(unsigned char *at, uint64_t v) {
    for (int b = 0; b < 8; b++) at[b] = (unsigned char)(v >> (8 * b));
}
static void put_u32(unsigned char *at, uint32_t v) {
    for (int b = 0; b < 4; b++) at[b] = (unsigned char)(v >> (8 * b));
}
static uint64_t get_u64(const unsigned char *at) {
    uint64_t v = 0;
    for (int b = 7; b >= 0; b--) v = (v << 8) | at[b];
    return v;
}
static uint32_t get_u32(const unsigned char *at) {
    uint32_t v = 0;
    for (int b = 3; b >= 0; b--) v = (v << 8) | at[b];
    return v;
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
    size_t total = 0;
    for (Py_ssize_t i = 0; i < docs; i++) {
        PyObject *k = PyList_GET_ITEM(key_list, i), *m = PyList_GET_ITEM(mask_list, i);
        if (!PyBytes_Check(k) || !PyBytes_Check(m) || PyBytes_GET_SIZE(k) % 8 ||
            PyBytes_GET_SIZE(m) * 2 != PyBytes_GET_SIZE(k)) {
            PyErr_SetString(PyExc_ValueError, "build: keys of 8 bytes, masks of 4, as many");
            return NULL;
        }
        total += (size_t)PyBytes_GET_SIZE(k) / 8;
    }
    posting_t *p = malloc((total ? total : 1) * sizeof(posting_t));
    if (!p) return PyErr_NoMemory();
    size_t at = 0;
    for (Py_ssize_t i = 0; i < docs; i++) {
        const unsigned char *k = (const unsigned char *)PyBytes_AS_STRING(PyList_GET_ITEM(key_list, i));
        const unsigned char *m = (const unsigned char *)PyBytes_AS_STRING(PyList_GET_ITEM(mask_list, i));
        size_t n = (size_t)PyBytes_GET_SIZE(PyList_GET_ITEM(key_list, i)) / 8;
        for (size_t j = 0; j < n; j++) {
            p[at].key = get_u64(k + 8 * j);
            p[at].mask = get_u32(m + 4 * j);
            p[at].doc = (uint32_t)i;
            at++;
        }
    }
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

/* --- identifiers with their counts, for the packer's lexicon --------------------------------- */

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
    for (Py_ssize_t i = 0; i < n; i++) {
        crc = CRC_TABLE[(crc ^ p[i]) & 255] ^ (crc >> 8);
        a = (a + p[i]) % 65521u;
        b = (b + a) % 65521u;
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

/* refs(data, min_len, shaped_only, exclude, wanted) -> (fps, counts, wanted_counts)
 * The identifiers of data (runs of [A-Za-z0-9_] that start with a letter or _), each once in
 * order of first use: fingerprints (u64) and counts (u32), little-endian; only those of
 * min_len characters or more, not in exclude (sorted u64 fingerprints), and with shaped_only
 * only those holding an uppercase letter, a digit or _. wanted_counts: how often each of the
 * wanted fingerprints (u64) occurs as an identifier, whatever its length. */
static PyObject *refs(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer buf, exclude, wanted;
    Py_ssize_t min_len;
    int shaped_only;
    if (!PyArg_ParseTuple(args, "y*npy*y*", &buf, &min_len, &shaped_only, &exclude, &wanted))
        return NULL;
    if (!crc_ready) crc_init();
    const unsigned char *d = buf.buf;
    Py_ssize_t n = buf.len;
    Py_ssize_t nex = exclude.len / 8, nwant = wanted.len / 8;
    table_t t; /* fingerprint -> (first use << 32 | count) kept in keys/masks: order below */
    uint64_t *order = NULL;
    uint32_t *counts = NULL;
    size_t norder = 0, cap = 0;
    uint32_t *want = calloc((size_t)(nwant ? nwant : 1), sizeof(uint32_t));
    int ok = table_init(&t, 512) && want != NULL;
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t i = 0;
    while (ok && i < n) {
        unsigned char c = d[i];
        if (!(is_upper(c) || is_lower(c) || is_digit(c) || c == '_')) {
            i++;
            continue;
        }
        Py_ssize_t start = i;
        int shaped = 0;
        while (i < n && (is_upper(d[i]) || is_lower(d[i]) || is_digit(d[i]) || d[i] == '_')) {
            if (is_upper(d[i]) || is_digit(d[i]) || d[i] == '_') shaped = 1;
            i++;
        }
        if (!is_ident_start(c)) continue;
        uint64_t fp = fingerprint(d + start, i - start);
        for (Py_ssize_t w = 0; w < nwant; w++)
            if (get_u64((const unsigned char *)wanted.buf + 8 * w) == fp) want[w]++;
        if (i - start < min_len || (shaped_only && !shaped)) continue;
        /* the table maps a fingerprint to its place in `order` (+1), kept in the mask */
        if ((t.n + 1) * 4 > t.cap * 3 && !table_grow(&t)) {
            ok = 0;
            break;
        }
        size_t j = slot_of(fp, t.cap);
        while (t.slots[j].used && t.slots[j].key != fp) j = (j + 1) & (t.cap - 1);
        if (t.slots[j].used) {
            if (t.slots[j].mask != 0xFFFFFFFFu) counts[t.slots[j].mask]++;
            continue;
        }
        if (nex && in_sorted(exclude.buf, nex, fp)) {
            t.slots[j].used = 1; /* remembered, never counted: its place is past the end */
            t.slots[j].key = fp;
            t.slots[j].mask = 0xFFFFFFFFu;
            t.n++;
            continue;
        }
        if (norder == cap) {
            size_t grown = cap ? cap * 2 : 256;
            uint64_t *o2 = realloc(order, grown * sizeof(uint64_t));
            if (!o2) {
                ok = 0;
                break;
            }
            order = o2;
            uint32_t *c2 = realloc(counts, grown * sizeof(uint32_t));
            if (!c2) {
                ok = 0;
                break;
            }
            counts = c2;
            cap = grown;
        }
        t.slots[j].used = 1;
        t.slots[j].key = fp;
        t.slots[j].mask = (uint32_t)norder;
        t.n++;
        order[norder] = fp;
        counts[norder] = 1;
        norder++;
    }
    Py_END_ALLOW_THREADS
    PyObject *result = NULL;
    if (ok) {
        PyObject *fps = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(norder * 8));
        PyObject *cnt = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(norder * 4));
        PyObject *wc = PyBytes_FromStringAndSize(NULL, nwant * 4);
        if (fps && cnt && wc) {
            for (size_t k = 0; k < norder; k++) {
                put_u64((unsigned char *)PyBytes_AS_STRING(fps) + 8 * k, order[k]);
                put_u32((unsigned char *)PyBytes_AS_STRING(cnt) + 4 * k, counts[k]);
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
    /* the table's masks were used in place of the slots' masks: skip entries marked excluded */
    table_free(&t);
    free(order);
    free(counts);
    free(want);
    PyBuffer_Release(&buf);
    PyBuffer_Release(&exclude);
    PyBuffer_Release(&wanted);
    return result;
}

static PyMethodDef METHODS[] = {
    {"terms", terms, METH_VARARGS, "The terms of a text (see cas/words.py)."},
    {"build", build, METH_VARARGS, "A segment's postings from bodies' terms (cas/textindex.py)."},
    {"merge", merge, METH_VARARGS, "One segment's postings from several (cas/textindex.py)."},
    {"refs", refs, METH_VARARGS, "A text's identifiers and their counts (packer/lexicon.py)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_words", NULL, -1, METHODS,
                                     NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__words(void) {
    classes_init();
    return PyModule_Create(&MODULE);
}
