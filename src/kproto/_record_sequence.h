/*
 * kproto._speedups, included by _speedups.c: the lazy record sequence of a magic 2
 * batch (v2_lazy, RecordSequence, RecordIterator) and its check (check_record).
 * Uses _speedups.c's record reader (read_record, make_record, records_tuple) and its
 * helpers; see the README's "Record batches" and "Native speedups".
 */

/* read_record's checks, in its order and with its helpers, building nothing: 0 with
 * *pos past the record, or -1 (Bad set) exactly where read_record would fail. Header
 * names must be UTF-8 (PyUnicode_DecodeUTF8's strict test, as header_name's). */
static int
check_record(const unsigned char *d, Py_ssize_t *pos, Py_ssize_t end)
{
    Py_ssize_t p = *pos, rec_end, s, n, count;
    int64_t ts_delta, off_delta;
    if (record_head(d, &p, end, &rec_end, &ts_delta, &off_delta) < 0)
        return fail_bad();
    if (blob_span(d, &p, rec_end, 1, &s, &n) < 0 || blob_span(d, &p, rec_end, 1, &s, &n) < 0)
        return -1;
    if (header_count(d, &p, rec_end, &count) < 0)
        return -1;
    for (Py_ssize_t i = 0; i < count; i++) {
        if (blob_span(d, &p, rec_end, 0, &s, &n) < 0 || check_header_name(d + s, n) < 0)
            return -1;
        if (blob_span(d, &p, rec_end, 1, &s, &n) < 0)
            return -1;
    }
    if (p != rec_end)
        return fail_bad();
    *pos = p;
    return 0;
}

/* ---- Lazy records: a checked batch's records, built as they are iterated --------
 *
 * v2_lazy(data, pos, end, count, base_offset, base_ts) checks the records region with
 * check_record (Bad on exactly the input v2_records rejects) and returns a
 * RecordSequence over it, building no record. Iterating it builds one Record
 * per step, from the checked bytes, with the sharing of v2_records (one NameCache per
 * iterator), so a loop over a batch's records keeps only the current record alive
 * instead of all of them. Anything else (indexing, len() aside; ==, hash, in, +, repr,
 * pickling) builds the tuple v2_records returns, once, and answers from it: the
 * sequence behaves as that tuple, is equal to it (and to equal tuples) and hashes alike;
 * it pickles (and copies) as the tuple. It holds `data` (immutable bytes) until the
 * tuple is built. */

typedef struct {
    PyObject_HEAD
    LoopArgs a;      /* a.data: a strong reference, dropped once `items` is built */
    PyObject *items; /* the tuple of Record, once built */
} RecordSequence;

typedef struct {
    PyObject_HEAD
    PyObject *data; /* NULL once exhausted */
    Py_ssize_t pos, end, left;
    long long base_offset, base_ts;
    int busy; /* inside iter_next: a re-entrant call (from a finalizer) is refused */
    NameCache cache;
} RecordIterator;

static PyTypeObject RecordSequenceType;
static PyTypeObject RecordIteratorType;

/* The tuple of Record (a borrowed reference), built on first use. */
static PyObject *
seq_items(RecordSequence *s)
{
    if (s->items == NULL) {
        /* Our own reference to the bytes while reading them: code run by the garbage
         * collector during the build could build the tuple too and drop s->a.data. */
        LoopArgs a = s->a;
        Py_INCREF(a.data);
        PyObject *t = records_tuple(&a);
        Py_DECREF(a.data);
        if (t == NULL) {
            if (PyErr_ExceptionMatches(bad_exc)) /* checked in v2_lazy: never */
                PyErr_SetString(PyExc_RuntimeError, "checked records failed to decode");
            return NULL;
        }
        if (s->items == NULL) {
            s->items = t;
            Py_CLEAR(s->a.data);
        }
        else
            Py_DECREF(t);
    }
    return s->items;
}

static PyObject *
v2_lazy(PyObject *self, PyObject *args)
{
    LoopArgs a;
    if (record_loop_args(args, &a) < 0)
        return NULL;
    /* Bad exactly where v2_records would raise it, before any record is built. */
    Py_ssize_t p = a.pos;
    for (Py_ssize_t i = 0; i < a.count; i++)
        if (check_record(a.d, &p, a.end) < 0)
            return NULL;
    if (p != a.end) {
        fail_bad();
        return NULL;
    }
    RecordSequence *s = PyObject_New(RecordSequence, &RecordSequenceType);
    if (s == NULL)
        return NULL;
    s->a = a;
    Py_INCREF(a.data);
    s->items = NULL;
    if (a.count == 0 && seq_items(s) == NULL) {
        Py_DECREF(s);
        return NULL;
    }
    return (PyObject *)s;
}

static void
seq_dealloc(RecordSequence *s)
{
    Py_XDECREF(s->a.data);
    Py_XDECREF(s->items);
    PyObject_Free(s);
}

static Py_ssize_t
seq_len(RecordSequence *s)
{
    return s->a.count;
}

static PyObject *
seq_iter(RecordSequence *s)
{
    if (s->items != NULL)
        return PyObject_GetIter(s->items);
    RecordIterator *it = PyObject_New(RecordIterator, &RecordIteratorType);
    if (it == NULL)
        return NULL;
    Py_INCREF(s->a.data);
    it->data = s->a.data;
    it->pos = s->a.pos;
    it->end = s->a.end;
    it->left = s->a.count;
    it->base_offset = s->a.base_offset;
    it->base_ts = s->a.base_ts;
    it->busy = 0;
    memset(&it->cache, 0, sizeof(it->cache));
    return (PyObject *)it;
}

static PyObject *
seq_subscript(RecordSequence *s, PyObject *key)
{
    PyObject *items = seq_items(s);
    return items == NULL ? NULL : PyObject_GetItem(items, key);
}

static PyObject *
seq_item(RecordSequence *s, Py_ssize_t i)
{
    PyObject *items = seq_items(s);
    return items == NULL ? NULL : PySequence_GetItem(items, i);
}

static int
seq_contains(RecordSequence *s, PyObject *value)
{
    PyObject *items = seq_items(s);
    return items == NULL ? -1 : PySequence_Contains(items, value);
}

/* The tuple that `o` stands for (borrowed), or NULL without an error set when `o`
 * is neither a RecordSequence nor a tuple. */
static PyObject *
as_tuple(PyObject *o, int *failed)
{
    *failed = 0;
    if (Py_IS_TYPE(o, &RecordSequenceType)) {
        PyObject *t = seq_items((RecordSequence *)o);
        *failed = t == NULL;
        return t;
    }
    return PyTuple_Check(o) ? o : NULL;
}

/* Both operands of a binary operation as tuples (borrowed): 1 when both are, 0
 * when one is neither a tuple nor a RecordSequence (NotImplemented), -1 on error. */
static int
as_tuples(PyObject *x, PyObject *y, PyObject **a, PyObject **b)
{
    int failed;
    *a = as_tuple(x, &failed);
    if (failed)
        return -1;
    *b = as_tuple(y, &failed);
    if (failed)
        return -1;
    return *a != NULL && *b != NULL;
}

static PyObject *
seq_concat(PyObject *left, PyObject *right)
{
    PyObject *a, *b;
    int both = as_tuples(left, right, &a, &b);
    if (both < 0)
        return NULL;
    return both ? PySequence_Concat(a, b) : Py_NewRef(Py_NotImplemented);
}

static PyObject *
seq_richcompare(PyObject *self, PyObject *other, int op)
{
    PyObject *a, *b;
    int both = as_tuples(self, other, &a, &b);
    if (both < 0)
        return NULL;
    return both ? PyObject_RichCompare(a, b, op) : Py_NewRef(Py_NotImplemented);
}

static Py_hash_t
seq_hash(RecordSequence *s)
{
    PyObject *items = seq_items(s);
    return items == NULL ? -1 : PyObject_Hash(items);
}

static PyObject *
seq_repr(RecordSequence *s)
{
    PyObject *items = seq_items(s);
    return items == NULL ? NULL : PyObject_Repr(items);
}

static PyObject *
seq_reduce(RecordSequence *s, PyObject *unused)
{
    PyObject *items = seq_items(s);
    return items == NULL ? NULL : Py_BuildValue("O(O)", &PyTuple_Type, items);
}

/* index() and count(), as the tuple's. */
static PyObject *
seq_delegate(RecordSequence *s, PyObject *args, const char *name)
{
    PyObject *items = seq_items(s);
    if (items == NULL)
        return NULL;
    PyObject *method = PyObject_GetAttrString(items, name);
    if (method == NULL)
        return NULL;
    PyObject *r = PyObject_Call(method, args, NULL);
    Py_DECREF(method);
    return r;
}

static PyObject *
seq_index(RecordSequence *s, PyObject *args)
{
    return seq_delegate(s, args, "index");
}

static PyObject *
seq_count(RecordSequence *s, PyObject *args)
{
    return seq_delegate(s, args, "count");
}

static PyMethodDef seq_methods[] = {
    {"__reduce__", (PyCFunction)seq_reduce, METH_NOARGS,
     "Pickles (and copies) as the tuple of records."},
    {"index", (PyCFunction)seq_index, METH_VARARGS, "As tuple.index."},
    {"count", (PyCFunction)seq_count, METH_VARARGS, "As tuple.count."},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods seq_as_sequence = {
    .sq_length = (lenfunc)seq_len,
    .sq_concat = seq_concat,
    .sq_item = (ssizeargfunc)seq_item,
    .sq_contains = (objobjproc)seq_contains,
};

/* nb_add too, so that tuple + RecordSequence (tried on the right operand) works. */
static PyNumberMethods seq_as_number = {
    .nb_add = seq_concat,
};

static PyMappingMethods seq_as_mapping = {
    .mp_length = (lenfunc)seq_len,
    .mp_subscript = (binaryfunc)seq_subscript,
};

static PyTypeObject RecordSequenceType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kproto.records.RecordSequence",
    .tp_basicsize = sizeof(RecordSequence),
    .tp_dealloc = (destructor)seq_dealloc,
    .tp_repr = (reprfunc)seq_repr,
    .tp_as_number = &seq_as_number,
    .tp_as_sequence = &seq_as_sequence,
    .tp_as_mapping = &seq_as_mapping,
    .tp_hash = (hashfunc)seq_hash,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_SEQUENCE,
    .tp_doc = "The records of one batch: a tuple of Record built as it is iterated.",
    .tp_richcompare = seq_richcompare,
    .tp_iter = (getiterfunc)seq_iter,
    .tp_methods = seq_methods,
};

static void
iter_release(RecordIterator *it)
{
    Py_CLEAR(it->data);
    name_cache_clear(&it->cache);
}

static void
iter_dealloc(RecordIterator *it)
{
    iter_release(it);
    PyObject_Free(it);
}

static PyObject *
iter_next(RecordIterator *it)
{
    if (it->data == NULL)
        return NULL;
    if (it->busy) { /* as a generator's "already executing" */
        PyErr_SetString(PyExc_ValueError, "RecordIterator already executing");
        return NULL;
    }
    if (it->left == 0) {
        iter_release(it);
        return NULL;
    }
    const unsigned char *d = (const unsigned char *)PyBytes_AS_STRING(it->data);
    Fields f;
    it->busy = 1;
    int rc = read_record(d, &it->pos, it->end, it->base_offset, it->base_ts, 0,
                         &it->cache, &f);
    it->busy = 0;
    if (rc < 0) {
        if (PyErr_ExceptionMatches(bad_exc)) /* checked in v2_lazy: never */
            PyErr_SetString(PyExc_RuntimeError, "checked records failed to decode");
        iter_release(it);
        return NULL;
    }
    it->left--;
    return make_record(&f);
}

static PyObject *
iter_length_hint(RecordIterator *it, PyObject *unused)
{
    return PyLong_FromSsize_t(it->data == NULL ? 0 : it->left);
}

static PyMethodDef iter_methods[] = {
    {"__length_hint__", (PyCFunction)iter_length_hint, METH_NOARGS,
     "Records left."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject RecordIteratorType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kproto.records.RecordIterator",
    .tp_basicsize = sizeof(RecordIterator),
    .tp_dealloc = (destructor)iter_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Iterator over a RecordSequence: one Record built per step.",
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)iter_next,
    .tp_methods = iter_methods,
};
