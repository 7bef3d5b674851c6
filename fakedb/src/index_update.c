/* index_update.c: UpdateTable's GlobalSecondaryIndexUpdates as DynamoDB checks them (one
 * index created or deleted per call, key types against the table's definitions, the new
 * keys defined in the request, names, the 20-index limit) and what follows on the server's
 * clock: the new index CREATING with Backfilling, the deleted one DELETING (tables.c). */
#include "ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_GSI 20

static bool busy_now(fakedb__store *db, const fakedb__table *t)
{
    return t->busy && fakedb__now_ms(db->clock) < t->busy_until_ms;
}

static const char *action_name(json_object *u, const char *kind)
{
    json_object *a = fakedb__json_get(u, kind);
    return a ? fakedb__json_str(a, "IndexName") : NULL;
}

static bool in_list(json_object *list, const char *name)
{
    for (size_t k = 0; list && json_object_is_type(list, json_type_array) && k < json_object_array_length(list); k++) {
        const char *n = fakedb__json_str(json_object_array_get_idx(list, k), "IndexName");
        if (n && !strcmp(n, name))
            return true;
    }
    return false;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void fakedb__def_names(json_object *defs, char *out, size_t cap)
{
    const char *names[64];
    size_t n = 0, o = 0;
    out[0] = 0;
    size_t total = defs && json_object_is_type(defs, json_type_array) ? json_object_array_length(defs) : 0;
    for (size_t i = 0; i < total && n < 64; i++) {
        const char *an = fakedb__json_str(json_object_array_get_idx(defs, i), "AttributeName");
        if (an)
            names[n++] = an;
    }
    qsort(names, n, sizeof names[0], cmp_names);
    for (size_t i = 0; i < n && o < cap; i++) {
        int w = snprintf(out + o, cap - o, "%s%s", i ? ", " : "", names[i]);
        if (w < 0)
            break;
        o += (size_t)w;
    }
}

/* The request's own AttributeDefinitions must define every key attribute of a new index
 * (the table's definitions do not count, as in DynamoDB). */
static int check_new_keys(json_object *c, json_object *defs, fakedb__reply *r)
{
    json_object *ks = fakedb__json_get(c, "KeySchema");
    size_t n = ks && json_object_is_type(ks, json_type_array) ? json_object_array_length(ks) : 0;
    for (size_t i = 0; i < n; i++) {
        const char *an = fakedb__json_str(json_object_array_get_idx(ks, i), "AttributeName");
        if (!an || fakedb__spec_attr_type(defs, an))
            continue;
        char list[1024];
        fakedb__def_names(defs, list, sizeof list);
        return fakedb__reply_fail_validation(r, "One or more parameter values were invalid: Some index key attributes are not defined in AttributeDefinitions. Keys: [%s], AttributeDefinitions: [%s]", an, list);
    }
    return 0;
}

int fakedb__gsi_updates_check(fakedb__table *t, json_object *req, fakedb__reply *r)
{
    json_object *gu = fakedb__json_get(req, "GlobalSecondaryIndexUpdates");
    json_object *defs = fakedb__json_get(req, "AttributeDefinitions");
    json_object *cur = fakedb__json_get(t->spec, "AttributeDefinitions");
    size_t n = gu && json_object_is_type(gu, json_type_array) ? json_object_array_length(gu) : 0;
    static const char *const kinds[3] = { "Create", "Delete", "Update" };
    int online = 0;
    for (size_t i = 0; i < n; i++) {
        json_object *u = json_object_array_get_idx(gu, i);
        bool any = false;
        for (int k = 0; k < 3; k++) {
            const char *name = action_name(u, kinds[k]);
            if (!fakedb__json_get(u, kinds[k]))
                continue;
            any = true;
            if (!name && k > 0) /* a Create's is CreateTable's check, after these */
                return fakedb__reply_fail_validation(r, "1 validation error detected: Value null at 'globalSecondaryIndexUpdates.%zu.member.%s.indexName' failed to satisfy constraint: Member must not be null",
                                                     i + 1, k == 1 ? "delete" : "update");
            online += k < 2;
            /* the same index named by two actions, in this entry or an earlier one */
            for (size_t j = 0; name && j <= i; j++) {
                json_object *v = json_object_array_get_idx(gu, j);
                for (int l = 0; l < (j == i ? k : 3); l++) {
                    const char *other = action_name(v, kinds[l]);
                    if (other && !strcmp(other, name))
                        return fakedb__reply_fail_validation(r, "Only one global secondary index update per index is allowed simultaneously.");
                }
            }
        }
        if (!any)
            return fakedb__reply_fail_validation(r, "Update global secondary index action is null");
    }
    if (online > 1)
        return fakedb__reply_fail(r, FDB_E_LIMIT, "Subscriber limit exceeded: Only 1 online index can be created or deleted simultaneously per table");
    /* a definition may repeat one of the table's, never change its type; none twice (as
     * CreateTable's) */
    size_t nd = defs && json_object_is_type(defs, json_type_array) ? json_object_array_length(defs) : 0;
    for (size_t i = 0; i < nd; i++) {
        json_object *d = json_object_array_get_idx(defs, i);
        const char *an = fakedb__json_str(d, "AttributeName"), *at = fakedb__json_str(d, "AttributeType");
        for (size_t k = 0; an && k < i; k++) {
            const char *other = fakedb__json_str(json_object_array_get_idx(defs, k), "AttributeName");
            if (other && !strcmp(other, an))
                return fakedb__reply_fail_validation(r, "Attribute Name is duplicated: %s", an);
        }
        char had = an ? fakedb__spec_attr_type(cur, an) : 0;
        if (had && at && at[0] && !at[1] && strchr("SNB", at[0]) && at[0] != had)
            return fakedb__reply_fail_validation(r, "invalid attribute, SchemaElement redefined should be of same type as previously defined");
    }
    json_object *gsis = fakedb__json_get(t->spec, "GlobalSecondaryIndexes");
    for (size_t i = 0; i < n; i++) {
        json_object *u = json_object_array_get_idx(gu, i);
        json_object *c = fakedb__json_get(u, "Create");
        const char *name = action_name(u, "Create");
        if (c && name) {
            if (in_list(gsis, name) || in_list(fakedb__json_get(t->spec, "LocalSecondaryIndexes"), name))
                return fakedb__reply_fail_validation(r, "Attempting to create an index which already exists");
            size_t have = gsis && json_object_is_type(gsis, json_type_array) ? json_object_array_length(gsis) : 0;
            if (have + 1 > MAX_GSI)
                return fakedb__reply_fail(r, FDB_E_LIMIT, "Number of global secondary indexes exceeds per-table limit");
            if (check_new_keys(c, defs, r))
                return -1;
        }
        name = action_name(u, "Delete");
        if (fakedb__json_get(u, "Delete") && (!name || !in_list(gsis, name)))
            return fakedb__reply_fail(r, FDB_E_NOT_FOUND, "Requested resource not found");
    }
    return 0;
}

int fakedb__gsi_update_busy(fakedb__store *db, fakedb__table *t, json_object *req, fakedb__reply *r)
{
    if (!busy_now(db, t) || (!t->creating_index && !t->deleting_index))
        return 0;
    /* an index being created may be deleted while it backfills (DynamoDB's Backfilling) */
    json_object *gu = fakedb__json_get(req, "GlobalSecondaryIndexUpdates");
    if (t->creating_index && gu && json_object_is_type(gu, json_type_array) && json_object_array_length(gu) == 1) {
        const char *name = action_name(json_object_array_get_idx(gu, 0), "Delete");
        if (name && !strcmp(name, t->creating_index))
            return 1;
    }
    return fakedb__reply_fail(r, FDB_E_IN_USE, "Attempt to change a resource which is still in use: Index is being %s.",
                              t->creating_index ? "created" : "deleted");
}

void fakedb__gsi_update_mark(fakedb__store *db, fakedb__table *t, const char *created,
                             json_object *deleted_desc)
{
    free(t->creating_index);
    t->creating_index = NULL;
    json_object_put(t->deleting_index);
    t->deleting_index = NULL;
    if (db->transient_ms <= 0)
        return;
    if (created)
        t->creating_index = strdup(created); /* out of memory: ACTIVE at once */
    if (deleted_desc)
        t->deleting_index = json_object_get(deleted_desc);
}

bool fakedb__index_backfilling(fakedb__store *db, const fakedb__table *t, const char *name)
{
    return t->creating_index && !strcmp(t->creating_index, name) && busy_now(db, t);
}

json_object *fakedb__index_deleting(fakedb__store *db, const fakedb__table *t)
{
    return t->deleting_index && busy_now(db, t) ? t->deleting_index : NULL;
}
