/*
 * kproto._entity_writer: a generic C writer for the generated entity classes
 * (optional; see kproto/speedups.py), the twin of _entity_reader.c and driven by the
 * same description (_entity_desc.h, built by kproto/serial/_native.py).
 *
 * Contract: a Writer produces the bytes the class's compiled Python encoder
 * (kproto/serial/_encode_gen.py, the reference) produces, or, for any value it is
 * not sure of, calls that encoder itself on the same arguments, so every error (and
 * the EncodeError with the field path that kproto.serial makes of it) comes from the
 * Python code. It is sure of exactly the values the compiled encoder packs without
 * running Python code of theirs:
 *
 *   int8..int64, uint16, uint32  an int (a subclass too: struct reads the value, as
 *                                here) or a bool, in range
 *   float64                      a float (exactly)
 *   bool                         True or False
 *   uuid                         a uuid.UUID (exactly), its `int` slot 0..2**128-1
 *   string                       a str (exactly) that encodes as UTF-8
 *   bytes, records               bytes, bytearray or a C-contiguous memoryview (exactly)
 *   struct                       an instance of exactly the field's class
 *   array                        a tuple or list (exactly)
 *   unknown_tagged_fields        a tuple of (int, bytes) tuples, tags 0..2**32-1, none
 *                                repeated (nor equal to a known tag written)
 *
 * None where the field is nullable; lengths and counts within their int16 / int32 /
 * unsigned varint. Anything else (a None where not nullable, a value out of range, a
 * wrong type, an unset slot, a failing comparison with a tagged field's default)
 * sends the whole entity to the Python encoder.
 *
 * Tagged fields are written when `value != default` (Python's comparison, as the
 * compiled encoder does), known and unknown merged in ascending tag order.
 *
 * Safety: the output grows in a buffer (512 bytes on the stack, then doubling on the
 * heap) only as bytes are written, so memory follows the size of the Python values,
 * never a claimed count. Slot values and list items are held by a reference while
 * they are written (a tagged field's comparison may run Python code); a list that
 * changes size meanwhile sends the entity to Python.
 */
#include "_entity_wrapper.h"
#include "_entity_out.h"

/* ---- values ------------------------------------------------------------------ */

/* Every failure below returns -1, with or without an exception set; the Writer then
 * runs the Python encoder, which raises the right error (or writes what Python
 * writes). */

/* A length or count as _encode_gen.py writes it (-1 is null), in op's form. */
static int
put_length(Out *o, const Op *op, Py_ssize_t n)
{
    int classic = count_size[op->kind];
    if (op->compact) {
        if (n > (Py_ssize_t)0xFFFFFFFE)
            return -1;
        return put_uvarint(o, (uint32_t)(n + 1));
    }
    if (n > (classic == 2 ? INT16_MAX : INT32_MAX))
        return -1;
    return put_be(o, (uint64_t)(int64_t)n, classic);
}

static int
put_int(Out *o, int kind, PyObject *v)
{
    static const long long lo[N_KINDS] = {
        [K_INT8] = INT8_MIN, [K_INT16] = INT16_MIN, [K_INT32] = INT32_MIN,
        [K_INT64] = INT64_MIN,
    };
    static const long long hi[N_KINDS] = {
        [K_INT8] = INT8_MAX, [K_INT16] = INT16_MAX, [K_UINT16] = UINT16_MAX,
        [K_INT32] = INT32_MAX, [K_UINT32] = UINT32_MAX, [K_INT64] = INT64_MAX,
    };
    if (!PyLong_Check(v))
        return -1;
    int overflow;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow || (x == -1 && PyErr_Occurred()) || x < lo[kind] || x > hi[kind])
        return -1;
    return put_be(o, (uint64_t)x, fixed_size[kind]);
}

static int
put_uuid(Out *o, PyObject *v)
{
    if (!Py_IS_TYPE(v, uuid_type))
        return -1;
    PyObject *i = SLOT(v, uuid_int_slot);
    if (i == NULL || !PyLong_Check(i) || !ROOM(o, 16))
        return -1;
#if PY_VERSION_HEX >= 0x030D0000
    int r = _PyLong_AsByteArray((PyLongObject *)i, o->data + o->len, 16, 0, 0, 1);
#else
    int r = _PyLong_AsByteArray((PyLongObject *)i, o->data + o->len, 16, 0, 0);
#endif
    if (r < 0)
        return -1;
    o->len += 16;
    return 0;
}

static int
put_fixed(Out *o, int kind, PyObject *v)
{
    switch (kind) {
    case K_BOOL:
        if (v != Py_True && v != Py_False)
            return -1;
        return put_byte(o, v == Py_True);
    case K_FLOAT64: {
        if (!PyFloat_CheckExact(v))
            return -1;
        double d = PyFloat_AS_DOUBLE(v);
        uint64_t bits;
        memcpy(&bits, &d, sizeof(bits));
        return put_be(o, bits, 8);
    }
    case K_UUID:
        return put_uuid(o, v);
    default:
        return put_int(o, kind, v);
    }
}

/* The n bytes at p after their length (the op's int16/int32 or compact form). */
static inline int
put_counted(Out *o, const Op *op, const void *p, Py_ssize_t n)
{
    return put_length(o, op, n) < 0 ? -1 : put(o, p, n);
}

/* string (not None: see put_value): UTF-8, int16 or compact length. */
static int
put_string(Out *o, const Op *op, PyObject *v)
{
    if (!PyUnicode_CheckExact(v))
        return -1;
    Py_ssize_t n;
    const char *s = PyUnicode_AsUTF8AndSize(v, &n);
    return s == NULL ? -1 : put_counted(o, op, s, n);
}

/* bytes and records (not None): int32 or compact length. */
static int
put_bytes(Out *o, const Op *op, PyObject *v)
{
    if (PyBytes_CheckExact(v))
        return put_counted(o, op, PyBytes_AS_STRING(v), PyBytes_GET_SIZE(v));
    if (!PyByteArray_CheckExact(v) && !PyMemoryView_Check(v))
        return -1;
    Py_buffer view;
    if (PyObject_GetBuffer(v, &view, PyBUF_SIMPLE) < 0)
        return -1;
    int r = put_counted(o, op, view.buf, view.len);
    PyBuffer_Release(&view);
    return r;
}

static int put_entity(Out *o, const Prog *p, PyObject *obj);

static int put_value(Out *o, const Op *op, PyObject *v);

/* array (not None): int32 or compact count, then the elements. */
static int
put_array(Out *o, const Op *op, PyObject *v)
{
    if (PyTuple_CheckExact(v)) {
        Py_ssize_t n = PyTuple_GET_SIZE(v);
        if (put_length(o, op, n) < 0)
            return -1;
        for (Py_ssize_t i = 0; i < n; i++)
            if (put_value(o, op->elem, PyTuple_GET_ITEM(v, i)) < 0)
                return -1;
        return 0;
    }
    if (!PyList_CheckExact(v))
        return -1;
    Py_ssize_t n = PyList_GET_SIZE(v);
    if (put_length(o, op, n) < 0)
        return -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i >= PyList_GET_SIZE(v))
            return -1;
        PyObject *item = PyList_GET_ITEM(v, i);
        Py_INCREF(item);
        int r = put_value(o, op->elem, item);
        Py_DECREF(item);
        if (r < 0)
            return -1;
    }
    return PyList_GET_SIZE(v) == n ? 0 : -1;
}

static int
put_value(Out *o, const Op *op, PyObject *v)
{
    if (v == Py_None && count_size[op->kind]) /* a null string, bytes or array */
        return op->nullable ? put_length(o, op, -1) : -1;
    switch (op->kind) {
    case K_STRING:
        return put_string(o, op, v);
    case K_BYTES:
        return put_bytes(o, op, v);
    case K_STRUCT:
        if (v == Py_None)
            return op->nullable ? put_byte(o, 0xFF) : -1;
        if (!Py_IS_TYPE(v, op->sub->cls))
            return -1;
        if (op->nullable && put_byte(o, 0x01) < 0)
            return -1;
        return put_entity(o, op->sub, v);
    case K_ARRAY:
        return put_array(o, op, v);
    default:
        return put_fixed(o, op->kind, v);
    }
}

/* ---- the tagged-field section ---------------------------------------------- */

/* A tagged field kept from decoding: its tag and where it is in the tuple. */
typedef struct {
    uint32_t tag;
    Py_ssize_t index;
} Unknown;

static int
unknown_order(const void *a, const void *b)
{
    const Unknown *x = a, *y = b;
    if (x->tag != y->tag)
        return x->tag < y->tag ? -1 : 1;
    return x->index < y->index ? -1 : (x->index > y->index);
}

/* Is `v` != `dflt` (1), == (0), or unsure (-1)? As the compiled encoder's `!=`:
 * identity decides only for the types whose `!=` cannot be true of one object. */
static int
differs(PyObject *v, PyObject *dflt)
{
    if (v == dflt && (v == Py_None || PyLong_CheckExact(v) || PyBool_Check(v) ||
                      PyUnicode_CheckExact(v) || PyBytes_CheckExact(v)))
        return 0;
    PyObject *ne = PyObject_RichCompare(v, dflt, Py_NE);
    if (ne == NULL)
        return -1;
    int r = PyObject_IsTrue(ne);
    Py_DECREF(ne);
    return r;
}

/* One known tagged field: tag, size, value (written first, then moved up behind its
 * header once its size is known). */
static int
put_known_tag(Out *o, const Op *op, PyObject *v)
{
    Py_ssize_t start = o->len;
    if (put_value(o, op, v) < 0)
        return -1;
    Py_ssize_t size = o->len - start;
    if (size > (Py_ssize_t)0xFFFFFFFF || !ROOM(o, 10))
        return -1;
    unsigned char head[10];
    int h = uvarint_to(head, (uint32_t)op->tag);
    h += uvarint_to(head + h, (uint32_t)size);
    memmove(o->data + start + h, o->data + start, size);
    memcpy(o->data + start, head, h);
    o->len += h;
    return 0;
}

/* The unknown tagged fields in `unknown` (a tuple of checked pairs), sorted. */
static Unknown *
sorted_unknown(PyObject *unknown, Py_ssize_t n)
{
    Unknown *u = NULL;
    if ((size_t)n <= PY_SSIZE_T_MAX / sizeof(Unknown))
        u = PyMem_Malloc(n * sizeof(Unknown));
    if (u == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = PyTuple_GET_ITEM(unknown, i);
        if (!PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2 ||
            !PyLong_CheckExact(PyTuple_GET_ITEM(pair, 0)) ||
            !PyBytes_CheckExact(PyTuple_GET_ITEM(pair, 1)) ||
            PyBytes_GET_SIZE(PyTuple_GET_ITEM(pair, 1)) > (Py_ssize_t)0xFFFFFFFF)
            goto unsure;
        int overflow;
        long long tag = PyLong_AsLongLongAndOverflow(PyTuple_GET_ITEM(pair, 0), &overflow);
        if (overflow || tag < 0 || tag > (long long)UINT32_MAX)
            goto unsure;
        u[i].tag = (uint32_t)tag;
        u[i].index = i;
    }
    qsort(u, n, sizeof(Unknown), unknown_order);
    for (Py_ssize_t i = 1; i < n; i++)
        if (u[i].tag == u[i - 1].tag)
            goto unsure;
    return u;
unsure:
    PyMem_Free(u);
    return NULL;
}

/* The tagged-field section: a count, then every known tagged field that differs from
 * its default and every unknown one, in ascending tag order. */
static int
put_tags(Out *o, const Prog *p, PyObject *obj)
{
    PyObject *unknown = SLOT(obj, p->unknown_slot);
    PyObject *values[64]; /* the known tagged fields to write (references), or NULL */
    if (unknown == NULL || !PyTuple_CheckExact(unknown) || p->ntagged > 64)
        return -1;
    Py_INCREF(unknown);
    int r = -1;
    Py_ssize_t count = 0, nu = PyTuple_GET_SIZE(unknown), i = 0, j = 0;
    Unknown *u = NULL;
    for (i = 0; i < p->ntagged; i++)
        values[i] = NULL;
    for (i = 0; i < p->ntagged; i++) {
        PyObject *v = SLOT(obj, p->tagged[i].slot);
        if (v == NULL)
            goto done;
        Py_INCREF(v);
        int d = differs(v, p->tagged[i].dflt);
        if (d <= 0) {
            Py_DECREF(v);
            if (d < 0)
                goto done;
            continue;
        }
        values[i] = v;
        count++;
    }
    if (nu > 0 && (u = sorted_unknown(unknown, nu)) == NULL)
        goto done;
    if (count + nu > (Py_ssize_t)0xFFFFFFFF || put_uvarint(o, (uint32_t)(count + nu)) < 0)
        goto done;
    for (i = 0; i < p->ntagged || j < nu;) {
        if (i < p->ntagged && values[i] == NULL) {
            i++;
            continue;
        }
        const Op *op = i < p->ntagged ? &p->tagged[i] : NULL;
        if (op != NULL && j < nu && (uint32_t)op->tag == u[j].tag)
            goto done; /* a tag appears twice: Python says so */
        if (op != NULL && (j == nu || (uint32_t)op->tag < u[j].tag)) {
            if (put_known_tag(o, op, values[i]) < 0)
                goto done;
            i++;
            continue;
        }
        PyObject *data = PyTuple_GET_ITEM(PyTuple_GET_ITEM(unknown, u[j].index), 1);
        Py_ssize_t size = PyBytes_GET_SIZE(data);
        if (put_uvarint(o, u[j].tag) < 0 || put_uvarint(o, (uint32_t)size) < 0 ||
            put(o, PyBytes_AS_STRING(data), size) < 0)
            goto done;
        j++;
    }
    r = 0;
done:
    for (i = 0; i < p->ntagged; i++)
        Py_XDECREF(values[i]);
    PyMem_Free(u);
    Py_DECREF(unknown);
    return r;
}

static int
put_entity(Out *o, const Prog *p, PyObject *obj)
{
    for (Py_ssize_t i = 0; i < p->nplain; i++) {
        PyObject *v = SLOT(obj, p->plain[i].slot);
        if (v == NULL)
            return -1;
        Py_INCREF(v);
        int r = put_value(o, &p->plain[i], v);
        Py_DECREF(v);
        if (r < 0)
            return -1;
    }
    if (!p->flexible)
        return 0;
    /* The common case: no tagged field set, none kept from decoding. */
    if (p->ntagged == 0) {
        PyObject *unknown = SLOT(obj, p->unknown_slot);
        if (unknown != NULL && PyTuple_CheckExact(unknown) && PyTuple_GET_SIZE(unknown) == 0)
            return put_byte(o, 0);
    }
    return put_tags(o, p, obj);
}

/* The encoding of obj as bytes, or NULL (exception set or not) when unsure. */
static PyObject *
encode(const Prog *p, PyObject *obj)
{
    if (!Py_IS_TYPE(obj, p->cls))
        return NULL;
    Out o;
    o.data = o.stack;
    o.len = 0;
    o.cap = sizeof(o.stack);
    PyObject *result = NULL;
    if (put_entity(&o, p, obj) == 0)
        result = PyBytes_FromStringAndSize((const char *)o.data, o.len);
    if (o.data != o.stack)
        PyMem_Free(o.data);
    return result;
}

/* ---- the Writer object ----------------------------------------------------- */

/* writer(entity, append): the compiled encoder's signature; one append call. */
static PyObject *
writer_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kw)
{
    if (!enabled || kw != NULL || PyVectorcall_NARGS(nargsf) != 2)
        return fall_back(self, args, nargsf, kw);
    PyObject *data = encode(((Wrapper *)self)->prog, args[0]);
    if (data == NULL) {
        PyErr_Clear();
        return fall_back(self, args, nargsf, kw);
    }
    PyObject *r = PyObject_CallOneArg(args[1], data);
    Py_DECREF(data);
    if (r == NULL)
        return NULL;
    Py_DECREF(r);
    Py_RETURN_NONE;
}

/* Interned "append" and "join", and b"" (set at import). */
static PyObject *append_name, *join_name, *empty_bytes;

/* writer.to_bytes(entity) -> bytes: the same, returned (the fallback's chunks joined,
 * as kproto.serial's pure-Python writer joins them). */
static PyObject *
writer_to_bytes(PyObject *self, PyObject *obj)
{
    Wrapper *wr = (Wrapper *)self;
    if (enabled) {
        PyObject *data = encode(wr->prog, obj);
        if (data != NULL)
            return data;
        PyErr_Clear();
    }
    PyObject *parts = PyList_New(0), *append = NULL, *r = NULL, *result = NULL;
    if (parts == NULL || (append = PyObject_GetAttr(parts, append_name)) == NULL)
        goto done;
    PyObject *args[2] = {obj, append};
    if ((r = PyObject_Vectorcall(wr->fallback, args, 2, NULL)) == NULL)
        goto done;
    result = PyObject_CallMethodOneArg(empty_bytes, join_name, parts);
done:
    Py_XDECREF(parts);
    Py_XDECREF(append);
    Py_XDECREF(r);
    return result;
}

static PyMethodDef writer_methods[] = {
    {"to_bytes", writer_to_bytes, METH_O,
     "to_bytes(entity) -> bytes: the encoding (the fallback's when unsure)."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject WriterType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    WRAPPER_TYPE_SLOTS,
    .tp_name = "kproto._entity_writer.Writer",
    .tp_methods = writer_methods,
    .tp_doc = "writer(entity, append) -> None; see kproto.speedups.",
};

static PyObject *
make_writer(PyObject *self, PyObject *args)
{
    return make_wrapper(args, &WriterType, writer_vectorcall);
}

static PyMethodDef methods[] = {
    SETUP_METHOD,
    {"make_writer", make_writer, METH_VARARGS,
     "make_writer(description, fallback) -> Writer (see kproto.speedups)."},
    SET_ENABLED_METHOD("Writer"),
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "kproto._entity_writer",
    "Native entity writer; use through kproto.speedups.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__entity_writer(void)
{
    if (append_name == NULL && (append_name = PyUnicode_InternFromString("append")) == NULL)
        return NULL;
    if (join_name == NULL && (join_name = PyUnicode_InternFromString("join")) == NULL)
        return NULL;
    if (empty_bytes == NULL && (empty_bytes = PyBytes_FromStringAndSize(NULL, 0)) == NULL)
        return NULL;
    return wrapper_module(&module, &WriterType);
}
