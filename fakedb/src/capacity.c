/* capacity.c: ReturnConsumedCapacity as DynamoDB counts it. The units of one write (the
 * table's and each index's), and the ConsumedCapacity members the operations answer: one
 * entry for a single-table operation, a list with one entry per table for batches and
 * transactions; INDEXES adds the table's own units and each index's beside the total. */
#include "ops.h"
#include "expr.h"

#include <stdlib.h>
#include <string.h>

double fakedb__read_units(size_t bytes, bool consistent)
{
    double u = bytes == 0 ? 1 : (double)((bytes + 4095) / 4096);
    return consistent ? u : u / 2;
}

double fakedb__write_units(size_t bytes)
{
    return bytes == 0 ? 1 : (double)((bytes + 1023) / 1024);
}

/* The ReturnConsumedCapacity asked for, or NULL when none is (NONE or no member). */
static const char *asked(json_object *req)
{
    const char *rcc = fakedb__json_str(req, "ReturnConsumedCapacity");
    return rcc && strcmp(rcc, "NONE") ? rcc : NULL;
}

bool fakedb__capacity_wanted(json_object *req)
{
    return asked(req) != NULL;
}

/* o[name], made an empty object when missing. */
static json_object *member(json_object *o, const char *name)
{
    json_object *m = fakedb__json_get(o, name);
    if (!m) {
        m = json_object_new_object();
        json_object_object_add(o, name, m);
    }
    return m;
}

/* o.name += units (made when missing). */
static void add_to(json_object *o, const char *name, double units)
{
    json_object *v = fakedb__json_get(o, name);
    double cur = v ? json_object_get_double(v) : 0;
    json_object_object_add(o, name, json_object_new_double(cur + units));
}

/* o.CapacityUnits += units, and o.kind (ReadCapacityUnits/WriteCapacityUnits) when not NULL. */
static void bump(json_object *o, const char *kind, double units)
{
    add_to(o, "CapacityUnits", units);
    if (kind)
        add_to(o, kind, units);
}

/* Adds to c, t's entry, the table's units and each index's (ix_units may be NULL: none,
 * and then t may be NULL too). */
static void entry_add(json_object *c, bool indexes, const char *kind, const fakedb__table *t,
                      double table_units, const double *ix_units)
{
    double total = table_units;
    for (size_t i = 0; ix_units && i < t->n_idx; i++)
        total += ix_units[i];
    bump(c, kind, total);
    if (!indexes)
        return;
    bump(member(c, "Table"), kind, table_units);
    for (size_t i = 0; ix_units && i < t->n_idx; i++) {
        if (ix_units[i] <= 0)
            continue;
        json_object *g = member(c, t->idx[i].global ? "GlobalSecondaryIndexes" : "LocalSecondaryIndexes");
        bump(member(g, t->idx[i].name), kind, ix_units[i]);
    }
}

static json_object *new_entry(const char *table)
{
    json_object *c = json_object_new_object();
    json_object_object_add(c, "TableName", json_object_new_string(table));
    json_object_object_add(c, "CapacityUnits", json_object_new_double(0));
    return c;
}

void fakedb__add_capacity_ix(json_object *req, json_object *resp, const fakedb__table *t,
                             double table_units, const double *ix_units)
{
    const char *rcc = asked(req);
    if (!rcc)
        return;
    json_object *c = new_entry(t->name);
    entry_add(c, !strcmp(rcc, "INDEXES"), NULL, t, table_units, ix_units);
    json_object_object_add(resp, "ConsumedCapacity", c);
}

void fakedb__add_capacity(json_object *req, json_object *resp, const char *table, double units)
{
    const char *rcc = asked(req);
    if (!rcc)
        return;
    json_object *c = new_entry(table);
    entry_add(c, !strcmp(rcc, "INDEXES"), NULL, NULL, units, NULL);
    json_object_object_add(resp, "ConsumedCapacity", c);
}

void fakedb__capacity_list_add(json_object *req, json_object *list, const fakedb__table *t,
                               const char *kind, double table_units, const double *ix_units)
{
    const char *rcc = asked(req);
    if (!rcc)
        return;
    json_object *c = NULL;
    for (size_t i = 0; !c && i < json_object_array_length(list); i++) {
        json_object *e = json_object_array_get_idx(list, i);
        if (!strcmp(fakedb__json_str(e, "TableName"), t->name))
            c = e;
    }
    if (!c) {
        c = new_entry(t->name);
        json_object_array_add(list, c);
    }
    entry_add(c, !strcmp(rcc, "INDEXES"), kind, t, table_units, ix_units);
}

/* The size of item as index ix holds it (0 when it is not in the index; an entry is at
 * least a byte), and its key in the index. */
static size_t index_entry(const fakedb__table *t, const fakedb__index *ix, json_object *item, fakedb__key *k)
{
    fakedb__error scratch;
    memset(&scratch, 0, sizeof scratch);
    if (!item || fakedb__index_key(ix, item, k, &scratch) != 1)
        return 0;
    if (ix->projection == FDB_PROJ_ALL)
        return fakedb__item_size(item);
    json_object *p = fakedb__project_index(t, ix, item);
    size_t n = p ? fakedb__item_size(p) : 0;
    json_object_put(p);
    return n ? n : 1;
}

static bool same_key(const fakedb__key *a, const fakedb__key *b)
{
    return a->pk_len == b->pk_len && a->sk_len == b->sk_len && !memcmp(a->pk, b->pk, a->pk_len) &&
           !memcmp(a->sk, b->sk, a->sk_len);
}

double fakedb__write_capacity(const fakedb__write *w, double *ix_units)
{
    const fakedb__table *t = w->table;
    for (size_t i = 0; i < t->n_idx; i++)
        ix_units[i] = 0;
    size_t a = w->old_item ? fakedb__item_size(w->old_item) : 0;
    if (w->kind == FDB_W_CHECK) /* a condition check writes no index entry */
        return fakedb__write_units(a);
    size_t b = w->new_item ? fakedb__item_size(w->new_item) : 0;
    for (size_t i = 0; i < t->n_idx; i++) {
        fakedb__key ko, kn;
        size_t so = index_entry(t, &t->idx[i], w->old_item, &ko), sn = index_entry(t, &t->idx[i], w->new_item, &kn);
        if (so && sn && !same_key(&ko, &kn)) /* the entry moves: a delete and a put */
            ix_units[i] = fakedb__write_units(so) + fakedb__write_units(sn);
        else if (so || sn)
            ix_units[i] = fakedb__write_units(so > sn ? so : sn);
    }
    return fakedb__write_units(a > b ? a : b);
}
