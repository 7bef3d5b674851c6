/* schema.c: the in-memory view of each table, built from its CreateTable spec: key
 * schema, indexes and their projections, which every item operation consults. The
 * list of tables lives in db->tables (db->lock held). */
#include "store.h"

#include <stdlib.h>
#include <string.h>

static void index_clear(fakedb__index *ix)
{
    free(ix->name);
    for (size_t i = 0; i < ix->n_hash; i++)
        free(ix->hash[i]);
    for (size_t i = 0; i < ix->n_range; i++)
        free(ix->range[i]);
    for (size_t i = 0; i < ix->n_include; i++)
        free(ix->include[i]);
    free(ix->include);
}

void fakedb__table_free(fakedb__table *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n_idx; i++)
        index_clear(&t->idx[i]);
    free(t->idx);
    free(t->name);
    free(t->pk);
    free(t->sk);
    free(t->ttl_attr);
    free(t->stream_arn);
    free(t->stream_label);
    free(t->creating_index);
    json_object_put(t->deleting_index);
    json_object_put(t->spec);
    free(t);
}

void fakedb__ghost_free(fakedb__ghost *g)
{
    free(g->name);
    json_object_put(g->desc);
    free(g);
}

void fakedb__ghosts_clear(fakedb__store *db)
{
    while (db->ghosts) {
        fakedb__ghost *g = db->ghosts;
        db->ghosts = g->next;
        fakedb__ghost_free(g);
    }
}

void fakedb__tables_clear(fakedb__store *db)
{
    fakedb__table *t = db->tables, *n;
    for (; t; t = n) {
        n = t->next;
        fakedb__table_free(t);
    }
    db->tables = NULL;
    fakedb__ghosts_clear(db);
}

fakedb__table *fakedb__table_find(fakedb__store *db, const char *name)
{
    for (fakedb__table *t = db->tables; t; t = t->next)
        if (!strcmp(t->name, name))
            return t;
    return NULL;
}

const fakedb__index *fakedb__index_find(const fakedb__table *t, const char *name)
{
    for (size_t i = 0; i < t->n_idx; i++)
        if (!strcmp(t->idx[i].name, name))
            return &t->idx[i];
    return NULL;
}

char fakedb__spec_attr_type(json_object *defs, const char *name)
{
    size_t n = defs ? json_object_array_length(defs) : 0;
    for (size_t i = 0; i < n; i++) {
        json_object *d = json_object_array_get_idx(defs, i);
        const char *an = fakedb__json_str(d, "AttributeName");
        const char *at = fakedb__json_str(d, "AttributeType");
        if (an && at && !strcmp(an, name))
            return at[0];
    }
    return 0;
}

void fakedb__spec_key_names(json_object *ks, const char **hash, const char **range)
{
    *hash = *range = NULL;
    size_t n = ks ? json_object_array_length(ks) : 0;
    for (size_t i = 0; i < n; i++) {
        json_object *e = json_object_array_get_idx(ks, i);
        const char *an = fakedb__json_str(e, "AttributeName");
        const char *kt = fakedb__json_str(e, "KeyType");
        if (an && kt && !strcmp(kt, "HASH"))
            *hash = an;
        else if (an && kt && !strcmp(kt, "RANGE"))
            *range = an;
    }
}

/* The HASH and RANGE attributes of an index's KeySchema in key order (CreateTable and
 * UpdateTable checked it: HASH elements first, at most FDB_MAX_KEY_ATTRS of each). */
static void index_key_attrs(fakedb__index *ix, json_object *ks, json_object *defs)
{
    size_t n = ks && json_object_is_type(ks, json_type_array) ? json_object_array_length(ks) : 0;
    for (size_t i = 0; i < n; i++) {
        json_object *e = json_object_array_get_idx(ks, i);
        const char *an = fakedb__json_str(e, "AttributeName");
        const char *kt = fakedb__json_str(e, "KeyType");
        if (!an || !kt)
            continue;
        if (!strcmp(kt, "HASH") && ix->n_hash < FDB_MAX_KEY_ATTRS) {
            ix->hash_type[ix->n_hash] = fakedb__spec_attr_type(defs, an);
            ix->hash[ix->n_hash++] = strdup(an);
        } else if (!strcmp(kt, "RANGE") && ix->n_range < FDB_MAX_KEY_ATTRS) {
            ix->range_type[ix->n_range] = fakedb__spec_attr_type(defs, an);
            ix->range[ix->n_range++] = strdup(an);
        }
    }
    ix->pk = ix->n_hash ? ix->hash[0] : NULL;
    ix->pk_type = ix->n_hash ? ix->hash_type[0] : 0;
    ix->sk = ix->n_range ? ix->range[0] : NULL;
    ix->sk_type = ix->n_range ? ix->range_type[0] : 0;
    ix->multi = ix->n_hash > 1 || ix->n_range > 1;
}

static int index_from_spec(fakedb__index *ix, json_object *spec, json_object *defs, bool global)
{
    json_object *proj = fakedb__json_get(spec, "Projection");
    const char *pt = fakedb__json_str(proj, "ProjectionType");
    index_key_attrs(ix, fakedb__json_get(spec, "KeySchema"), defs);
    if (!ix->pk) {
        index_clear(ix);
        memset(ix, 0, sizeof *ix);
        return -1;
    }
    ix->name = strdup(fakedb__json_str(spec, "IndexName"));
    ix->global = global;
    ix->projection = !pt || !strcmp(pt, "ALL") ? FDB_PROJ_ALL
                     : !strcmp(pt, "KEYS_ONLY") ? FDB_PROJ_KEYS_ONLY : FDB_PROJ_INCLUDE;
    json_object *nka = fakedb__json_get(proj, "NonKeyAttributes");
    size_t n = nka && json_object_is_type(nka, json_type_array) ? json_object_array_length(nka) : 0;
    ix->include = n ? calloc(n, sizeof *ix->include) : NULL;
    for (size_t i = 0; i < n && ix->include; i++) {
        const char *s = json_object_get_string(json_object_array_get_idx(nka, i));
        ix->include[ix->n_include++] = strdup(s ? s : "");
    }
    return 0;
}

fakedb__table *fakedb__table_from_spec(const char *name, json_object *spec)
{
    fakedb__table *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    json_object *defs = fakedb__json_get(spec, "AttributeDefinitions");
    const char *h, *rg;
    fakedb__spec_key_names(fakedb__json_get(spec, "KeySchema"), &h, &rg);
    t->name = strdup(name);
    t->spec = json_object_get(spec);
    if (!h) {
        fakedb__table_free(t);
        return NULL;
    }
    t->pk = strdup(h);
    t->pk_type = fakedb__spec_attr_type(defs, h);
    t->sk = rg ? strdup(rg) : NULL;
    t->sk_type = rg ? fakedb__spec_attr_type(defs, rg) : 0;
    json_object *g = fakedb__json_get(spec, "GlobalSecondaryIndexes");
    json_object *l = fakedb__json_get(spec, "LocalSecondaryIndexes");
    size_t ng = g ? json_object_array_length(g) : 0, nl = l ? json_object_array_length(l) : 0;
    t->idx = ng + nl ? calloc(ng + nl, sizeof *t->idx) : NULL;
    for (size_t i = 0; i < ng + nl && t->idx; i++) {
        json_object *s = i < ng ? json_object_array_get_idx(g, i) : json_object_array_get_idx(l, i - ng);
        if (index_from_spec(&t->idx[t->n_idx], s, defs, i < ng) == 0)
            t->n_idx++;
    }
    return t;
}
