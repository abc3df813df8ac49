/*
 * kproto._speedups.ArrowBuilder: magic 2 records straight into Arrow buffers.
 *
 * Included by _speedups.c (after read_uvar, zigzag, blob_span, header_count and
 * fail_bad). The C twin of kproto/records/_arrow.py's PyArrowBuilder, the reference:
 * the same methods, accepting exactly the same input and finishing into byte-equal
 * buffers (tests/records/test_records_arrow.py holds the two to that).
 *
 *   add_v2(data, pos, end, count, base_offset, base_ts, log_append_time)
 *       the records region data[pos:end] of one plain (not control) magic 2 batch;
 *       log_append_time None, or the batch's max_timestamp for every record.
 *   add_lists(offsets, timestamps, keys, values, headers)
 *       columns as decode_columns gives them (legacy and control batches).
 *   finish() -> (records, headers, key_nulls, value_nulls, header_value_nulls,
 *       offset, timestamp, key_offsets, key_validity, key_data, value_offsets,
 *       value_validity, value_data, header_offsets, header_key_offsets,
 *       header_key_data, header_value_offsets, header_value_validity,
 *       header_value_data): bytearrays (validity None when nothing is null).
 *
 * Layout: Arrow's columnar format: int64/int32 in native byte order, binary and
 * string as int32 offsets (one more than the items) plus one data buffer,
 * validity bitmaps with bit i (LSB first) set when item i is not null, every
 * bitmap exactly ceil(n / 8) bytes with the unused bits 0. Headers are
 * list<struct<key: string, value: binary>>: list offsets per record, then the
 * children's buffers.
 *
 * A call either appends a whole batch or nothing: on Bad (a layout the Python
 * loop rejects too; the caller then names the error with the careful reader) or
 * OverflowError (an offset or timestamp outside int64, or a data buffer past the
 * 2**31 - 1 bytes int32 offsets can address), the buffers are rolled back.
 * Growth is by doubling, bounded by the batch: fixed-width buffers are reserved
 * per batch from the record count (checked against the batch's bytes first),
 * data buffers per value.
 */

enum {
    B_OFFSET, B_TIMESTAMP,
    B_KEY_OFF, B_KEY_VALID, B_KEY_DATA,
    B_VALUE_OFF, B_VALUE_VALID, B_VALUE_DATA,
    B_HEADER_OFF,
    B_HKEY_OFF, B_HKEY_DATA,
    B_HVALUE_OFF, B_HVALUE_VALID, B_HVALUE_DATA,
    N_BUFS,
};

static const char OVF_INT64[] = "record offset or timestamp outside int64";
static const char OVF_DATA[] =
    "more than 2**31 - 1 bytes in one column (Arrow's int32 offsets)";

typedef struct {
    PyObject *ba; /* a bytearray sized to cap */
    char *p;
    Py_ssize_t len, cap;
} ABuf;

typedef struct {
    PyObject_HEAD
    ABuf buf[N_BUFS];
    Py_ssize_t records, headers, nulls[3]; /* key, value, header value */
} ArrowBuilder;

typedef struct {
    Py_ssize_t len[N_BUFS], records, headers, nulls[3];
} ASaved;

static int
abuf_grow(ABuf *b, Py_ssize_t n)
{
    Py_ssize_t cap = grown_capacity(b->len, b->cap, n, 64);
    if (cap < 0 || PyByteArray_Resize(b->ba, cap) < 0)
        return -1;
    b->p = PyByteArray_AS_STRING(b->ba);
    b->cap = cap;
    return 0;
}

static inline int
abuf_reserve(ABuf *b, Py_ssize_t n)
{
    return b->len + n <= b->cap ? 0 : abuf_grow(b, n);
}

static inline void
put_i64(ABuf *b, int64_t v)
{
    memcpy(b->p + b->len, &v, 8);
    b->len += 8;
}

static inline void
put_i32(ABuf *b, int32_t v)
{
    memcpy(b->p + b->len, &v, 4);
    b->len += 4;
}

/* Validity bit `i` (the bitmap holds bits 0..i-1, room reserved). */
static inline void
put_bit(ABuf *b, Py_ssize_t i, int valid)
{
    if ((i & 7) == 0)
        b->p[b->len++] = 0;
    if (valid)
        b->p[i >> 3] |= (char)(1 << (i & 7));
}

/* Append `n` bytes at `src` to the data buffer `data`, then its end to the int32
 * offsets `off`; *ovf set (nothing written) when the data would pass INT32_MAX. */
static inline int
put_blob(ABuf *off, ABuf *data, const void *src, Py_ssize_t n, int *ovf)
{
    if (n > INT32_MAX - data->len) {
        *ovf = 1;
        put_i32(off, (int32_t)data->len);
        return 0;
    }
    if (abuf_reserve(data, n) < 0)
        return -1;
    memcpy(data->p + data->len, src, (size_t)n);
    data->len += n;
    put_i32(off, (int32_t)data->len);
    return 0;
}

static void
arrow_save(ArrowBuilder *b, ASaved *s)
{
    for (int i = 0; i < N_BUFS; i++)
        s->len[i] = b->buf[i].len;
    s->records = b->records;
    s->headers = b->headers;
    memcpy(s->nulls, b->nulls, sizeof(s->nulls));
}

/* Undo everything since arrow_save, clearing the bits past the restored count. */
static void
arrow_restore(ArrowBuilder *b, const ASaved *s)
{
    for (int i = 0; i < N_BUFS; i++)
        b->buf[i].len = s->len[i];
    b->records = s->records;
    b->headers = s->headers;
    memcpy(b->nulls, s->nulls, sizeof(s->nulls));
    Py_ssize_t bits[3] = {b->records, b->records, b->headers};
    int which[3] = {B_KEY_VALID, B_VALUE_VALID, B_HVALUE_VALID};
    for (int i = 0; i < 3; i++)
        if (bits[i] & 7)
            b->buf[which[i]].p[bits[i] >> 3] &= (char)((1 << (bits[i] & 7)) - 1);
}

/* Room for `n` more records in the fixed-width buffers. */
static int
arrow_reserve_records(ArrowBuilder *b, Py_ssize_t n)
{
    static const int width[N_BUFS] = {
        [B_OFFSET] = 8, [B_TIMESTAMP] = 8, [B_KEY_OFF] = 4, [B_VALUE_OFF] = 4,
        [B_HEADER_OFF] = 4,
    };
    for (int i = 0; i < N_BUFS; i++)
        if (width[i] && abuf_reserve(&b->buf[i], n * width[i]) < 0)
            return -1;
    if (abuf_reserve(&b->buf[B_KEY_VALID], n / 8 + 1) < 0 ||
        abuf_reserve(&b->buf[B_VALUE_VALID], n / 8 + 1) < 0)
        return -1;
    return 0;
}

static int
arrow_reserve_headers(ArrowBuilder *b, Py_ssize_t n)
{
    if (abuf_reserve(&b->buf[B_HKEY_OFF], 4 * n) < 0 ||
        abuf_reserve(&b->buf[B_HVALUE_OFF], 4 * n) < 0 ||
        abuf_reserve(&b->buf[B_HVALUE_VALID], n / 8 + 1) < 0)
        return -1;
    return 0;
}

/* A key, value or header value at `index`: null, or the bytes src[0:n]. */
static inline int
arrow_blob(ArrowBuilder *b, int off, int valid, int data, Py_ssize_t index,
           Py_ssize_t *nulls, const void *src, Py_ssize_t n, int null, int *ovf)
{
    put_bit(&b->buf[valid], index, !null);
    if (null) {
        (*nulls)++;
        put_i32(&b->buf[off], (int32_t)b->buf[data].len);
        return 0;
    }
    return put_blob(&b->buf[off], &b->buf[data], src, n, ovf);
}

/* 0 when d[0:n] is UTF-8 (as bytes.decode() checks), else -1 with Bad set. */
static inline int
check_utf8(const unsigned char *d, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++)
        if (d[i] & 0x80) {
            PyObject *s = PyUnicode_DecodeUTF8((const char *)d, n, NULL);
            if (s == NULL) {
                if (PyErr_ExceptionMatches(PyExc_UnicodeDecodeError))
                    PyErr_Clear();
                return fail_bad();
            }
            Py_DECREF(s);
            return 0;
        }
    return 0;
}

/* The end of an add: None, or (the add rolled back to `s`) OverflowError for an
 * offset or timestamp outside int64 (ovf_int) or a column past int32 (ovf_data). */
static PyObject *
arrow_finish(ArrowBuilder *b, const ASaved *s, int ovf_int, int ovf_data)
{
    if (!ovf_int && !ovf_data)
        Py_RETURN_NONE;
    arrow_restore(b, s);
    PyErr_SetString(PyExc_OverflowError, ovf_int ? OVF_INT64 : OVF_DATA);
    return NULL;
}

static PyObject *
ArrowBuilder_add_v2(ArrowBuilder *b, PyObject *args)
{
    PyObject *data, *lat_obj;
    Py_ssize_t pos, end, count;
    long long base_offset, base_ts, lat = 0;
    if (!PyArg_ParseTuple(args, "SnnnLLO", &data, &pos, &end, &count, &base_offset,
                          &base_ts, &lat_obj))
        return NULL;
    if (bad_exc == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "kproto._speedups.setup() not called");
        return NULL;
    }
    int has_lat = lat_obj != Py_None;
    if (has_lat && ((lat = PyLong_AsLongLong(lat_obj)) == -1 && PyErr_Occurred()))
        return NULL;
    if (!PyBytes_CheckExact(data)) {
        PyErr_SetString(PyExc_TypeError, "data must be bytes");
        return NULL;
    }
    if (pos < 0 || end < pos || end > PyBytes_GET_SIZE(data) || count < 0 ||
        count > (end - pos) / MIN_RECORD_BYTES) {
        fail_bad();
        return NULL;
    }
    const unsigned char *d = (const unsigned char *)PyBytes_AS_STRING(data);
    ASaved saved;
    arrow_save(b, &saved);
    if (arrow_reserve_records(b, count) < 0)
        return NULL;
    int ovf_int = 0, ovf_data = 0;
    Py_ssize_t p = pos, rec_end, s, n;
    for (Py_ssize_t i = 0; i < count; i++) {
        int64_t ts_delta, off_delta, off, ts = lat;
        if (record_head(d, &p, end, &rec_end, &ts_delta, &off_delta) < 0)
            goto bad;
        if (__builtin_add_overflow((int64_t)base_offset, off_delta, &off))
            ovf_int = 1;
        if (!has_lat && __builtin_add_overflow((int64_t)base_ts, ts_delta, &ts))
            ovf_int = 1;
        put_i64(&b->buf[B_OFFSET], off);
        put_i64(&b->buf[B_TIMESTAMP], ts);
        int null = blob_span(d, &p, rec_end, 1, &s, &n);
        if (null < 0 || arrow_blob(b, B_KEY_OFF, B_KEY_VALID, B_KEY_DATA, b->records,
                                   &b->nulls[0], d + s, n, null, &ovf_data) < 0)
            goto bad;
        null = blob_span(d, &p, rec_end, 1, &s, &n);
        if (null < 0 ||
            arrow_blob(b, B_VALUE_OFF, B_VALUE_VALID, B_VALUE_DATA, b->records,
                       &b->nulls[1], d + s, n, null, &ovf_data) < 0)
            goto bad;
        b->records++;
        Py_ssize_t h;
        if (header_count(d, &p, rec_end, &h) < 0 || arrow_reserve_headers(b, h) < 0)
            goto bad;
        for (Py_ssize_t j = 0; j < h; j++) {
            /* the name: not null, UTF-8 */
            if (blob_span(d, &p, rec_end, 0, &s, &n) < 0 || check_utf8(d + s, n) < 0 ||
                put_blob(&b->buf[B_HKEY_OFF], &b->buf[B_HKEY_DATA], d + s, n,
                         &ovf_data) < 0)
                goto bad;
            null = blob_span(d, &p, rec_end, 1, &s, &n);
            if (null < 0 || arrow_blob(b, B_HVALUE_OFF, B_HVALUE_VALID, B_HVALUE_DATA,
                                       b->headers, &b->nulls[2], d + s, n, null,
                                       &ovf_data) < 0)
                goto bad;
            b->headers++;
        }
        if (b->headers > INT32_MAX)
            ovf_data = 1;
        put_i32(&b->buf[B_HEADER_OFF], (int32_t)(ovf_data ? 0 : b->headers));
        if (p != rec_end)
            goto bad;
    }
    if (p != end)
        goto bad;
    return arrow_finish(b, &saved, ovf_int, ovf_data);
bad:
    arrow_restore(b, &saved);
    fail_bad();
    return NULL;
}

/* An int64 from a Python int: 0 (*ovf set when it is not an int64), or -1 with
 * TypeError for anything but an int (no __index__: it could change the lists). */
static inline int
list_i64(PyObject *o, int64_t *out, int *ovf)
{
    if (!PyLong_Check(o)) {
        PyErr_Format(PyExc_TypeError, "expected int, got %.100s", Py_TYPE(o)->tp_name);
        return -1;
    }
    int o_ovf;
    long long v = PyLong_AsLongLongAndOverflow(o, &o_ovf);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (o_ovf)
        *ovf = 1;
    *out = (int64_t)v;
    return 0;
}

/* bytes or None, as (pointer, size, null); -1 (TypeError) for anything else. */
static inline int
list_blob(PyObject *o, const char **src, Py_ssize_t *n, int *null)
{
    *null = o == Py_None;
    if (*null) {
        *src = NULL;
        *n = 0;
        return 0;
    }
    if (!PyBytes_Check(o)) {
        PyErr_Format(PyExc_TypeError, "expected bytes or None, got %.100s",
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    *src = PyBytes_AS_STRING(o);
    *n = PyBytes_GET_SIZE(o);
    return 0;
}

static PyObject *
ArrowBuilder_add_lists(ArrowBuilder *b, PyObject *args)
{
    PyObject *cols[5];
    for (int c = 0; c < 5; c++)
        cols[c] = NULL;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!", &PyList_Type, &cols[0], &PyList_Type,
                          &cols[1], &PyList_Type, &cols[2], &PyList_Type, &cols[3],
                          &PyList_Type, &cols[4]))
        return NULL;
    Py_ssize_t count = PyList_GET_SIZE(cols[0]);
    for (int c = 1; c < 5; c++)
        if (PyList_GET_SIZE(cols[c]) != count) {
            PyErr_SetString(PyExc_ValueError, "columns of different lengths");
            return NULL;
        }
    ASaved saved;
    arrow_save(b, &saved);
    if (arrow_reserve_records(b, count) < 0)
        return NULL;
    int ovf_int = 0, ovf_data = 0, null;
    const char *src;
    Py_ssize_t n;
    for (Py_ssize_t i = 0; i < count; i++) {
        int64_t off, ts;
        if (list_i64(PyList_GET_ITEM(cols[0], i), &off, &ovf_int) < 0 ||
            list_i64(PyList_GET_ITEM(cols[1], i), &ts, &ovf_int) < 0)
            goto error;
        put_i64(&b->buf[B_OFFSET], off);
        put_i64(&b->buf[B_TIMESTAMP], ts);
        if (list_blob(PyList_GET_ITEM(cols[2], i), &src, &n, &null) < 0 ||
            arrow_blob(b, B_KEY_OFF, B_KEY_VALID, B_KEY_DATA, b->records,
                       &b->nulls[0], src, n, null, &ovf_data) < 0)
            goto error;
        if (list_blob(PyList_GET_ITEM(cols[3], i), &src, &n, &null) < 0 ||
            arrow_blob(b, B_VALUE_OFF, B_VALUE_VALID, B_VALUE_DATA, b->records,
                       &b->nulls[1], src, n, null, &ovf_data) < 0)
            goto error;
        b->records++;
        PyObject *hs = PyList_GET_ITEM(cols[4], i);
        if (!PyList_Check(hs) && !PyTuple_Check(hs)) {
            PyErr_SetString(PyExc_TypeError, "headers must be a list or tuple");
            goto error;
        }
        Py_ssize_t h = PySequence_Fast_GET_SIZE(hs);
        if (arrow_reserve_headers(b, h) < 0)
            goto error;
        for (Py_ssize_t j = 0; j < h; j++) {
            PyObject *pair = PySequence_Fast_GET_ITEM(hs, j);
            if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2 ||
                !PyUnicode_Check(PyTuple_GET_ITEM(pair, 0))) {
                PyErr_SetString(PyExc_TypeError, "a header must be a (str, bytes) tuple");
                goto error;
            }
            Py_ssize_t name_len;
            const char *name = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(pair, 0),
                                                       &name_len);
            if (name == NULL ||
                put_blob(&b->buf[B_HKEY_OFF], &b->buf[B_HKEY_DATA], name, name_len,
                         &ovf_data) < 0 ||
                list_blob(PyTuple_GET_ITEM(pair, 1), &src, &n, &null) < 0 ||
                arrow_blob(b, B_HVALUE_OFF, B_HVALUE_VALID, B_HVALUE_DATA,
                           b->headers, &b->nulls[2], src, n, null, &ovf_data) < 0)
                goto error;
            b->headers++;
        }
        if (b->headers > INT32_MAX)
            ovf_data = 1;
        put_i32(&b->buf[B_HEADER_OFF], (int32_t)(ovf_data ? 0 : b->headers));
    }
    return arrow_finish(b, &saved, ovf_int, ovf_data);
error:
    arrow_restore(b, &saved);
    return NULL;
}

/* The buffer `i` shrunk to its length and handed over (the builder is spent). */
static PyObject *
arrow_take(ArrowBuilder *b, int i)
{
    ABuf *buf = &b->buf[i];
    if (PyByteArray_Resize(buf->ba, buf->len) < 0)
        return NULL;
    PyObject *out = buf->ba;
    buf->ba = PyByteArray_FromStringAndSize(NULL, 0);
    buf->p = buf->ba ? PyByteArray_AS_STRING(buf->ba) : NULL;
    buf->len = buf->cap = 0;
    if (buf->ba == NULL) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

static int arrow_init_buffers(ArrowBuilder *b);

static PyObject *
ArrowBuilder_finish(ArrowBuilder *b, PyObject *Py_UNUSED(ignored))
{
    PyObject *out = PyTuple_New(5 + N_BUFS);
    if (out == NULL)
        return NULL;
    PyTuple_SET_ITEM(out, 0, PyLong_FromSsize_t(b->records));
    PyTuple_SET_ITEM(out, 1, PyLong_FromSsize_t(b->headers));
    for (int i = 0; i < 3; i++)
        PyTuple_SET_ITEM(out, 2 + i, PyLong_FromSsize_t(b->nulls[i]));
    int valid_null[N_BUFS] = {[B_KEY_VALID] = 1, [B_VALUE_VALID] = 2,
                              [B_HVALUE_VALID] = 3};
    for (int i = 0; i < N_BUFS; i++) {
        PyObject *item;
        if (valid_null[i] && b->nulls[valid_null[i] - 1] == 0) {
            Py_INCREF(Py_None);
            item = Py_None;
        }
        else
            item = arrow_take(b, i);
        if (item == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(out, 5 + i, item);
    }
    for (int i = 0; i < 5; i++)
        if (PyTuple_GET_ITEM(out, i) == NULL) {
            Py_DECREF(out);
            return NULL;
        }
    /* Start again, empty (finish twice gives empty columns). */
    for (int i = 0; i < N_BUFS; i++)
        b->buf[i].len = 0;
    b->records = b->headers = 0;
    memset(b->nulls, 0, sizeof(b->nulls));
    if (arrow_init_buffers(b) < 0) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

/* Each offsets buffer starts with its first offset, 0. */
static int
arrow_init_buffers(ArrowBuilder *b)
{
    static const int offs[] = {B_KEY_OFF, B_VALUE_OFF, B_HEADER_OFF, B_HKEY_OFF,
                               B_HVALUE_OFF};
    for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
        if (abuf_reserve(&b->buf[offs[i]], 4) < 0)
            return -1;
        put_i32(&b->buf[offs[i]], 0);
    }
    return 0;
}

static PyObject *
ArrowBuilder_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    if (PyTuple_GET_SIZE(args) != 0 || (kwds != NULL && PyDict_GET_SIZE(kwds) != 0)) {
        PyErr_SetString(PyExc_TypeError, "ArrowBuilder() takes no arguments");
        return NULL;
    }
    ArrowBuilder *b = (ArrowBuilder *)type->tp_alloc(type, 0);
    if (b == NULL)
        return NULL;
    for (int i = 0; i < N_BUFS; i++) {
        if ((b->buf[i].ba = PyByteArray_FromStringAndSize(NULL, 0)) == NULL) {
            Py_DECREF(b);
            return NULL;
        }
        b->buf[i].p = PyByteArray_AS_STRING(b->buf[i].ba);
    }
    if (arrow_init_buffers(b) < 0) {
        Py_DECREF(b);
        return NULL;
    }
    return (PyObject *)b;
}

static void
ArrowBuilder_dealloc(ArrowBuilder *b)
{
    for (int i = 0; i < N_BUFS; i++)
        Py_XDECREF(b->buf[i].ba);
    Py_TYPE(b)->tp_free((PyObject *)b);
}

static PyMethodDef ArrowBuilder_methods[] = {
    {"add_v2", (PyCFunction)ArrowBuilder_add_v2, METH_VARARGS,
     "add_v2(data, pos, end, count, base_offset, base_ts, log_append_time): append "
     "the records of one plain magic 2 batch; Bad or OverflowError append nothing."},
    {"add_lists", (PyCFunction)ArrowBuilder_add_lists, METH_VARARGS,
     "add_lists(offsets, timestamps, keys, values, headers): append decode_columns "
     "lists; OverflowError appends nothing."},
    {"finish", (PyCFunction)ArrowBuilder_finish, METH_NOARGS,
     "finish() -> (records, headers, nulls x3, 14 buffers); the builder starts empty."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ArrowBuilderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kproto._speedups.ArrowBuilder",
    .tp_basicsize = sizeof(ArrowBuilder),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Arrow column buffers from magic 2 batches; see records/_arrow.py.",
    .tp_new = ArrowBuilder_new,
    .tp_dealloc = (destructor)ArrowBuilder_dealloc,
    .tp_methods = ArrowBuilder_methods,
};
