/*
 * The output buffer of kproto._entity_writer and Kafka's primitive forms into it
 * (big-endian fixed-width integers, unsigned varints). It grows only as bytes are
 * written: 512 bytes on the stack, then a PyMem block doubling, so memory follows the
 * bytes written, never a claimed count. Every function returns 0, or -1 with
 * MemoryError set.
 */
#ifndef KPROTO_ENTITY_OUT_H
#define KPROTO_ENTITY_OUT_H

#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_grow.h"

typedef struct {
    unsigned char *data; /* stack, or a PyMem block once it outgrows it */
    Py_ssize_t len, cap;
    unsigned char stack[512];
} Out;

static int
out_grow(Out *o, Py_ssize_t n)
{
    int on_stack = o->data == o->stack;
    unsigned char *d = grow_block(on_stack ? NULL : o->data, o->len, &o->cap, n, 512);
    if (d == NULL)
        return -1;
    if (on_stack)
        memcpy(d, o->stack, o->len);
    o->data = d;
    return 0;
}

/* Room for n more bytes. */
#define ROOM(o, n) ((o)->cap - (o)->len >= (n) || out_grow((o), (n)) == 0)

static inline int
put(Out *o, const void *p, Py_ssize_t n)
{
    if (!ROOM(o, n))
        return -1;
    memcpy(o->data + o->len, p, n);
    o->len += n;
    return 0;
}

static inline int
put_byte(Out *o, unsigned char b)
{
    if (!ROOM(o, 1))
        return -1;
    o->data[o->len++] = b;
    return 0;
}

/* The low `size` bytes of v, big-endian (Kafka's fixed-width integers). */
static inline int
put_be(Out *o, uint64_t v, int size)
{
    if (!ROOM(o, size))
        return -1;
    for (int i = size - 1; i >= 0; i--, v >>= 8)
        o->data[o->len + i] = (unsigned char)v;
    o->len += size;
    return 0;
}

/* Kafka's unsigned varint (ByteUtils.writeUnsignedVarint) into p; returns its size. */
static inline int
uvarint_to(unsigned char *p, uint32_t v)
{
    int n = 0;
    while (v >= 0x80) {
        p[n++] = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (unsigned char)v;
    return n;
}

static inline int
put_uvarint(Out *o, uint32_t v)
{
    if (!ROOM(o, 5))
        return -1;
    o->len += uvarint_to(o->data + o->len, v);
    return 0;
}

#endif /* KPROTO_ENTITY_OUT_H */
