/*
 * kproto._speedups: the magic 2 record loops in C (optional; see kproto/speedups.py).
 *
 * Layout: Kafka's DefaultRecord.java (KIP-98), as kproto/records/_v2_loop.py, the
 * reference implementation this file restates:
 *
 *   length varint, attributes int8, timestamp_delta varlong, offset_delta varint,
 *   key (varint length, -1 = null), value (likewise),
 *   header count varint, then per header: name (varint length, UTF-8), value
 *
 * Contract, the same as the Python fast loop's: the functions accept exactly the
 * batches the Python loop accepts and return equal values; for anything else they
 * raise the `Bad` exception given to setup(), and the caller re-reads the batch with
 * the careful Python reader (_v2_checked.py) to name the record, field and byte
 * offset. So the DecodeError a user sees is produced by Python on both paths.
 *
 * Safety: every read is checked against the end of the current record (or batch)
 * before it happens; the record count is checked against the bytes of the batch
 * (a record takes at least 7 bytes) before any list is allocated. Reads past the end
 * of a record can never be accepted by the Python loop either (its position only
 * grows, and it must end exactly at the record's end), so rejecting them early
 * keeps the two equal.
 *
 * Records are allocated as instances of Record (tp_alloc, no __init__) and their
 * slots filled by offset, the offsets taken from the member descriptors of
 * Record's slot-storage base (_RecordSlots) in setup(), the C form of what
 * _v2_loop.py does with object.__new__ and __class__.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

#include "_grow.h"

/* State set by setup(): Record's type, its slot offsets and the Bad exception. */
static PyTypeObject *record_type = NULL;
static PyObject *bad_exc = NULL;
static PyObject *empty_tuple = NULL;
enum { S_OFFSET, S_TIMESTAMP, S_KEY, S_VALUE, S_HEADERS, S_CONTROL, N_SLOTS };
static const char *slot_names[N_SLOTS] = {
    "offset", "timestamp", "key", "value", "headers", "control",
};
static Py_ssize_t slot_offset[N_SLOTS];

/* The smallest record: length (1 byte) + attributes, timestamp delta, offset
 * delta, key length, value length, header count (1 byte each). */
#define MIN_RECORD_BYTES 7

/* The small readers of the record loops, inlined into them (GCC left blob_span a
 * call, about 5% of a batch decode). */
#if defined(__GNUC__) || defined(__clang__)
#define HOT_INLINE static inline __attribute__((always_inline))
#else
#define HOT_INLINE static inline
#endif

static int
fail_bad(void)
{
    if (!PyErr_Occurred())
        PyErr_SetNone(bad_exc);
    return -1;
}

/* An unsigned varint of at most max_bytes (5: 32 bits; 10: 64 bits) at d[*pos],
 * not reading at or past `limit`; as kproto._varint.read_uvarint/read_uvarlong. */
HOT_INLINE int
read_uvar(const unsigned char *d, Py_ssize_t *pos, Py_ssize_t limit, int max_bytes,
          uint64_t *out)
{
    Py_ssize_t p = *pos;
    if (p + 1 < limit) { /* the common 1- and 2-byte varints, read straight */
        unsigned char b0 = d[p];
        if (b0 < 0x80) {
            *out = b0;
            *pos = p + 1;
            return 0;
        }
        unsigned char b1 = d[p + 1];
        if (b1 < 0x80) {
            *out = (uint64_t)(b0 & 0x7F) | ((uint64_t)b1 << 7);
            *pos = p + 2;
            return 0;
        }
    }
    uint64_t result = 0;
    int shift = 0;
    for (int i = 0; i < max_bytes; i++) {
        if (p >= limit)
            return -1;
        unsigned char b = d[p++];
        uint64_t bits = (uint64_t)(b & 0x7F);
        if (shift == 63) {
            if (bits > 1) /* above 2**64 - 1 */
                return -1;
        }
        result |= bits << shift;
        if (b < 0x80) {
            if (max_bytes == 5 && result > 0xFFFFFFFFULL)
                return -1;
            *out = result;
            *pos = p;
            return 0;
        }
        shift += 7;
    }
    return -1; /* too long */
}

static inline int64_t
zigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* base + delta as a Python int, exact even past int64 (Python ints do not wrap). */
static PyObject *
add_int(int64_t base, int64_t delta)
{
    int64_t sum;
    if (!__builtin_add_overflow(base, delta, &sum))
        return PyLong_FromLongLong(sum);
    PyObject *a = PyLong_FromLongLong(base);
    PyObject *b = a ? PyLong_FromLongLong(delta) : NULL;
    PyObject *r = b ? PyNumber_Add(a, b) : NULL;
    Py_XDECREF(a);
    Py_XDECREF(b);
    return r;
}

/* What the previous records of one call built, reused when the next record holds
 * the same bytes: records of a batch mostly repeat their header names, often whole
 * headers (a content type) and timestamps. By header index: the name (ASCII only,
 * compared byte for byte) and the (name, value) pair; the last headers tuple; the
 * last timestamp and its delta. Only immutable objects (str, bytes, None, tuples
 * of them, ints) are shared, so a shared object is equal to a fresh one and nothing
 * can tell them apart but `is`. Lives for one call. */
#define NAME_CACHE 8
typedef struct {
    PyObject *names[NAME_CACHE];
    PyObject *pairs[NAME_CACHE];
    PyObject *headers;
    PyObject *timestamp;
    int64_t timestamp_delta;
    int untrack_pairs; /* pairs kept alive together (decode_columns): see read_pair */
} NameCache;

static void
name_cache_clear(NameCache *c)
{
    for (int i = 0; i < NAME_CACHE; i++) {
        Py_CLEAR(c->names[i]);
        Py_CLEAR(c->pairs[i]);
    }
    Py_CLEAR(c->headers);
    Py_CLEAR(c->timestamp);
}

/* Whether a[:n] == b[:n]; inline for the short names and values a batch repeats. */
static inline int
same_bytes(const void *a, const void *b, size_t n)
{
    if (n > 32)
        return memcmp(a, b, n) == 0;
    const unsigned char *x = a, *y = b;
    for (; n >= 8; n -= 8, x += 8, y += 8) {
        uint64_t u, v;
        memcpy(&u, x, 8);
        memcpy(&v, y, 8);
        if (u != v)
            return 0;
    }
    for (; n > 0; n--)
        if (*x++ != *y++)
            return 0;
    return 1;
}

/* The header name d[p:p+n] as str, from the cache slot `i` when it holds it. */
static PyObject *
header_name(const unsigned char *d, Py_ssize_t p, Py_ssize_t n, NameCache *c,
            Py_ssize_t i)
{
    PyObject *cached = (c != NULL && i < NAME_CACHE) ? c->names[i] : NULL;
    if (cached != NULL && PyUnicode_GET_LENGTH(cached) == n &&
        same_bytes(PyUnicode_DATA(cached), d + p, (size_t)n)) {
        Py_INCREF(cached);
        return cached;
    }
    PyObject *s = PyUnicode_DecodeUTF8((const char *)d + p, n, NULL);
    if (s == NULL) {
        if (PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
            PyErr_Clear();
            fail_bad();
        }
        return NULL;
    }
    if (c != NULL && i < NAME_CACHE && PyUnicode_IS_COMPACT_ASCII(s)) {
        Py_INCREF(s);
        Py_XSETREF(c->names[i], s);
    }
    return s;
}

/* Where the key/value/header-value blob at d[*pos] lies: 1 for null (length -1),
 * 0 with its bytes at d[*start:*start+*n], -1 (Bad set) when malformed; *pos moves
 * past it. The first-byte tests follow _v2_loop.py exactly (a multi-byte encoding
 * of -1 is rejected there, so it is here). `allow_null` is false for header names. */
HOT_INLINE int
blob_span(const unsigned char *d, Py_ssize_t *pos, Py_ssize_t limit, int allow_null,
          Py_ssize_t *start, Py_ssize_t *size)
{
    Py_ssize_t p = *pos;
    if (p >= limit)
        return fail_bad();
    unsigned char v = d[p];
    uint64_t n;
    if (!(v & 0x81)) {
        n = v >> 1;
        p += 1;
    }
    else if (v == 1 && allow_null) {
        *pos = p + 1;
        return 1;
    }
    else {
        if (v & 1) /* negative (or a null name) */
            return fail_bad();
        uint64_t raw;
        if (read_uvar(d, &p, limit, 5, &raw) < 0)
            return fail_bad();
        n = raw >> 1;
    }
    if ((uint64_t)(limit - p) < n)
        return fail_bad();
    *start = p;
    *size = (Py_ssize_t)n;
    *pos = p + (Py_ssize_t)n;
    return 0;
}

/* The key or value at d[*pos] (see blob_span): bytes, or None. */
static PyObject *
read_blob(const unsigned char *d, Py_ssize_t *pos, Py_ssize_t limit)
{
    Py_ssize_t p, n;
    int kind = blob_span(d, pos, limit, 1, &p, &n);
    if (kind < 0)
        return NULL;
    if (kind == 1)
        Py_RETURN_NONE;
    return PyBytes_FromStringAndSize((const char *)d + p, n);
}

/* The header count at d[*pos] (inside the record ending at rec_end): 0 or more,
 * at most what the record's bytes can hold; -1 (Bad set) otherwise. */
HOT_INLINE int
header_count(const unsigned char *d, Py_ssize_t *pos, Py_ssize_t rec_end,
             Py_ssize_t *count)
{
    Py_ssize_t p = *pos;
    if (p >= rec_end)
        return fail_bad();
    uint64_t v = d[p];
    if (v < 0x80)
        p += 1;
    else if (read_uvar(d, &p, rec_end, 5, &v) < 0)
        return fail_bad();
    if ((v & 1) || v > (uint64_t)(rec_end - p)) /* negative, or more than fit */
        return fail_bad();
    *count = (Py_ssize_t)(v >> 1);
    *pos = p;
    return 0;
}

/* How much of `pair` (a cached (name, value) tuple) the header d[ns:ns+nn] (name),
 * d[vs:vs+vn] (value, None when `null`) repeats: 2 both, 1 the (ASCII) name only, 0
 * not the name. */
static inline int
pair_matches(PyObject *pair, const unsigned char *d, Py_ssize_t ns, Py_ssize_t nn,
             int null, Py_ssize_t vs, Py_ssize_t vn)
{
    PyObject *name = PyTuple_GET_ITEM(pair, 0), *value = PyTuple_GET_ITEM(pair, 1);
    if (!PyUnicode_IS_COMPACT_ASCII(name) || PyUnicode_GET_LENGTH(name) != nn ||
        !same_bytes(PyUnicode_DATA(name), d + ns, (size_t)nn))
        return 0;
    if (null)
        return value == Py_None ? 2 : 1;
    return value != Py_None && PyBytes_GET_SIZE(value) == vn &&
                   same_bytes(PyBytes_AS_STRING(value), d + vs, (size_t)vn)
               ? 2
               : 1;
}

/* Header `i` of a record at d[*pos] as a (name, value) tuple: the cached pair of
 * index `i` when it holds the same bytes, else a new one (then cached). */
static PyObject *
read_pair(const unsigned char *d, Py_ssize_t *pos, Py_ssize_t rec_end, NameCache *c,
          Py_ssize_t i)
{
    Py_ssize_t ns, nn, vs = 0, vn = 0;
    if (blob_span(d, pos, rec_end, 0, &ns, &nn) < 0)
        return NULL;
    int null = blob_span(d, pos, rec_end, 1, &vs, &vn);
    if (null < 0)
        return NULL;
    PyObject *cached = i < NAME_CACHE ? c->pairs[i] : NULL;
    int same = cached != NULL ? pair_matches(cached, d, ns, nn, null, vs, vn) : 0;
    if (same == 2) {
        Py_INCREF(cached);
        return cached;
    }
    PyObject *name;
    if (same == 1) { /* the name again (a str equal to the bytes just compared) */
        name = PyTuple_GET_ITEM(cached, 0);
        Py_INCREF(name);
    }
    else if ((name = header_name(d, ns, nn, c, i)) == NULL)
        return NULL;
    PyObject *value;
    if (null) {
        Py_INCREF(Py_None);
        value = Py_None;
    }
    else if ((value = PyBytes_FromStringAndSize((const char *)d + vs, vn)) == NULL) {
        Py_DECREF(name);
        return NULL;
    }
    PyObject *pair = PyTuple_New(2);
    if (pair == NULL) {
        Py_DECREF(name);
        Py_DECREF(value);
        return NULL;
    }
    PyTuple_SET_ITEM(pair, 0, name);
    PyTuple_SET_ITEM(pair, 1, value);
    /* A tuple of a str and bytes (or None) can be in no reference cycle: the
     * collector untracks such tuples at its first pass over them (CPython's
     * _PyTuple_MaybeUntrack). decode_columns keeps ~1 pair per record alive, so
     * there they are untracked now and no pass visits them; a record loop's pairs
     * mostly die before any pass, where the call would only cost. */
    if (c->untrack_pairs)
        PyObject_GC_UnTrack(pair);
    if (i < NAME_CACHE) {
        Py_INCREF(pair);
        Py_XSETREF(c->pairs[i], pair);
    }
    return pair;
}

/* The headers of one record at d[*pos] as a tuple (as_list: a list) of
 * (name, value) tuples; a tuple equal to the previous record's is that tuple. */
static PyObject *
read_headers(const unsigned char *d, Py_ssize_t *pos, Py_ssize_t rec_end, int as_list,
             NameCache *cache)
{
    Py_ssize_t p = *pos, n;
    if (header_count(d, &p, rec_end, &n) < 0)
        return NULL;
    if (n == 0) {
        *pos = p;
        if (as_list)
            return PyList_New(0);
        Py_INCREF(empty_tuple);
        return empty_tuple;
    }
    if (n <= NAME_CACHE) {
        PyObject *pairs[NAME_CACHE];
        PyObject *prev = as_list ? NULL : cache->headers;
        int same = prev != NULL && PyTuple_GET_SIZE(prev) == n;
        for (Py_ssize_t i = 0; i < n; i++) {
            if ((pairs[i] = read_pair(d, &p, rec_end, cache, i)) == NULL) {
                while (--i >= 0)
                    Py_DECREF(pairs[i]);
                return NULL;
            }
            same = same && pairs[i] == PyTuple_GET_ITEM(prev, i);
        }
        PyObject *out = NULL;
        if (same) {
            for (Py_ssize_t i = 0; i < n; i++)
                Py_DECREF(pairs[i]);
            Py_INCREF(prev);
            out = prev;
        }
        else if ((out = as_list ? PyList_New(n) : PyTuple_New(n)) == NULL) {
            for (Py_ssize_t i = 0; i < n; i++)
                Py_DECREF(pairs[i]);
            return NULL;
        }
        else {
            for (Py_ssize_t i = 0; i < n; i++) {
                if (as_list)
                    PyList_SET_ITEM(out, i, pairs[i]);
                else
                    PyTuple_SET_ITEM(out, i, pairs[i]);
            }
            if (!as_list) {
                Py_INCREF(out);
                Py_XSETREF(cache->headers, out);
            }
        }
        *pos = p;
        return out;
    }
    PyObject *out = as_list ? PyList_New(n) : PyTuple_New(n);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = read_pair(d, &p, rec_end, cache, i);
        if (pair == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        if (as_list)
            PyList_SET_ITEM(out, i, pair);
        else
            PyTuple_SET_ITEM(out, i, pair);
    }
    *pos = p;
    return out;
}

/* One record's fields. The objects are new references (all NULL on failure). */
typedef struct {
    PyObject *offset, *timestamp, *key, *value, *headers;
} Fields;

static void
fields_clear(Fields *f)
{
    Py_CLEAR(f->offset);
    Py_CLEAR(f->timestamp);
    Py_CLEAR(f->key);
    Py_CLEAR(f->value);
    Py_CLEAR(f->headers);
}

/* The head of one record at d[*pos] in a batch ending at `end`: its length
 * (positive, inside the batch), attributes (int8, unused), timestamp delta and
 * offset delta; *rec_end is where the record ends. -1 (nothing set, no exception)
 * when malformed. Shared by read_record, check_record, v2_scan and
 * ArrowBuilder.add_v2. */
static inline int
record_head(const unsigned char *d, Py_ssize_t *pos, Py_ssize_t end,
            Py_ssize_t *rec_end, int64_t *ts_delta, int64_t *off_delta)
{
    Py_ssize_t p = *pos;
    uint64_t v;
    if (read_uvar(d, &p, end, 5, &v) < 0)
        return -1;
    int64_t length = zigzag(v);
    if (length <= 0 || length > (int64_t)(end - p))
        return -1;
    Py_ssize_t stop = p + (Py_ssize_t)length;
    p += 1; /* attributes */
    if (read_uvar(d, &p, stop, 10, &v) < 0)
        return -1;
    *ts_delta = zigzag(v);
    if (read_uvar(d, &p, stop, 5, &v) < 0)
        return -1;
    *off_delta = zigzag(v);
    *rec_end = stop;
    *pos = p;
    return 0;
}

static int
read_record(const unsigned char *d, Py_ssize_t *pos, Py_ssize_t end,
            int64_t base_offset, int64_t base_ts, int headers_as_list, NameCache *cache,
            Fields *f)
{
    Py_ssize_t p = *pos, rec_end;
    int64_t ts_delta, off_delta;
    memset(f, 0, sizeof(*f));
    if (record_head(d, &p, end, &rec_end, &ts_delta, &off_delta) < 0)
        return fail_bad();
    if (cache->timestamp != NULL && cache->timestamp_delta == ts_delta) {
        Py_INCREF(cache->timestamp);
        f->timestamp = cache->timestamp;
    }
    else {
        if ((f->timestamp = add_int(base_ts, ts_delta)) == NULL)
            goto error;
        Py_INCREF(f->timestamp);
        Py_XSETREF(cache->timestamp, f->timestamp);
        cache->timestamp_delta = ts_delta;
    }
    if ((f->offset = add_int(base_offset, off_delta)) == NULL)
        goto error;
    /* key, then value: a null value is only the one byte 0x01 (-1) */
    if ((f->key = read_blob(d, &p, rec_end)) == NULL)
        goto error;
    if ((f->value = read_blob(d, &p, rec_end)) == NULL)
        goto error;
    if ((f->headers = read_headers(d, &p, rec_end, headers_as_list, cache)) == NULL)
        goto error;
    if (p != rec_end) {
        fail_bad();
        goto error;
    }
    *pos = p;
    return 0;
error:
    fields_clear(f);
    return -1;
}

typedef struct {
    PyObject *data;
    const unsigned char *d; /* data's bytes */
    Py_ssize_t pos, end, count;
    long long base_offset, base_ts;
} LoopArgs;

/* Parse (data, pos, end, count, base_offset, base_ts) and check what the Python
 * loop would reject before any record: the bounds, and a count that cannot fit. */
static int
loop_args(PyObject *args, LoopArgs *a)
{
    if (!PyArg_ParseTuple(args, "SnnnLL", &a->data, &a->pos, &a->end, &a->count,
                          &a->base_offset, &a->base_ts))
        return -1;
    if (!PyBytes_CheckExact(a->data)) { /* slices of a subclass are not bytes */
        PyErr_SetString(PyExc_TypeError, "data must be bytes");
        return -1;
    }
    if (a->pos < 0 || a->end < a->pos || a->end > PyBytes_GET_SIZE(a->data) ||
        a->count < 0 || a->count > (a->end - a->pos) / MIN_RECORD_BYTES)
        return fail_bad();
    a->d = (const unsigned char *)PyBytes_AS_STRING(a->data);
    return 0;
}

static PyObject *
v2_columns(PyObject *self, PyObject *args)
{
    LoopArgs a;
    if (loop_args(args, &a) < 0)
        return NULL;
    const unsigned char *d = a.d;
    PyObject *cols[5] = {NULL, NULL, NULL, NULL, NULL};
    PyObject *result = NULL;
    NameCache cache = {{NULL}};
    cache.untrack_pairs = 1;
    for (int c = 0; c < 5; c++)
        if ((cols[c] = PyList_New(a.count)) == NULL)
            goto done;
    Py_ssize_t p = a.pos;
    for (Py_ssize_t i = 0; i < a.count; i++) {
        Fields f;
        if (read_record(d, &p, a.end, a.base_offset, a.base_ts, 1, &cache, &f) < 0)
            goto done;
        PyList_SET_ITEM(cols[0], i, f.offset);
        PyList_SET_ITEM(cols[1], i, f.timestamp);
        PyList_SET_ITEM(cols[2], i, f.key);
        PyList_SET_ITEM(cols[3], i, f.value);
        PyList_SET_ITEM(cols[4], i, f.headers);
    }
    if (p != a.end) {
        fail_bad();
        goto done;
    }
    result = PyTuple_Pack(5, cols[0], cols[1], cols[2], cols[3], cols[4]);
done:
    for (int c = 0; c < 5; c++)
        Py_XDECREF(cols[c]);
    name_cache_clear(&cache);
    return result;
}

/* The n bytes of a header name at d are UTF-8 (as header_name, which decodes
 * them, requires): 0, or -1 with Bad set. ASCII is checked 8 bytes at a time;
 * anything else is decoded to test it. */
static int
check_header_name(const unsigned char *d, Py_ssize_t n)
{
    Py_ssize_t j = 0;
    for (uint64_t w; j + 8 <= n; j += 8) {
        memcpy(&w, d + j, 8);
        if (w & 0x8080808080808080ULL)
            break;
    }
    while (j < n && d[j] < 0x80)
        j++;
    if (j == n)
        return 0;
    PyObject *name = PyUnicode_DecodeUTF8((const char *)d, n, NULL);
    if (name == NULL) {
        if (PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
            PyErr_Clear();
            fail_bad();
        }
        return -1;
    }
    Py_DECREF(name);
    return 0;
}

/* A key/value/header blob at d[*pos] skipped (no object built), with the checks of
 * read_blob (blob_span); *is_null set for length -1. Header names (is_name) must be
 * UTF-8. */
static inline int
skip_blob(const unsigned char *d, Py_ssize_t *pos, Py_ssize_t limit, int allow_null,
          int is_name, int *is_null)
{
    Py_ssize_t p, n;
    int r = blob_span(d, pos, limit, allow_null, &p, &n);
    *is_null = r == 1;
    if (r != 0)
        return r < 0 ? -1 : 0;
    return is_name ? check_header_name(d + p, n) : 0;
}

/* v2_scan(data, pos, end, count, base_offset, base_ts): walk the records as
 * v2_columns does, with the same layout checks (Bad on the same input), building
 * no per-record object. `data` is any C-contiguous buffer (bytes, or a memoryview
 * of a decompression buffer: it is read in place, not copied). Returns (min_ts,
 * max_ts, null_keys) when every offset is base_offset + i; None when one is not or
 * a timestamp leaves int64 (the caller then asks v2_columns for the detail). */
static PyObject *
scan_records(const unsigned char *d, Py_ssize_t p, Py_ssize_t end, Py_ssize_t count,
             long long base_offset, long long base_ts)
{
    int64_t min_ts = INT64_MAX, max_ts = INT64_MIN;
    Py_ssize_t null_keys = 0;
    int detail = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        Py_ssize_t rec_end;
        int64_t ts_delta, off_delta, ts, off;
        if (record_head(d, &p, end, &rec_end, &ts_delta, &off_delta) < 0)
            goto bad;
        if (__builtin_add_overflow((int64_t)base_ts, ts_delta, &ts))
            detail = 1;
        else {
            if (ts < min_ts)
                min_ts = ts;
            if (ts > max_ts)
                max_ts = ts;
        }
        if (__builtin_add_overflow((int64_t)base_offset, off_delta, &off) ||
            off != (int64_t)base_offset + (int64_t)i)
            detail = 1;
        int is_null;
        if (skip_blob(d, &p, rec_end, 1, 0, &is_null) < 0)
            return NULL;
        null_keys += is_null;
        if (skip_blob(d, &p, rec_end, 1, 0, &is_null) < 0)
            return NULL;
        /* headers: count, then (name, value) pairs */
        if (p >= rec_end)
            goto bad;
        uint64_t h = d[p];
        if (h < 0x80)
            p += 1;
        else if (read_uvar(d, &p, rec_end, 5, &h) < 0)
            goto bad;
        if ((h & 1) || h > (uint64_t)(rec_end - p))
            goto bad;
        for (uint64_t j = 0; j < (h >> 1); j++) {
            if (skip_blob(d, &p, rec_end, 0, 1, &is_null) < 0 ||
                skip_blob(d, &p, rec_end, 1, 0, &is_null) < 0)
                return NULL;
        }
        if (p != rec_end)
            goto bad;
    }
    if (p != end)
        goto bad;
    if (detail)
        Py_RETURN_NONE;
    return Py_BuildValue("LLn", (long long)min_ts, (long long)max_ts, null_keys);
bad:
    fail_bad();
    return NULL;
}

static PyObject *
v2_scan(PyObject *self, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t pos, end, count;
    long long base_offset, base_ts;
    if (!PyArg_ParseTuple(args, "y*nnnLL", &view, &pos, &end, &count, &base_offset,
                          &base_ts))
        return NULL;
    PyObject *result;
    if (pos < 0 || end < pos || end > view.len || count < 0 ||
        count > (end - pos) / MIN_RECORD_BYTES) {
        fail_bad();
        result = NULL;
    }
    else
        result = scan_records((const unsigned char *)view.buf, pos, end, count,
                              base_offset, base_ts);
    PyBuffer_Release(&view);
    return result;
}

/* A Record with the fields of `f` (their references are taken, also on failure). */
static PyObject *
make_record(Fields *f)
{
    PyObject *rec = record_type->tp_alloc(record_type, 0);
    if (rec == NULL) {
        fields_clear(f);
        return NULL;
    }
    char *base = (char *)rec;
    *(PyObject **)(base + slot_offset[S_OFFSET]) = f->offset;
    *(PyObject **)(base + slot_offset[S_TIMESTAMP]) = f->timestamp;
    *(PyObject **)(base + slot_offset[S_KEY]) = f->key;
    *(PyObject **)(base + slot_offset[S_VALUE]) = f->value;
    *(PyObject **)(base + slot_offset[S_HEADERS]) = f->headers;
    Py_INCREF(Py_None);
    *(PyObject **)(base + slot_offset[S_CONTROL]) = Py_None;
    return rec;
}

/* The records of a.data[a.pos:a.end] as a tuple of Record; Bad when malformed. */
static PyObject *
records_tuple(const LoopArgs *a)
{
    const unsigned char *d = a->d;
    NameCache cache = {{NULL}};
    PyObject *out = PyTuple_New(a->count);
    if (out == NULL)
        goto error;
    Py_ssize_t p = a->pos;
    for (Py_ssize_t i = 0; i < a->count; i++) {
        Fields f;
        if (read_record(d, &p, a->end, a->base_offset, a->base_ts, 0, &cache, &f) < 0)
            goto error;
        PyObject *rec = make_record(&f);
        if (rec == NULL)
            goto error;
        PyTuple_SET_ITEM(out, i, rec);
    }
    if (p != a->end) {
        fail_bad();
        goto error;
    }
    name_cache_clear(&cache);
    return out;
error:
    Py_XDECREF(out);
    name_cache_clear(&cache);
    return NULL;
}

/* loop_args for the loops that build Record objects: they need setup() first. */
static int
record_loop_args(PyObject *args, LoopArgs *a)
{
    if (record_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "kproto._speedups.setup() not called");
        return -1;
    }
    return loop_args(args, a);
}

static PyObject *
v2_records(PyObject *self, PyObject *args)
{
    LoopArgs a;
    if (record_loop_args(args, &a) < 0)
        return NULL;
    return records_tuple(&a);
}

#include "_record_sequence.h" /* v2_lazy: RecordSequence, RecordIterator */

/* setup(Record, _RecordSlots, Bad): check that Record is a subclass of its slot
 * storage with the same layout and take the slot offsets from the storage's
 * member descriptors. */
static PyObject *
setup(PyObject *self, PyObject *args)
{
    PyObject *rtype, *stype, *bad;
    if (!PyArg_ParseTuple(args, "O!O!O", &PyType_Type, &rtype, &PyType_Type, &stype,
                          &bad))
        return NULL;
    PyTypeObject *rt = (PyTypeObject *)rtype, *st = (PyTypeObject *)stype;
    if (!PyType_IsSubtype(rt, st) || rt->tp_basicsize != st->tp_basicsize ||
        rt->tp_itemsize != 0) {
        PyErr_SetString(PyExc_TypeError, "Record's layout is not its slot storage's");
        return NULL;
    }
    if (!PyExceptionClass_Check(bad)) {
        PyErr_SetString(PyExc_TypeError, "Bad must be an exception class");
        return NULL;
    }
    Py_ssize_t offsets[N_SLOTS];
    for (int i = 0; i < N_SLOTS; i++) {
        PyObject *descr = PyDict_GetItemString(st->tp_dict, slot_names[i]);
        if (descr == NULL || !Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
            PyErr_Format(PyExc_TypeError, "slot %s is not a member descriptor",
                         slot_names[i]);
            return NULL;
        }
        PyMemberDef *m = ((PyMemberDescrObject *)descr)->d_member;
        if (m->type != T_OBJECT_EX || m->offset <= 0 ||
            m->offset + (Py_ssize_t)sizeof(PyObject *) > st->tp_basicsize) {
            PyErr_Format(PyExc_TypeError, "slot %s is not an object slot",
                         slot_names[i]);
            return NULL;
        }
        offsets[i] = m->offset;
    }
    memcpy(slot_offset, offsets, sizeof(offsets));
    Py_INCREF(rt);
    Py_XSETREF(record_type, rt);
    Py_INCREF(bad);
    Py_XSETREF(bad_exc, bad);
    Py_RETURN_NONE;
}

/* ---- Encoding: the records region of a magic 2 batch ---------------------- */

typedef struct {
    char *buf;
    Py_ssize_t len, cap;
} Out;

static int
out_reserve(Out *o, Py_ssize_t n)
{
    if (n <= o->cap - o->len)
        return 0;
    char *b = grow_block(o->buf, o->len, &o->cap, n, 4096);
    if (b == NULL)
        return -1;
    o->buf = b;
    return 0;
}

static inline int
uvar_len(uint64_t u)
{
    int n = 1;
    while (u >= 0x80) {
        u >>= 7;
        n++;
    }
    return n;
}

static inline void
put_uvar(Out *o, uint64_t u)
{
    while (u >= 0x80) {
        o->buf[o->len++] = (char)((u & 0x7F) | 0x80);
        u >>= 7;
    }
    o->buf[o->len++] = (char)u;
}

static inline uint64_t
zz_encode(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

/* The size of a record's varint-length-prefixed field of n bytes (n < 0: null). */
static inline uint64_t
varbytes_len(Py_ssize_t n)
{
    return n < 0 ? 1 : uvar_len(zz_encode(n)) + (uint64_t)n;
}

/* A record's key, value, header name or header value: its length as a zigzag
 * varint, then its n bytes at p; n < 0 writes null (-1, one byte). */
static inline void
put_varbytes(Out *o, const char *p, Py_ssize_t n)
{
    if (n < 0) {
        o->buf[o->len++] = 1;
        return;
    }
    put_uvar(o, zz_encode(n));
    memcpy(o->buf + o->len, p, (size_t)n);
    o->len += n;
}

/* One header (name, value) as (utf8, len, value bytes or NULL). 0 ok, 1 not the
 * plain shape (the caller falls back to Python), -1 error. */
static int
header_parts(PyObject *h, const char **name, Py_ssize_t *name_len, PyObject **value)
{
    if (!PyTuple_CheckExact(h) || PyTuple_GET_SIZE(h) != 2)
        return 1;
    PyObject *n = PyTuple_GET_ITEM(h, 0), *v = PyTuple_GET_ITEM(h, 1);
    if (!PyUnicode_CheckExact(n) || !(v == Py_None || PyBytes_CheckExact(v)))
        return 1;
    *name = PyUnicode_AsUTF8AndSize(n, name_len);
    if (*name == NULL) { /* surrogates: Python names the error */
        PyErr_Clear();
        return 1;
    }
    *value = v == Py_None ? NULL : v;
    return 0;
}

/* v2_encode_records(items, base_ts) -> bytes, or NotImplemented when an item is
 * not of the plain shape (key/value bytes or None, headers a list or tuple of
 * (str, bytes | None) tuples, timestamp delta within int64): then the Python
 * encoder (records/_encode.py, the reference) does the work and names errors. */
static PyObject *
v2_encode_records(PyObject *self, PyObject *args)
{
    PyObject *items;
    long long base_ts;
    if (!PyArg_ParseTuple(args, "O!L", &PyList_Type, &items, &base_ts))
        return NULL;
    Out o = {NULL, 0, 0};
    Py_ssize_t n = PyList_GET_SIZE(items);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyList_GET_ITEM(items, i);
        if (!PyTuple_CheckExact(item) || PyTuple_GET_SIZE(item) != 4)
            goto fallback;
        PyObject *key = PyTuple_GET_ITEM(item, 0), *value = PyTuple_GET_ITEM(item, 1);
        PyObject *headers = PyTuple_GET_ITEM(item, 2), *ts = PyTuple_GET_ITEM(item, 3);
        if (!(key == Py_None || PyBytes_CheckExact(key)) ||
            !(value == Py_None || PyBytes_CheckExact(value)) || !PyLong_CheckExact(ts))
            goto fallback;
        int overflow;
        long long t = PyLong_AsLongLongAndOverflow(ts, &overflow);
        if (overflow || (t == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            goto fallback;
        }
        int64_t delta;
        if (__builtin_sub_overflow((int64_t)t, (int64_t)base_ts, &delta))
            goto fallback;
        PyObject *hseq;
        if (PyList_CheckExact(headers) || PyTuple_CheckExact(headers))
            hseq = headers;
        else
            goto fallback;
        Py_ssize_t hn = PySequence_Fast_GET_SIZE(hseq);
        PyObject **hitems = PySequence_Fast_ITEMS(hseq);
        /* the body's size: attributes, deltas, key, value, headers */
        uint64_t ts_u = zz_encode(delta), off_u = (uint64_t)i << 1;
        Py_ssize_t klen = key == Py_None ? -1 : PyBytes_GET_SIZE(key);
        Py_ssize_t vlen = value == Py_None ? -1 : PyBytes_GET_SIZE(value);
        uint64_t body = 1 + uvar_len(ts_u) + uvar_len(off_u);
        body += varbytes_len(klen) + varbytes_len(vlen);
        body += uvar_len(zz_encode(hn));
        for (Py_ssize_t j = 0; j < hn; j++) {
            const char *name;
            Py_ssize_t name_len;
            PyObject *hv;
            if (header_parts(hitems[j], &name, &name_len, &hv) != 0)
                goto fallback;
            body += varbytes_len(name_len);
            body += varbytes_len(hv == NULL ? -1 : PyBytes_GET_SIZE(hv));
        }
        if (body > (uint64_t)INT32_MAX) {
            goto fallback; /* Python raises the size error */
        }
        if (out_reserve(&o, (Py_ssize_t)body + 5) < 0)
            goto error;
        put_uvar(&o, zz_encode((int64_t)body));
        o.buf[o.len++] = 0; /* attributes */
        put_uvar(&o, ts_u);
        put_uvar(&o, off_u);
        put_varbytes(&o, klen < 0 ? NULL : PyBytes_AS_STRING(key), klen);
        put_varbytes(&o, vlen < 0 ? NULL : PyBytes_AS_STRING(value), vlen);
        put_uvar(&o, zz_encode(hn));
        for (Py_ssize_t j = 0; j < hn; j++) {
            const char *name;
            Py_ssize_t name_len;
            PyObject *hv;
            header_parts(hitems[j], &name, &name_len, &hv); /* checked above */
            put_varbytes(&o, name, name_len);
            if (hv == NULL)
                put_varbytes(&o, NULL, -1);
            else
                put_varbytes(&o, PyBytes_AS_STRING(hv), PyBytes_GET_SIZE(hv));
        }
    }
    PyObject *result = PyBytes_FromStringAndSize(o.buf ? o.buf : "", o.len);
    PyMem_Free(o.buf);
    return result;
fallback:
    PyMem_Free(o.buf);
    Py_RETURN_NOTIMPLEMENTED;
error:
    PyMem_Free(o.buf);
    return NULL;
}

/* v2_plain(records) -> bool: every item of the list `records` is already what
 * records/_encode.py's _normalize would return for it unchanged: a 4-tuple of key
 * and value (bytes or None), headers (a list or tuple) and an int64 timestamp. */
static PyObject *
v2_plain(PyObject *self, PyObject *records)
{
    if (!PyList_CheckExact(records))
        Py_RETURN_FALSE;
    Py_ssize_t n = PyList_GET_SIZE(records);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyList_GET_ITEM(records, i);
        if (!PyTuple_CheckExact(item) || PyTuple_GET_SIZE(item) != 4)
            Py_RETURN_FALSE;
        PyObject *key = PyTuple_GET_ITEM(item, 0), *value = PyTuple_GET_ITEM(item, 1);
        PyObject *headers = PyTuple_GET_ITEM(item, 2), *ts = PyTuple_GET_ITEM(item, 3);
        if (!(key == Py_None || PyBytes_CheckExact(key)) ||
            !(value == Py_None || PyBytes_CheckExact(value)) ||
            !(PyList_CheckExact(headers) || PyTuple_CheckExact(headers)) ||
            !PyLong_CheckExact(ts))
            Py_RETURN_FALSE;
        int overflow;
        long long t = PyLong_AsLongLongAndOverflow(ts, &overflow);
        if (overflow || (t == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            Py_RETURN_FALSE;
        }
    }
    Py_RETURN_TRUE;
}

#include "_arrow_columns.h"

static PyMethodDef methods[] = {
    {"setup", setup, METH_VARARGS,
     "setup(Record, _RecordSlots, Bad): bind the record class and the rejection "
     "exception."},
    {"v2_columns", v2_columns, METH_VARARGS,
     "v2_columns(data, pos, end, count, base_offset, base_ts) -> (offsets, "
     "timestamps, keys, values, headers); as records._v2_loop.v2_columns_fast."},
    {"v2_scan", v2_scan, METH_VARARGS,
     "v2_scan(data, pos, end, count, base_offset, base_ts) -> (min_ts, max_ts, "
     "null_keys), or None when an offset is not base_offset + i or a timestamp "
     "leaves int64; v2_columns's checks, no objects built."},
    {"v2_records", v2_records, METH_VARARGS,
     "v2_records(data, pos, end, count, base_offset, base_ts) -> tuple of Record; "
     "as records._v2_loop.v2_records_fast."},
    {"v2_lazy", v2_lazy, METH_VARARGS,
     "v2_lazy(data, pos, end, count, base_offset, base_ts) -> RecordSequence: "
     "v2_scan's checks now, the records of v2_records as they are iterated."},
    {"v2_encode_records", v2_encode_records, METH_VARARGS,
     "v2_encode_records(items, base_ts) -> the records region as bytes, or "
     "NotImplemented for the Python encoder; as records._encode._v2_records_fast."},
    {"v2_plain", v2_plain, METH_O,
     "v2_plain(records) -> True if records is a list of (bytes|None, bytes|None, "
     "list|tuple, int64) tuples, which records._encode._normalize returns as they are."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    "kproto._speedups",
    "Native magic 2 record loops; use through kproto.speedups.",
    -1,
    methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    empty_tuple = PyTuple_New(0);
    if (empty_tuple == NULL || PyType_Ready(&RecordIteratorType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL || PyModule_AddType(m, &ArrowBuilderType) < 0 ||
        PyModule_AddType(m, &RecordSequenceType) < 0) { /* each readied there */
        Py_XDECREF(m);
        return NULL;
    }
    return m;
}
