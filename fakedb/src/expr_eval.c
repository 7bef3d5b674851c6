/* expr_eval.c: evaluates parsed conditions and filters against items in DynamoDB JSON,
 * compares AttributeValues as DynamoDB does (S and B by bytes, N as exact decimals),
 * builds projections, resolves key conditions against a key schema and sizes items. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "decimal.h"
#include "expr_internal.h"

const char *fakedb__av_type(json_object *av, json_object **payload)
{
    if (payload != NULL)
        *payload = NULL;
    if (av == NULL || !json_object_is_type(av, json_type_object) ||
        json_object_object_length(av) != 1)
        return NULL;
    json_object_object_foreach(av, k, v) {
        if (payload != NULL)
            *payload = v;
        return k;
    }
    return NULL;
}

/* ---- binary values: base64 in JSON, compared by their bytes ---- */

/* Decodes into a malloc'd buffer (never NULL on success); -1 on bad input. */
static int b64_decode(json_object *s, unsigned char **out, size_t *out_len)
{
    return dl__base64_decode(json_object_get_string(s), (size_t)json_object_get_string_len(s),
                             out, out_len) == DL_B64_OK ? 0 : -1;
}

static int bytes_cmp(const unsigned char *a, size_t na, const unsigned char *b, size_t nb)
{
    size_t n = na < nb ? na : nb;
    int c = n > 0 ? memcmp(a, b, n) : 0;
    if (c != 0)
        return c < 0 ? -1 : 1;
    return na < nb ? -1 : na > nb ? 1 : 0;
}

static int binary_cmp(json_object *a, json_object *b)
{
    unsigned char *x = NULL, *y = NULL;
    size_t nx = 0, ny = 0;
    if (b64_decode(a, &x, &nx) != 0 || b64_decode(b, &y, &ny) != 0) {
        free(x);
        return 2;
    }
    int c = bytes_cmp(x, nx, y, ny);
    free(x);
    free(y);
    return c;
}

static int number_cmp(json_object *a, json_object *b)
{
    dl_decimal x, y;
    if (dl__decimal_parse(json_object_get_string(a), (size_t)json_object_get_string_len(a), &x) != DL_DEC_OK ||
        dl__decimal_parse(json_object_get_string(b), (size_t)json_object_get_string_len(b), &y) != DL_DEC_OK)
        return 2;
    return dl__decimal_cmp(&x, &y);
}

static int string_cmp(json_object *a, json_object *b)
{
    return bytes_cmp((const unsigned char *)json_object_get_string(a),
                     (size_t)json_object_get_string_len(a),
                     (const unsigned char *)json_object_get_string(b),
                     (size_t)json_object_get_string_len(b));
}

static bool is_string(json_object *o)
{
    return o != NULL && json_object_is_type(o, json_type_string);
}

bool fakedb__expr_set_elem_equal(char t, json_object *a, json_object *b)
{
    if (!is_string(a) || !is_string(b))
        return false;
    switch (t) {
    case 'N': return number_cmp(a, b) == 0;
    case 'B': return binary_cmp(a, b) == 0;
    default: return string_cmp(a, b) == 0;
    }
}

int fakedb__av_compare(json_object *a, json_object *b)
{
    json_object *pa, *pb;
    const char *ta = fakedb__av_type(a, &pa), *tb = fakedb__av_type(b, &pb);
    if (ta == NULL || tb == NULL || strcmp(ta, tb) != 0 || !is_string(pa) || !is_string(pb))
        return 2;
    if (strcmp(ta, "S") == 0)
        return string_cmp(pa, pb);
    if (strcmp(ta, "N") == 0)
        return number_cmp(pa, pb);
    if (strcmp(ta, "B") == 0)
        return binary_cmp(pa, pb);
    return 2;
}

static bool set_contains(char t, json_object *set, json_object *elem)
{
    size_t n = json_object_array_length(set);
    for (size_t i = 0; i < n; i++)
        if (fakedb__expr_set_elem_equal(t, json_object_array_get_idx(set, i), elem))
            return true;
    return false;
}

bool fakedb__av_equal(json_object *a, json_object *b)
{
    json_object *pa, *pb;
    const char *ta = fakedb__av_type(a, &pa), *tb = fakedb__av_type(b, &pb);
    if (ta == NULL || tb == NULL || strcmp(ta, tb) != 0)
        return false;
    if (strcmp(ta, "S") == 0 || strcmp(ta, "N") == 0 || strcmp(ta, "B") == 0)
        return fakedb__av_compare(a, b) == 0;
    if (strcmp(ta, "BOOL") == 0 || strcmp(ta, "NULL") == 0)
        return json_object_get_boolean(pa) == json_object_get_boolean(pb);
    if (strcmp(ta, "SS") == 0 || strcmp(ta, "NS") == 0 || strcmp(ta, "BS") == 0) {
        if (!json_object_is_type(pa, json_type_array) || !json_object_is_type(pb, json_type_array))
            return false;
        size_t na = json_object_array_length(pa), nb = json_object_array_length(pb);
        if (na != nb)
            return false;
        for (size_t i = 0; i < na; i++)
            if (!set_contains(ta[0], pb, json_object_array_get_idx(pa, i)))
                return false;
        return true;
    }
    if (strcmp(ta, "L") == 0) {
        if (!json_object_is_type(pa, json_type_array) || !json_object_is_type(pb, json_type_array))
            return false;
        size_t n = json_object_array_length(pa);
        if (n != json_object_array_length(pb))
            return false;
        for (size_t i = 0; i < n; i++)
            if (!fakedb__av_equal(json_object_array_get_idx(pa, i), json_object_array_get_idx(pb, i)))
                return false;
        return true;
    }
    if (strcmp(ta, "M") == 0) {
        if (!json_object_is_type(pa, json_type_object) || !json_object_is_type(pb, json_type_object) ||
            json_object_object_length(pa) != json_object_object_length(pb))
            return false;
        json_object_object_foreach(pa, k, v) {
            json_object *w = NULL;
            if (!json_object_object_get_ex(pb, k, &w) || !fakedb__av_equal(v, w))
                return false;
        }
        return true;
    }
    return false;
}

/* ---- paths and operands ---- */

json_object *fakedb__expr_resolve(json_object *item, const expr_path *p)
{
    if (item == NULL || p->n == 0 || p->elems[0].name == NULL)
        return NULL;
    json_object *cur = NULL;
    if (!json_object_object_get_ex(item, p->elems[0].name, &cur))
        return NULL;
    for (int i = 1; i < p->n && cur != NULL; i++) {
        json_object *payload;
        const char *t = fakedb__av_type(cur, &payload);
        if (t == NULL)
            return NULL;
        if (p->elems[i].name != NULL) {
            if (strcmp(t, "M") != 0 || !json_object_is_type(payload, json_type_object) ||
                !json_object_object_get_ex(payload, p->elems[i].name, &cur))
                return NULL;
        } else {
            if (strcmp(t, "L") != 0 || !json_object_is_type(payload, json_type_array) ||
                (size_t)p->elems[i].index >= json_object_array_length(payload))
                return NULL;
            cur = json_object_array_get_idx(payload, (size_t)p->elems[i].index);
        }
    }
    return cur;
}

static size_t utf8_chars(const char *s, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80)
            n++;
    return n;
}

/* size(): the number DynamoDB reports, or -1 when the type has no size. */
static long av_size(json_object *av)
{
    json_object *payload;
    const char *t = fakedb__av_type(av, &payload);
    if (t == NULL)
        return -1;
    if (strcmp(t, "S") == 0 && is_string(payload))
        return (long)utf8_chars(json_object_get_string(payload),
                                (size_t)json_object_get_string_len(payload));
    if (strcmp(t, "B") == 0 && is_string(payload)) {
        unsigned char *bytes;
        size_t n;
        if (b64_decode(payload, &bytes, &n) != 0)
            return -1;
        free(bytes);
        return (long)n;
    }
    if ((strcmp(t, "SS") == 0 || strcmp(t, "NS") == 0 || strcmp(t, "BS") == 0 ||
         strcmp(t, "L") == 0) && json_object_is_type(payload, json_type_array))
        return (long)json_object_array_length(payload);
    if (strcmp(t, "M") == 0 && json_object_is_type(payload, json_type_object))
        return json_object_object_length(payload);
    return -1;
}

static json_object *number_av(long v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%ld", v);
    json_object *av = json_object_new_object();
    if (av != NULL)
        json_object_object_add(av, "N", json_object_new_string(buf));
    return av;
}

json_object *fakedb__expr_operand(const expr_node *n, json_object *item, bool *owned)
{
    *owned = false;
    switch (n->kind) {
    case NODE_PATH:
        return fakedb__expr_resolve(item, &n->path);
    case NODE_VALUE:
        return n->value;
    case NODE_FUNC:
        if (n->op == FN_SIZE && n->nargs == 1) {
            bool inner_owned;
            json_object *v = fakedb__expr_operand(n->args[0], item, &inner_owned);
            long size = v != NULL ? av_size(v) : -1;
            if (inner_owned)
                json_object_put(v);
            if (size < 0)
                return NULL;
            *owned = true;
            return number_av(size);
        }
        return NULL;
    default:
        return NULL;
    }
}

/* ---- conditions ---- */

static bool begins_with(json_object *a, json_object *b)
{
    json_object *pa, *pb;
    const char *ta = fakedb__av_type(a, &pa), *tb = fakedb__av_type(b, &pb);
    if (ta == NULL || tb == NULL || strcmp(ta, tb) != 0 || !is_string(pa) || !is_string(pb))
        return false;
    if (strcmp(ta, "S") == 0) {
        size_t na = (size_t)json_object_get_string_len(pa), nb = (size_t)json_object_get_string_len(pb);
        return nb <= na && memcmp(json_object_get_string(pa), json_object_get_string(pb), nb) == 0;
    }
    if (strcmp(ta, "B") == 0) {
        unsigned char *x = NULL, *y = NULL;
        size_t nx, ny;
        bool r = false;
        if (b64_decode(pa, &x, &nx) == 0 && b64_decode(pb, &y, &ny) == 0)
            r = ny <= nx && (ny == 0 || memcmp(x, y, ny) == 0);
        free(x);
        free(y);
        return r;
    }
    return false;
}

static bool contains(json_object *a, json_object *b)
{
    json_object *pa, *pb;
    const char *ta = fakedb__av_type(a, &pa), *tb = fakedb__av_type(b, &pb);
    if (ta == NULL || tb == NULL)
        return false;
    if (strcmp(ta, "S") == 0 && strcmp(tb, "S") == 0 && is_string(pa) && is_string(pb))
        return memmem(json_object_get_string(pa), (size_t)json_object_get_string_len(pa),
                      json_object_get_string(pb), (size_t)json_object_get_string_len(pb)) != NULL;
    if (strcmp(ta, "B") == 0 && strcmp(tb, "B") == 0 && is_string(pa) && is_string(pb)) {
        unsigned char *x = NULL, *y = NULL;
        size_t nx, ny;
        bool r = false;
        if (b64_decode(pa, &x, &nx) == 0 && b64_decode(pb, &y, &ny) == 0)
            r = ny == 0 || memmem(x, nx, y, ny) != NULL;
        free(x);
        free(y);
        return r;
    }
    if ((strcmp(ta, "SS") == 0 || strcmp(ta, "NS") == 0 || strcmp(ta, "BS") == 0) &&
        json_object_is_type(pa, json_type_array) && tb[1] == '\0' && tb[0] == ta[0])
        return set_contains(ta[0], pa, pb);
    if (strcmp(ta, "L") == 0 && json_object_is_type(pa, json_type_array)) {
        size_t n = json_object_array_length(pa);
        for (size_t i = 0; i < n; i++)
            if (fakedb__av_equal(json_object_array_get_idx(pa, i), b))
                return true;
    }
    return false;
}

static bool eval_node(const expr_node *n, json_object *item);

/* Evaluates the operands of n into vals (owned flags alongside); returns how many. */
static void operands(const expr_node *n, json_object *item, json_object **vals, bool *owned)
{
    for (int i = 0; i < n->nargs; i++)
        vals[i] = fakedb__expr_operand(n->args[i], item, &owned[i]);
}

static void release(json_object **vals, const bool *owned, int n)
{
    for (int i = 0; i < n; i++)
        if (owned[i])
            json_object_put(vals[i]);
}

static bool eval_compare(const expr_node *n, json_object *item)
{
    json_object *v[2];
    bool owned[2];
    operands(n, item, v, owned);
    bool r = false;
    if (v[0] == NULL || v[1] == NULL) {
        r = n->op == CMP_NE;
    } else if (n->op == CMP_EQ || n->op == CMP_NE) {
        r = fakedb__av_equal(v[0], v[1]) == (n->op == CMP_EQ);
    } else {
        int c = fakedb__av_compare(v[0], v[1]);
        if (c != 2) {
            switch (n->op) {
            case CMP_LT: r = c < 0; break;
            case CMP_LE: r = c <= 0; break;
            case CMP_GT: r = c > 0; break;
            default: r = c >= 0; break;
            }
        }
    }
    release(v, owned, 2);
    return r;
}

static bool eval_between(const expr_node *n, json_object *item)
{
    json_object *v[3];
    bool owned[3];
    operands(n, item, v, owned);
    bool r = false;
    if (v[0] != NULL && v[1] != NULL && v[2] != NULL) {
        int lo = fakedb__av_compare(v[0], v[1]), hi = fakedb__av_compare(v[0], v[2]);
        r = lo != 2 && hi != 2 && lo >= 0 && hi <= 0;
    }
    release(v, owned, 3);
    return r;
}

static bool eval_in(const expr_node *n, json_object *item)
{
    bool owned0, r = false;
    json_object *v0 = fakedb__expr_operand(n->args[0], item, &owned0);
    for (int i = 1; v0 != NULL && i < n->nargs && !r; i++) {
        bool owned;
        json_object *v = fakedb__expr_operand(n->args[i], item, &owned);
        r = v != NULL && fakedb__av_equal(v0, v);
        if (owned)
            json_object_put(v);
    }
    if (owned0)
        json_object_put(v0);
    return r;
}

static bool eval_function(const expr_node *n, json_object *item)
{
    json_object *v[2] = {NULL, NULL};
    bool owned[2] = {false, false};
    if (n->nargs > 2)
        return false;
    operands(n, item, v, owned);
    bool r = false;
    switch (n->op) {
    case FN_ATTRIBUTE_EXISTS: r = v[0] != NULL; break;
    case FN_ATTRIBUTE_NOT_EXISTS: r = v[0] == NULL; break;
    case FN_ATTRIBUTE_TYPE:
        if (v[0] != NULL && v[1] != NULL) {
            json_object *payload;
            const char *t = fakedb__av_type(v[0], NULL);
            const char *want = fakedb__av_type(v[1], &payload);
            r = t != NULL && want != NULL && strcmp(want, "S") == 0 &&
                strcmp(t, json_object_get_string(payload)) == 0;
        }
        break;
    case FN_BEGINS_WITH: r = v[0] != NULL && v[1] != NULL && begins_with(v[0], v[1]); break;
    case FN_CONTAINS: r = v[0] != NULL && v[1] != NULL && contains(v[0], v[1]); break;
    default: break;
    }
    release(v, owned, n->nargs);
    return r;
}

static bool eval_node(const expr_node *n, json_object *item)
{
    switch (n->kind) {
    case NODE_AND: return eval_node(n->args[0], item) && eval_node(n->args[1], item);
    case NODE_OR: return eval_node(n->args[0], item) || eval_node(n->args[1], item);
    case NODE_NOT: return !eval_node(n->args[0], item);
    case NODE_CMP: return eval_compare(n, item);
    case NODE_BETWEEN: return eval_between(n, item);
    case NODE_IN: return eval_in(n, item);
    case NODE_FUNC: return eval_function(n, item);
    default: return false;
    }
}

int fakedb__expr_eval(const fakedb__expr *e, json_object *item, bool *result,
                      char err[FAKEDB_EXPR_ERR_MAX])
{
    if (e == NULL || e->cond == NULL) {
        fakedb__expr_errf(err, "The expression is not a condition");
        return -1;
    }
    *result = eval_node(e->cond, item);
    return 0;
}

/* ---- projection ---- */

static json_object *project_level(json_object *container, bool is_list, const expr_path *const *paths,
                                  int n, int depth);

/* The projection of av for the paths that pass through it (each longer than depth). */
static json_object *project_av(json_object *av, const expr_path *const *paths, int n, int depth)
{
    for (int i = 0; i < n; i++) {
        if (paths[i]->n == depth) {
            json_object *copy = NULL;
            if (json_object_deep_copy(av, &copy, NULL) != 0)
                return NULL;
            return copy;
        }
    }
    json_object *payload;
    const char *t = fakedb__av_type(av, &payload);
    if (t == NULL)
        return NULL;
    bool is_list = strcmp(t, "L") == 0 && json_object_is_type(payload, json_type_array);
    bool is_map = strcmp(t, "M") == 0 && json_object_is_type(payload, json_type_object);
    if (!is_list && !is_map)
        return NULL;
    json_object *inner = project_level(payload, is_list, paths, n, depth);
    if (inner == NULL)
        return NULL;
    json_object *out = json_object_new_object();
    if (out == NULL) {
        json_object_put(inner);
        return NULL;
    }
    json_object_object_add(out, is_list ? "L" : "M", inner);
    return out;
}

/* The projected contents of a map payload (or the item) or a list payload, or NULL when
 * nothing projected exists. */
static json_object *project_level(json_object *container, bool is_list, const expr_path *const *paths,
                                  int n, int depth)
{
    const expr_path **sub = calloc((size_t)n + 1, sizeof *sub);
    if (sub == NULL)
        return NULL;
    json_object *out = is_list ? json_object_new_array() : json_object_new_object();
    bool *done = calloc((size_t)n + 1, sizeof *done);
    int produced = 0;
    for (;;) {
        /* the next group: the unprocessed path with the smallest index, or the first name */
        int lead = -1;
        for (int i = 0; i < n; i++) {
            if (done[i])
                continue;
            const expr_path_elem *el = &paths[i]->elems[depth];
            if (is_list != (el->name == NULL)) {
                done[i] = true;
                continue;
            }
            if (lead < 0 || (is_list && el->index < paths[lead]->elems[depth].index))
                lead = i;
        }
        if (lead < 0 || out == NULL)
            break;
        const expr_path_elem *key = &paths[lead]->elems[depth];
        int m = 0;
        for (int i = 0; i < n; i++) {
            if (done[i])
                continue;
            const expr_path_elem *el = &paths[i]->elems[depth];
            bool same = is_list ? el->index == key->index : strcmp(el->name, key->name) == 0;
            if (same) {
                sub[m++] = paths[i];
                done[i] = true;
            }
        }
        json_object *child = NULL;
        if (is_list) {
            if ((size_t)key->index < json_object_array_length(container))
                child = json_object_array_get_idx(container, (size_t)key->index);
        } else {
            json_object_object_get_ex(container, key->name, &child);
        }
        if (child == NULL)
            continue;
        json_object *projected = project_av(child, sub, m, depth + 1);
        if (projected == NULL)
            continue;
        if (is_list)
            json_object_array_add(out, projected);
        else
            json_object_object_add(out, key->name, projected);
        produced++;
    }
    free(sub);
    free(done);
    if (produced == 0 && depth > 0) {
        json_object_put(out);
        return NULL;
    }
    return out;
}

const char *fakedb__expr_projection_name(const fakedb__expr *e, int i)
{
    if (e == NULL || e->kind != FAKEDB_EXPR_PROJECTION || i < 0 || i >= e->npaths || e->paths[i].n < 1)
        return NULL;
    return e->paths[i].elems[0].name;
}

json_object *fakedb__expr_project(const fakedb__expr *e, json_object *item)
{
    if (e == NULL || e->kind != FAKEDB_EXPR_PROJECTION || item == NULL ||
        !json_object_is_type(item, json_type_object))
        return json_object_new_object();
    const expr_path **paths = calloc((size_t)e->npaths + 1, sizeof *paths);
    if (paths == NULL)
        return NULL;
    for (int i = 0; i < e->npaths; i++)
        paths[i] = &e->paths[i];
    json_object *out = project_level(item, false, paths, e->npaths, 0);
    free(paths);
    return out;
}

json_object *fakedb__expr_update_project(const fakedb__expr *e, json_object *item)
{
    if (e == NULL || e->kind != FAKEDB_EXPR_UPDATE || e->nactions == 0 || item == NULL ||
        !json_object_is_type(item, json_type_object))
        return json_object_new_object();
    const expr_path **paths = calloc((size_t)e->nactions + 1, sizeof *paths);
    if (paths == NULL)
        return NULL;
    for (int i = 0; i < e->nactions; i++)
        paths[i] = &e->actions[i].path;
    json_object *out = project_level(item, false, paths, e->nactions, 0);
    free(paths);
    return out ? out : json_object_new_object();
}

/* ---- key conditions ---- */

static int flatten_and(const expr_node *n, const expr_node **out, int cap, int count)
{
    if (n->kind == NODE_AND) {
        count = flatten_and(n->args[0], out, cap, count);
        return flatten_and(n->args[1], out, cap, count);
    }
    if (count < cap)
        out[count] = n;
    return count + 1;
}

static int flip(int op)
{
    switch (op) {
    case CMP_LT: return CMP_GT;
    case CMP_LE: return CMP_GE;
    case CMP_GT: return CMP_LT;
    case CMP_GE: return CMP_LE;
    default: return op;
    }
}

static const char *node_operator(const expr_node *n)
{
    static const char *const cmp[] = {"=", "<>", "<", "<=", ">", ">="};
    static const char *const fn[] = {"", "attribute_exists", "attribute_not_exists",
                                     "attribute_type", "begins_with", "contains", "size",
                                     "if_not_exists", "list_append"};
    switch (n->kind) {
    case NODE_OR: return "OR";
    case NODE_NOT: return "NOT";
    case NODE_IN: return "IN";
    case NODE_BETWEEN: return "BETWEEN";
    case NODE_CMP: return cmp[n->op];
    case NODE_FUNC: return fn[n->op];
    default: return "?";
    }
}

/* One condition of a key condition: its operator must be one a key takes, with one
 * attribute name (a top-level one) against values. The index of its attribute argument,
 * or -1 with DynamoDB's message. */
static int key_term(const expr_node *c, char err[FAKEDB_EXPR_ERR_MAX])
{
    bool ok_kind = (c->kind == NODE_CMP && c->op != CMP_NE) || c->kind == NODE_BETWEEN ||
                   (c->kind == NODE_FUNC && c->op == FN_BEGINS_WITH);
    if (!ok_kind) {
        fakedb__expr_errf(err, "Invalid operator used in KeyConditionExpression: %s", node_operator(c));
        return -1;
    }
    /* find the key side */
    int key_arg = -1;
    for (int a = 0; a < c->nargs; a++) {
        if (c->args[a]->kind == NODE_FUNC) {
            fakedb__expr_errf(err, "KeyConditionExpressions cannot contain nested operations");
            return -1;
        }
        if (c->args[a]->kind == NODE_PATH) {
            if (key_arg >= 0 || (a > 0 && c->kind != NODE_CMP)) {
                fakedb__expr_errf(err, "Invalid condition in KeyConditionExpression: multiple attribute names used in one condition");
                return -1;
            }
            key_arg = a;
        }
    }
    if (key_arg < 0) {
        fakedb__expr_errf(err, "Invalid condition in KeyConditionExpression: No key attribute specified");
        return -1;
    }
    const expr_path *path = &c->args[key_arg]->path;
    if (path->n != 1) {
        fakedb__expr_errf(err, "Key attributes must be scalars; list random access '[]' and map lookup '.' are not allowed: Key: %s",
                          path->elems[0].name);
        return -1;
    }
    return key_arg;
}

/* Whether the values a condition compares its attribute with are of type `want`. */
static bool key_values_typed(const expr_node *c, int key_arg, char want)
{
    for (int a = 0; a < c->nargs; a++) {
        if (a == key_arg)
            continue;
        const char *t = fakedb__av_type(c->args[a]->value, NULL);
        if (t == NULL || t[1] != '\0' || t[0] != want)
            return false;
    }
    return true;
}

/* The key operator of a condition on a sort key, with its values. */
static fakedb__key_op key_range_op(const expr_node *c, int key_arg, json_object **v1, json_object **v2)
{
    *v2 = NULL;
    if (c->kind == NODE_BETWEEN) {
        *v1 = c->args[1]->value;
        *v2 = c->args[2]->value;
        return FAKEDB_KEY_BETWEEN;
    }
    if (c->kind == NODE_FUNC) {
        *v1 = c->args[1]->value;
        return FAKEDB_KEY_BEGINS_WITH;
    }
    static const fakedb__key_op map[] = {FAKEDB_KEY_EQ, FAKEDB_KEY_NONE, FAKEDB_KEY_LT,
                                         FAKEDB_KEY_LE, FAKEDB_KEY_GT, FAKEDB_KEY_GE};
    *v1 = c->args[1 - key_arg]->value;
    return map[key_arg == 0 ? c->op : flip(c->op)];
}

int fakedb__expr_key_condition(const fakedb__expr *e, const char *pk_name, char pk_type,
                               const char *sk_name, char sk_type, fakedb__key_cond *out,
                               char err[FAKEDB_EXPR_ERR_MAX])
{
    memset(out, 0, sizeof *out);
    if (e == NULL || e->cond == NULL || pk_name == NULL) {
        fakedb__expr_errf(err, "Query key condition not supported");
        return -1;
    }
    const expr_node *conds[3];
    int n = flatten_and(e->cond, conds, 3, 0);
    if (n > 2) {
        fakedb__expr_errf(err, "KeyConditionExpressions must only contain one condition per key");
        return -1;
    }
    bool have_pk = false, have_sk = false, stray = false;
    for (int i = 0; i < n; i++) {
        const expr_node *c = conds[i];
        int key_arg = key_term(c, err);
        if (key_arg < 0)
            return -1;
        const char *name = c->args[key_arg]->path.elems[0].name;
        bool is_pk = strcmp(name, pk_name) == 0;
        bool is_sk = !is_pk && sk_name != NULL && strcmp(name, sk_name) == 0;
        if (!is_pk && !is_sk) {
            /* named once every condition is read: the key element actually missing */
            stray = true;
            continue;
        }
        if ((is_pk && have_pk) || (is_sk && have_sk)) {
            fakedb__expr_errf(err, "KeyConditionExpressions must only contain one condition per key");
            return -1;
        }
        if (!key_values_typed(c, key_arg, is_pk ? pk_type : sk_type)) {
            fakedb__expr_errf(err, "One or more parameter values were invalid: Condition parameter type does not match schema type");
            return -1;
        }
        if (is_pk) {
            if (c->kind != NODE_CMP || c->op != CMP_EQ) {
                fakedb__expr_errf(err, "Query key condition not supported");
                return -1;
            }
            have_pk = true;
            out->pk_value = c->args[1 - key_arg]->value;
            continue;
        }
        have_sk = true;
        if (c->kind == NODE_FUNC && sk_type == 'N') {
            fakedb__expr_errf(err, "Invalid KeyConditionExpression: Incorrect operand type for operator or function; operator or function: begins_with, operand type: N");
            return -1;
        }
        out->sk_op = key_range_op(c, key_arg, &out->sk_value1, &out->sk_value2);
    }
    if (!have_pk) {
        fakedb__expr_errf(err, "Query condition missed key schema element: %s", pk_name);
        return -1;
    }
    if (stray && sk_name != NULL && !have_sk) {
        fakedb__expr_errf(err, "Query condition missed key schema element: %s", sk_name);
        return -1;
    }
    if (stray) { /* every key element is there, and an attribute that is none */
        fakedb__expr_errf(err, "Query key condition not supported");
        return -1;
    }
    return 0;
}

/* The position of name in names (n of them), or -1. */
static int name_at(const char *const *names, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return (int)i;
    return -1;
}

int fakedb__expr_key_conditions(const fakedb__expr *e, const fakedb__key_schema *ks,
                                fakedb__key_conds *out, char err[FAKEDB_EXPR_ERR_MAX])
{
    enum { MAX_CONDS = 2 * FAKEDB_KEY_ATTRS_MAX };
    memset(out, 0, sizeof *out);
    if (e == NULL || e->cond == NULL || ks->n_hash == 0) {
        fakedb__expr_errf(err, "Query key condition not supported");
        return -1;
    }
    const expr_node *conds[MAX_CONDS + 1];
    int n = flatten_and(e->cond, conds, MAX_CONDS + 1, 0);
    if (n > (int)(ks->n_hash + ks->n_range)) {
        fakedb__expr_errf(err, "KeyConditionExpressions must only contain one condition per key");
        return -1;
    }
    bool have_hash[FAKEDB_KEY_ATTRS_MAX] = {false}, have_range[FAKEDB_KEY_ATTRS_MAX] = {false};
    fakedb__key_op ops[FAKEDB_KEY_ATTRS_MAX] = {FAKEDB_KEY_NONE};
    json_object *v2[FAKEDB_KEY_ATTRS_MAX] = {NULL};
    const char *stray = NULL;
    for (int i = 0; i < n; i++) {
        const expr_node *c = conds[i];
        int key_arg = key_term(c, err);
        if (key_arg < 0)
            return -1;
        const char *name = c->args[key_arg]->path.elems[0].name;
        int h = name_at(ks->hash, ks->n_hash, name), r = h < 0 ? name_at(ks->range, ks->n_range, name) : -1;
        if (h < 0 && r < 0) {
            if (stray == NULL)
                stray = name;
            continue;
        }
        if ((h >= 0 && have_hash[h]) || (r >= 0 && have_range[r])) {
            fakedb__expr_errf(err, "KeyConditionExpressions must only contain one condition per key");
            return -1;
        }
        if (!key_values_typed(c, key_arg, h >= 0 ? ks->hash_type[h] : ks->range_type[r])) {
            fakedb__expr_errf(err, "One or more parameter values were invalid: Condition parameter type does not match schema type");
            return -1;
        }
        if (h >= 0) {
            if (c->kind != NODE_CMP || c->op != CMP_EQ) {
                fakedb__expr_errf(err, "Query key condition not supported: the partition key attribute %s must be given by equality (=)", name);
                return -1;
            }
            have_hash[h] = true;
            out->hash_value[h] = c->args[1 - key_arg]->value;
            continue;
        }
        if (c->kind == NODE_FUNC && ks->range_type[r] == 'N') {
            fakedb__expr_errf(err, "Invalid KeyConditionExpression: Incorrect operand type for operator or function; operator or function: begins_with, operand type: N");
            return -1;
        }
        have_range[r] = true;
        ops[r] = key_range_op(c, key_arg, &out->range_value[r], &v2[r]);
    }
    for (size_t i = 0; i < ks->n_hash; i++)
        if (!have_hash[i]) {
            fakedb__expr_errf(err, "Query condition missed key schema element: %s", ks->hash[i]);
            return -1;
        }
    if (stray != NULL) {
        fakedb__expr_errf(err, "Query key condition not supported: %s is not a key attribute of the index", stray);
        return -1;
    }
    /* the sort key attributes given: a leading run, = on each but the last */
    size_t given = 0;
    while (given < ks->n_range && have_range[given])
        given++;
    for (size_t i = given; i < ks->n_range; i++)
        if (have_range[i]) {
            fakedb__expr_errf(err, "Query condition missed key schema element: %s", ks->range[given]);
            return -1;
        }
    for (size_t i = 0; i + 1 < given; i++)
        if (ops[i] != FAKEDB_KEY_EQ) {
            fakedb__expr_errf(err, "Query key condition not supported: the sort key attribute %s has a condition other than equality (=) and is followed by a condition on %s; only the last sort key attribute given may use one",
                              ks->range[i], ks->range[i + 1]);
            return -1;
        }
    out->n_range = given;
    out->last_op = given ? ops[given - 1] : FAKEDB_KEY_NONE;
    out->last_value2 = given ? v2[given - 1] : NULL;
    return 0;
}

/* ---- item size ---- */

static size_t av_bytes(json_object *av)
{
    json_object *payload;
    const char *t = fakedb__av_type(av, &payload);
    if (t == NULL)
        return 0;
    if (strcmp(t, "S") == 0 && is_string(payload))
        return (size_t)json_object_get_string_len(payload);
    if (strcmp(t, "N") == 0 && is_string(payload)) {
        dl_decimal d;
        if (dl__decimal_parse(json_object_get_string(payload),
                              (size_t)json_object_get_string_len(payload), &d) != DL_DEC_OK)
            return (size_t)json_object_get_string_len(payload);
        return (size_t)(d.ndigits + 1) / 2 + 1;
    }
    if (strcmp(t, "B") == 0 && is_string(payload)) {
        size_t len = (size_t)json_object_get_string_len(payload);
        const char *text = json_object_get_string(payload);
        size_t pad = 0;
        while (pad < 2 && len > pad && text[len - 1 - pad] == '=')
            pad++;
        return (len + 3) / 4 * 3 - pad;
    }
    if (strcmp(t, "BOOL") == 0 || strcmp(t, "NULL") == 0)
        return 1;
    size_t total = 3;
    if (json_object_is_type(payload, json_type_array)) {
        size_t n = json_object_array_length(payload);
        bool set = t[1] == 'S';
        if (set)
            total = 0;
        for (size_t i = 0; i < n; i++) {
            json_object *e = json_object_array_get_idx(payload, i);
            if (set) {
                json_object *wrapped = json_object_new_object();
                char type[2] = {t[0], '\0'};
                if (wrapped != NULL) {
                    json_object_object_add(wrapped, type, json_object_get(e));
                    total += av_bytes(wrapped);
                    json_object_put(wrapped);
                }
            } else {
                total += 1 + av_bytes(e);
            }
        }
    } else if (json_object_is_type(payload, json_type_object)) {
        json_object_object_foreach(payload, k, v) total += 1 + strlen(k) + av_bytes(v);
    }
    return total;
}

size_t fakedb__item_size(json_object *item)
{
    size_t total = 0;
    if (item == NULL || !json_object_is_type(item, json_type_object))
        return 0;
    json_object_object_foreach(item, k, v) total += strlen(k) + av_bytes(v);
    return total;
}

static bool node_refers_to(const expr_node *n, const char *name)
{
    if (n == NULL)
        return false;
    if (n->kind == NODE_PATH)
        return n->path.n > 0 && n->path.elems[0].name != NULL && strcmp(n->path.elems[0].name, name) == 0;
    for (int i = 0; i < n->nargs; i++)
        if (node_refers_to(n->args[i], name))
            return true;
    return false;
}

bool fakedb__expr_refers_to(const fakedb__expr *e, const char *name)
{
    return e != NULL && name != NULL && node_refers_to(e->cond, name);
}
