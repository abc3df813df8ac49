/*
 * kproto._avro: Avro values straight into Arrow buffers.
 *
 * The C twin of kproto/avro/_decode.py (the reference): it runs the same plan
 * (kproto/avro/_plan.py's ops, compiled once into a Program) over the same input
 * and gives byte-equal buffers and the same errors (code and byte position);
 * tests/avro/ holds the two to that, fuzz included.
 *
 *   Program(root, columns)
 *       root: the nested tuple (code, col, a, b, extra, kids) of Op.to_tuple();
 *       columns: (kind, child indices) per output column, pre-order.
 *   decode(programs, count, offsets, validity, data, permissive)
 *       programs: a Program (bare Avro) or a dict schema id -> Program (Confluent's
 *       wire format: magic byte 0, big-endian int32 schema id). Returns
 *       (buffers, errors): per column (length, null_count, validity, buffer1,
 *       buffer2) as _decode.finish gives them, and the errors as (index, schema id
 *       or None, code, byte position); without permissive it stops at the first.
 *
 * Bounds: every read is checked against the value's end; a block count is bounded
 * by the bytes left (count * least item size <= bytes left; 65536 per block for
 * items that may take no bytes); data buffers stop at 2**31 - 1 bytes (Arrow's
 * int32 offsets), so growth is bounded by the input.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_grow.h"

/* Column kinds and op codes: kproto/avro/_plan.py. */
enum { K_NULL, K_BOOL, K_I32, K_I64, K_F32, K_F64, K_BIN, K_DEC, K_STRUCT, K_LIST };
enum {
    OP_NULL, OP_BOOL, OP_INT, OP_LONG, OP_LONG_MS, OP_FLOAT, OP_DOUBLE, OP_BLOB,
    OP_FIXED, OP_DEC_BYTES, OP_DEC_FIXED, OP_ENUM, OP_RECORD, OP_ARRAY, OP_MAP,
    OP_UNION, OP_DEFAULT, OP_ERROR, OP_MEMBER,
};
/* Error codes: kproto/avro/_decode.py's MESSAGES. */
enum {
    E_TRUNCATED = 1, E_INT, E_LONG, E_NEG_LENGTH, E_BOOL, E_UNION, E_ENUM, E_SYMBOL,
    E_UTF8, E_BLOCK, E_DECIMAL, E_TIMESTAMP, E_UNRESOLVED, E_TRAILING, E_MAGIC,
    E_SCHEMA_ID, E_FULL,
};
#define MAX_ZERO_SIZE_ITEMS 65536
/* Ops nested deeper than this (a schema nested that deep) are refused by
 * Program(): the Python path decodes them (kproto/avro/_native.py). */
#define MAX_DEPTH 200
#define FAIL (-1) /* a bad value: Ctx.code and Ctx.epos say why and where */
#define OOM (-2)  /* a Python exception is set */

typedef struct Node {
    int code, col;
    int64_t a, b;
    Py_ssize_t nkids;
    struct Node **kids;
    Py_ssize_t ntable;  /* OP_ENUM: the reader's symbol per writer index */
    const char **sym;   /* NULL: no symbol (E_SYMBOL) */
    Py_ssize_t *symlen;
    const char *dflt;   /* OP_DEFAULT: the default's Avro bytes */
    Py_ssize_t dflt_len;
} Node;

typedef struct {
    int kind;
    Py_ssize_t nkids;
    int *kids;
} ColDesc;

typedef struct {
    PyObject_HEAD
    Node *root;
    ColDesc *cols;
    Py_ssize_t ncols;
    PyObject *keep; /* the root tuple: owns the symbols' and defaults' bytes */
} Program;

static PyTypeObject ProgramType;

static void
node_free(Node *n)
{
    if (n == NULL)
        return;
    for (Py_ssize_t i = 0; i < n->nkids; i++)
        node_free(n->kids[i]);
    PyMem_Free(n->kids);
    PyMem_Free(n->sym);
    PyMem_Free(n->symlen);
    PyMem_Free(n);
}

/* A zeroed PyMem block of n (at least one) items of `size` bytes; NULL with
 * MemoryError set when it cannot be had. */
static void *
new_items(Py_ssize_t n, size_t size)
{
    void *p = PyMem_Calloc(n > 0 ? (size_t)n : 1, size);
    return p != NULL ? p : PyErr_NoMemory();
}

static Node *
node_compile(PyObject *t, Py_ssize_t ncols, int depth)
{
    if (depth > MAX_DEPTH) {
        PyErr_SetString(PyExc_ValueError, "plan too deep");
        return NULL;
    }
    int code, col;
    long long a, b;
    PyObject *extra, *kids;
    if (!PyTuple_Check(t) ||
        !PyArg_ParseTuple(t, "iiLLOO!", &code, &col, &a, &b, &extra, &PyTuple_Type,
                          &kids))
        return NULL;
    if (code < OP_NULL || code > OP_MEMBER || col < -1 || col >= ncols) {
        PyErr_SetString(PyExc_ValueError, "bad op");
        return NULL;
    }
    Node *n = new_items(1, sizeof(Node));
    if (n == NULL)
        return NULL;
    n->code = code;
    n->col = col;
    n->a = a;
    n->b = b;
    Py_ssize_t nk = PyTuple_GET_SIZE(kids);
    n->kids = new_items(nk, sizeof(Node *));
    if (n->kids == NULL) {
        PyMem_Free(n);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < nk; i++) {
        n->kids[i] = node_compile(PyTuple_GET_ITEM(kids, i), ncols, depth + 1);
        n->nkids = i + 1;
        if (n->kids[i] == NULL)
            goto error;
    }
    int need_kid = code == OP_ARRAY || code == OP_MAP || code == OP_DEFAULT ||
                   code == OP_MEMBER;
    if (need_kid && nk != 1) {
        PyErr_SetString(PyExc_ValueError, "op needs one kid");
        goto error;
    }
    if (col < 0 && (code == OP_MEMBER || code == OP_DEFAULT || code == OP_DEC_BYTES ||
                    code == OP_DEC_FIXED)) {
        PyErr_SetString(PyExc_ValueError, "op needs a column");
        goto error;
    }
    if ((code == OP_FIXED || code == OP_DEC_FIXED) && (a < 0 || a > PY_SSIZE_T_MAX / 2)) {
        PyErr_SetString(PyExc_ValueError, "bad fixed size");
        goto error;
    }
    if ((code == OP_DEC_BYTES && (a < 1 || a > 38)) ||
        (code == OP_DEC_FIXED && (b < 1 || b > 38)) || (code == OP_ARRAY && a < 0) ||
        (code == OP_MAP && (a < -1 || a >= ncols)) || (code == OP_MAP && col >= 0 && a < 0)) {
        PyErr_SetString(PyExc_ValueError, "bad op argument");
        goto error;
    }
    if (code == OP_ENUM) {
        if (!PyTuple_Check(extra)) {
            PyErr_SetString(PyExc_TypeError, "enum table must be a tuple");
            goto error;
        }
        n->ntable = PyTuple_GET_SIZE(extra);
        if ((n->sym = new_items(n->ntable, sizeof(char *))) == NULL ||
            (n->symlen = new_items(n->ntable, sizeof(Py_ssize_t))) == NULL)
            goto error;
        for (Py_ssize_t i = 0; i < n->ntable; i++) {
            PyObject *s = PyTuple_GET_ITEM(extra, i);
            if (s == Py_None)
                continue;
            if (!PyBytes_Check(s)) {
                PyErr_SetString(PyExc_TypeError, "enum symbols must be bytes");
                goto error;
            }
            n->sym[i] = PyBytes_AS_STRING(s);
            n->symlen[i] = PyBytes_GET_SIZE(s);
        }
    }
    if (code == OP_DEFAULT) {
        if (!PyBytes_Check(extra)) {
            PyErr_SetString(PyExc_TypeError, "a default must be bytes");
            goto error;
        }
        n->dflt = PyBytes_AS_STRING(extra);
        n->dflt_len = PyBytes_GET_SIZE(extra);
    }
    return n;
error:
    node_free(n);
    return NULL;
}

static void
Program_dealloc(Program *p)
{
    node_free(p->root);
    if (p->cols != NULL)
        for (Py_ssize_t i = 0; i < p->ncols; i++)
            PyMem_Free(p->cols[i].kids);
    PyMem_Free(p->cols);
    Py_XDECREF(p->keep);
    Py_TYPE(p)->tp_free((PyObject *)p);
}

static PyObject *
Program_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *root, *cols;
    if (kwds != NULL && PyDict_GET_SIZE(kwds) != 0) {
        PyErr_SetString(PyExc_TypeError, "Program() takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "O!O!", &PyTuple_Type, &root, &PyTuple_Type, &cols))
        return NULL;
    Program *p = (Program *)type->tp_alloc(type, 0);
    if (p == NULL)
        return NULL;
    Py_INCREF(root);
    p->keep = root;
    p->ncols = PyTuple_GET_SIZE(cols);
    p->cols = new_items(p->ncols, sizeof(ColDesc));
    if (p->cols == NULL)
        goto error;
    for (Py_ssize_t i = 0; i < p->ncols; i++) {
        PyObject *kids;
        int kind;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(cols, i), "iO!", &kind, &PyTuple_Type,
                              &kids))
            goto error;
        ColDesc *c = &p->cols[i];
        c->kind = kind;
        c->nkids = PyTuple_GET_SIZE(kids);
        c->kids = new_items(c->nkids, sizeof(int));
        if (c->kids == NULL)
            goto error;
        if (kind < K_NULL || kind > K_LIST || (kind == K_LIST && c->nkids != 1) ||
            (kind != K_LIST && kind != K_STRUCT && c->nkids != 0)) {
            PyErr_SetString(PyExc_ValueError, "bad column");
            goto error;
        }
        for (Py_ssize_t j = 0; j < c->nkids; j++) {
            long k = PyLong_AsLong(PyTuple_GET_ITEM(kids, j));
            if (k == -1 && PyErr_Occurred())
                goto error;
            if (k <= i || k >= p->ncols) { /* pre-order: children come after */
                PyErr_SetString(PyExc_ValueError, "bad column child");
                goto error;
            }
            c->kids[j] = (int)k;
        }
    }
    if (p->ncols == 0) {
        PyErr_SetString(PyExc_ValueError, "no columns");
        goto error;
    }
    p->root = node_compile(root, p->ncols, 0);
    if (p->root == NULL)
        goto error;
    return (PyObject *)p;
error:
    Py_DECREF(p);
    return NULL;
}

static PyTypeObject ProgramType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kproto._avro.Program",
    .tp_basicsize = sizeof(Program),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A compiled Avro decode plan; see kproto/avro/_plan.py.",
    .tp_new = Program_new,
    .tp_dealloc = (destructor)Program_dealloc,
};

/* ---- output buffers ---------------------------------------------------- */

typedef struct {
    char *p;
    Py_ssize_t len, cap;
} Buf;

typedef struct {
    int kind;
    Py_ssize_t nkids;
    const int *kids;
    Py_ssize_t n; /* items */
    Buf valid, b1, b2;
} Out;

typedef struct {
    const uint8_t *d;
    Py_ssize_t end;
    Out *outs;
    int code;
    Py_ssize_t epos;
} Ctx;

/* Room for n more bytes in b: 0, or OOM. */
static inline int
need(Buf *b, Py_ssize_t n)
{
    if (b->len + n <= b->cap)
        return 0;
    char *p = grow_block(b->p, b->len, &b->cap, n, 64);
    if (p == NULL)
        return OOM;
    b->p = p;
    return 0;
}

static inline int
put_bit(Buf *b, Py_ssize_t i, int bit)
{
    if ((i & 7) == 0) {
        if (need(b, 1) < 0)
            return OOM;
        b->p[b->len++] = 0;
    }
    if (bit)
        b->p[i >> 3] |= (char)(1 << (i & 7));
    return 0;
}

static inline int
put_bytes(Buf *b, const void *src, Py_ssize_t n)
{
    if (n == 0) /* src may be NULL (an empty default, the data of no bytes) */
        return 0;
    if (need(b, n) < 0)
        return OOM;
    memcpy(b->p + b->len, src, (size_t)n);
    b->len += n;
    return 0;
}

static inline int
put_i32(Buf *b, int32_t v)
{
    return put_bytes(b, &v, 4);
}

static inline int32_t
get_i32(const Buf *b, Py_ssize_t i)
{
    int32_t v;
    memcpy(&v, b->p + 4 * i, 4);
    return v;
}

/* The validity bit of a new item of `o` (counted in o->n by the caller). */
static inline int
valid_bit(Out *o, int bit)
{
    return put_bit(&o->valid, o->n, bit);
}

static int
append_null(Ctx *x, int c)
{
    Out *o = &x->outs[c];
    if (valid_bit(o, 0) < 0)
        return OOM;
    static const int64_t zero[2] = {0, 0};
    int r = 0;
    switch (o->kind) {
    case K_BOOL: r = put_bit(&o->b1, o->n, 0); break;
    case K_I32: case K_F32: r = put_bytes(&o->b1, zero, 4); break;
    case K_I64: case K_F64: r = put_bytes(&o->b1, zero, 8); break;
    case K_DEC: r = put_bytes(&o->b1, zero, 16); break;
    case K_BIN: r = put_i32(&o->b1, (int32_t)o->b2.len); break;
    case K_LIST: r = put_i32(&o->b1, get_i32(&o->b1, o->n)); break;
    case K_STRUCT:
        for (Py_ssize_t i = 0; i < o->nkids && r == 0; i++)
            r = append_null(x, o->kids[i]);
        break;
    }
    o->n++;
    return r;
}

static void
truncate_bits(Buf *b, Py_ssize_t n)
{
    b->len = (n + 7) / 8;
    if (n & 7)
        b->p[n >> 3] &= (char)((1 << (n & 7)) - 1);
}

/* Back to `n` items (drop a failed record's partial appends). */
static void
truncate_out(Ctx *x, int c, Py_ssize_t n)
{
    Out *o = &x->outs[c];
    if (n >= o->n && o->kind != K_LIST && o->kind != K_STRUCT && o->kind != K_BIN)
        return;
    truncate_bits(&o->valid, n);
    switch (o->kind) {
    case K_BOOL: truncate_bits(&o->b1, n); break;
    case K_I32: case K_F32: o->b1.len = 4 * n; break;
    case K_I64: case K_F64: o->b1.len = 8 * n; break;
    case K_DEC: o->b1.len = 16 * n; break;
    case K_BIN:
        o->b2.len = get_i32(&o->b1, n);
        o->b1.len = 4 * (n + 1);
        break;
    case K_LIST:
        truncate_out(x, o->kids[0], get_i32(&o->b1, n));
        o->b1.len = 4 * (n + 1);
        break;
    case K_STRUCT:
        for (Py_ssize_t i = 0; i < o->nkids; i++)
            truncate_out(x, o->kids[i], n);
        break;
    }
    o->n = n;
}

/* ---- reading ----------------------------------------------------------- */

static inline int
fail(Ctx *x, int code, Py_ssize_t pos)
{
    x->code = code;
    x->epos = pos;
    return FAIL;
}

static inline int
read_varint(Ctx *x, Py_ssize_t *pos, int last, unsigned limit, int code, int64_t *out)
{
    Py_ssize_t p = *pos;
    const uint8_t *d = x->d;
    if (p < x->end && d[p] < 0x80) {
        uint64_t u = d[p];
        *out = (int64_t)((u >> 1) ^ (0 - (u & 1)));
        *pos = p + 1;
        return 0;
    }
    uint64_t u = 0;
    int shift = 0;
    for (int i = 0;; i++) {
        if (p >= x->end)
            return fail(x, E_TRUNCATED, *pos);
        unsigned b = d[p++];
        if (i == last && b > limit)
            return fail(x, code, *pos);
        u |= (uint64_t)(b & 0x7f) << shift;
        if (b < 0x80)
            break;
        shift += 7;
    }
    *out = (int64_t)((u >> 1) ^ (0 - (u & 1)));
    *pos = p;
    return 0;
}

#define READ_INT(x, pos, out) read_varint((x), (pos), 4, 0x0f, E_INT, (out))
#define READ_LONG(x, pos, out) read_varint((x), (pos), 9, 0x01, E_LONG, (out))

/* A length-prefixed blob at *pos: its bytes' start; *pos moves past them. */
static inline int
read_blob(Ctx *x, Py_ssize_t *pos, Py_ssize_t *start)
{
    Py_ssize_t at = *pos;
    int64_t n;
    if (READ_LONG(x, pos, &n) < 0)
        return FAIL;
    if (n < 0)
        return fail(x, E_NEG_LENGTH, at);
    if (n > x->end - *pos)
        return fail(x, E_TRUNCATED, at);
    *start = *pos;
    *pos += (Py_ssize_t)n;
    return 0;
}

/* 1 when s[0:n] is UTF-8 as Python's strict decoder takes it. */
static int
utf8_ok(const uint8_t *s, Py_ssize_t n)
{
    Py_ssize_t i = 0;
    while (i < n) {
        if (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (!(w & 0x8080808080808080ULL)) {
                i += 8;
                continue;
            }
        }
        uint8_t c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        /* The sequence's length and the range of its second byte (Unicode's
         * table 3-7: no overlong forms, surrogates or code points past U+10FFFF). */
        int len = 2;
        uint8_t lo = 0x80, hi = 0xBF;
        if (c < 0xC2 || c > 0xF4)
            return 0;
        if (c >= 0xF0) {
            len = 4;
            lo = c == 0xF0 ? 0x90 : 0x80;
            hi = c == 0xF4 ? 0x8F : 0xBF;
        }
        else if (c >= 0xE0) {
            len = 3;
            lo = c == 0xE0 ? 0xA0 : 0x80;
            hi = c == 0xED ? 0x9F : 0xBF;
        }
        if (len > n - i || s[i + 1] < lo || s[i + 1] > hi)
            return 0;
        for (int k = 2; k < len; k++)
            if ((s[i + k] & 0xC0) != 0x80)
                return 0;
        i += len;
    }
    return 1;
}

static inline int
append_blob(Ctx *x, int c, const void *src, Py_ssize_t n, Py_ssize_t at)
{
    Out *o = &x->outs[c];
    if (n > INT32_MAX - o->b2.len)
        return fail(x, E_FULL, at);
    if (valid_bit(o, 1) < 0 || put_bytes(&o->b2, src, n) < 0 ||
        put_i32(&o->b1, (int32_t)o->b2.len) < 0)
        return OOM;
    o->n++;
    return 0;
}

/* A number into an int32, int64, float or double column. */
static inline int
append_number(Ctx *x, int c, int64_t v)
{
    Out *o = &x->outs[c];
    int r;
    switch (o->kind) {
    case K_I32: { int32_t w = (int32_t)v; r = put_bytes(&o->b1, &w, 4); break; }
    case K_I64: r = put_bytes(&o->b1, &v, 8); break;
    case K_F32: { float f = (float)(double)v; r = put_bytes(&o->b1, &f, 4); break; }
    default: { double f = (double)v; r = put_bytes(&o->b1, &f, 8); break; }
    }
    if (r < 0 || valid_bit(o, 1) < 0)
        return OOM;
    o->n++;
    return 0;
}

static unsigned __int128 POW10[39];

static int run(Ctx *x, const Node *op, Py_ssize_t *pos);

static int
run_decimal(Ctx *x, const Node *op, Py_ssize_t *pos)
{
    Py_ssize_t at = *pos, s, n;
    int precision;
    if (op->code == OP_DEC_BYTES) {
        if (read_blob(x, pos, &s) < 0)
            return FAIL;
        n = *pos - s;
        precision = (int)op->a;
    }
    else {
        if (op->a > x->end - *pos)
            return fail(x, E_TRUNCATED, at);
        s = *pos;
        n = (Py_ssize_t)op->a;
        *pos += n;
        precision = (int)op->b;
    }
    const uint8_t *d = x->d + s;
    __int128 v = 0;
    if (n > 0) {
        int neg = d[0] & 0x80;
        Py_ssize_t skip = n > 16 ? n - 16 : 0;
        for (Py_ssize_t i = 0; i < skip; i++)
            if (d[i] != (neg ? 0xff : 0x00))
                return fail(x, E_DECIMAL, at);
        if (skip && ((d[skip] & 0x80) != neg))
            return fail(x, E_DECIMAL, at);
        unsigned __int128 u = neg ? ~(unsigned __int128)0 : 0;
        for (Py_ssize_t i = skip; i < n; i++)
            u = (u << 8) | d[i];
        v = (__int128)u;
    }
    unsigned __int128 mag = v < 0 ? (unsigned __int128)0 - (unsigned __int128)v
                                  : (unsigned __int128)v;
    if (mag >= POW10[precision])
        return fail(x, E_DECIMAL, at);
    Out *o = &x->outs[op->col];
    if (valid_bit(o, 1) < 0 || put_bytes(&o->b1, &v, 16) < 0)
        return OOM;
    o->n++;
    return 0;
}

static int
run_blocks(Ctx *x, const Node *op, Py_ssize_t *pos)
{
    int is_map = op->code == OP_MAP;
    Out *o = op->col >= 0 ? &x->outs[op->col] : NULL;
    Out *child = NULL;
    if (o != NULL) {
        child = &x->outs[o->kids[0]];
        if (valid_bit(o, 1) < 0)
            return OOM;
    }
    const Node *kid = op->kids[0];
    int64_t least = is_map ? 1 : op->a;
    for (;;) {
        Py_ssize_t at = *pos;
        int64_t n, size;
        if (READ_LONG(x, pos, &n) < 0)
            return FAIL;
        if (n == 0)
            break;
        if (n < 0) {
            if (n == INT64_MIN)
                return fail(x, E_BLOCK, at);
            n = -n;
            if (READ_LONG(x, pos, &size) < 0)
                return FAIL;
            if (size < 0)
                return fail(x, E_NEG_LENGTH, at);
        }
        if (least == 0 ? n > MAX_ZERO_SIZE_ITEMS : n > (x->end - *pos) / least)
            return fail(x, E_BLOCK, at);
        for (int64_t i = 0; i < n; i++) {
            if (is_map) {
                Py_ssize_t kat = *pos, s;
                if (read_blob(x, pos, &s) < 0)
                    return FAIL;
                if (child != NULL) {
                    if (!utf8_ok(x->d + s, *pos - s))
                        return fail(x, E_UTF8, kat);
                    if (valid_bit(child, 1) < 0)
                        return OOM;
                    child->n++;
                    int r = append_blob(x, (int)op->a, x->d + s, *pos - s, kat);
                    if (r < 0)
                        return r;
                }
            }
            int r = run(x, kid, pos);
            if (r < 0)
                return r;
        }
        if (child != NULL && child->n > INT32_MAX)
            return fail(x, E_FULL, at);
    }
    if (o != NULL) {
        if (put_i32(&o->b1, (int32_t)child->n) < 0)
            return OOM;
        o->n++;
    }
    return 0;
}

static int
run(Ctx *x, const Node *op, Py_ssize_t *pos)
{
    int c = op->col;
    Py_ssize_t at = *pos;
    int64_t v;
    Out *o;
    switch (op->code) {
    case OP_INT:
        if (READ_INT(x, pos, &v) < 0)
            return FAIL;
        return c < 0 ? 0 : append_number(x, c, v);
    case OP_LONG:
        if (READ_LONG(x, pos, &v) < 0)
            return FAIL;
        return c < 0 ? 0 : append_number(x, c, v);
    case OP_LONG_MS:
        if ((op->a ? READ_INT(x, pos, &v) : READ_LONG(x, pos, &v)) < 0)
            return FAIL;
        if (c < 0)
            return 0;
        if (__builtin_mul_overflow(v, (int64_t)1000, &v))
            return fail(x, E_TIMESTAMP, at);
        return append_number(x, c, v);
    case OP_BLOB: {
        Py_ssize_t s;
        if (read_blob(x, pos, &s) < 0)
            return FAIL;
        if (c < 0)
            return 0;
        if (op->a && !utf8_ok(x->d + s, *pos - s))
            return fail(x, E_UTF8, at);
        return append_blob(x, c, x->d + s, *pos - s, at);
    }
    case OP_RECORD:
        if (c >= 0) {
            o = &x->outs[c];
            if (valid_bit(o, 1) < 0)
                return OOM;
            o->n++;
        }
        for (Py_ssize_t i = 0; i < op->nkids; i++) {
            int r = run(x, op->kids[i], pos);
            if (r < 0)
                return r;
        }
        return 0;
    case OP_FLOAT:
    case OP_DOUBLE: {
        Py_ssize_t width = op->code == OP_FLOAT ? 4 : 8;
        if (width > x->end - *pos)
            return fail(x, E_TRUNCATED, at);
        *pos += width;
        if (c < 0)
            return 0;
        o = &x->outs[c];
        int r;
        if (o->kind == K_F32 || op->code == OP_DOUBLE)
            r = put_bytes(&o->b1, x->d + at, width);
        else {
            float f;
            memcpy(&f, x->d + at, 4);
            double g = (double)f;
            r = put_bytes(&o->b1, &g, 8);
        }
        if (r < 0 || valid_bit(o, 1) < 0)
            return OOM;
        o->n++;
        return 0;
    }
    case OP_BOOL:
        if (*pos >= x->end)
            return fail(x, E_TRUNCATED, at);
        if (x->d[*pos] > 1)
            return fail(x, E_BOOL, at);
        (*pos)++;
        if (c < 0)
            return 0;
        o = &x->outs[c];
        if (valid_bit(o, 1) < 0 || put_bit(&o->b1, o->n, x->d[at]) < 0)
            return OOM;
        o->n++;
        return 0;
    case OP_NULL:
        return c < 0 ? 0 : append_null(x, c);
    case OP_UNION:
        if (READ_INT(x, pos, &v) < 0)
            return FAIL;
        if (v < 0 || v >= op->nkids)
            return fail(x, E_UNION, at);
        return run(x, op->kids[v], pos);
    case OP_MEMBER: {
        o = &x->outs[c];
        if (valid_bit(o, 1) < 0)
            return OOM;
        o->n++;
        for (Py_ssize_t m = 0; m < o->nkids; m++)
            if (m != op->a && append_null(x, o->kids[m]) < 0)
                return OOM;
        return run(x, op->kids[0], pos);
    }
    case OP_ENUM:
        if (READ_INT(x, pos, &v) < 0)
            return FAIL;
        if (v < 0 || v >= op->ntable)
            return fail(x, E_ENUM, at);
        if (op->sym[v] == NULL)
            return fail(x, E_SYMBOL, at);
        return c < 0 ? 0 : append_blob(x, c, op->sym[v], op->symlen[v], at);
    case OP_FIXED:
        if (op->a > x->end - *pos)
            return fail(x, E_TRUNCATED, at);
        *pos += (Py_ssize_t)op->a;
        return c < 0 ? 0 : append_blob(x, c, x->d + at, (Py_ssize_t)op->a, at);
    case OP_DEC_BYTES:
    case OP_DEC_FIXED:
        return run_decimal(x, op, pos);
    case OP_ARRAY:
    case OP_MAP:
        return run_blocks(x, op, pos);
    case OP_DEFAULT: {
        const uint8_t *d = x->d;
        Py_ssize_t end = x->end, p = 0;
        x->d = (const uint8_t *)op->dflt;
        x->end = op->dflt_len;
        int r = run(x, op->kids[0], &p);
        x->d = d;
        x->end = end;
        return r;
    }
    default: /* OP_ERROR */
        return fail(x, (int)op->a, at);
    }
}

/* ---- decode() ---------------------------------------------------------- */

/* The bytes of b when `wanted`, else None: a new reference, or NULL on error. */
static PyObject *
bytes_or_none(const Buf *b, int wanted)
{
    return wanted ? PyBytes_FromStringAndSize(b->p, b->len) : Py_NewRef(Py_None);
}

static PyObject *
finish_out(Out *o)
{
    Py_ssize_t n = o->n, nulls = n;
    if (o->kind != K_NULL) {
        Py_ssize_t set = 0, i = 0;
        for (; i + 8 <= o->valid.len; i += 8) {
            uint64_t w;
            memcpy(&w, o->valid.p + i, 8);
            set += __builtin_popcountll(w);
        }
        for (; i < o->valid.len; i++)
            set += __builtin_popcount((unsigned char)o->valid.p[i]);
        nulls = n - set;
    }
    /* no validity buffer when nothing is valid (K_NULL) or nothing is null */
    PyObject *validity = bytes_or_none(&o->valid, o->kind != K_NULL && nulls != 0);
    PyObject *b1 = validity == NULL
                       ? NULL
                       : bytes_or_none(&o->b1, o->kind != K_NULL && o->kind != K_STRUCT);
    PyObject *b2 = b1 == NULL ? NULL : bytes_or_none(&o->b2, o->kind == K_BIN);
    if (b2 == NULL) {
        Py_XDECREF(validity);
        Py_XDECREF(b1);
        return NULL;
    }
    return Py_BuildValue("nnNNN", n, nulls, validity, b1, b2);
}

static Program *
lookup(PyObject *programs, int32_t id)
{
    PyObject *key = PyLong_FromLong(id);
    if (key == NULL)
        return NULL;
    PyObject *p = PyDict_GetItemWithError(programs, key);
    Py_DECREF(key);
    if (p == NULL)
        return NULL;
    if (!PyObject_TypeCheck(p, &ProgramType)) {
        PyErr_SetString(PyExc_TypeError, "programs must map ids to Program");
        return NULL;
    }
    return (Program *)p;
}

static int
same_columns(const Program *a, const Program *b)
{
    if (a->ncols != b->ncols)
        return 0;
    for (Py_ssize_t i = 0; i < a->ncols; i++) {
        if (a->cols[i].kind != b->cols[i].kind || a->cols[i].nkids != b->cols[i].nkids)
            return 0;
        for (Py_ssize_t j = 0; j < a->cols[i].nkids; j++)
            if (a->cols[i].kids[j] != b->cols[i].kids[j])
                return 0;
    }
    return 1;
}

static PyObject *
avro_decode(PyObject *self, PyObject *args)
{
    PyObject *programs, *offs_o, *valid_o, *data_o;
    Py_ssize_t count;
    int permissive;
    if (!PyArg_ParseTuple(args, "OnOOOp", &programs, &count, &offs_o, &valid_o, &data_o,
                          &permissive))
        return NULL;
    int framed = PyDict_Check(programs);
    Program *first = NULL;
    if (framed) {
        Py_ssize_t i = 0;
        PyObject *k, *v;
        while (PyDict_Next(programs, &i, &k, &v)) {
            if (!PyObject_TypeCheck(v, &ProgramType)) {
                PyErr_SetString(PyExc_TypeError, "programs must map ids to Program");
                return NULL;
            }
            if (first == NULL)
                first = (Program *)v;
            else if (!same_columns(first, (Program *)v)) {
                PyErr_SetString(PyExc_ValueError, "programs of different columns");
                return NULL;
            }
        }
        if (first == NULL) {
            PyErr_SetString(PyExc_ValueError, "no programs");
            return NULL;
        }
    }
    else if (PyObject_TypeCheck(programs, &ProgramType))
        first = (Program *)programs;
    else {
        PyErr_SetString(PyExc_TypeError, "programs must be a Program or a dict");
        return NULL;
    }
    Py_buffer ob = {0}, vb = {0}, db = {0};
    int have_v = 0;
    PyObject *result = NULL, *errors = NULL, *bufs = NULL;
    Out *outs = NULL;
    if (PyObject_GetBuffer(offs_o, &ob, PyBUF_SIMPLE) < 0)
        return NULL;
    if (PyObject_GetBuffer(data_o, &db, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&ob);
        return NULL;
    }
    if (valid_o != Py_None) {
        if (PyObject_GetBuffer(valid_o, &vb, PyBUF_SIMPLE) < 0)
            goto done;
        have_v = 1;
    }
    if (count < 0 || ob.len / 4 < count + 1 || (have_v && vb.len < (count + 7) / 8)) {
        PyErr_SetString(PyExc_ValueError, "offsets or validity shorter than the count");
        goto done;
    }
    Py_ssize_t ncols = first->ncols;
    outs = new_items(ncols, sizeof(Out));
    if (outs == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < ncols; i++) {
        outs[i].kind = first->cols[i].kind;
        outs[i].nkids = first->cols[i].nkids;
        outs[i].kids = first->cols[i].kids;
        if (outs[i].kind == K_BIN || outs[i].kind == K_LIST)
            if (put_i32(&outs[i].b1, 0) < 0)
                goto done;
    }
    if ((errors = PyList_New(0)) == NULL)
        goto done;
    const uint8_t *data = db.buf;
    const char *offs = ob.buf;
    const uint8_t *bits = have_v ? vb.buf : NULL;
    Ctx x = {.d = data, .outs = outs};
    Program *cached = framed ? NULL : first;
    int32_t cached_id = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        if (bits != NULL && !((bits[i >> 3] >> (i & 7)) & 1)) {
            if (append_null(&x, 0) < 0)
                goto done;
            continue;
        }
        int32_t start, end;
        memcpy(&start, offs + 4 * i, 4);
        memcpy(&end, offs + 4 * (i + 1), 4);
        if (start < 0 || end < start || end > db.len) {
            PyErr_SetString(PyExc_ValueError, "offsets out of order or past the data");
            goto done;
        }
        Py_ssize_t pos = start;
        x.end = end;
        x.d = data;
        int has_id = 0, r;
        int32_t id = 0;
        Program *prog = first;
        if (framed) {
            if (end - start < 1) {
                r = fail(&x, E_TRUNCATED, start);
                goto record_done;
            }
            if (data[start] != 0) {
                r = fail(&x, E_MAGIC, start);
                goto record_done;
            }
            if (end - start < 5) {
                r = fail(&x, E_TRUNCATED, start + 1);
                goto record_done;
            }
            id = (int32_t)(((uint32_t)data[start + 1] << 24) |
                           ((uint32_t)data[start + 2] << 16) |
                           ((uint32_t)data[start + 3] << 8) | data[start + 4]);
            has_id = 1;
            if (cached == NULL || id != cached_id) {
                cached = lookup(programs, id);
                cached_id = id;
                if (cached == NULL) {
                    if (PyErr_Occurred())
                        goto done;
                    r = fail(&x, E_SCHEMA_ID, start + 1);
                    goto record_done;
                }
            }
            prog = cached;
            pos += 5;
        }
        r = run(&x, prog->root, &pos);
        if (r == 0 && pos != end)
            r = fail(&x, E_TRAILING, pos);
    record_done:
        if (r == OOM)
            goto done;
        if (r == FAIL) {
            truncate_out(&x, 0, i);
            if (append_null(&x, 0) < 0)
                goto done;
            PyObject *e = has_id ? Py_BuildValue("nini", i, (int)id, x.code,
                                                 (int)(x.epos - start))
                                 : Py_BuildValue("nOin", i, Py_None, x.code,
                                                 (Py_ssize_t)(x.epos - start));
            if (e == NULL || PyList_Append(errors, e) < 0) {
                Py_XDECREF(e);
                goto done;
            }
            Py_DECREF(e);
            if (!permissive)
                break;
        }
    }
    if ((bufs = PyTuple_New(ncols)) == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < ncols; i++) {
        PyObject *t = finish_out(&outs[i]);
        if (t == NULL)
            goto done;
        PyTuple_SET_ITEM(bufs, i, t);
    }
    result = PyTuple_Pack(2, bufs, errors);
done:
    Py_XDECREF(bufs);
    Py_XDECREF(errors);
    if (outs != NULL)
        for (Py_ssize_t i = 0; i < first->ncols; i++) {
            PyMem_Free(outs[i].valid.p);
            PyMem_Free(outs[i].b1.p);
            PyMem_Free(outs[i].b2.p);
        }
    PyMem_Free(outs);
    PyBuffer_Release(&ob);
    PyBuffer_Release(&db);
    if (have_v)
        PyBuffer_Release(&vb);
    return result;
}

static PyMethodDef methods[] = {
    {"decode", avro_decode, METH_VARARGS,
     "decode(programs, count, offsets, validity, data, permissive) -> (buffers, "
     "errors); see kproto/avro/_decode.py's decode_py."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "kproto._avro",
    "Avro values into Arrow buffers: the C twin of kproto/avro/_decode.py.", -1,
    methods,
};

PyMODINIT_FUNC
PyInit__avro(void)
{
    POW10[0] = 1;
    for (int i = 1; i < 39; i++)
        POW10[i] = POW10[i - 1] * 10;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL || PyModule_AddType(m, &ProgramType) < 0) { /* readies it */
        Py_XDECREF(m);
        return NULL;
    }
    return m;
}
