/* legacy_ops.c: the legacy (non-expression) parameters of a request -- Expected,
 * AttributeUpdates, KeyConditions, QueryFilter, ScanFilter, ConditionalOperator and
 * AttributesToGet -- read and checked as DynamoDB does (their AttributeValues, their
 * mixing with expression parameters), then handed to the expression layer
 * (expr_legacy.c), which translates them into expressions. */
#include "ops.h"
#include "expr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int fakedb__legacy_mixing(json_object *req, const char *const *expr_params,
                          const char *const *legacy_params, fakedb__reply *r)
{
    char exprs[256] = "", legacy[256] = "";
    for (size_t i = 0; expr_params[i]; i++)
        if (fakedb__json_get(req, expr_params[i]))
            snprintf(exprs + strlen(exprs), sizeof exprs - strlen(exprs), "%s%s", exprs[0] ? ", " : "", expr_params[i]);
    if (!exprs[0])
        return 0;
    for (size_t i = 0; legacy_params[i]; i++) {
        /* KeyConditions may go with a FilterExpression when there is no
         * KeyConditionExpression (DynamoDB). */
        if (!strcmp(legacy_params[i], "KeyConditions") && !fakedb__json_get(req, "KeyConditionExpression"))
            continue;
        if (fakedb__json_get(req, legacy_params[i]))
            snprintf(legacy + strlen(legacy), sizeof legacy - strlen(legacy), "%s%s", legacy[0] ? ", " : "", legacy_params[i]);
    }
    if (!legacy[0])
        return 0;
    return fakedb__reply_fail_validation(r, "Can not use both expression and non-expression parameters in the same request: Non-expression parameters: {%s} Expression parameters: {%s}",
                                         legacy, exprs);
}

/* Validates every AttributeValue of a legacy map: the Value and AttributeValueList of each
 * entry (one level down). */
static int validate_values(json_object *map, fakedb__reply *r)
{
    if (!json_object_is_type(map, json_type_object))
        return fakedb__reply_fail(r, FDB_E_SERIALIZATION, "Unexpected value type in payload");
    json_object_object_foreach(map, name, entry) {
        (void)name;
        if (!entry)
            continue;
        if (!json_object_is_type(entry, json_type_object))
            return fakedb__reply_fail(r, FDB_E_SERIALIZATION, "Unexpected value type in payload");
        json_object *v = fakedb__json_get(entry, "Value");
        if (v && fakedb__av_validate(v, &r->err))
            return -1;
        json_object *avl = fakedb__json_get(entry, "AttributeValueList");
        if (avl && !json_object_is_type(avl, json_type_array))
            return fakedb__reply_fail(r, FDB_E_SERIALIZATION, "Unexpected value type in payload");
        for (size_t i = 0; avl && i < json_object_array_length(avl); i++)
            if (fakedb__av_validate(json_object_array_get_idx(avl, i), &r->err))
                return -1;
    }
    return 0;
}

static int expr_result(int rc, const char *err, fakedb__reply *r)
{
    if (rc == -2)
        return fakedb__reply_fail(r, FDB_E_SERIALIZATION, "Unexpected value type in payload");
    if (rc)
        return fakedb__reply_fail_validation(r, "%s", err);
    return 0;
}

int fakedb__legacy_condition_param(json_object *req, const char *param, int kind,
                                   bool conditional_operator, struct fakedb__expr **out,
                                   fakedb__reply *r)
{
    char err[FAKEDB_EXPR_ERR_MAX], label[64];
    *out = NULL;
    json_object *conds = fakedb__json_get(req, param);
    bool use_or = false;
    if (conditional_operator) {
        json_object *co = fakedb__json_get(req, "ConditionalOperator");
        if (co && !json_object_is_type(co, json_type_string))
            return fakedb__reply_fail(r, FDB_E_SERIALIZATION, "Unexpected value type in payload");
        const char *s = co ? json_object_get_string(co) : "AND";
        if (strcmp(s, "AND") && strcmp(s, "OR"))
            return fakedb__reply_fail_validation(r, "1 validation error detected: Value '%s' at 'conditionalOperator' failed to satisfy constraint: Member must satisfy enum value set: [OR, AND]", s);
        use_or = !strcmp(s, "OR");
        int n = conds && json_object_is_type(conds, json_type_object) ? json_object_object_length(conds) : 0;
        if (co && n == 0)
            return fakedb__reply_fail_validation(r, "ConditionalOperator cannot be used without Filter or Expected");
        if (co && n == 1)
            return fakedb__reply_fail_validation(r, "ConditionalOperator can only be used when Filter or Expected has two or more elements");
    }
    if (!conds)
        return 0;
    if (validate_values(conds, r))
        return -1;
    snprintf(label, sizeof label, "%c%s", param[0] - 'A' + 'a', param + 1);
    if (expr_result(fakedb__legacy_conditions(conds, label, use_or, (fakedb__expr_kind)kind, out, err), err, r))
        return -1;
    int n = json_object_object_length(conds);
    if (kind == FAKEDB_EXPR_KEY_CONDITION && n != 1 && n != 2)
        return fakedb__reply_fail_validation(r, "Conditions can be of length 1 or 2 only");
    return 0;
}

int fakedb__legacy_update_param(json_object *req, struct fakedb__expr **out, fakedb__reply *r)
{
    char err[FAKEDB_EXPR_ERR_MAX];
    *out = NULL;
    json_object *updates = fakedb__json_get(req, "AttributeUpdates");
    if (!updates)
        return 0;
    if (validate_values(updates, r))
        return -1;
    return expr_result(fakedb__legacy_updates(updates, out, err), err, r);
}

int fakedb__legacy_key_check(json_object *req, const char *pk, char pk_type, const char *sk,
                             char sk_type, fakedb__reply *r)
{
    char err[FAKEDB_EXPR_ERR_MAX];
    json_object *kc = fakedb__json_get(req, "KeyConditions");
    if (kc && fakedb__legacy_key_schema(kc, pk, pk_type, sk, sk_type, err))
        return fakedb__reply_fail_validation(r, "%s", err);
    return 0;
}

typedef struct named { const char *name; size_t at; } named;

static int cmp_named(const void *a, const void *b)
{
    const named *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->at > y->at) - (x->at < y->at);
}

int fakedb__legacy_attrs_to_get(json_object *atg, fakedb__reply *r)
{
    if (!atg)
        return 0;
    if (!json_object_is_type(atg, json_type_array))
        return fakedb__reply_fail(r, FDB_E_SERIALIZATION, "Unexpected value type in payload");
    size_t n = json_object_array_length(atg);
    if (n == 0)
        return fakedb__reply_fail_validation(r, "1 validation error detected: Value '[]' at 'attributesToGet' failed to satisfy constraint: Member must have length greater than or equal to 1");
    for (size_t i = 0; i < n; i++)
        if (!json_object_is_type(json_object_array_get_idx(atg, i), json_type_string))
            return fakedb__reply_fail(r, FDB_E_SERIALIZATION, "Unexpected value type in payload");
    /* DynamoDB names the first name that repeats an earlier one, in request order. */
    named *names = malloc(n * sizeof *names);
    if (!names)
        return fakedb__reply_fail(r, FDB_E_INTERNAL, "Internal server error");
    for (size_t i = 0; i < n; i++)
        names[i] = (named){ json_object_get_string(json_object_array_get_idx(atg, i)), i };
    qsort(names, n, sizeof *names, cmp_named);
    const char *dup = NULL;
    size_t dup_at = n;
    for (size_t i = 1; i < n; i++)
        if (!strcmp(names[i - 1].name, names[i].name) && names[i].at < dup_at) {
            dup = names[i].name;
            dup_at = names[i].at;
        }
    int rc = 0;
    if (dup)
        rc = fakedb__reply_fail_validation(r, "One or more parameter values were invalid: Duplicate value in attribute name: %s", dup);
    free(names);
    return rc;
}
