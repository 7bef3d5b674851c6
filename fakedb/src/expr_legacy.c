/* expr_legacy.c: DynamoDB's legacy (non-expression) parameters -- Expected, KeyConditions,
 * QueryFilter, ScanFilter (with ConditionalOperator) and AttributeUpdates -- checked with
 * DynamoDB's rules and texts, then translated into the same tree the expression parser
 * builds, so that one evaluator serves both. The AttributeValues inside them are
 * borrowed from the request and must already be validated (values layer) by the caller.
 *
 * The translation follows the developer guide's table of legacy conditions: EQ is
 * `a = :v`, NE `a <> :v`, NOT_NULL `attribute_exists(a)`, NULL `attribute_not_exists(a)`,
 * CONTAINS `contains(a, :v)`, NOT_CONTAINS `attribute_exists(a) AND NOT contains(a, :v)`
 * (DynamoDB Local, Amazon's own code, finds no absence in a missing attribute), BEGINS_WITH
 * `begins_with(a, :v)`, IN `a IN (...)`, BETWEEN `a BETWEEN :lo AND :hi`; an Expected
 * entry with Value is `a = :v`, with Exists false `attribute_not_exists(a)`. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "expr_internal.h"

#define INVALID "One or more parameter values were invalid: "
/* The ComparisonOperator enum in the order DynamoDB lists it in its message. */
#define OP_SET "[IN, NULL, BETWEEN, LT, NOT_CONTAINS, EQ, GT, NOT_NULL, NE, LE, BEGINS_WITH, GE, CONTAINS]"

typedef enum legacy_op {
    L_EQ, L_NE, L_LE, L_LT, L_GE, L_GT, L_NOT_NULL, L_NULL, L_CONTAINS, L_NOT_CONTAINS,
    L_BEGINS_WITH, L_IN, L_BETWEEN, L_COUNT
} legacy_op;

static const struct {
    const char *name;
    int min, max;      /* number of values in AttributeValueList */
    const char *types; /* value types the operator accepts, space separated; NULL: all */
} k_ops[L_COUNT] = {
    [L_EQ] = {"EQ", 1, 1, NULL},  /* "supported for all data types, including lists and maps" */
    [L_NE] = {"NE", 1, 1, NULL},
    [L_LE] = {"LE", 1, 1, " S N B "},
    [L_LT] = {"LT", 1, 1, " S N B "},
    [L_GE] = {"GE", 1, 1, " S N B "},
    [L_GT] = {"GT", 1, 1, " S N B "},
    [L_NOT_NULL] = {"NOT_NULL", 0, 0, ""},
    [L_NULL] = {"NULL", 0, 0, ""},
    [L_CONTAINS] = {"CONTAINS", 1, 1, " S N B "},
    [L_NOT_CONTAINS] = {"NOT_CONTAINS", 1, 1, " S N B "},
    [L_BEGINS_WITH] = {"BEGINS_WITH", 1, 1, " S B "},
    [L_IN] = {"IN", 1, INT_MAX, " S N B "},
    [L_BETWEEN] = {"BETWEEN", 2, 2, " S N B "},
};

static int op_lookup(const char *s)
{
    for (int i = 0; i < L_COUNT; i++)
        if (strcmp(s, k_ops[i].name) == 0)
            return i;
    return -1;
}

/* ---- building the tree ---- */

static expr_node *node_new(expr_node_kind kind, int op, int nargs)
{
    expr_node *n = calloc(1, sizeof *n);
    if (n == NULL)
        return NULL;
    n->kind = kind;
    n->op = op;
    if (nargs > 0) {
        n->args = calloc((size_t)nargs, sizeof *n->args);
        if (n->args == NULL) {
            free(n);
            return NULL;
        }
    }
    n->nargs = nargs;
    return n;
}

static int path_of(expr_path *p, const char *name)
{
    p->elems = calloc(1, sizeof *p->elems);
    if (p->elems == NULL)
        return -1;
    p->elems[0].name = strdup(name);
    if (p->elems[0].name == NULL) {
        free(p->elems);
        p->elems = NULL;
        return -1;
    }
    p->n = 1;
    return 0;
}

static expr_node *path_node(const char *name)
{
    expr_node *n = node_new(NODE_PATH, 0, 0);
    if (n != NULL && path_of(&n->path, name) != 0) {
        free(n);
        return NULL;
    }
    return n;
}

static expr_node *value_node(json_object *av)
{
    expr_node *n = node_new(NODE_VALUE, 0, 0);
    if (n != NULL)
        n->value = av;
    return n;
}

/* The condition `name OP values`; NULL when out of memory. */
static expr_node *condition_node(const char *name, legacy_op op, json_object *const *vals, int nvals)
{
    static const int cmp[] = {[L_EQ] = CMP_EQ, [L_NE] = CMP_NE, [L_LE] = CMP_LE,
                              [L_LT] = CMP_LT, [L_GE] = CMP_GE, [L_GT] = CMP_GT};
    expr_node *n = NULL;
    switch (op) {
    case L_EQ: case L_NE: case L_LE: case L_LT: case L_GE: case L_GT:
        n = node_new(NODE_CMP, cmp[op], 2);
        break;
    case L_NOT_NULL: n = node_new(NODE_FUNC, FN_ATTRIBUTE_EXISTS, 1); break;
    case L_NULL: n = node_new(NODE_FUNC, FN_ATTRIBUTE_NOT_EXISTS, 1); break;
    case L_CONTAINS: case L_NOT_CONTAINS: n = node_new(NODE_FUNC, FN_CONTAINS, 2); break;
    case L_BEGINS_WITH: n = node_new(NODE_FUNC, FN_BEGINS_WITH, 2); break;
    case L_IN: n = node_new(NODE_IN, 0, 1 + nvals); break;
    case L_BETWEEN: n = node_new(NODE_BETWEEN, 0, 3); break;
    default: return NULL;
    }
    if (n == NULL)
        return NULL;
    bool ok = (n->args[0] = path_node(name)) != NULL;
    for (int i = 0; ok && i + 1 < n->nargs; i++)
        ok = (n->args[i + 1] = value_node(vals[i])) != NULL;
    if (ok && op == L_NOT_CONTAINS) {
        /* the attribute must exist: `attribute_exists(a) AND NOT contains(a, :v)` */
        expr_node *not = node_new(NODE_NOT, 0, 1), *exists = node_new(NODE_FUNC, FN_ATTRIBUTE_EXISTS, 1);
        expr_node *and = node_new(NODE_AND, 0, 2);
        if (not != NULL && exists != NULL && and != NULL && (exists->args[0] = path_node(name)) != NULL) {
            not->args[0] = n;
            and->args[0] = exists;
            and->args[1] = not;
            return and;
        }
        fakedb__expr_node_free(not);
        fakedb__expr_node_free(exists);
        fakedb__expr_node_free(and);
        ok = false;
    }
    if (!ok) {
        fakedb__expr_node_free(n);
        return NULL;
    }
    return n;
}

/* Joins nodes[0..n) with AND or OR as a balanced tree, so that thousands of conditions
 * nest only a few levels (evaluation recurses through the tree). The nodes are taken
 * over; NULL when out of memory, with every node freed. */
static expr_node *join(expr_node **nodes, int n, bool use_or)
{
    if (n == 1)
        return nodes[0];
    int half = n / 2;
    expr_node *left = join(nodes, half, use_or);
    expr_node *right = join(nodes + half, n - half, use_or);
    expr_node *j = left != NULL && right != NULL ? node_new(use_or ? NODE_OR : NODE_AND, 0, 2) : NULL;
    if (j == NULL) {
        fakedb__expr_node_free(left);
        fakedb__expr_node_free(right);
        return NULL;
    }
    j->args[0] = left;
    j->args[1] = right;
    return j;
}

static fakedb__expr *expr_new(fakedb__expr_kind kind)
{
    fakedb__expr *e = calloc(1, sizeof *e);
    if (e != NULL) {
        e->kind = kind;
        e->legacy = true;
    }
    return e;
}

/* ---- checks ---- */

static const char *av_type_key(json_object *av)
{
    const char *t = fakedb__av_type(av, NULL);
    return t != NULL ? t : "";
}

static bool type_in(const char *t, const char *list)
{
    char word[8];
    size_t n = strlen(t);
    if (n == 0 || n + 2 >= sizeof word)
        return false;
    word[0] = ' ';
    memcpy(word + 1, t, n);
    word[n + 1] = ' ';
    word[n + 2] = '\0';
    return strstr(list, word) != NULL;
}

/* The values of one condition: the AttributeValueList (or the single Value) checked for
 * count, one type, the operator's types and the BETWEEN order. */
static int check_values(legacy_op op, json_object *const *vals, int n, char err[FAKEDB_EXPR_ERR_MAX])
{
    if (n < k_ops[op].min || n > k_ops[op].max) {
        fakedb__expr_errf(err, INVALID "Invalid number of argument(s) for the %s ComparisonOperator", k_ops[op].name);
        return -1;
    }
    for (int i = 1; i < n; i++) {
        if (strcmp(av_type_key(vals[i]), av_type_key(vals[0])) != 0) {
            fakedb__expr_errf(err, INVALID "AttributeValues inside AttributeValueList must be of same type");
            return -1;
        }
    }
    for (int i = 0; k_ops[op].types != NULL && i < n; i++) {
        if (!type_in(av_type_key(vals[i]), k_ops[op].types)) {
            fakedb__expr_errf(err, INVALID "ComparisonOperator %s is not valid for %s AttributeValue type",
                              k_ops[op].name, av_type_key(vals[i]));
            return -1;
        }
    }
    if (op == L_BETWEEN && n == 2) { /* n was checked above; said again for the compiler */
        int c = fakedb__av_compare(vals[0], vals[1]);
        if (c != 2 && c > 0) {
            fakedb__expr_errf(err, "The BETWEEN condition was provided a range where the lower bound is greater than the upper bound");
            return -1;
        }
    }
    return 0;
}

/* The AttributeValueList of a condition as an array of at most FAKEDB_EXPR_MAX_IN + 1
 * values; -2 on a JSON shape error. */
static int value_list(json_object *avl, json_object ***out, int *n)
{
    *out = NULL;
    *n = 0;
    if (avl == NULL)
        return 0;
    if (!json_object_is_type(avl, json_type_array))
        return -2;
    size_t len = json_object_array_length(avl);
    if (len == 0)
        return 0;
    if (len > INT_MAX / 2)
        return -2;
    *out = calloc(len, sizeof **out);
    if (*out == NULL)
        return -1;
    for (size_t i = 0; i < len; i++) {
        json_object *v = json_object_array_get_idx(avl, i);
        if (!json_object_is_type(v, json_type_object)) {
            free(*out);
            *out = NULL;
            return -2;
        }
        (*out)[i] = v;
    }
    *n = (int)len;
    return 0;
}

static int oom(fakedb__expr *e, char err[FAKEDB_EXPR_ERR_MAX])
{
    fakedb__expr_free(e);
    fakedb__expr_errf(err, "out of memory");
    return -1;
}

/* ---- conditions ---- */

int fakedb__legacy_conditions(json_object *conds, const char *param, bool use_or,
                              fakedb__expr_kind kind, fakedb__expr **out,
                              char err[FAKEDB_EXPR_ERR_MAX])
{
    *out = NULL;
    if (!json_object_is_type(conds, json_type_object))
        return -2;
    bool expected = strcmp(param, "expected") == 0;
    fakedb__expr *e = expr_new(kind);
    int nconds = 0, cap = json_object_object_length(conds);
    expr_node **nodes = calloc((size_t)cap + 1, sizeof *nodes);
    if (e == NULL || nodes == NULL) {
        free(nodes);
        return oom(e, err);
    }
    json_object_object_foreach(conds, name, c) {
        json_object **vals = NULL;
        int nvals = 0, rc;
        json_object *opv = NULL, *avl = NULL, *value = NULL, *exists = NULL;
        if (!json_object_is_type(c, json_type_object))
            goto shape;
        json_object_object_get_ex(c, "ComparisonOperator", &opv);
        json_object_object_get_ex(c, "AttributeValueList", &avl);
        json_object_object_get_ex(c, "Value", &value);
        json_object_object_get_ex(c, "Exists", &exists);
        if ((opv != NULL && !json_object_is_type(opv, json_type_string)) ||
            (value != NULL && !json_object_is_type(value, json_type_object)) ||
            (exists != NULL && !json_object_is_type(exists, json_type_boolean)))
            goto shape;
        int op = opv != NULL ? op_lookup(json_object_get_string(opv)) : -1;
        if (opv != NULL && op < 0) {
            fakedb__expr_errf(err, "1 validation error detected: Value '%s' at '%s.%s.member.comparisonOperator' failed to satisfy constraint: Member must satisfy enum value set: " OP_SET,
                              json_object_get_string(opv), param, name);
            goto fail;
        }
        rc = value_list(avl, &vals, &nvals);
        if (rc == -2)
            goto shape;
        if (rc != 0) {
            fakedb__expr_errf(err, "out of memory");
            goto fail;
        }
        expr_node *node = NULL;
        if (!expected) {
            if (opv == NULL) {
                fakedb__expr_errf(err, "1 validation error detected: Value null at '%s.%s.member.comparisonOperator' failed to satisfy constraint: Member must not be null", param, name);
                goto fail;
            }
            if (check_values((legacy_op)op, vals, nvals, err) != 0)
                goto fail;
            node = condition_node(name, (legacy_op)op, vals, nvals);
        } else if (avl != NULL && value != NULL) {
            fakedb__expr_errf(err, INVALID "Value and AttributeValueList cannot be used together for Attribute: %s", name);
            goto fail;
        } else if (opv != NULL) {
            if (exists != NULL) {
                fakedb__expr_errf(err, INVALID "Exists and ComparisonOperator cannot be used together for Attribute: %s", name);
                goto fail;
            }
            if (op != L_NULL && op != L_NOT_NULL && avl == NULL && value == NULL) {
                fakedb__expr_errf(err, INVALID "Value or AttributeValueList must be used with ComparisonOperator: %s for Attribute: %s",
                                  k_ops[op].name, name);
                goto fail;
            }
            json_object *one[1] = {value};
            if (value != NULL) {
                if (check_values((legacy_op)op, one, 1, err) != 0)
                    goto fail;
                node = condition_node(name, (legacy_op)op, one, 1);
            } else {
                if (check_values((legacy_op)op, vals, nvals, err) != 0)
                    goto fail;
                node = condition_node(name, (legacy_op)op, vals, nvals);
            }
        } else if (avl != NULL) {
            fakedb__expr_errf(err, INVALID "AttributeValueList can only be used with a ComparisonOperator for Attribute: %s", name);
            goto fail;
        } else {
            bool want = exists == NULL || json_object_get_boolean(exists);
            if (want && value == NULL) {
                fakedb__expr_errf(err, INVALID "Value must be provided when Exists is %s for Attribute: %s",
                                  exists == NULL ? "null" : "true", name);
                goto fail;
            }
            if (!want && value != NULL) {
                fakedb__expr_errf(err, INVALID "Value cannot be used when Exists is false for Attribute: %s", name);
                goto fail;
            }
            json_object *one[1] = {value};
            node = want ? condition_node(name, L_EQ, one, 1) : condition_node(name, L_NULL, NULL, 0);
        }
        if (node == NULL) {
            fakedb__expr_errf(err, "out of memory");
            goto fail;
        }
        nodes[nconds++] = node;
        free(vals);
        continue;
    fail:
        free(vals);
        rc = -1;
        goto out;
    shape:
        rc = -2;
    out:
        for (int i = 0; i < nconds; i++)
            fakedb__expr_node_free(nodes[i]);
        free(nodes);
        fakedb__expr_free(e);
        return rc;
    }
    if (nconds == 0) { /* an empty map: no condition */
        free(nodes);
        fakedb__expr_free(e);
        return 0;
    }
    e->cond = join(nodes, nconds, use_or);
    free(nodes);
    if (e->cond == NULL)
        return oom(e, err);
    *out = e;
    return 0;
}

/* The operator of the condition on name in a KeyConditions map, or -1. */
static int cond_op(json_object *kc, const char *name, json_object **avl)
{
    json_object *c = NULL, *opv = NULL;
    *avl = NULL;
    if (!json_object_object_get_ex(kc, name, &c) || !json_object_is_type(c, json_type_object))
        return -1;
    json_object_object_get_ex(c, "AttributeValueList", avl);
    if (!json_object_object_get_ex(c, "ComparisonOperator", &opv))
        return -1;
    return op_lookup(json_object_get_string(opv));
}

int fakedb__legacy_key_schema(json_object *kc, const char *pk_name, char pk_type,
                              const char *sk_name, char sk_type, char err[FAKEDB_EXPR_ERR_MAX])
{
    int count = json_object_object_length(kc);
    const char *names[2] = {pk_name, sk_name};
    char types[2] = {pk_type, sk_type};
    for (int k = 0; k < 2 && names[k] != NULL; k++) {
        bool hash = k == 0;
        if (hash && sk_name == NULL && count > 1) {
            fakedb__expr_errf(err, "Query key condition not supported");
            return -1;
        }
        json_object *avl;
        if (!json_object_object_get_ex(kc, names[k], NULL)) {
            if (hash || count > 1) {
                fakedb__expr_errf(err, "Query condition missed key schema element: %s", names[k]);
                return -1;
            }
            continue;
        }
        int op = cond_op(kc, names[k], &avl);
        if (op == L_NULL || op == L_NOT_NULL || op == L_NE || op == L_CONTAINS ||
            op == L_NOT_CONTAINS || op == L_IN) {
            fakedb__expr_errf(err, "Attempted conditional constraint is not an indexable operation");
            return -1;
        }
        for (size_t i = 0; avl != NULL && i < json_object_array_length(avl); i++) {
            const char *t = av_type_key(json_object_array_get_idx(avl, i));
            if (t[0] != types[k] || t[1] != '\0') {
                fakedb__expr_errf(err, INVALID "Condition parameter type does not match schema type");
                return -1;
            }
        }
        if (hash && op != L_EQ) {
            fakedb__expr_errf(err, "Query key condition not supported");
            return -1;
        }
    }
    if (count > (sk_name != NULL ? 2 : 1)) {
        fakedb__expr_errf(err, "Query key condition not supported");
        return -1;
    }
    return 0;
}

/* ---- AttributeUpdates ---- */

int fakedb__legacy_updates(json_object *updates, fakedb__expr **out, char err[FAKEDB_EXPR_ERR_MAX])
{
    *out = NULL;
    if (!json_object_is_type(updates, json_type_object))
        return -2;
    fakedb__expr *e = expr_new(FAKEDB_EXPR_UPDATE);
    size_t cap = (size_t)json_object_object_length(updates);
    if (e == NULL)
        return oom(NULL, err);
    e->actions = calloc(cap + 1, sizeof *e->actions);
    e->targets = calloc(cap + 1, sizeof *e->targets);
    if (e->actions == NULL || e->targets == NULL)
        return oom(e, err);
    int nt = 0;
    json_object_object_foreach(updates, name, u) {
        if (u == NULL)
            continue; /* a null entry is skipped, as DynamoDB does */
        if (!json_object_is_type(u, json_type_object)) {
            fakedb__expr_free(e);
            return -2;
        }
        json_object *actv = NULL, *value = NULL;
        json_object_object_get_ex(u, "Action", &actv);
        json_object_object_get_ex(u, "Value", &value);
        if ((actv != NULL && !json_object_is_type(actv, json_type_string)) ||
            (value != NULL && !json_object_is_type(value, json_type_object))) {
            fakedb__expr_free(e);
            return -2;
        }
        const char *action = actv != NULL ? json_object_get_string(actv) : "PUT";
        expr_action_kind kind;
        if (strcmp(action, "PUT") == 0) {
            kind = ACT_SET;
        } else if (strcmp(action, "ADD") == 0) {
            kind = ACT_ADD;
        } else if (strcmp(action, "DELETE") == 0) {
            kind = value != NULL ? ACT_DELETE : ACT_REMOVE;
        } else {
            fakedb__expr_errf(err, "1 validation error detected: Value '%s' at 'attributeUpdates.%s.member.action' failed to satisfy constraint: Member must satisfy enum value set: [ADD, PUT, DELETE]",
                              action, name);
            fakedb__expr_free(e);
            return -1;
        }
        if (value == NULL && kind != ACT_REMOVE) {
            fakedb__expr_errf(err, INVALID "Only DELETE action is allowed when no attribute value is specified");
            fakedb__expr_free(e);
            return -1;
        }
        const char *t = value != NULL ? av_type_key(value) : "";
        if (kind == ACT_DELETE && !type_in(t, " SS NS BS ")) {
            fakedb__expr_errf(err, INVALID "DELETE action with value is not supported for the type %s", t);
            fakedb__expr_free(e);
            return -1;
        }
        if (kind == ACT_ADD && !type_in(t, " N SS NS BS L ")) {
            fakedb__expr_errf(err, INVALID "ADD action is not supported for the type %s", t);
            fakedb__expr_free(e);
            return -1;
        }
        expr_action *a = &e->actions[e->nactions];
        a->kind = kind;
        if (path_of(&a->path, name) != 0)
            return oom(e, err);
        e->nactions++;
        if (value != NULL && (a->value = value_node(value)) == NULL)
            return oom(e, err);
        if ((e->targets[nt] = strdup(name)) == NULL)
            return oom(e, err);
        nt++;
    }
    if (e->nactions == 0) { /* an empty map: no update, as without AttributeUpdates */
        fakedb__expr_free(e);
        return 0;
    }
    *out = e;
    return 0;
}
