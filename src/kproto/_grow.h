/*
 * How the C extensions' output buffers grow: one capacity rule (doubling from a
 * first size, bounded so that no size computation overflows) and one reallocation of
 * a PyMem block by it. Every buffer grows only as bytes are written, so memory follows
 * the bytes written, never a count claimed by the input.
 */
#ifndef KPROTO_GROW_H
#define KPROTO_GROW_H

#include <Python.h>

/* The capacity a buffer holding `len` bytes (capacity `cap`) needs for `n` more:
 * doubled from at least `first` (> 0) until they fit. -1 with MemoryError when the
 * size would pass PY_SSIZE_T_MAX / 4. */
static inline Py_ssize_t
grown_capacity(Py_ssize_t len, Py_ssize_t cap, Py_ssize_t n, Py_ssize_t first)
{
    if (n > PY_SSIZE_T_MAX / 4 - len) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t c = cap < first ? first : cap;
    while (c < len + n)
        c *= 2;
    return c;
}

/* The PyMem block `p` (NULL: none yet) holding `len` bytes of capacity *cap,
 * reallocated for `n` more by grown_capacity (*cap updated); NULL with MemoryError
 * set, `p` unchanged, when it cannot be. */
static void *
grow_block(void *p, Py_ssize_t len, Py_ssize_t *cap, Py_ssize_t n, Py_ssize_t first)
{
    Py_ssize_t c = grown_capacity(len, *cap, n, first);
    if (c < 0)
        return NULL;
    void *q = PyMem_Realloc(p, (size_t)c);
    if (q == NULL)
        return PyErr_NoMemory();
    *cap = c;
    return q;
}

#endif
