/*
 * The description of an entity class, shared by kproto._entity_reader and
 * kproto._entity_writer (each compiles its own copy of these static functions).
 *
 * kproto/serial/_native.py builds the description in Python from the Wire metadata
 * (per field its kind, nullability, compact encoding, tag and default, and for structs
 * and arrays what they hold; tagged fields in ascending tag order); prog_from() turns
 * it into a Prog: the class, and per field an Op with the offset of its slot in the
 * instance (from the member descriptors of the class's generated slot-storage base,
 * whose layout the class shares).
 */
#ifndef KPROTO_ENTITY_DESC_H
#define KPROTO_ENTITY_DESC_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

enum {
    K_INT8, K_INT16, K_UINT16, K_INT32, K_UINT32, K_INT64, K_FLOAT64, K_BOOL,
    K_UUID, K_STRING, K_BYTES, K_STRUCT, K_ARRAY, N_KINDS
};
static const char *kind_names[N_KINDS] = {
    "int8", "int16", "uint16", "int32", "uint32", "int64", "float64", "bool",
    "uuid", "string", "bytes", "struct", "array",
};
/* The wire forms: the size of a fixed-width kind, and the width of the non-compact
 * length or count (-1: null) before a string (int16), bytes or array (int32); a
 * compact one is an unsigned varint of the length + 1. */
static const int fixed_size[N_KINDS] = {1, 2, 2, 4, 4, 8, 8, 1, 16, 0, 0, 0, 0};
static const int count_size[N_KINDS] = {[K_STRING] = 2, [K_BYTES] = 4, [K_ARRAY] = 4};

typedef struct Prog Prog;
typedef struct Op Op;

struct Op {
    int kind, nullable, compact;
    Py_ssize_t slot;  /* offset in the instance (-1: array element) */
    long tag;         /* tagged fields only */
    PyObject *dflt;   /* tagged fields only: the default (a reference) */
    Prog *sub;        /* K_STRUCT */
    Op *elem;         /* K_ARRAY */
};

struct Prog {
    PyTypeObject *cls;  /* a reference */
    int flexible;
    Py_ssize_t nplain, ntagged;
    Op *plain, *tagged;
    Py_ssize_t unknown_slot; /* -1 when not flexible */
};

/* uuid.UUID and its slots, SafeUUID.unknown (set by setup()). */
static PyTypeObject *uuid_type = NULL;
static Py_ssize_t uuid_int_slot = -1, uuid_safe_slot = -1;
static PyObject *uuid_unknown = NULL;

/* The object slot at offset `off` of `obj` (NULL when unset). */
#define SLOT(obj, off) (*(PyObject **)((char *)(obj) + (off)))

/* ---- descriptions -> programs --------------------------------------------- */

static void prog_free(Prog *p);

static void
op_clear(Op *op)
{
    Py_CLEAR(op->dflt);
    if (op->sub != NULL) {
        prog_free(op->sub);
        op->sub = NULL;
    }
    if (op->elem != NULL) {
        op_clear(op->elem);
        PyMem_Free(op->elem);
        op->elem = NULL;
    }
}

static void
prog_free(Prog *p)
{
    if (p == NULL)
        return;
    for (Py_ssize_t i = 0; i < p->nplain; i++)
        op_clear(&p->plain[i]);
    for (Py_ssize_t i = 0; i < p->ntagged; i++)
        op_clear(&p->tagged[i]);
    PyMem_Free(p->plain);
    PyMem_Free(p->tagged);
    Py_XDECREF(p->cls);
    PyMem_Free(p);
}

/* The offset of the object slot `name` of `base` (a member descriptor). */
static Py_ssize_t
slot_of(PyTypeObject *base, PyObject *name)
{
    PyObject *descr = PyDict_GetItemWithError(base->tp_dict, name);
    if (descr == NULL || !Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "%R is not a slot of %s", name,
                         base->tp_name);
        return -1;
    }
    PyMemberDef *m = ((PyMemberDescrObject *)descr)->d_member;
    if (m->type != T_OBJECT_EX || m->offset <= 0 ||
        m->offset + (Py_ssize_t)sizeof(PyObject *) > base->tp_basicsize) {
        PyErr_Format(PyExc_TypeError, "%R is not an object slot", name);
        return -1;
    }
    return m->offset;
}

static Prog *prog_from(PyObject *desc);

/* op description: (name or None, kind, nullable, compact, tag or None, default,
 * sub) where sub is a class description (struct) or an op description (array). */
static int
op_from(PyObject *d, PyTypeObject *base, Op *op)
{
    PyObject *name, *kind, *tag, *dflt, *sub;
    int nullable, compact;
    memset(op, 0, sizeof(*op));
    op->slot = -1;
    if (!PyArg_ParseTuple(d, "OUppOOO", &name, &kind, &nullable, &compact, &tag, &dflt,
                          &sub))
        return -1;
    op->kind = -1;
    for (int k = 0; k < N_KINDS; k++)
        if (PyUnicode_CompareWithASCIIString(kind, kind_names[k]) == 0)
            op->kind = k;
    if (op->kind < 0) {
        PyErr_Format(PyExc_ValueError, "unknown kind %R", kind);
        return -1;
    }
    op->nullable = nullable;
    op->compact = compact;
    if (name != Py_None && (op->slot = slot_of(base, name)) < 0)
        return -1;
    if (tag != Py_None) {
        op->tag = PyLong_AsLong(tag);
        if (op->tag == -1 && PyErr_Occurred())
            return -1;
        Py_INCREF(dflt);
        op->dflt = dflt;
    }
    if (op->kind == K_STRUCT && (op->sub = prog_from(sub)) == NULL)
        return -1;
    if (op->kind == K_ARRAY) {
        op->elem = PyMem_Calloc(1, sizeof(Op));
        if (op->elem == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        if (op_from(sub, NULL, op->elem) < 0)
            return -1;
    }
    return 0;
}

/* class description: (cls, base, flexible, plain ops, tagged ops, unknown name). */
static Prog *
prog_from(PyObject *desc)
{
    PyObject *cls, *base, *plain, *tagged, *unknown;
    int flexible;
    if (!PyArg_ParseTuple(desc, "O!O!pO!O!O", &PyType_Type, &cls, &PyType_Type, &base,
                          &flexible, &PyTuple_Type, &plain, &PyTuple_Type, &tagged,
                          &unknown))
        return NULL;
    PyTypeObject *ct = (PyTypeObject *)cls, *bt = (PyTypeObject *)base;
    if (!PyType_IsSubtype(ct, bt) || ct->tp_basicsize != bt->tp_basicsize ||
        ct->tp_itemsize != 0) {
        PyErr_Format(PyExc_TypeError, "%s's layout is not its base's", ct->tp_name);
        return NULL;
    }
    Prog *p = PyMem_Calloc(1, sizeof(Prog));
    if (p == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    Py_INCREF(cls);
    p->cls = ct;
    p->flexible = flexible;
    p->unknown_slot = -1;
    Py_ssize_t np = PyTuple_GET_SIZE(plain), nt = PyTuple_GET_SIZE(tagged);
    p->plain = PyMem_Calloc(np ? np : 1, sizeof(Op));
    p->tagged = PyMem_Calloc(nt ? nt : 1, sizeof(Op));
    if (p->plain == NULL || p->tagged == NULL) {
        PyErr_NoMemory();
        goto error;
    }
    for (Py_ssize_t i = 0; i < np; i++) {
        p->nplain = i + 1;
        if (op_from(PyTuple_GET_ITEM(plain, i), bt, &p->plain[i]) < 0)
            goto error;
    }
    for (Py_ssize_t i = 0; i < nt; i++) {
        p->ntagged = i + 1;
        if (op_from(PyTuple_GET_ITEM(tagged, i), bt, &p->tagged[i]) < 0)
            goto error;
    }
    if (unknown != Py_None && (p->unknown_slot = slot_of(bt, unknown)) < 0)
        goto error;
    return p;
error:
    prog_free(p);
    return NULL;
}

/* setup(uuid.UUID, uuid.SafeUUID.unknown): the offsets of uuid.UUID's slots (int,
 * is_safe), which the reader fills and the writer reads. */
static PyObject *
setup(PyObject *self, PyObject *args)
{
    PyObject *ut, *unknown;
    if (!PyArg_ParseTuple(args, "O!O", &PyType_Type, &ut, &unknown))
        return NULL;
    PyObject *int_name = PyUnicode_FromString("int");
    PyObject *safe_name = PyUnicode_FromString("is_safe");
    Py_ssize_t a = int_name ? slot_of((PyTypeObject *)ut, int_name) : -1;
    Py_ssize_t b = safe_name ? slot_of((PyTypeObject *)ut, safe_name) : -1;
    Py_XDECREF(int_name);
    Py_XDECREF(safe_name);
    if (a < 0 || b < 0)
        return NULL;
    uuid_int_slot = a;
    uuid_safe_slot = b;
    Py_INCREF(ut);
    Py_XSETREF(uuid_type, (PyTypeObject *)ut);
    Py_INCREF(unknown);
    Py_XSETREF(uuid_unknown, unknown);
    Py_RETURN_NONE;
}

#endif /* KPROTO_ENTITY_DESC_H */
