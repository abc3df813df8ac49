/*
 * The callable that kproto._entity_reader (Reader) and kproto._entity_writer (Writer)
 * both make, and their switch (each module compiles its own copy of these statics).
 *
 * A Wrapper holds a Prog (_entity_desc.h) and the class's compiled Python function it
 * stands in for: its fallback, which it calls on the same arguments for anything it
 * is not sure of and while set_enabled(False) is in effect. Attributes a Wrapper lacks
 * come from its fallback (__name__, __code__, ...), so it stands in for the compiled
 * function; __wrapped__ is the fallback itself. Each module writes only its
 * vectorcall (the reading or the writing) and its type's name, doc and methods.
 */
#ifndef KPROTO_ENTITY_WRAPPER_H
#define KPROTO_ENTITY_WRAPPER_H

#include "_entity_desc.h"

typedef struct {
    PyObject_HEAD
    Prog *prog;
    PyObject *fallback; /* the compiled decode_<Class> / encode_<Class> */
    vectorcallfunc vectorcall;
} Wrapper;

/* Off (kproto.speedups.using(False)): every Wrapper of the module calls its fallback. */
static int enabled = 1;

/* set_enabled(bool) -> the previous value. */
static PyObject *
set_enabled(PyObject *self, PyObject *arg)
{
    int was = enabled;
    int v = PyObject_IsTrue(arg);
    if (v < 0)
        return NULL;
    enabled = v;
    return PyBool_FromLong(was);
}

/* The fallback's answer to the same call. */
static inline PyObject *
fall_back(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kw)
{
    return PyObject_Vectorcall(((Wrapper *)self)->fallback, args, nargsf, kw);
}

static void
wrapper_dealloc(PyObject *self)
{
    Wrapper *w = (Wrapper *)self;
    prog_free(w->prog);
    Py_XDECREF(w->fallback);
    Py_TYPE(self)->tp_free(self);
}

static PyObject *
wrapper_getattro(PyObject *self, PyObject *name)
{
    Wrapper *w = (Wrapper *)self;
    if (PyUnicode_Check(name) && PyUnicode_CompareWithASCIIString(name, "__wrapped__") == 0) {
        Py_INCREF(w->fallback);
        return w->fallback;
    }
    PyObject *v = PyObject_GenericGetAttr(self, name);
    if (v != NULL || !PyErr_ExceptionMatches(PyExc_AttributeError))
        return v;
    PyErr_Clear();
    return PyObject_GetAttr(w->fallback, name);
}

/* The slots every Wrapper type has; its PyTypeObject adds its name, doc and methods. */
#define WRAPPER_TYPE_SLOTS                                                              \
    .tp_basicsize = sizeof(Wrapper), .tp_dealloc = wrapper_dealloc,                     \
    .tp_call = PyVectorcall_Call, .tp_getattro = wrapper_getattro,                      \
    .tp_vectorcall_offset = offsetof(Wrapper, vectorcall),                              \
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL

/* make_reader / make_writer (description, fallback): a new `type` whose calls go to
 * `call`. */
static PyObject *
make_wrapper(PyObject *args, PyTypeObject *type, vectorcallfunc call)
{
    PyObject *desc, *fallback;
    if (!PyArg_ParseTuple(args, "O!O", &PyTuple_Type, &desc, &fallback))
        return NULL;
    Prog *p = prog_from(desc);
    if (p == NULL)
        return NULL;
    Wrapper *w = PyObject_New(Wrapper, type);
    if (w == NULL) {
        prog_free(p);
        return NULL;
    }
    w->prog = p;
    Py_INCREF(fallback);
    w->fallback = fallback;
    w->vectorcall = call;
    return (PyObject *)w;
}

/* The module functions besides make_reader / make_writer; `what` is "Reader" or
 * "Writer". */
#define SETUP_METHOD                                                                    \
    {"setup", setup, METH_VARARGS, "setup(uuid.UUID, uuid.SafeUUID.unknown)"}
#define SET_ENABLED_METHOD(what)                                                        \
    {"set_enabled", set_enabled, METH_O,                                                \
     "set_enabled(bool) -> the previous value: off, every " what " calls its fallback."}

/* The module `def`, once its Wrapper `type` is ready. */
static PyObject *
wrapper_module(PyModuleDef *def, PyTypeObject *type)
{
    if (PyType_Ready(type) < 0)
        return NULL;
    return PyModule_Create(def);
}

#endif /* KPROTO_ENTITY_WRAPPER_H */
