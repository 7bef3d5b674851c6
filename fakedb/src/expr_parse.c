/* expr_parse.c: parses DynamoDB condition, filter, key condition, projection and update
 * expressions into trees, resolving #names and :values, and reports DynamoDB's
 * validation errors with its message texts: syntax errors first, then the first
 * semantic error in text order. Also holds the request context of names and values. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "decimal.h"
#include "expr_internal.h"

static const char *kind_label(fakedb__expr_kind kind)
{
    switch (kind) {
    case FAKEDB_EXPR_CONDITION: return "ConditionExpression";
    case FAKEDB_EXPR_FILTER: return "FilterExpression";
    case FAKEDB_EXPR_KEY_CONDITION: return "KeyConditionExpression";
    case FAKEDB_EXPR_PROJECTION: return "ProjectionExpression";
    case FAKEDB_EXPR_UPDATE: return "UpdateExpression";
    }
    return "Expression";
}

/* ------------------------------------------------------------------ context */

static bool key_ok(const char *key, char lead)
{
    if (key[0] != lead || key[1] == '\0')
        return false;
    for (const char *c = key + 1; *c != '\0'; c++) {
        bool ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                  (*c >= '0' && *c <= '9') || *c == '_';
        if (!ok)
            return false;
    }
    return true;
}

/* Checks one AttributeValue as DynamoDB does for ExpressionAttributeValues. */
static const char *av_problem(json_object *av, int depth)
{
    static const char *const types[] = {"S", "N", "B", "SS", "NS", "BS", "M", "L", "NULL", "BOOL"};
    if (!json_object_is_type(av, json_type_object) || json_object_object_length(av) == 0)
        return "Supplied AttributeValue is empty, must contain exactly one of the supported datatypes";
    if (json_object_object_length(av) > 1)
        return "Supplied AttributeValue has more than one datatypes set, must contain exactly one of the supported datatypes";
    if (depth > 32)
        return "Nesting Levels have exceeded supported limits";
    json_object *payload = NULL;
    const char *t = fakedb__av_type(av, &payload);
    bool known = false;
    for (size_t i = 0; t != NULL && i < sizeof types / sizeof types[0]; i++)
        known = known || strcmp(t, types[i]) == 0;
    if (!known)
        return "Supplied AttributeValue is empty, must contain exactly one of the supported datatypes";
    if (strcmp(t, "N") == 0) {
        dl_decimal d;
        if (!json_object_is_type(payload, json_type_string))
            return "A value provided cannot be converted into a number";
        switch (dl__decimal_parse(json_object_get_string(payload),
                                  (size_t)json_object_get_string_len(payload), &d)) {
        case DL_DEC_OK: return NULL;
        case DL_DEC_SYNTAX: return "A value provided cannot be converted into a number";
        case DL_DEC_PRECISION: return "DynamoDB only supports precision up to 38 digits";
        case DL_DEC_OVERFLOW:
            return "Number overflow. Attempting to store a number with magnitude larger than supported range";
        case DL_DEC_UNDERFLOW:
            return "Number underflow. Attempting to store a number with magnitude smaller than supported range";
        }
    }
    if (strcmp(t, "S") == 0 || strcmp(t, "B") == 0)
        return json_object_is_type(payload, json_type_string) ? NULL
               : "Supplied AttributeValue is empty, must contain exactly one of the supported datatypes";
    if (strcmp(t, "BOOL") == 0)
        return json_object_is_type(payload, json_type_boolean) ? NULL
               : "Supplied AttributeValue is empty, must contain exactly one of the supported datatypes";
    if (strcmp(t, "NULL") == 0)
        return json_object_is_type(payload, json_type_boolean) && json_object_get_boolean(payload)
               ? NULL : "One or more parameter values were invalid: Null attribute value types must have the value of true";
    if (t[1] == 'S') {
        if (!json_object_is_type(payload, json_type_array))
            return "Supplied AttributeValue is empty, must contain exactly one of the supported datatypes";
        size_t n = json_object_array_length(payload);
        if (n == 0)
            return t[0] == 'S' ? "One or more parameter values were invalid: An string set  may not be empty"
                   : t[0] == 'N' ? "One or more parameter values were invalid: An number set  may not be empty"
                                 : "One or more parameter values were invalid: Binary sets should not be empty";
        for (size_t i = 0; i < n; i++) {
            json_object *e = json_object_array_get_idx(payload, i);
            if (!json_object_is_type(e, json_type_string))
                return "Supplied AttributeValue is empty, must contain exactly one of the supported datatypes";
            if (t[0] == 'N') {
                dl_decimal d;
                if (dl__decimal_parse(json_object_get_string(e),
                                      (size_t)json_object_get_string_len(e), &d) != DL_DEC_OK)
                    return "A value provided cannot be converted into a number";
            }
            for (size_t j = 0; j < i; j++) {
                if (fakedb__expr_set_elem_equal(t[0], e, json_object_array_get_idx(payload, j))) {
                    if (t[0] == 'N')
                        return "Input collection contains duplicates";
                    /* DynamoDB quotes the whole set */
                    static _Thread_local char msg[FAKEDB_EXPR_ERR_MAX / 2];
                    size_t len = (size_t)snprintf(msg, sizeof msg, "One or more parameter values were invalid: Input collection [");
                    for (size_t k = 0; k < n && len < sizeof msg; k++)
                        len += (size_t)snprintf(msg + len, sizeof msg - len, "%s%s", k > 0 ? ", " : "",
                                                json_object_get_string(json_object_array_get_idx(payload, k)));
                    if (len < sizeof msg)
                        snprintf(msg + len, sizeof msg - len, "] contains duplicates");
                    return msg;
                }
            }
        }
        return NULL;
    }
    if (strcmp(t, "L") == 0) {
        if (!json_object_is_type(payload, json_type_array))
            return "Supplied AttributeValue is empty, must contain exactly one of the supported datatypes";
        for (size_t i = 0; i < json_object_array_length(payload); i++) {
            const char *why = av_problem(json_object_array_get_idx(payload, i), depth + 1);
            if (why != NULL)
                return why;
        }
        return NULL;
    }
    /* M */
    if (!json_object_is_type(payload, json_type_object))
        return "Supplied AttributeValue is empty, must contain exactly one of the supported datatypes";
    json_object_object_foreach(payload, k, v) {
        (void)k;
        const char *why = av_problem(v, depth + 1);
        if (why != NULL)
            return why;
    }
    return NULL;
}

static int collect_keys(json_object *map, char ***keys, bool **used, int *count)
{
    int n = map == NULL ? 0 : json_object_object_length(map);
    *keys = calloc((size_t)n + 1, sizeof **keys);
    *used = calloc((size_t)n + 1, sizeof **used);
    if (*keys == NULL || *used == NULL)
        return -1;
    int i = 0;
    if (map != NULL) {
        json_object_object_foreach(map, k, v) {
            (void)v;
            (*keys)[i] = strdup(k);
            if ((*keys)[i] == NULL)
                return -1;
            i++;
        }
    }
    *count = n;
    return 0;
}

fakedb__expr_ctx *fakedb__expr_ctx_new(json_object *names, json_object *values,
                                       char err[FAKEDB_EXPR_ERR_MAX])
{
    if (names != NULL) {
        if (!json_object_is_type(names, json_type_object)) {
            fakedb__expr_errf(err, "ExpressionAttributeNames must be a map");
            return NULL;
        }
        if (json_object_object_length(names) == 0) {
            fakedb__expr_errf(err, "ExpressionAttributeNames must not be empty");
            return NULL;
        }
        json_object_object_foreach(names, k, v) {
            if (!key_ok(k, '#')) {
                fakedb__expr_errf(err, "ExpressionAttributeNames contains invalid key: Syntax error; key: \"%s\"", k);
                return NULL;
            }
            if (!json_object_is_type(v, json_type_string) || json_object_get_string_len(v) == 0) {
                fakedb__expr_errf(err, "ExpressionAttributeNames contains invalid value: Empty attribute name for key %s", k);
                return NULL;
            }
        }
    }
    if (values != NULL) {
        if (!json_object_is_type(values, json_type_object)) {
            fakedb__expr_errf(err, "ExpressionAttributeValues must be a map");
            return NULL;
        }
        if (json_object_object_length(values) == 0) {
            fakedb__expr_errf(err, "ExpressionAttributeValues must not be empty");
            return NULL;
        }
        json_object_object_foreach(values, k, v) {
            if (!key_ok(k, ':')) {
                fakedb__expr_errf(err, "ExpressionAttributeValues contains invalid key: Syntax error; key: \"%s\"", k);
                return NULL;
            }
            const char *why = av_problem(v, 0);
            if (why != NULL) {
                fakedb__expr_errf(err, "ExpressionAttributeValues contains invalid value: %s for key %s", why, k);
                return NULL;
            }
        }
    }
    fakedb__expr_ctx *ctx = calloc(1, sizeof *ctx);
    if (ctx == NULL) {
        fakedb__expr_errf(err, "out of memory");
        return NULL;
    }
    ctx->names = names;
    ctx->values = values;
    if (collect_keys(names, &ctx->name_keys, &ctx->name_used, &ctx->nnames) != 0 ||
        collect_keys(values, &ctx->value_keys, &ctx->value_used, &ctx->nvalues) != 0) {
        fakedb__expr_ctx_free(ctx);
        fakedb__expr_errf(err, "out of memory");
        return NULL;
    }
    return ctx;
}

void fakedb__expr_ctx_free(fakedb__expr_ctx *ctx)
{
    if (ctx == NULL)
        return;
    for (int i = 0; ctx->name_keys != NULL && ctx->name_keys[i] != NULL; i++)
        free(ctx->name_keys[i]);
    for (int i = 0; ctx->value_keys != NULL && ctx->value_keys[i] != NULL; i++)
        free(ctx->value_keys[i]);
    free(ctx->name_keys);
    free(ctx->value_keys);
    free(ctx->name_used);
    free(ctx->value_used);
    free(ctx);
}

static int unused_list(char **keys, const bool *used, int n, char *buf, size_t cap)
{
    size_t len = 0;
    int count = 0;
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (used[i])
            continue;
        int w = snprintf(buf + len, cap - len, "%s%s", count > 0 ? ", " : "", keys[i]);
        if (w > 0 && (size_t)w < cap - len)
            len += (size_t)w;
        count++;
    }
    return count;
}

int fakedb__expr_check_unused(const fakedb__expr_ctx *ctx, char err[FAKEDB_EXPR_ERR_MAX])
{
    char list[FAKEDB_EXPR_ERR_MAX / 2];
    if (ctx == NULL)
        return 0;
    if (unused_list(ctx->name_keys, ctx->name_used, ctx->nnames, list, sizeof list) > 0) {
        fakedb__expr_errf(err, "Value provided in ExpressionAttributeNames unused in expressions: keys: {%s}", list);
        return -1;
    }
    if (unused_list(ctx->value_keys, ctx->value_used, ctx->nvalues, list, sizeof list) > 0) {
        fakedb__expr_errf(err, "Value provided in ExpressionAttributeValues unused in expressions: keys: {%s}", list);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ paths */

void fakedb__expr_path_clear(expr_path *p)
{
    for (int i = 0; i < p->n; i++)
        free(p->elems[i].name);
    free(p->elems);
    p->elems = NULL;
    p->n = 0;
}

void fakedb__expr_path_text(const expr_path *p, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    int w = snprintf(buf, cap, "[");
    if (w > 0 && (size_t)w < cap)
        len = (size_t)w;
    for (int i = 0; i < p->n && len < cap; i++) {
        const char *sep = i > 0 ? ", " : "";
        if (p->elems[i].name != NULL)
            w = snprintf(buf + len, cap - len, "%s%s", sep, p->elems[i].name);
        else
            w = snprintf(buf + len, cap - len, "%s[%ld]", sep, p->elems[i].index);
        if (w > 0 && (size_t)w < cap - len)
            len += (size_t)w;
        else
            return;
    }
    if (len + 1 < cap)
        snprintf(buf + len, cap - len, "]");
}

int fakedb__expr_path_relation(const expr_path *a, const expr_path *b)
{
    int n = a->n < b->n ? a->n : b->n;
    for (int i = 0; i < n; i++) {
        const expr_path_elem *x = &a->elems[i], *y = &b->elems[i];
        if ((x->name == NULL) != (y->name == NULL))
            return 2;
        if (x->name != NULL ? strcmp(x->name, y->name) != 0 : x->index != y->index)
            return -1;
    }
    return a->n == b->n ? 0 : 1;
}

int fakedb__expr_check_paths(const expr_path *const *paths, int n, const char *label,
                             char err[FAKEDB_EXPR_ERR_MAX])
{
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < i; j++) {
            int rel = fakedb__expr_path_relation(paths[j], paths[i]);
            if (rel < 0)
                continue;
            char one[160], two[160];
            fakedb__expr_path_text(paths[j], one, sizeof one);
            fakedb__expr_path_text(paths[i], two, sizeof two);
            fakedb__expr_errf(err, "Invalid %s: Two document paths %s with each other; must remove or rewrite one of these paths; path one: %s, path two: %s",
                              label, rel == 2 ? "conflict" : "overlap", one, two);
            return -1;
        }
    }
    return 0;
}

static bool path_equal(const expr_path *a, const expr_path *b)
{
    return fakedb__expr_path_relation(a, b) == 0;
}

/* ------------------------------------------------------------------ parser */

typedef struct parser {
    fakedb__expr_ctx *ctx;
    fakedb__expr_kind kind;
    const char *text;
    size_t len;
    expr_token *toks;
    int ntoks, pos;
    bool failed;        /* a syntax error (or out of memory) is in err */
    char *err;
    bool sem_failed;    /* first semantic error, reported when the syntax is right */
    char sem[FAKEDB_EXPR_ERR_MAX];
    int operators, depth;
} parser;

static const expr_token *peek(const parser *p)
{
    return &p->toks[p->pos];
}

static const expr_token *peek_at(const parser *p, int ahead)
{
    int i = p->pos + ahead;
    return &p->toks[i < p->ntoks ? i : p->ntoks - 1];
}

static bool tok_word(const parser *p, const expr_token *t, const char *word)
{
    return t->kind == TOK_NAME && strlen(word) == t->len &&
           strncasecmp(p->text + t->start, word, t->len) == 0;
}

static bool is_grammar_word(const parser *p, const expr_token *t)
{
    static const char *const words[] = {"AND", "OR", "NOT", "BETWEEN", "IN",
                                        "SET", "REMOVE", "ADD", "DELETE"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (tok_word(p, t, words[i]))
            return true;
    return false;
}

static void syntax_error(parser *p)
{
    if (p->failed)
        return;
    p->failed = true;
    int i = p->pos;
    const expr_token *t = &p->toks[i];
    size_t start = i > 0 ? p->toks[i - 1].start : t->start;
    size_t end = p->len;
    if (t->kind != TOK_EOF && i + 1 < p->ntoks && p->toks[i + 1].kind != TOK_EOF)
        end = p->toks[i + 1].start + p->toks[i + 1].len;
    if (t->kind == TOK_EOF)
        fakedb__expr_errf(p->err, "Invalid %s: Syntax error; token: \"<EOF>\", near: \"%.*s\"",
                          kind_label(p->kind), (int)(end - start), p->text + start);
    else
        fakedb__expr_errf(p->err, "Invalid %s: Syntax error; token: \"%.*s\", near: \"%.*s\"",
                          kind_label(p->kind), (int)t->len, p->text + t->start,
                          (int)(end - start), p->text + start);
}

static void sem_error(parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sem_error(parser *p, const char *fmt, ...)
{
    if (p->sem_failed)
        return;
    p->sem_failed = true;
    int n = snprintf(p->sem, sizeof p->sem, "Invalid %s: ", kind_label(p->kind));
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->sem + n, sizeof p->sem - (size_t)n, fmt, ap);
    va_end(ap);
}

static void oom(parser *p)
{
    if (!p->failed)
        fakedb__expr_errf(p->err, "out of memory");
    p->failed = true;
}

static bool expect(parser *p, expr_tok_kind kind)
{
    if (p->failed)
        return false;
    if (peek(p)->kind != kind) {
        syntax_error(p);
        return false;
    }
    p->pos++;
    return true;
}

static void count_operator(parser *p)
{
    if (++p->operators == FAKEDB_EXPR_MAX_OPERATORS + 1)
        sem_error(p, "The expression contains too many operators; operator count: %d",
                  FAKEDB_EXPR_MAX_OPERATORS + 1);
}

static expr_node *new_node(parser *p, expr_node_kind kind)
{
    expr_node *n = calloc(1, sizeof *n);
    if (n == NULL)
        oom(p);
    else
        n->kind = kind;
    return n;
}

static bool add_arg(parser *p, expr_node *n, expr_node *arg)
{
    if (arg == NULL)
        return false;
    expr_node **grown = realloc(n->args, ((size_t)n->nargs + 1) * sizeof *grown);
    if (grown == NULL) {
        fakedb__expr_node_free(arg);
        oom(p);
        return false;
    }
    n->args = grown;
    n->args[n->nargs++] = arg;
    return true;
}

void fakedb__expr_node_free(expr_node *n)
{
    if (n == NULL)
        return;
    for (int i = 0; i < n->nargs; i++)
        fakedb__expr_node_free(n->args[i]);
    free(n->args);
    fakedb__expr_path_clear(&n->path);
    free(n);
}

static json_object *lookup_value(parser *p, const expr_token *t)
{
    char key[FAKEDB_EXPR_MAX_BYTES + 1];
    snprintf(key, sizeof key, "%.*s", (int)t->len, p->text + t->start);
    for (int i = 0; i < p->ctx->nvalues; i++) {
        if (strcmp(p->ctx->value_keys[i], key) == 0) {
            p->ctx->value_used[i] = true;
            json_object *v = NULL;
            json_object_object_get_ex(p->ctx->values, key, &v);
            return v;
        }
    }
    sem_error(p, "An expression attribute value used in expression is not defined; attribute value: %s", key);
    return NULL;
}

static char *lookup_name(parser *p, const expr_token *t)
{
    char key[FAKEDB_EXPR_MAX_BYTES + 1];
    snprintf(key, sizeof key, "%.*s", (int)t->len, p->text + t->start);
    for (int i = 0; i < p->ctx->nnames; i++) {
        if (strcmp(p->ctx->name_keys[i], key) == 0) {
            p->ctx->name_used[i] = true;
            json_object *v = NULL;
            json_object_object_get_ex(p->ctx->names, key, &v);
            return strdup(json_object_get_string(v));
        }
    }
    sem_error(p, "An expression attribute name used in the document path is not defined; attribute name: %s", key);
    return strdup(key);
}

static bool path_push(parser *p, expr_path *path, char *name, long index)
{
    expr_path_elem *grown = realloc(path->elems, ((size_t)path->n + 1) * sizeof *grown);
    if (grown == NULL || (name == NULL && index < 0)) {
        if (grown != NULL)
            path->elems = grown;
        free(name);
        oom(p);
        return false;
    }
    path->elems = grown;
    path->elems[path->n].name = name;
    path->elems[path->n].index = index;
    path->n++;
    return true;
}

/* One map key of a path: a bare name or a #name. */
static bool parse_path_name(parser *p, expr_path *path)
{
    const expr_token *t = peek(p);
    char *name;
    if (t->kind == TOK_HASH) {
        name = lookup_name(p, t);
    } else if (t->kind == TOK_NAME && !is_grammar_word(p, t)) {
        if (fakedb__expr_is_reserved(p->text + t->start, t->len))
            sem_error(p, "Attribute name is a reserved keyword; reserved keyword: %.*s",
                      (int)t->len, p->text + t->start);
        name = strndup(p->text + t->start, t->len);
    } else {
        syntax_error(p);
        return false;
    }
    p->pos++;
    if (name == NULL) {
        oom(p);
        return false;
    }
    return path_push(p, path, name, -1);
}

static bool parse_path(parser *p, expr_path *path)
{
    if (!parse_path_name(p, path))
        return false;
    for (;;) {
        const expr_token *t = peek(p);
        if (t->kind == TOK_DOT) {
            p->pos++;
            if (!parse_path_name(p, path))
                return false;
        } else if (t->kind == TOK_LBRACKET) {
            p->pos++;
            const expr_token *num = peek(p);
            if (num->kind != TOK_NUMBER) {
                syntax_error(p);
                return false;
            }
            long index = 0;
            bool too_big = false;
            for (size_t i = 0; i < num->len; i++) {
                index = index * 10 + (p->text[num->start + i] - '0');
                if (index > 2147483647L) {
                    too_big = true;
                    index = 0;
                }
            }
            if (too_big)
                sem_error(p, "List index is not within the allowable range; index: [%.*s]",
                          (int)num->len, p->text + num->start);
            p->pos++;
            if (!expect(p, TOK_RBRACKET))
                return false;
            if (!path_push(p, path, NULL, index))
                return false;
        } else {
            break;
        }
    }
    if (path->n > FAKEDB_EXPR_MAX_DEPTH)
        sem_error(p, "The document path has too many nesting levels; nesting levels: %d", path->n);
    return true;
}

static const char *const func_names[] = {
    [FN_NONE] = "", [FN_ATTRIBUTE_EXISTS] = "attribute_exists",
    [FN_ATTRIBUTE_NOT_EXISTS] = "attribute_not_exists", [FN_ATTRIBUTE_TYPE] = "attribute_type",
    [FN_BEGINS_WITH] = "begins_with", [FN_CONTAINS] = "contains", [FN_SIZE] = "size",
    [FN_IF_NOT_EXISTS] = "if_not_exists", [FN_LIST_APPEND] = "list_append",
};

static const char *value_type(const expr_node *n)
{
    if (n == NULL || n->kind != NODE_VALUE || n->value == NULL)
        return NULL;
    return fakedb__av_type(n->value, NULL);
}

static bool scalar_type(const char *t)
{
    return t != NULL && (strcmp(t, "S") == 0 || strcmp(t, "N") == 0 || strcmp(t, "B") == 0);
}

static void path_text_of(const expr_node *n, char *buf, size_t cap)
{
    fakedb__expr_path_text(&n->path, buf, cap);
}

/* The rules for each function's arguments, checked once the call is parsed. */
static void check_function(parser *p, expr_node *f)
{
    const char *name = func_names[f->op];
    int want = (f->op == FN_ATTRIBUTE_EXISTS || f->op == FN_ATTRIBUTE_NOT_EXISTS ||
                f->op == FN_SIZE) ? 1 : 2;
    if (f->nargs != want) {
        sem_error(p, "Incorrect number of operands for operator or function; operator or function: %s, number of operands: %d",
                  name, f->nargs);
        return;
    }
    expr_node *a0 = f->args[0], *a1 = f->nargs > 1 ? f->args[1] : NULL;
    bool needs_path = f->op == FN_ATTRIBUTE_EXISTS || f->op == FN_ATTRIBUTE_NOT_EXISTS ||
                      f->op == FN_ATTRIBUTE_TYPE || f->op == FN_IF_NOT_EXISTS ||
                      f->op == FN_BEGINS_WITH || f->op == FN_CONTAINS;
    if (needs_path && a0->kind != NODE_PATH) {
        if ((f->op == FN_BEGINS_WITH || f->op == FN_CONTAINS || f->op == FN_ATTRIBUTE_TYPE) &&
            a0->kind == NODE_VALUE) {
            /* DynamoDB accepts a value here (attribute_type(:v, :t) too) and checks its
             * type below */
        } else {
            sem_error(p, "Operator or function requires a document path; operator or function: %s", name);
            return;
        }
    }
    switch (f->op) {
    case FN_ATTRIBUTE_TYPE: {
        const char *t = value_type(a1);
        if (a1->kind != NODE_VALUE) {
            sem_error(p, "Incorrect operand type for operator or function; operator or function: %s, operand type: %s",
                      name, "{NS,INTSET,L,B,FLOAT,S,HD,BS,NULL,DICT,SS,DECIMALSET,DOUBLESET,BOOL,DECIMAL,M,DOUBLE,N,INT,HDS,FS}");
        } else if (t != NULL && strcmp(t, "S") != 0) {
            sem_error(p, "Incorrect operand type for operator or function; operator or function: %s, operand type: %s",
                      name, t);
        } else if (t != NULL) {
            json_object *payload = NULL;
            fakedb__av_type(a1->value, &payload);
            const char *tn = json_object_get_string(payload);
            static const char *const valid[] = {"N", "BS", "L", "B", "NULL", "M", "S", "SS", "NS", "BOOL"};
            bool ok = false;
            for (size_t i = 0; i < sizeof valid / sizeof valid[0]; i++)
                ok = ok || strcmp(tn, valid[i]) == 0;
            if (!ok)
                sem_error(p, "Invalid attribute type name found; type: %s, valid types: {N,BS,L,B,NULL,M,S,SS,NS,BOOL}", tn);
        }
        break;
    }
    case FN_BEGINS_WITH:
        for (int i = 0; i < 2; i++) {
            const char *t = value_type(f->args[i]);
            if (t != NULL && strcmp(t, "S") != 0 && strcmp(t, "B") != 0)
                sem_error(p, "Incorrect operand type for operator or function; operator or function: %s, operand type: %s",
                          name, t);
        }
        break;
    case FN_SIZE: {
        /* size() is a number: size(size(a)) is refused as size of an N */
        const char *t = a0->kind == NODE_FUNC && a0->op == FN_SIZE ? "N" : value_type(a0);
        if (t != NULL && (strcmp(t, "N") == 0 || strcmp(t, "BOOL") == 0 || strcmp(t, "NULL") == 0))
            sem_error(p, "Incorrect operand type for operator or function; operator or function: %s, operand type: %s",
                      name, t);
        break;
    }
    case FN_LIST_APPEND:
        for (int i = 0; i < 2; i++) {
            const char *t = value_type(f->args[i]);
            if (t != NULL && strcmp(t, "L") != 0)
                sem_error(p, "Incorrect operand type for operator or function; operator or function: %s, operand type: %s",
                          name, t);
        }
        break;
    case FN_CONTAINS:
        if (a0->kind == NODE_PATH && a1->kind == NODE_PATH && path_equal(&a0->path, &a1->path)) {
            char text[160];
            path_text_of(a0, text, sizeof text);
            sem_error(p, "The first operand must be distinct from the remaining operands for this operator or function; operator: %s, first operand: %s",
                      name, text);
        }
        break;
    case FN_IF_NOT_EXISTS:
        if (a1->kind == NODE_PATH && path_equal(&a0->path, &a1->path)) {
            char text[160];
            path_text_of(a0, text, sizeof text);
            sem_error(p, "The first operand must be distinct from the remaining operands for this operator or function; operator: %s, first operand: %s",
                      name, text);
        }
        break;
    default:
        break;
    }
}

static expr_node *parse_operand(parser *p, bool in_update);

/* name '(' args ')'; the caller decides whether the function fits where it stands. */
static expr_node *parse_call(parser *p, bool in_update)
{
    const expr_token *t = peek(p);
    expr_node *f = new_node(p, NODE_FUNC);
    if (f == NULL)
        return NULL;
    f->op = FN_NONE;
    for (int i = 1; i < (int)(sizeof func_names / sizeof func_names[0]); i++)
        if (strlen(func_names[i]) == t->len && strncmp(p->text + t->start, func_names[i], t->len) == 0)
            f->op = i;
    if (f->op == FN_NONE)
        sem_error(p, "Invalid function name; function: %.*s", (int)t->len, p->text + t->start);
    else if (in_update != (f->op == FN_IF_NOT_EXISTS || f->op == FN_LIST_APPEND))
        sem_error(p, in_update ? "The function is not allowed in an update expression; function: %s"
                               : "The function is not allowed in a condition expression; function: %s",
                  func_names[f->op]);
    count_operator(p);
    p->pos += 2; /* name and '(' */
    for (;;) {
        if (!add_arg(p, f, parse_operand(p, in_update)))
            break;
        if (peek(p)->kind != TOK_COMMA)
            break;
        p->pos++;
    }
    if (!expect(p, TOK_RPAREN)) {
        fakedb__expr_node_free(f);
        return NULL;
    }
    if (f->op != FN_NONE)
        check_function(p, f);
    /* DynamoDB nests if_not_exists in a function, never list_append */
    for (int i = 0; i < f->nargs && !p->failed; i++)
        if (f->args[i]->kind == NODE_FUNC && f->args[i]->op == FN_LIST_APPEND)
            sem_error(p, "The function is not allowed to be used this way in an expression; function: %s",
                      func_names[FN_LIST_APPEND]);
    return f;
}

static bool is_condition_function(int op)
{
    return op == FN_ATTRIBUTE_EXISTS || op == FN_ATTRIBUTE_NOT_EXISTS ||
           op == FN_ATTRIBUTE_TYPE || op == FN_BEGINS_WITH || op == FN_CONTAINS;
}

/* A function call where a value is expected (size in conditions, if_not_exists and
 * list_append in updates). */
static void check_value_function(parser *p, const expr_node *f, bool in_update)
{
    if (f->op == FN_NONE)
        return;
    const char *name = func_names[f->op];
    bool update_fn = f->op == FN_IF_NOT_EXISTS || f->op == FN_LIST_APPEND;
    if (in_update && !update_fn)
        sem_error(p, "The function is not allowed in an update expression; function: %s", name);
    else if (!in_update && update_fn)
        sem_error(p, "The function is not allowed in a condition expression; function: %s", name);
    else if (is_condition_function(f->op))
        sem_error(p, "The function is not allowed to be used this way in an expression; function: %s", name);
}

static expr_node *parse_operand(parser *p, bool in_update)
{
    if (p->failed)
        return NULL;
    const expr_token *t = peek(p);
    if (t->kind == TOK_COLON) {
        expr_node *n = new_node(p, NODE_VALUE);
        if (n != NULL)
            n->value = lookup_value(p, t);
        p->pos++;
        return n;
    }
    if (t->kind == TOK_NAME && peek_at(p, 1)->kind == TOK_LPAREN && !is_grammar_word(p, t)) {
        expr_node *f = parse_call(p, in_update);
        if (f != NULL)
            check_value_function(p, f, in_update);
        return f;
    }
    if (t->kind == TOK_NAME || t->kind == TOK_HASH) {
        expr_node *n = new_node(p, NODE_PATH);
        if (n != NULL && !parse_path(p, &n->path)) {
            fakedb__expr_node_free(n);
            return NULL;
        }
        return n;
    }
    syntax_error(p);
    return NULL;
}

static int cmp_of(expr_tok_kind k)
{
    switch (k) {
    case TOK_EQ: return CMP_EQ;
    case TOK_NE: return CMP_NE;
    case TOK_LT: return CMP_LT;
    case TOK_LE: return CMP_LE;
    case TOK_GT: return CMP_GT;
    case TOK_GE: return CMP_GE;
    default: return -1;
    }
}

static const char *const cmp_text[] = {"=", "<>", "<", "<=", ">", ">="};

static void check_distinct(parser *p, const expr_node *n, const char *op)
{
    const expr_node *first = n->args[0];
    if (first->kind != NODE_PATH)
        return;
    for (int i = 1; i < n->nargs; i++) {
        if (n->args[i]->kind == NODE_PATH && path_equal(&first->path, &n->args[i]->path)) {
            char text[160];
            path_text_of(first, text, sizeof text);
            sem_error(p, "The first operand must be distinct from the remaining operands for this operator or function; operator: %s, first operand: %s",
                      op, text);
            return;
        }
    }
}

static void av_brief(json_object *av, char *buf, size_t cap)
{
    json_object *payload = NULL;
    const char *t = fakedb__av_type(av, &payload);
    snprintf(buf, cap, "{%s:%s}", t != NULL ? t : "", payload != NULL &&
             json_object_is_type(payload, json_type_string) ? json_object_get_string(payload) : "");
}

static expr_node *parse_or(parser *p);

static void check_ordered_operands(parser *p, const expr_node *n, int from, const char *op)
{
    for (int i = from; i < n->nargs; i++) {
        const char *vt = value_type(n->args[i]);
        if (vt != NULL && !scalar_type(vt))
            sem_error(p, "Incorrect operand type for operator or function; operator or function: %s, operand type: %s",
                      op, vt);
    }
}

/* lhs followed by a comparator, BETWEEN or IN. Takes lhs. */
static expr_node *parse_comparison(parser *p, expr_node *lhs)
{
    const expr_token *op = peek(p);
    int cmp = cmp_of(op->kind);
    expr_node_kind kind = cmp >= 0 ? NODE_CMP : tok_word(p, op, "BETWEEN") ? NODE_BETWEEN
                          : tok_word(p, op, "IN") ? NODE_IN : NODE_PATH;
    if (kind == NODE_PATH) {
        fakedb__expr_node_free(lhs);
        syntax_error(p);
        return NULL;
    }
    expr_node *n = new_node(p, kind);
    if (n == NULL) {
        fakedb__expr_node_free(lhs);
        return NULL;
    }
    n->op = cmp;
    add_arg(p, n, lhs);
    count_operator(p);
    p->pos++;
    if (kind == NODE_CMP) {
        if (!add_arg(p, n, parse_operand(p, false)))
            goto fail;
        check_distinct(p, n, cmp_text[cmp]);
        if (cmp != CMP_EQ && cmp != CMP_NE)
            check_ordered_operands(p, n, 0, cmp_text[cmp]);
        return n;
    }
    if (kind == NODE_BETWEEN) {
        if (!add_arg(p, n, parse_operand(p, false)))
            goto fail;
        if (!tok_word(p, peek(p), "AND")) {
            syntax_error(p);
            goto fail;
        }
        p->pos++;
        if (!add_arg(p, n, parse_operand(p, false)))
            goto fail;
        check_distinct(p, n, "BETWEEN");
        check_ordered_operands(p, n, 0, "BETWEEN");
        const char *lt = value_type(n->args[1]), *ut = value_type(n->args[2]);
        if (scalar_type(lt) && scalar_type(ut)) {
            char lo[FAKEDB_EXPR_ERR_MAX / 4], hi[FAKEDB_EXPR_ERR_MAX / 4];
            av_brief(n->args[1]->value, lo, sizeof lo);
            av_brief(n->args[2]->value, hi, sizeof hi);
            if (strcmp(lt, ut) != 0)
                sem_error(p, "The BETWEEN operator requires same data type for lower and upper bounds; lower bound operand: AttributeValue: %s, upper bound operand: AttributeValue: %s", lo, hi);
            else if (fakedb__av_compare(n->args[1]->value, n->args[2]->value) > 0)
                sem_error(p, "The BETWEEN operator requires upper bound to be greater than or equal to lower bound; lower bound operand: AttributeValue: %s, upper bound operand: AttributeValue: %s", lo, hi);
        }
        return n;
    }
    /* IN */
    if (!expect(p, TOK_LPAREN))
        goto fail;
    for (;;) {
        if (!add_arg(p, n, parse_operand(p, false)))
            goto fail;
        if (peek(p)->kind != TOK_COMMA)
            break;
        p->pos++;
    }
    if (!expect(p, TOK_RPAREN))
        goto fail;
    if (n->nargs - 1 > FAKEDB_EXPR_MAX_IN)
        sem_error(p, "The IN operator is provided with too many operands; number of operands: %d", n->nargs - 1);
    check_distinct(p, n, "IN");
    return n;
fail:
    fakedb__expr_node_free(n);
    return NULL;
}

/* A comparison, BETWEEN, IN, a function, or a parenthesised condition. */
static expr_node *parse_primary(parser *p)
{
    if (p->failed)
        return NULL;
    const expr_token *t = peek(p);
    if (t->kind == TOK_LPAREN) {
        int open = p->pos;
        p->pos++;
        expr_node *inner = parse_or(p);
        if (inner == NULL || !expect(p, TOK_RPAREN)) {
            fakedb__expr_node_free(inner);
            return NULL;
        }
        /* "((x))": an inner group that spans everything between our parentheses */
        if (p->toks[open + 1].kind == TOK_LPAREN) {
            int depth = 0, i = open + 1;
            for (; i < p->pos - 1; i++) {
                if (p->toks[i].kind == TOK_LPAREN)
                    depth++;
                else if (p->toks[i].kind == TOK_RPAREN && --depth == 0)
                    break;
            }
            if (i == p->pos - 2)
                sem_error(p, "The expression has redundant parentheses;");
        }
        return inner;
    }
    if (t->kind == TOK_NAME && peek_at(p, 1)->kind == TOK_LPAREN && !is_grammar_word(p, t)) {
        expr_node *f = parse_call(p, false);
        if (f == NULL)
            return NULL;
        const expr_token *next = peek(p);
        if (cmp_of(next->kind) < 0 && !tok_word(p, next, "BETWEEN") && !tok_word(p, next, "IN")) {
            /* the function stands as a condition */
            if (f->op == FN_IF_NOT_EXISTS || f->op == FN_LIST_APPEND)
                sem_error(p, "The function is not allowed in a condition expression; function: %s", func_names[f->op]);
            else if (f->op == FN_SIZE)
                sem_error(p, "The function is not allowed to be used this way in an expression; function: %s", func_names[f->op]);
            return f;
        }
        check_value_function(p, f, false);
        return parse_comparison(p, f);
    }
    expr_node *lhs = parse_operand(p, false);
    if (lhs == NULL)
        return NULL;
    return parse_comparison(p, lhs);
}

static expr_node *parse_not(parser *p)
{
    if (tok_word(p, peek(p), "NOT")) {
        p->pos++;
        count_operator(p);
        if (++p->depth > FAKEDB_EXPR_MAX_OPERATORS * 4) {
            syntax_error(p);
            return NULL;
        }
        expr_node *n = new_node(p, NODE_NOT);
        if (n != NULL && !add_arg(p, n, parse_not(p))) {
            fakedb__expr_node_free(n);
            n = NULL;
        }
        p->depth--;
        return n;
    }
    if (peek(p)->kind == TOK_LPAREN) {
        if (++p->depth > FAKEDB_EXPR_MAX_OPERATORS * 4) {
            syntax_error(p);
            return NULL;
        }
        expr_node *n = parse_primary(p);
        p->depth--;
        return n;
    }
    return parse_primary(p);
}

static expr_node *parse_binary(parser *p, bool is_or)
{
    expr_node *lhs = is_or ? parse_binary(p, false) : parse_not(p);
    const char *word = is_or ? "OR" : "AND";
    while (lhs != NULL && !p->failed && tok_word(p, peek(p), word)) {
        p->pos++;
        count_operator(p);
        expr_node *n = new_node(p, is_or ? NODE_OR : NODE_AND);
        if (n == NULL) {
            fakedb__expr_node_free(lhs);
            return NULL;
        }
        add_arg(p, n, lhs);
        if (!add_arg(p, n, is_or ? parse_binary(p, false) : parse_not(p))) {
            fakedb__expr_node_free(n);
            return NULL;
        }
        lhs = n;
    }
    return lhs;
}

static expr_node *parse_or(parser *p)
{
    return parse_binary(p, true);
}

/* ---- update ---- */

/* operand ('+'|'-' operand)?, where an operand may be parenthesised. */
static expr_node *parse_set_value(parser *p);

static expr_node *parse_set_operand(parser *p)
{
    if (peek(p)->kind == TOK_LPAREN) {
        p->pos++;
        if (++p->depth > FAKEDB_EXPR_MAX_OPERATORS * 4) {
            syntax_error(p);
            return NULL;
        }
        expr_node *n = parse_set_value(p);
        p->depth--;
        if (n == NULL || !expect(p, TOK_RPAREN)) {
            fakedb__expr_node_free(n);
            return NULL;
        }
        return n;
    }
    return parse_operand(p, true);
}

static expr_node *parse_set_value(parser *p)
{
    expr_node *lhs = parse_set_operand(p);
    if (lhs == NULL)
        return NULL;
    expr_tok_kind k = peek(p)->kind;
    if (k != TOK_PLUS && k != TOK_MINUS)
        return lhs;
    p->pos++;
    count_operator(p);
    expr_node *n = new_node(p, k == TOK_PLUS ? NODE_PLUS : NODE_MINUS);
    if (n == NULL) {
        fakedb__expr_node_free(lhs);
        return NULL;
    }
    add_arg(p, n, lhs);
    if (!add_arg(p, n, parse_set_operand(p))) {
        fakedb__expr_node_free(n);
        return NULL;
    }
    for (int i = 0; i < 2; i++) {
        const char *t = value_type(n->args[i]);
        if (t != NULL && strcmp(t, "N") != 0)
            sem_error(p, "Incorrect operand type for operator or function; operator or function: %s, operand type: %s",
                      k == TOK_PLUS ? "+" : "-", t);
    }
    return n;
}

static bool add_action(parser *p, fakedb__expr *e, expr_action_kind kind, expr_path *path,
                       expr_node *value)
{
    expr_action *grown = realloc(e->actions, ((size_t)e->nactions + 1) * sizeof *grown);
    if (grown == NULL) {
        fakedb__expr_path_clear(path);
        fakedb__expr_node_free(value);
        oom(p);
        return false;
    }
    e->actions = grown;
    e->actions[e->nactions].kind = kind;
    e->actions[e->nactions].path = *path;
    e->actions[e->nactions].value = value;
    e->nactions++;
    return true;
}

static const char *const set_type_names[][2] = {
    {"S", "STRING"}, {"N", "NUMBER"}, {"B", "BINARY"}, {"BOOL", "BOOLEAN"}, {"NULL", "NULL"},
    {"L", "LIST"}, {"M", "MAP"}, {"SS", "STRING_SET"}, {"NS", "NUMBER_SET"}, {"BS", "BINARY_SET"},
};

static const char *long_type_name(const char *t)
{
    for (size_t i = 0; i < sizeof set_type_names / sizeof set_type_names[0]; i++)
        if (strcmp(set_type_names[i][0], t) == 0)
            return set_type_names[i][1];
    return t;
}

static void parse_update(parser *p, fakedb__expr *e)
{
    static const char *const clause_words[] = {"SET", "REMOVE", "ADD", "DELETE"};
    bool seen[4] = {false, false, false, false};
    if (peek(p)->kind == TOK_EOF) {
        syntax_error(p);
        return;
    }
    while (!p->failed && peek(p)->kind != TOK_EOF) {
        int clause = -1;
        for (int i = 0; i < 4; i++)
            if (tok_word(p, peek(p), clause_words[i]))
                clause = i;
        if (clause < 0) {
            syntax_error(p);
            return;
        }
        if (seen[clause])
            sem_error(p, "The \"%s\" section can only be used once in an update expression;", clause_words[clause]);
        seen[clause] = true;
        p->pos++;
        for (;;) {
            expr_path path = {0, NULL};
            if (!parse_path(p, &path)) {
                fakedb__expr_path_clear(&path);
                return;
            }
            expr_node *value = NULL;
            if (clause == ACT_SET) {
                if (!expect(p, TOK_EQ)) {
                    fakedb__expr_path_clear(&path);
                    return;
                }
                value = parse_set_value(p);
                if (value == NULL) {
                    fakedb__expr_path_clear(&path);
                    return;
                }
            } else if (clause == ACT_ADD || clause == ACT_DELETE) {
                if (peek(p)->kind != TOK_COLON) {
                    fakedb__expr_path_clear(&path);
                    syntax_error(p);
                    return;
                }
                value = parse_operand(p, true);
                const char *t = value_type(value);
                bool ok = t == NULL || strcmp(t, "SS") == 0 || strcmp(t, "NS") == 0 ||
                          strcmp(t, "BS") == 0 || (clause == ACT_ADD && strcmp(t, "N") == 0);
                if (!ok)
                    sem_error(p, "Incorrect operand type for operator or function; operator: %s, operand type: %s, typeSet: %s",
                              clause_words[clause], long_type_name(t),
                              clause == ACT_ADD ? "ALLOWED_FOR_ADD_OPERAND" : "ALLOWED_FOR_DELETE_OPERAND");
                count_operator(p);
            }
            if (!add_action(p, e, (expr_action_kind)clause, &path, value))
                return;
            if (peek(p)->kind != TOK_COMMA)
                break;
            p->pos++;
        }
    }
}

static void parse_projection(parser *p, fakedb__expr *e)
{
    for (;;) {
        expr_path path = {0, NULL};
        if (!parse_path(p, &path)) {
            fakedb__expr_path_clear(&path);
            return;
        }
        expr_path *grown = realloc(e->paths, ((size_t)e->npaths + 1) * sizeof *grown);
        if (grown == NULL) {
            fakedb__expr_path_clear(&path);
            oom(p);
            return;
        }
        e->paths = grown;
        e->paths[e->npaths++] = path;
        if (peek(p)->kind != TOK_COMMA)
            return;
        p->pos++;
    }
}

static int build_targets(fakedb__expr *e)
{
    e->targets = calloc((size_t)e->nactions + 1, sizeof *e->targets);
    if (e->targets == NULL)
        return -1;
    int n = 0;
    for (int i = 0; i < e->nactions; i++) {
        const char *name = e->actions[i].path.elems[0].name;
        bool dup = false;
        for (int j = 0; j < n; j++)
            dup = dup || strcmp(e->targets[j], name) == 0;
        if (!dup) {
            e->targets[n] = strdup(name);
            if (e->targets[n] == NULL)
                return -1;
            n++;
        }
    }
    return 0;
}

fakedb__expr *fakedb__expr_parse(fakedb__expr_ctx *ctx, fakedb__expr_kind kind,
                                 const char *text, char err[FAKEDB_EXPR_ERR_MAX])
{
    char scratch[FAKEDB_EXPR_ERR_MAX];
    if (err == NULL)
        err = scratch;
    if (ctx == NULL || text == NULL) {
        fakedb__expr_errf(err, "Invalid %s: The expression can not be empty;", kind_label(kind));
        return NULL;
    }
    size_t len = strlen(text);
    if (len == 0) {
        fakedb__expr_errf(err, "Invalid %s: The expression can not be empty;", kind_label(kind));
        return NULL;
    }
    if (len > FAKEDB_EXPR_MAX_BYTES) {
        fakedb__expr_errf(err, "Invalid %s: Expression size has exceeded the maximum allowed size; expression size: %zu",
                          kind_label(kind), len);
        return NULL;
    }
    parser p;
    memset(&p, 0, sizeof p);
    p.ctx = ctx;
    p.kind = kind;
    p.text = text;
    p.len = len;
    p.err = err;
    p.ntoks = fakedb__expr_lex(text, len, &p.toks);
    if (p.ntoks < 0) {
        fakedb__expr_errf(err, "out of memory");
        return NULL;
    }
    fakedb__expr *e = calloc(1, sizeof *e);
    if (e == NULL) {
        free(p.toks);
        fakedb__expr_errf(err, "out of memory");
        return NULL;
    }
    e->kind = kind;
    if (kind == FAKEDB_EXPR_UPDATE) {
        parse_update(&p, e);
    } else if (kind == FAKEDB_EXPR_PROJECTION) {
        parse_projection(&p, e);
    } else {
        e->cond = parse_or(&p);
        if (e->cond != NULL && (e->cond->kind == NODE_FUNC) && !is_condition_function(e->cond->op) &&
            e->cond->op != FN_NONE)
            sem_error(&p, "The function is not allowed to be used this way in an expression; function: %s",
                      func_names[e->cond->op]);
    }
    if (!p.failed && peek(&p)->kind != TOK_EOF)
        syntax_error(&p);
    free(p.toks);
    if (!p.failed && p.sem_failed) {
        snprintf(err, FAKEDB_EXPR_ERR_MAX, "%s", p.sem);
        p.failed = true;
    }
    if (!p.failed && (kind == FAKEDB_EXPR_UPDATE || kind == FAKEDB_EXPR_PROJECTION)) {
        int n = kind == FAKEDB_EXPR_UPDATE ? e->nactions : e->npaths;
        const expr_path **paths = calloc((size_t)n + 1, sizeof *paths);
        if (paths == NULL) {
            fakedb__expr_errf(err, "out of memory");
            p.failed = true;
        } else {
            for (int i = 0; i < n; i++)
                paths[i] = kind == FAKEDB_EXPR_UPDATE ? &e->actions[i].path : &e->paths[i];
            if (fakedb__expr_check_paths(paths, n, kind_label(kind), err) != 0)
                p.failed = true;
            free(paths);
        }
    }
    if (!p.failed && kind == FAKEDB_EXPR_UPDATE && build_targets(e) != 0) {
        fakedb__expr_errf(err, "out of memory");
        p.failed = true;
    }
    if (p.failed) {
        fakedb__expr_free(e);
        return NULL;
    }
    return e;
}

void fakedb__expr_free(fakedb__expr *e)
{
    if (e == NULL)
        return;
    fakedb__expr_node_free(e->cond);
    for (int i = 0; i < e->nactions; i++) {
        fakedb__expr_path_clear(&e->actions[i].path);
        fakedb__expr_node_free(e->actions[i].value);
    }
    free(e->actions);
    for (int i = 0; i < e->npaths; i++)
        fakedb__expr_path_clear(&e->paths[i]);
    free(e->paths);
    for (int i = 0; e->targets != NULL && e->targets[i] != NULL; i++)
        free(e->targets[i]);
    free(e->targets);
    free(e);
}

const char *const *fakedb__expr_update_targets(const fakedb__expr *e)
{
    static const char *const none[] = {NULL};
    if (e == NULL || e->targets == NULL)
        return none;
    return (const char *const *)e->targets;
}
