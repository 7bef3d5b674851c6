/* expr_update.c: applies a parsed UpdateExpression (SET, REMOVE, ADD, DELETE) to an item.
 * Every operand is read from the item as it was before the update, as DynamoDB does,
 * and the item is left untouched when any action fails. */
#include <stdlib.h>
#include <string.h>

#include "decimal.h"
#include "expr_internal.h"

#define MSG_TYPE "An operand in the update expression has an incorrect data type"
#define MSG_MISSING "The provided expression refers to an attribute that does not exist in the item"
#define MSG_MISMATCH "Type mismatch for attribute to update" /* AttributeUpdates */
#define MSG_BAD_PATH "The document path provided in the update expression is invalid for update"

static const char *decimal_message(dl_decimal_status st)
{
    switch (st) {
    case DL_DEC_PRECISION: return "DynamoDB only supports precision up to 38 digits";
    case DL_DEC_OVERFLOW:
        return "Number overflow. Attempting to store a number with magnitude larger than supported range";
    case DL_DEC_UNDERFLOW:
        return "Number underflow. Attempting to store a number with magnitude smaller than supported range";
    default: return "A value provided cannot be converted into a number";
    }
}

static json_object *copy_av(json_object *av)
{
    json_object *copy = NULL;
    if (av == NULL || json_object_deep_copy(av, &copy, NULL) != 0)
        return NULL;
    return copy;
}

static json_object *wrap(const char *type, json_object *payload)
{
    json_object *av = json_object_new_object();
    if (av == NULL) {
        json_object_put(payload);
        return NULL;
    }
    json_object_object_add(av, type, payload);
    return av;
}

static bool number_of(json_object *av, dl_decimal *out)
{
    json_object *payload;
    const char *t = fakedb__av_type(av, &payload);
    return t != NULL && strcmp(t, "N") == 0 && json_object_is_type(payload, json_type_string) &&
           dl__decimal_parse(json_object_get_string(payload),
                             (size_t)json_object_get_string_len(payload), out) == DL_DEC_OK;
}

static json_object *arith(json_object *a, json_object *b, bool minus, char *err)
{
    dl_decimal x, y, r;
    if (!number_of(a, &x) || !number_of(b, &y)) {
        fakedb__expr_errf(err, MSG_TYPE);
        return NULL;
    }
    dl_decimal_status st = minus ? dl__decimal_sub(&x, &y, &r) : dl__decimal_add(&x, &y, &r);
    if (st != DL_DEC_OK) {
        fakedb__expr_errf(err, "%s", decimal_message(st));
        return NULL;
    }
    char text[DL_DECIMAL_TEXT_MAX];
    dl__decimal_format(&r, text);
    return wrap("N", json_object_new_string(text));
}

/* The new value of a SET operand, owned by the caller; NULL with err on failure. */
static json_object *eval_value(const expr_node *n, json_object *item, char *err)
{
    switch (n->kind) {
    case NODE_PATH: {
        json_object *v = fakedb__expr_resolve(item, &n->path);
        if (v == NULL) {
            fakedb__expr_errf(err, MSG_MISSING);
            return NULL;
        }
        return copy_av(v);
    }
    case NODE_VALUE:
        return copy_av(n->value);
    case NODE_PLUS:
    case NODE_MINUS: {
        json_object *a = eval_value(n->args[0], item, err);
        if (a == NULL)
            return NULL;
        json_object *b = eval_value(n->args[1], item, err);
        json_object *r = b == NULL ? NULL : arith(a, b, n->kind == NODE_MINUS, err);
        json_object_put(a);
        json_object_put(b);
        return r;
    }
    case NODE_FUNC:
        if (n->op == FN_IF_NOT_EXISTS) {
            json_object *v = fakedb__expr_resolve(item, &n->args[0]->path);
            return v != NULL ? copy_av(v) : eval_value(n->args[1], item, err);
        }
        if (n->op == FN_LIST_APPEND) {
            json_object *a = eval_value(n->args[0], item, err);
            if (a == NULL)
                return NULL;
            json_object *b = eval_value(n->args[1], item, err);
            json_object *pa, *pb, *r = NULL;
            const char *ta = fakedb__av_type(a, &pa), *tb = b != NULL ? fakedb__av_type(b, &pb) : NULL;
            if (b != NULL) {
                if (ta == NULL || tb == NULL || strcmp(ta, "L") != 0 || strcmp(tb, "L") != 0) {
                    fakedb__expr_errf(err, MSG_TYPE);
                } else {
                    json_object *list = json_object_new_array();
                    for (size_t i = 0; list != NULL && i < json_object_array_length(pa); i++)
                        json_object_array_add(list, json_object_get(json_object_array_get_idx(pa, i)));
                    for (size_t i = 0; list != NULL && i < json_object_array_length(pb); i++)
                        json_object_array_add(list, json_object_get(json_object_array_get_idx(pb, i)));
                    r = wrap("L", list);
                }
            }
            json_object_put(a);
            json_object_put(b);
            return r;
        }
        break;
    default:
        break;
    }
    fakedb__expr_errf(err, MSG_TYPE);
    return NULL;
}

static bool is_set_type(const char *t)
{
    return t != NULL && (strcmp(t, "SS") == 0 || strcmp(t, "NS") == 0 || strcmp(t, "BS") == 0);
}

/* ADD: the new value, or NULL with err. legacy: AttributeUpdates' ADD, which also
 * appends to a list and names a type mismatch as such. */
static json_object *eval_add(json_object *cur, json_object *val, bool legacy, char *err)
{
    if (cur == NULL)
        return copy_av(val);
    json_object *pc, *pv;
    const char *tc = fakedb__av_type(cur, &pc), *tv = fakedb__av_type(val, &pv);
    if (tc == NULL || tv == NULL || strcmp(tc, tv) != 0) {
        fakedb__expr_errf(err, legacy ? MSG_MISMATCH : MSG_TYPE);
        return NULL;
    }
    if (strcmp(tc, "N") == 0)
        return arith(cur, val, false, err);
    if (legacy && strcmp(tc, "L") == 0) {
        json_object *r = copy_av(cur), *list = NULL;
        fakedb__av_type(r, &list);
        for (size_t i = 0; list != NULL && i < json_object_array_length(pv); i++)
            json_object_array_add(list, copy_av(json_object_array_get_idx(pv, i)));
        return r;
    }
    if (!is_set_type(tc)) {
        fakedb__expr_errf(err, MSG_TYPE);
        return NULL;
    }
    json_object *r = copy_av(cur);
    json_object *list = NULL;
    fakedb__av_type(r, &list);
    for (size_t i = 0; list != NULL && i < json_object_array_length(pv); i++) {
        json_object *e = json_object_array_get_idx(pv, i);
        bool present = false;
        for (size_t j = 0; j < json_object_array_length(list) && !present; j++)
            present = fakedb__expr_set_elem_equal(tc[0], json_object_array_get_idx(list, j), e);
        if (!present)
            json_object_array_add(list, json_object_get(e));
    }
    return r;
}

/* DELETE: the new value, NULL for "remove the attribute" (*remove set) or error. */
static json_object *eval_delete(json_object *cur, json_object *val, bool legacy, bool *remove, char *err)
{
    *remove = false;
    json_object *pc, *pv;
    const char *tc = fakedb__av_type(cur, &pc), *tv = fakedb__av_type(val, &pv);
    if (tc == NULL || tv == NULL || strcmp(tc, tv) != 0 || !is_set_type(tc)) {
        fakedb__expr_errf(err, legacy ? MSG_MISMATCH : MSG_TYPE);
        return NULL;
    }
    json_object *list = json_object_new_array();
    for (size_t i = 0; list != NULL && i < json_object_array_length(pc); i++) {
        json_object *e = json_object_array_get_idx(pc, i);
        bool gone = false;
        for (size_t j = 0; j < json_object_array_length(pv) && !gone; j++)
            gone = fakedb__expr_set_elem_equal(tc[0], e, json_object_array_get_idx(pv, j));
        if (!gone)
            json_object_array_add(list, json_object_get(e));
    }
    if (list != NULL && json_object_array_length(list) == 0) {
        json_object_put(list);
        *remove = true;
        return NULL;
    }
    return wrap(tc, list);
}

/* The map payload (or item) or list payload that holds the last element of path. */
static json_object *parent_of(json_object *item, const expr_path *path, bool *is_list)
{
    *is_list = false;
    if (path->n == 1)
        return item;
    expr_path prefix = {path->n - 1, path->elems};
    json_object *av = fakedb__expr_resolve(item, &prefix), *payload;
    const char *t = fakedb__av_type(av, &payload);
    if (t == NULL)
        return NULL;
    if (path->elems[path->n - 1].name != NULL)
        return strcmp(t, "M") == 0 && json_object_is_type(payload, json_type_object) ? payload : NULL;
    *is_list = true;
    return strcmp(t, "L") == 0 && json_object_is_type(payload, json_type_array) ? payload : NULL;
}

/* Stores value (taken) at path; -1 when the path cannot be written. */
static int store(json_object *item, const expr_path *path, json_object *value)
{
    bool is_list;
    json_object *parent = parent_of(item, path, &is_list);
    const expr_path_elem *last = &path->elems[path->n - 1];
    if (parent == NULL) {
        json_object_put(value);
        return -1;
    }
    if (!is_list) {
        json_object_object_add(parent, last->name, value);
        return 0;
    }
    size_t len = json_object_array_length(parent);
    if ((size_t)last->index < len)
        json_object_array_put_idx(parent, (size_t)last->index, value);
    else
        json_object_array_add(parent, value);
    return 0;
}

/* Whether path names a list element at or past the end of an existing list. */
static bool appends_past_end(json_object *item, const expr_path *path)
{
    bool is_list;
    if (path->elems[path->n - 1].name != NULL)
        return false;
    json_object *parent = parent_of(item, path, &is_list);
    return parent != NULL && is_list && (size_t)path->elems[path->n - 1].index >= json_object_array_length(parent);
}

static long last_index(const expr_path *path)
{
    return (long)path->elems[path->n - 1].index;
}

/* -1 when the path's parent does not exist or cannot hold it. */
static int remove_at(json_object *item, const expr_path *path)
{
    bool is_list;
    json_object *parent = parent_of(item, path, &is_list);
    const expr_path_elem *last = &path->elems[path->n - 1];
    if (parent == NULL)
        return -1;
    if (!is_list)
        json_object_object_del(parent, last->name);
    else if ((size_t)last->index < json_object_array_length(parent))
        json_object_array_del_idx(parent, (size_t)last->index, 1);
    return 0;
}

/* REMOVE order: list elements of the same list from the highest index down. */
static int remove_order(const void *pa, const void *pb)
{
    const expr_path *a = *(const expr_path *const *)pa, *b = *(const expr_path *const *)pb;
    const expr_path_elem *la = &a->elems[a->n - 1], *lb = &b->elems[b->n - 1];
    if (la->name != NULL || lb->name != NULL)
        return (la->name == NULL) - (lb->name == NULL);
    return la->index < lb->index ? 1 : la->index > lb->index ? -1 : 0;
}

bool fakedb__expr_update_removes_only(const fakedb__expr *e)
{
    if (e == NULL || e->kind != FAKEDB_EXPR_UPDATE)
        return false;
    for (int i = 0; i < e->nactions; i++)
        if (e->actions[i].kind != ACT_REMOVE && e->actions[i].kind != ACT_DELETE)
            return false;
    return true;
}

int fakedb__expr_apply_update(const fakedb__expr *e, json_object *item,
                              const char *const *key_names, char err[FAKEDB_EXPR_ERR_MAX])
{
    char scratch[FAKEDB_EXPR_ERR_MAX];
    if (err == NULL)
        err = scratch;
    if (e == NULL || e->kind != FAKEDB_EXPR_UPDATE || item == NULL ||
        !json_object_is_type(item, json_type_object)) {
        fakedb__expr_errf(err, "The expression is not an update");
        return -1;
    }
    for (int i = 0; i < e->nactions; i++) {
        const char *name = e->actions[i].path.elems[0].name;
        for (int k = 0; key_names != NULL && key_names[k] != NULL; k++) {
            if (strcmp(key_names[k], name) == 0) {
                fakedb__expr_errf(err, "One or more parameter values were invalid: Cannot update attribute %s. This attribute is part of the key", name);
                return -1;
            }
        }
    }
    /* first every new value, from the item as it is */
    json_object **values = calloc((size_t)e->nactions + 1, sizeof *values);
    int *appends = calloc((size_t)e->nactions + 1, sizeof *appends);
    int nappends = 0;
    bool *drop = calloc((size_t)e->nactions + 1, sizeof *drop);
    const expr_path **removals = calloc((size_t)e->nactions + 1, sizeof *removals);
    json_object *work = NULL;
    int nremovals = 0, rc = -1;
    if (values == NULL || appends == NULL || drop == NULL || removals == NULL) {
        fakedb__expr_errf(err, "out of memory");
        goto done;
    }
    for (int i = 0; i < e->nactions; i++) {
        const expr_action *a = &e->actions[i];
        json_object *cur = fakedb__expr_resolve(item, &a->path);
        switch (a->kind) {
        case ACT_SET:
            values[i] = eval_value(a->value, item, err);
            if (values[i] == NULL)
                goto done;
            break;
        case ACT_ADD:
            values[i] = eval_add(cur, a->value->value, e->legacy, err);
            if (values[i] == NULL)
                goto done;
            break;
        case ACT_DELETE:
            if (cur == NULL) {
                drop[i] = true; /* nothing to delete from */
                break;
            }
            values[i] = eval_delete(cur, a->value->value, e->legacy, &drop[i], err);
            if (values[i] == NULL && !drop[i])
                goto done;
            if (drop[i])
                removals[nremovals++] = &a->path;
            break;
        case ACT_REMOVE:
            removals[nremovals++] = &a->path;
            break;
        }
    }
    /* then write them into a copy */
    if (json_object_deep_copy(item, &work, NULL) != 0) {
        fakedb__expr_errf(err, "out of memory");
        goto done;
    }
    /* Values that land inside the item first, in the order written; then the list
     * elements past the end of their list, appended in ascending index order (SET
     * a[84] = :x, a[37] = :y appends y, then x, as DynamoDB does). */
    for (int i = 0; i < e->nactions; i++) {
        if (values[i] == NULL)
            continue;
        if (appends_past_end(work, &e->actions[i].path)) {
            appends[nappends++] = i;
            continue;
        }
        json_object *v = values[i];
        values[i] = NULL;
        if (store(work, &e->actions[i].path, v) != 0) {
            fakedb__expr_errf(err, MSG_BAD_PATH);
            goto done;
        }
    }
    for (int i = 1; i < nappends; i++) { /* insertion sort by index, stable */
        int a = appends[i], j = i - 1;
        while (j >= 0 && last_index(&e->actions[appends[j]].path) > last_index(&e->actions[a].path)) {
            appends[j + 1] = appends[j];
            j--;
        }
        appends[j + 1] = a;
    }
    for (int k = 0; k < nappends; k++) {
        int i = appends[k];
        json_object *v = values[i];
        values[i] = NULL;
        if (store(work, &e->actions[i].path, v) != 0) {
            fakedb__expr_errf(err, MSG_BAD_PATH);
            goto done;
        }
    }
    qsort(removals, (size_t)nremovals, sizeof *removals, remove_order);
    for (int i = 0; i < nremovals; i++) {
        if (remove_at(work, removals[i]) != 0) {
            fakedb__expr_errf(err, MSG_BAD_PATH);
            goto done;
        }
    }
    /* finally replace the item's contents */
    {
        char **keys = calloc((size_t)json_object_object_length(item) + 1, sizeof *keys);
        if (keys == NULL) {
            fakedb__expr_errf(err, "out of memory");
            goto done;
        }
        int nk = 0;
        json_object_object_foreach(item, k, v) {
            (void)v;
            keys[nk++] = k;
        }
        for (int i = 0; i < nk; i++)
            json_object_object_del(item, keys[i]);
        free(keys);
        json_object_object_foreach(work, k2, v2) json_object_object_add(item, k2, json_object_get(v2));
    }
    rc = 0;
done:
    for (int i = 0; values != NULL && i < e->nactions; i++)
        json_object_put(values[i]);
    free(values);
    free(appends);
    free(drop);
    free(removals);
    json_object_put(work);
    return rc;
}
