/*
 * kproto._entity_reader: a generic C reader for the generated entity classes
 * (optional; see kproto/speedups.py).
 *
 * It is driven by a description of each class built in Python from the same Wire
 * metadata the compiled Python readers use (kproto/serial/compile.py, the
 * reference): per field its kind, nullability, compact encoding, tag and default,
 * and for structs and arrays the description of what they hold.
 *
 * Contract: a Reader returns what the class's compiled Python decoder returns
 * (an equal entity and the position after it) or, for anything it is not sure of
 * (any malformed or unusual input), calls that decoder itself on the same
 * arguments. So every DecodeError, path and offset comes from the Python code.
 *
 * Safety: every length and count is checked against the bytes left before any
 * read or allocation (an array's count against the bytes left, so its tuple is
 * bounded by the input); nesting follows the class graph, which has no cycles.
 *
 * Instances are allocated as their class (tp_alloc, no __init__) and their slots
 * filled by offset, the offsets taken from the member descriptors of the class's
 * generated slot-storage base (only classes with one are described), the C form
 * of compile.py's object.__new__(base) + __class__ assignment. UUIDs are built the
 * same way from uuid.UUID's own slots (int, is_safe).
 */
#include "_entity_wrapper.h"

/* ---- reading --------------------------------------------------------------- */

typedef struct {
    const unsigned char *d;
    Py_ssize_t pos, end;
} R;

/* Every failure below returns NULL / -1 with or without an exception set; the
 * Reader then runs the Python decoder, which raises the right error. */

static inline int
uvarint(R *r, uint64_t *out)
{
    uint64_t result = 0;
    for (int i = 0, shift = 0; i < 5; i++, shift += 7) {
        if (r->pos >= r->end)
            return -1;
        unsigned char b = r->d[r->pos++];
        result |= (uint64_t)(b & 0x7F) << shift;
        if (b < 0x80) {
            if (result > 0xFFFFFFFFULL)
                return -1;
            *out = result;
            return 0;
        }
    }
    return -1;
}

static inline uint64_t
be(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = (v << 8) | p[i];
    return v;
}

/* A length or count (-1 for null) as compile.py's _dec_count reads it, checked
 * against the bytes left. */
static int
read_count(R *r, Op *op, Py_ssize_t *out)
{
    int classic = count_size[op->kind];
    int64_t n;
    if (op->compact) {
        uint64_t u;
        if (uvarint(r, &u) < 0)
            return -1;
        n = (int64_t)u - 1;
    }
    else {
        if (r->end - r->pos < classic)
            return -1;
        n = classic == 2 ? (int16_t)be(r->d + r->pos, 2) : (int32_t)be(r->d + r->pos, 4);
        r->pos += classic;
        if (n < -1)
            return -1;
    }
    if (n > r->end - r->pos || (n < 0 && !op->nullable))
        return -1;
    *out = (Py_ssize_t)n;
    return 0;
}

static PyObject *read_entity(R *r, Prog *p);

static PyObject *
read_fixed(R *r, int kind)
{
    int size = fixed_size[kind];
    if (r->end - r->pos < size)
        return NULL;
    const unsigned char *p = r->d + r->pos;
    r->pos += size;
    switch (kind) {
    case K_INT8:
        return PyLong_FromLong((int8_t)p[0]);
    case K_INT16:
        return PyLong_FromLong((int16_t)be(p, 2));
    case K_UINT16:
        return PyLong_FromLong((long)be(p, 2));
    case K_INT32:
        return PyLong_FromLong((int32_t)be(p, 4));
    case K_UINT32:
        return PyLong_FromUnsignedLong((unsigned long)be(p, 4));
    case K_INT64:
        return PyLong_FromLongLong((int64_t)be(p, 8));
    case K_FLOAT64: {
        uint64_t bits = be(p, 8);
        double v;
        memcpy(&v, &bits, sizeof(v));
        return PyFloat_FromDouble(v);
    }
    case K_BOOL:
        return PyBool_FromLong(p[0] != 0);
    case K_UUID: {
        PyObject *i = _PyLong_FromByteArray(p, 16, 0, 0);
        if (i == NULL)
            return NULL;
        PyObject *u = uuid_type->tp_alloc(uuid_type, 0);
        if (u == NULL) {
            Py_DECREF(i);
            return NULL;
        }
        SLOT(u, uuid_int_slot) = i;
        Py_INCREF(uuid_unknown);
        SLOT(u, uuid_safe_slot) = uuid_unknown;
        return u;
    }
    }
    return NULL;
}

static PyObject *
read_value(R *r, Op *op)
{
    Py_ssize_t n;
    switch (op->kind) {
    case K_STRING:
    case K_BYTES:
        if (read_count(r, op, &n) < 0)
            return NULL;
        if (n < 0)
            Py_RETURN_NONE;
        r->pos += n;
        if (op->kind == K_STRING)
            return PyUnicode_DecodeUTF8((const char *)r->d + r->pos - n, n, NULL);
        return PyBytes_FromStringAndSize((const char *)r->d + r->pos - n, n);
    case K_STRUCT:
        if (op->nullable) {
            if (r->pos >= r->end)
                return NULL;
            unsigned char m = r->d[r->pos++];
            if (m >= 128)
                Py_RETURN_NONE;
            if (m != 1)
                return NULL;
        }
        return read_entity(r, op->sub);
    case K_ARRAY: {
        if (read_count(r, op, &n) < 0)
            return NULL;
        if (n < 0)
            Py_RETURN_NONE;
        int size = fixed_size[op->elem->kind];
        if (size && n > (r->end - r->pos) / size)
            return NULL;
        PyObject *t = PyTuple_New(n);
        if (t == NULL)
            return NULL;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *v = read_value(r, op->elem);
            if (v == NULL) {
                Py_DECREF(t);
                return NULL;
            }
            PyTuple_SET_ITEM(t, i, v);
        }
        return t;
    }
    default:
        return read_fixed(r, op->kind);
    }
}

static int
read_tags(R *r, Prog *p, PyObject *obj)
{
    uint64_t count;
    if (uvarint(r, &count) < 0 || count > (uint64_t)(r->end - r->pos))
        return -1;
    PyObject *unknown = NULL;
    int64_t last = -1;
    for (uint64_t i = 0; i < count; i++) {
        uint64_t tag, size;
        if (uvarint(r, &tag) < 0 || (int64_t)tag <= last)
            goto error;
        last = (int64_t)tag;
        if (uvarint(r, &size) < 0 || size > (uint64_t)(r->end - r->pos))
            goto error;
        Py_ssize_t stop = r->pos + (Py_ssize_t)size;
        Op *known = NULL;
        for (Py_ssize_t j = 0; j < p->ntagged; j++)
            if ((uint64_t)p->tagged[j].tag == tag)
                known = &p->tagged[j];
        if (known != NULL) {
            PyObject *v = read_value(r, known);
            if (v == NULL)
                goto error;
            Py_XSETREF(SLOT(obj, known->slot), v);
            if (r->pos != stop)
                goto error;
            continue;
        }
        if (unknown == NULL && (unknown = PyList_New(0)) == NULL)
            goto error;
        PyObject *pair = Py_BuildValue("(Ky#)", (unsigned long long)tag,
                                       (const char *)r->d + r->pos, (Py_ssize_t)size);
        if (pair == NULL || PyList_Append(unknown, pair) < 0) {
            Py_XDECREF(pair);
            goto error;
        }
        Py_DECREF(pair);
        r->pos = stop;
    }
    if (unknown != NULL) {
        PyObject *t = PyList_AsTuple(unknown);
        Py_DECREF(unknown);
        if (t == NULL)
            return -1;
        Py_XSETREF(SLOT(obj, p->unknown_slot), t);
    }
    return 0;
error:
    Py_XDECREF(unknown);
    return -1;
}

static PyObject *
read_entity(R *r, Prog *p)
{
    PyObject *obj = p->cls->tp_alloc(p->cls, 0);
    if (obj == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < p->nplain; i++) {
        PyObject *v = read_value(r, &p->plain[i]);
        if (v == NULL)
            goto error;
        SLOT(obj, p->plain[i].slot) = v;
    }
    if (p->flexible) {
        for (Py_ssize_t i = 0; i < p->ntagged; i++) {
            Py_INCREF(p->tagged[i].dflt);
            SLOT(obj, p->tagged[i].slot) = p->tagged[i].dflt;
        }
        PyObject *empty = PyTuple_New(0);
        if (empty == NULL)
            goto error;
        SLOT(obj, p->unknown_slot) = empty;
        if (r->pos < r->end && r->d[r->pos] == 0)
            r->pos++;
        else if (read_tags(r, p, obj) < 0)
            goto error;
    }
    return obj;
error:
    Py_DECREF(obj);
    return NULL;
}

/* ---- the Reader object ----------------------------------------------------- */

/* reader(buf, pos) -> (entity, pos): the compiled decoder's signature. */
static PyObject *
reader_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kw)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (!enabled || kw != NULL || nargs != 2 || !PyLong_CheckExact(args[1]))
        return fall_back(self, args, nargsf, kw);
    Py_ssize_t start = PyLong_AsSsize_t(args[1]);
    if (start == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return fall_back(self, args, nargsf, kw);
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        return fall_back(self, args, nargsf, kw);
    }
    PyObject *result = NULL;
    if (start >= 0 && start <= view.len) {
        R r = {(const unsigned char *)view.buf, start, view.len};
        PyObject *obj = read_entity(&r, ((Wrapper *)self)->prog);
        if (obj != NULL) {
            result = Py_BuildValue("(Nn)", obj, r.pos);
        }
    }
    PyBuffer_Release(&view);
    if (result != NULL)
        return result;
    PyErr_Clear();
    return fall_back(self, args, nargsf, kw);
}

static PyTypeObject ReaderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    WRAPPER_TYPE_SLOTS,
    .tp_name = "kproto._entity_reader.Reader",
    .tp_doc = "reader(buf, pos) -> (entity, pos); see kproto.speedups.",
};

static PyObject *
make_reader(PyObject *self, PyObject *args)
{
    return make_wrapper(args, &ReaderType, reader_vectorcall);
}

static PyMethodDef methods[] = {
    SETUP_METHOD,
    {"make_reader", make_reader, METH_VARARGS,
     "make_reader(description, fallback) -> Reader (see kproto.speedups)."},
    SET_ENABLED_METHOD("Reader"),
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "kproto._entity_reader",
    "Native entity reader; use through kproto.speedups.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__entity_reader(void)
{
    return wrapper_module(&module, &ReaderType);
}
