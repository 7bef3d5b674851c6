/* item.c: DynamoDB attribute values and items, as the client builds and reads them.
 * An item keeps its attributes in insertion order; sets hold their elements as S, N or
 * B values so that ddb_value_at can lend them out like list elements. */
#include "items.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "decimal.h"

bool ddb__number_valid(const char *text, size_t len)
{
    dl_decimal d;
    return text != NULL && dl__decimal_parse(text, len, &d) == DL_DEC_OK;
}

static ddb_value *value_alloc(ddb_type t)
{
    ddb_value *v = calloc(1, sizeof *v);
    if (v)
        v->type = t;
    return v;
}

static ddb_value *value_buf(ddb_type t, const void *p, size_t len)
{
    ddb_value *v = value_alloc(t);
    if (!v)
        return NULL;
    v->u.buf.p = malloc(len + 1);
    if (!v->u.buf.p) {
        free(v);
        return NULL;
    }
    if (len)
        memcpy(v->u.buf.p, p, len);
    v->u.buf.p[len] = '\0';
    v->u.buf.len = len;
    return v;
}

ddb_value *ddb_value_s(const char *s)
{
    return s ? value_buf(DDB_S, s, strlen(s)) : NULL;
}

ddb_value *ddb_value_s_len(const char *s, size_t len)
{
    return (s || len == 0) ? value_buf(DDB_S, s, len) : NULL;
}

ddb_value *ddb_value_n(const char *decimal)
{
    if (!decimal)
        return NULL;
    size_t len = strlen(decimal);
    if (!ddb__number_valid(decimal, len))
        return NULL;
    return value_buf(DDB_N, decimal, len);
}

ddb_value *ddb_value_n_i64(int64_t n)
{
    char buf[32];
    int len = snprintf(buf, sizeof buf, "%lld", (long long)n);
    return value_buf(DDB_N, buf, (size_t)len);
}

ddb_value *ddb_value_b(const void *bytes, size_t len)
{
    return (bytes || len == 0) ? value_buf(DDB_B, bytes, len) : NULL;
}

ddb_value *ddb_value_bool(bool b)
{
    ddb_value *v = value_alloc(DDB_BOOL);
    if (v)
        v->u.b = b;
    return v;
}

ddb_value *ddb_value_null(void) { return value_alloc(DDB_NULL); }
ddb_value *ddb_value_l(void) { return value_alloc(DDB_L); }
ddb_value *ddb_value_ss(void) { return value_alloc(DDB_SS); }
ddb_value *ddb_value_ns(void) { return value_alloc(DDB_NS); }
ddb_value *ddb_value_bs(void) { return value_alloc(DDB_BS); }

ddb_value *ddb_value_m(void)
{
    ddb_value *v = value_alloc(DDB_M);
    if (!v)
        return NULL;
    v->u.m = ddb_item_new();
    if (!v->u.m) {
        free(v);
        return NULL;
    }
    return v;
}

static bool is_list(ddb_type t)
{
    return t == DDB_L || t == DDB_SS || t == DDB_NS || t == DDB_BS;
}

static bool is_buf(ddb_type t)
{
    return t == DDB_S || t == DDB_N || t == DDB_B;
}

void ddb_value_free(ddb_value *v)
{
    if (!v)
        return;
    if (is_buf(v->type)) {
        free(v->u.buf.p);
    } else if (is_list(v->type)) {
        for (size_t i = 0; i < v->u.list.n; i++)
            ddb_value_free(v->u.list.v[i]);
        free(v->u.list.v);
    } else if (v->type == DDB_M) {
        ddb_item_free(v->u.m);
    }
    free(v);
}

static int list_push(ddb_value *list, ddb_value *elem)
{
    if (list->u.list.n == list->u.list.cap) {
        size_t cap = list->u.list.cap ? list->u.list.cap * 2 : 4;
        ddb_value **nv = realloc(list->u.list.v, cap * sizeof *nv);
        if (!nv)
            return DDB_ENOMEM;
        list->u.list.v = nv;
        list->u.list.cap = cap;
    }
    list->u.list.v[list->u.list.n++] = elem;
    return 0;
}

ddb_value *ddb_value_copy(const ddb_value *v)
{
    if (!v)
        return NULL;
    if (is_buf(v->type))
        return value_buf(v->type, v->u.buf.p, v->u.buf.len);
    if (v->type == DDB_BOOL)
        return ddb_value_bool(v->u.b);
    if (v->type == DDB_NULL)
        return ddb_value_null();
    if (v->type == DDB_M) {
        ddb_value *c = value_alloc(DDB_M);
        if (!c)
            return NULL;
        c->u.m = ddb_item_copy(v->u.m);
        if (!c->u.m) {
            free(c);
            return NULL;
        }
        return c;
    }
    if (is_list(v->type)) {
        ddb_value *c = value_alloc(v->type);
        if (!c)
            return NULL;
        for (size_t i = 0; i < v->u.list.n; i++) {
            ddb_value *e = ddb_value_copy(v->u.list.v[i]);
            if (!e || list_push(c, e) != 0) {
                ddb_value_free(e);
                ddb_value_free(c);
                return NULL;
            }
        }
        return c;
    }
    return NULL;
}

ddb_type ddb_value_type(const ddb_value *v)
{
    return v ? v->type : (ddb_type)0;
}

const char *ddb_value_get_s(const ddb_value *v, size_t *len)
{
    if (!v || v->type != DDB_S)
        return NULL;
    if (len)
        *len = v->u.buf.len;
    return v->u.buf.p;
}

const char *ddb_value_get_n(const ddb_value *v)
{
    return (v && v->type == DDB_N) ? v->u.buf.p : NULL;
}

int ddb_value_get_i64(const ddb_value *v, int64_t *out)
{
    dl_decimal d;
    int64_t r;
    if (!v || v->type != DDB_N || !out)
        return DDB_EINVAL;
    if (dl__decimal_parse(v->u.buf.p, v->u.buf.len, &d) != DL_DEC_OK)
        return DDB_EINVAL;
    if (dl__decimal_to_i64(&d, &r) != 0)
        return DDB_EINVAL;
    *out = r;
    return 0;
}

const void *ddb_value_get_b(const ddb_value *v, size_t *len)
{
    if (!v || v->type != DDB_B)
        return NULL;
    if (len)
        *len = v->u.buf.len;
    return v->u.buf.p;
}

int ddb_value_get_bool(const ddb_value *v, bool *out)
{
    if (!v || v->type != DDB_BOOL || !out)
        return DDB_EINVAL;
    *out = v->u.b;
    return 0;
}

size_t ddb_value_count(const ddb_value *v)
{
    if (!v)
        return 0;
    if (is_list(v->type))
        return v->u.list.n;
    if (v->type == DDB_M)
        return v->u.m->n;
    return 0;
}

const ddb_value *ddb_value_at(const ddb_value *v, size_t i)
{
    if (!v || !is_list(v->type) || i >= v->u.list.n)
        return NULL;
    return v->u.list.v[i];
}

const ddb_item *ddb_value_get_m(const ddb_value *v)
{
    return (v && v->type == DDB_M) ? v->u.m : NULL;
}

ddb_item *ddb_value_get_m_mut(ddb_value *v)
{
    return (v && v->type == DDB_M) ? v->u.m : NULL;
}

int ddb_value_append(ddb_value *list, ddb_value *elem)
{
    if (elem == list)
        return DDB_EINVAL;
    if (!list || list->type != DDB_L || !elem) {
        ddb_value_free(elem);
        return DDB_EINVAL;
    }
    int rc = list_push(list, elem);
    if (rc != 0)
        ddb_value_free(elem);
    return rc;
}

/* Adds e to a set unless an equal element is there (sets hold each element once). */
static int set_add(ddb_value *set, ddb_value *e)
{
    if (!e)
        return DDB_ENOMEM;
    for (size_t i = 0; i < set->u.list.n; i++) {
        if (ddb_value_equal(set->u.list.v[i], e)) {
            ddb_value_free(e);
            return 0;
        }
    }
    int rc = list_push(set, e);
    if (rc != 0)
        ddb_value_free(e);
    return rc;
}

int ddb_value_add_s(ddb_value *ss, const char *s)
{
    if (!ss || ss->type != DDB_SS || !s)
        return DDB_EINVAL;
    return set_add(ss, ddb_value_s(s));
}

int ddb_value_add_n(ddb_value *ns, const char *decimal)
{
    if (!ns || ns->type != DDB_NS || !decimal)
        return DDB_EINVAL;
    if (!ddb__number_valid(decimal, strlen(decimal)))
        return DDB_EINVAL;
    return set_add(ns, ddb_value_n(decimal));
}

int ddb_value_add_b(ddb_value *bs, const void *bytes, size_t len)
{
    if (!bs || bs->type != DDB_BS || (!bytes && len))
        return DDB_EINVAL;
    return set_add(bs, ddb_value_b(bytes, len));
}

static bool number_equal(const ddb_value *a, const ddb_value *b)
{
    dl_decimal da, db;
    if (dl__decimal_parse(a->u.buf.p, a->u.buf.len, &da) != DL_DEC_OK ||
        dl__decimal_parse(b->u.buf.p, b->u.buf.len, &db) != DL_DEC_OK)
        return a->u.buf.len == b->u.buf.len && memcmp(a->u.buf.p, b->u.buf.p, a->u.buf.len) == 0;
    return dl__decimal_cmp(&da, &db) == 0;
}

/* Sets compare as sets: same size, and every element of a is in b. */
static bool set_equal(const ddb_value *a, const ddb_value *b)
{
    if (a->u.list.n != b->u.list.n)
        return false;
    for (size_t i = 0; i < a->u.list.n; i++) {
        bool found = false;
        for (size_t j = 0; j < b->u.list.n && !found; j++)
            found = ddb_value_equal(a->u.list.v[i], b->u.list.v[j]);
        if (!found)
            return false;
    }
    return true;
}

bool ddb_value_equal(const ddb_value *a, const ddb_value *b)
{
    if (a == b)
        return true;
    if (!a || !b || a->type != b->type)
        return false;
    switch (a->type) {
    case DDB_S:
    case DDB_B:
        return a->u.buf.len == b->u.buf.len &&
               (a->u.buf.len == 0 || memcmp(a->u.buf.p, b->u.buf.p, a->u.buf.len) == 0);
    case DDB_N:
        return number_equal(a, b);
    case DDB_BOOL:
        return a->u.b == b->u.b;
    case DDB_NULL:
        return true;
    case DDB_M:
        return ddb_item_equal(a->u.m, b->u.m);
    case DDB_L:
        if (a->u.list.n != b->u.list.n)
            return false;
        for (size_t i = 0; i < a->u.list.n; i++)
            if (!ddb_value_equal(a->u.list.v[i], b->u.list.v[i]))
                return false;
        return true;
    case DDB_SS:
    case DDB_NS:
    case DDB_BS:
        return set_equal(a, b);
    }
    return false;
}

/* ------------------------------------------------------------------ items */

ddb_item *ddb_item_new(void)
{
    return calloc(1, sizeof(ddb_item));
}

void ddb_item_free(ddb_item *it)
{
    if (!it)
        return;
    for (size_t i = 0; i < it->n; i++) {
        free(it->attrs[i].name);
        ddb_value_free(it->attrs[i].value);
    }
    free(it->attrs);
    free(it);
}

ddb_item *ddb_item_copy(const ddb_item *it)
{
    if (!it)
        return NULL;
    ddb_item *c = ddb_item_new();
    if (!c)
        return NULL;
    if (it->n) {
        c->attrs = calloc(it->n, sizeof *c->attrs);
        if (!c->attrs) {
            free(c);
            return NULL;
        }
        c->cap = it->n;
    }
    for (size_t i = 0; i < it->n; i++) {
        c->attrs[i].name = strdup(it->attrs[i].name);
        c->attrs[i].value = ddb_value_copy(it->attrs[i].value);
        c->n = i + 1;
        if (!c->attrs[i].name || !c->attrs[i].value) {
            ddb_item_free(c);
            return NULL;
        }
    }
    return c;
}

static ssize_t find(const ddb_item *it, const char *name)
{
    for (size_t i = 0; i < it->n; i++)
        if (strcmp(it->attrs[i].name, name) == 0)
            return (ssize_t)i;
    return -1;
}

int ddb_item_set(ddb_item *it, const char *name, ddb_value *v)
{
    if (!it || !name || !v) {
        ddb_value_free(v);
        return DDB_EINVAL;
    }
    ssize_t at = find(it, name);
    if (at >= 0) {
        if (it->attrs[at].value != v)
            ddb_value_free(it->attrs[at].value);
        it->attrs[at].value = v;
        return 0;
    }
    if (it->n == it->cap) {
        size_t cap = it->cap ? it->cap * 2 : 8;
        ddb__attr *na = realloc(it->attrs, cap * sizeof *na);
        if (!na) {
            ddb_value_free(v);
            return DDB_ENOMEM;
        }
        it->attrs = na;
        it->cap = cap;
    }
    char *dup = strdup(name);
    if (!dup) {
        ddb_value_free(v);
        return DDB_ENOMEM;
    }
    it->attrs[it->n].name = dup;
    it->attrs[it->n].value = v;
    it->n++;
    return 0;
}

/* A constructor that returned NULL failed on memory, or on bad input when `bad` says so. */
static int set_made(ddb_item *it, const char *name, ddb_value *v, bool bad)
{
    if (!v)
        return bad ? DDB_EINVAL : DDB_ENOMEM;
    return ddb_item_set(it, name, v);
}

int ddb_item_set_s(ddb_item *it, const char *name, const char *s)
{
    return set_made(it, name, ddb_value_s(s), s == NULL);
}

int ddb_item_set_n(ddb_item *it, const char *name, const char *decimal)
{
    bool bad = !decimal || !ddb__number_valid(decimal, strlen(decimal));
    return set_made(it, name, bad ? NULL : ddb_value_n(decimal), bad);
}

int ddb_item_set_i64(ddb_item *it, const char *name, int64_t n)
{
    return set_made(it, name, ddb_value_n_i64(n), false);
}

int ddb_item_set_b(ddb_item *it, const char *name, const void *b, size_t len)
{
    return set_made(it, name, ddb_value_b(b, len), !b && len);
}

int ddb_item_set_bool(ddb_item *it, const char *name, bool b)
{
    return set_made(it, name, ddb_value_bool(b), false);
}

int ddb_item_set_null(ddb_item *it, const char *name)
{
    return set_made(it, name, ddb_value_null(), false);
}

int ddb_item_remove(ddb_item *it, const char *name)
{
    if (!it || !name)
        return DDB_EINVAL;
    ssize_t at = find(it, name);
    if (at < 0)
        return DDB_ENOTFOUND;
    free(it->attrs[at].name);
    ddb_value_free(it->attrs[at].value);
    memmove(&it->attrs[at], &it->attrs[at + 1], (it->n - (size_t)at - 1) * sizeof *it->attrs);
    it->n--;
    return 0;
}

const ddb_value *ddb_item_get(const ddb_item *it, const char *name)
{
    if (!it || !name)
        return NULL;
    ssize_t at = find(it, name);
    return at < 0 ? NULL : it->attrs[at].value;
}

const char *ddb_item_get_s(const ddb_item *it, const char *name)
{
    return ddb_value_get_s(ddb_item_get(it, name), NULL);
}

const char *ddb_item_get_n(const ddb_item *it, const char *name)
{
    return ddb_value_get_n(ddb_item_get(it, name));
}

int ddb_item_get_i64(const ddb_item *it, const char *name, int64_t *out)
{
    return ddb_value_get_i64(ddb_item_get(it, name), out);
}

int ddb_item_get_bool(const ddb_item *it, const char *name, bool *out)
{
    return ddb_value_get_bool(ddb_item_get(it, name), out);
}

size_t ddb_item_count(const ddb_item *it)
{
    return it ? it->n : 0;
}

const char *ddb_item_name_at(const ddb_item *it, size_t i)
{
    return (it && i < it->n) ? it->attrs[i].name : NULL;
}

const ddb_value *ddb_item_value_at(const ddb_item *it, size_t i)
{
    return (it && i < it->n) ? it->attrs[i].value : NULL;
}

/* Items are maps: equal when they hold the same names with equal values, in any order. */
bool ddb_item_equal(const ddb_item *a, const ddb_item *b)
{
    if (a == b)
        return true;
    if (!a || !b || a->n != b->n)
        return false;
    for (size_t i = 0; i < a->n; i++) {
        const ddb_value *bv = ddb_item_get(b, a->attrs[i].name);
        if (!bv || !ddb_value_equal(a->attrs[i].value, bv))
            return false;
    }
    return true;
}
