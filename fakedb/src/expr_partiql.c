/* expr_partiql.c: PartiQL statements as DynamoDB runs them (SELECT, INSERT, UPDATE,
 * DELETE, and EXISTS in a transaction), lexed and parsed here and translated into
 * DynamoDB's expression language: every attribute name becomes a #pN of `names`, every
 * literal and `?` parameter a :vN of `values`, the WHERE a condition and SET/REMOVE an
 * update expression. The operations then parse those with fakedb__expr_parse, so one
 * evaluator serves both languages. Nothing here touches a table or an item. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "decimal.h"
#include "expr_internal.h"

#define PQ_MAX_DEPTH 64         /* nesting of conditions and values */
#define PQ_NOT_WELL_FORMED "Statement wasn't well formed, can't be processed: "

typedef enum { T_EOF, T_BAD, T_IDENT, T_QIDENT, T_STRING, T_NUMBER, T_PUNCT } tkind;

typedef struct tok {
    tkind kind;
    size_t start, len;          /* in the text; for T_STRING/T_QIDENT with the quotes */
} tok;

typedef struct sb {
    char *p;
    size_t n, cap;
} sb;

typedef struct pq {
    const char *src;
    size_t len, pos;
    tok cur;
    json_object *params;
    size_t nparams, next_param;
    fakedb__pq_stmt *st;
    int depth;
    bool failed;
    char *err;
} pq;

/* ------------------------------------------------------------------ helpers */

static void sb_add(pq *p, sb *b, const char *s, size_t n)
{
    if (p->failed)
        return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 64;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *q = realloc(b->p, cap);
        if (!q) {
            p->failed = true;
            fakedb__expr_errf(p->err, "out of memory");
            return;
        }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

static void sb_str(pq *p, sb *b, const char *s)
{
    sb_add(p, b, s, strlen(s));
}

static char *sb_take(sb *b)
{
    char *s = b->p ? b->p : strdup("");
    b->p = NULL;
    b->n = b->cap = 0;
    return s;
}

/* Any syntax error: DynamoDB quotes the whole statement. */
static void malformed(pq *p)
{
    if (p->failed)
        return;
    p->failed = true;
    fakedb__expr_errf(p->err, PQ_NOT_WELL_FORMED "%.*s", (int)(p->len > 400 ? 400 : p->len), p->src);
}

static void refuse(pq *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void refuse(pq *p, const char *fmt, ...)
{
    if (p->failed)
        return;
    p->failed = true;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err, FAKEDB_EXPR_ERR_MAX, fmt, ap);
    va_end(ap);
}

/* ------------------------------------------------------------------ lexer */

static void next(pq *p)
{
    const char *s = p->src;
    size_t i = p->pos;
    for (;;) {
        while (i < p->len && isspace((unsigned char)s[i]))
            i++;
        if (i + 1 < p->len && s[i] == '-' && s[i + 1] == '-') {
            while (i < p->len && s[i] != '\n')
                i++;
            continue;
        }
        if (i + 1 < p->len && s[i] == '/' && s[i + 1] == '*') {
            const char *end = NULL;
            for (size_t j = i + 2; j + 1 < p->len; j++)
                if (s[j] == '*' && s[j + 1] == '/') {
                    end = s + j;
                    break;
                }
            if (!end) {
                p->cur = (tok){ T_BAD, i, p->len - i };
                p->pos = p->len;
                return;
            }
            i = (size_t)(end - s) + 2;
            continue;
        }
        break;
    }
    tok t = { T_EOF, i, 0 };
    if (i >= p->len) {
        p->cur = t;
        p->pos = i;
        return;
    }
    char c = s[i];
    size_t j = i + 1;
    if (isalpha((unsigned char)c) || c == '_') {
        while (j < p->len && (isalnum((unsigned char)s[j]) || s[j] == '_'))
            j++;
        t.kind = T_IDENT;
    } else if (isdigit((unsigned char)c) || (c == '.' && j < p->len && isdigit((unsigned char)s[j]))) {
        while (j < p->len && (isdigit((unsigned char)s[j]) || s[j] == '.'))
            j++;
        if (j < p->len && (s[j] == 'e' || s[j] == 'E')) {
            size_t k = j + 1;
            if (k < p->len && (s[k] == '+' || s[k] == '-'))
                k++;
            if (k < p->len && isdigit((unsigned char)s[k])) {
                j = k;
                while (j < p->len && isdigit((unsigned char)s[j]))
                    j++;
            }
        }
        t.kind = T_NUMBER;
    } else if (c == '\'' || c == '"') {
        t.kind = c == '\'' ? T_STRING : T_QIDENT;
        for (;;) {
            if (j >= p->len) {
                t.kind = T_BAD;
                break;
            }
            if (s[j] == c) {
                if (j + 1 < p->len && s[j + 1] == c) {
                    j += 2;
                    continue;
                }
                j++;
                break;
            }
            j++;
        }
    } else {
        static const char *const two[] = { "<>", "!=", "<=", ">=", "<<", ">>" };
        t.kind = T_PUNCT;
        for (size_t k = 0; k < sizeof two / sizeof two[0]; k++)
            if (i + 1 < p->len && s[i] == two[k][0] && s[i + 1] == two[k][1])
                j = i + 2;
        if (j == i + 1 && !strchr("*,.[](){}:?=<>+-;", c))
            t.kind = T_BAD;
    }
    t.len = j - i;
    p->cur = t;
    p->pos = j;
}

static bool is_punct(const pq *p, const char *w)
{
    return p->cur.kind == T_PUNCT && p->cur.len == strlen(w) && !memcmp(p->src + p->cur.start, w, p->cur.len);
}

static bool is_word(const pq *p, const char *w)
{
    return p->cur.kind == T_IDENT && p->cur.len == strlen(w) && !strncasecmp(p->src + p->cur.start, w, p->cur.len);
}

static bool accept_punct(pq *p, const char *w)
{
    if (!is_punct(p, w))
        return false;
    next(p);
    return true;
}

static bool accept_word(pq *p, const char *w)
{
    if (!is_word(p, w))
        return false;
    next(p);
    return true;
}

static void expect_punct(pq *p, const char *w)
{
    if (!accept_punct(p, w))
        malformed(p);
}

static void expect_word(pq *p, const char *w)
{
    if (!accept_word(p, w))
        malformed(p);
}

/* The words of the grammar, which are no attribute names unless double-quoted. */
static bool is_keyword(const pq *p)
{
    static const char *const words[] = { "SELECT", "FROM", "WHERE", "AND", "OR", "NOT", "BETWEEN", "IN",
                                         "IS", "INSERT", "INTO", "VALUE", "VALUES", "UPDATE", "SET", "REMOVE",
                                         "DELETE", "RETURNING", "ORDER", "BY", "EXISTS", "MISSING", "NULL",
                                         "TRUE", "FALSE", "ASC", "DESC" };
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (is_word(p, words[i]))
            return true;
    return false;
}

/* The text of a string or quoted identifier with its doubled quotes undone. */
static char *unquote(const pq *p, const tok *t)
{
    char q = p->src[t->start];
    char *out = malloc(t->len);
    if (!out)
        return NULL;
    size_t o = 0;
    for (size_t i = t->start + 1; i + 1 < t->start + t->len; i++) {
        out[o++] = p->src[i];
        if (p->src[i] == q)
            i++;
    }
    out[o] = 0;
    return out;
}

/* An identifier (bare or double-quoted), malloc'd; NULL after a syntax error. */
static char *identifier(pq *p)
{
    char *s = NULL;
    if (p->failed)
        return NULL;
    if (p->cur.kind == T_QIDENT) {
        s = unquote(p, &p->cur);
        if (s && !s[0]) {
            free(s);
            s = NULL;
        }
    } else if (p->cur.kind == T_IDENT && !is_keyword(p)) {
        s = strndup(p->src + p->cur.start, p->cur.len);
    }
    if (!s) {
        malformed(p);
        return NULL;
    }
    next(p);
    return s;
}

/* ------------------------------------------------------------------ names and values */

static void add_name(pq *p, sb *b, const char *name)
{
    fakedb__pq_stmt *st = p->st;
    char key[32];
    if (!st->names)
        st->names = json_object_new_object();
    json_object_object_foreach(st->names, k, v) {
        if (!strcmp(json_object_get_string(v), name)) {
            sb_str(p, b, k);
            return;
        }
    }
    snprintf(key, sizeof key, "#p%d", json_object_object_length(st->names));
    json_object_object_add(st->names, key, json_object_new_string(name));
    sb_str(p, b, key);
}

/* Adds v (taking it) as the next :vN, writes its key, and returns it borrowed. */
static json_object *add_value(pq *p, sb *b, json_object *v)
{
    fakedb__pq_stmt *st = p->st;
    char key[32];
    if (!v)
        return NULL;
    if (!st->values)
        st->values = json_object_new_object();
    snprintf(key, sizeof key, ":v%d", json_object_object_length(st->values));
    json_object_object_add(st->values, key, v);
    sb_str(p, b, key);
    return v;
}

static json_object *av(const char *type, json_object *payload)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, type, payload);
    return o;
}

static json_object *value(pq *p);

static json_object *number(pq *p, bool negative)
{
    char buf[DL_DECIMAL_TEXT_MAX + 2];
    if (p->cur.len > DL_DECIMAL_TEXT_MAX) {
        refuse(p, "DynamoDB only supports precision up to 38 digits");
        return NULL;
    }
    snprintf(buf, sizeof buf, "%s%.*s", negative ? "-" : "", (int)p->cur.len, p->src + p->cur.start);
    dl_decimal d;
    switch (dl__decimal_parse(buf, strlen(buf), &d)) {
    case DL_DEC_OK: break;
    case DL_DEC_SYNTAX: malformed(p); return NULL;
    case DL_DEC_PRECISION: refuse(p, "DynamoDB only supports precision up to 38 digits"); return NULL;
    case DL_DEC_OVERFLOW: refuse(p, "Number overflow. Attempting to store a number with magnitude larger than supported range"); return NULL;
    case DL_DEC_UNDERFLOW: refuse(p, "Number underflow. Attempting to store a number with magnitude smaller than supported range"); return NULL;
    }
    next(p);
    return av("N", json_object_new_string(buf));
}

/* Values separated by commas up to `close`, into a new array of AttributeValues. */
static json_object *value_list(pq *p, const char *close)
{
    json_object *arr = json_object_new_array();
    if (accept_punct(p, close))
        return arr;
    do {
        json_object *v = value(p);
        if (!v)
            break;
        json_object_array_add(arr, v);
    } while (accept_punct(p, ","));
    if (!p->failed)
        expect_punct(p, close);
    if (p->failed) {
        json_object_put(arr);
        return NULL;
    }
    return arr;
}

static json_object *set_value(pq *p, json_object *elems)
{
    size_t n = json_object_array_length(elems);
    char t = 0;
    for (size_t i = 0; i < n; i++) {
        json_object *payload = NULL;
        const char *ty = fakedb__av_type(json_object_array_get_idx(elems, i), &payload);
        char c = ty && (!strcmp(ty, "S") || !strcmp(ty, "N") || !strcmp(ty, "B")) ? ty[0] : '?';
        if (c == '?' || (t && c != t)) {
            json_object_put(elems);
            refuse(p, "A set may hold only strings, only numbers or only binaries");
            return NULL;
        }
        t = c;
    }
    if (n == 0) {
        json_object_put(elems);
        refuse(p, "One or more parameter values were invalid: An string set  may not be empty");
        return NULL;
    }
    json_object *out = json_object_new_array();
    for (size_t i = 0; i < n; i++) {
        json_object *payload = NULL;
        fakedb__av_type(json_object_array_get_idx(elems, i), &payload);
        json_object_array_add(out, json_object_get(payload));
    }
    json_object_put(elems);
    return av(t == 'S' ? "SS" : t == 'N' ? "NS" : "BS", out);
}

/* A literal or a parameter, as a new AttributeValue; NULL after an error. */
static json_object *value(pq *p)
{
    if (p->failed)
        return NULL;
    if (++p->depth > PQ_MAX_DEPTH) {
        refuse(p, "Nesting Levels have exceeded supported limits");
        return NULL;
    }
    json_object *v = NULL;
    if (p->cur.kind == T_STRING) {
        char *s = unquote(p, &p->cur);
        if (s) {
            v = av("S", json_object_new_string(s));
            free(s);
            next(p);
        }
    } else if (p->cur.kind == T_NUMBER) {
        v = number(p, false);
    } else if (is_punct(p, "-") || is_punct(p, "+")) {
        bool neg = is_punct(p, "-");
        next(p);
        if (p->cur.kind == T_NUMBER)
            v = number(p, neg);
        else
            malformed(p);
    } else if (is_punct(p, "?")) {
        if (p->next_param >= p->nparams) {
            refuse(p, "Number of parameters in request and statement don't match.");
        } else {
            json_object *src = json_object_array_get_idx(p->params, p->next_param++);
            if (json_object_deep_copy(src, &v, NULL) != 0)
                refuse(p, "out of memory");
            next(p);
        }
    } else if (accept_word(p, "TRUE")) {
        v = av("BOOL", json_object_new_boolean(1));
    } else if (accept_word(p, "FALSE")) {
        v = av("BOOL", json_object_new_boolean(0));
    } else if (accept_word(p, "NULL")) {
        v = av("NULL", json_object_new_boolean(1));
    } else if (accept_punct(p, "[")) {
        json_object *l = value_list(p, "]");
        v = l ? av("L", l) : NULL;
    } else if (accept_punct(p, "<<")) {
        json_object *l = value_list(p, ">>");
        v = l ? set_value(p, l) : NULL;
    } else if (accept_punct(p, "{")) {
        json_object *m = json_object_new_object();
        if (!accept_punct(p, "}")) {
            do {
                if (p->cur.kind != T_STRING) {
                    malformed(p);
                    break;
                }
                char *k = unquote(p, &p->cur);
                next(p);
                expect_punct(p, ":");
                json_object *e = value(p);
                if (!k || !e) {
                    free(k);
                    json_object_put(e);
                    malformed(p);
                    break;
                }
                json_object_object_add(m, k, e);
                free(k);
            } while (accept_punct(p, ","));
            if (!p->failed)
                expect_punct(p, "}");
        }
        if (p->failed)
            json_object_put(m);
        else
            v = av("M", m);
    } else if (is_word(p, "MISSING")) {
        refuse(p, "MISSING must be compared using IS operator");
    } else {
        malformed(p);
    }
    p->depth--;
    if (p->failed) {
        json_object_put(v);
        return NULL;
    }
    return v;
}

static bool value_start(const pq *p)
{
    return p->cur.kind == T_STRING || p->cur.kind == T_NUMBER || is_punct(p, "?") || is_punct(p, "[") ||
           is_punct(p, "<<") || is_punct(p, "{") || is_punct(p, "-") || is_punct(p, "+") ||
           is_word(p, "TRUE") || is_word(p, "FALSE") || is_word(p, "NULL") || is_word(p, "MISSING");
}

/* ------------------------------------------------------------------ paths */

typedef struct path_out {
    char *first;                /* top-level name (malloc'd) */
    int n;                      /* elements */
    fakedb__pq_proj proj;       /* filled when asked */
} path_out;

static void proj_clear(fakedb__pq_proj *pr)
{
    for (int i = 0; i < pr->n; i++)
        free(pr->names[i]);
    free(pr->names);
    free(pr->index);
    free(pr->label);
    memset(pr, 0, sizeof *pr);
}

static bool proj_push(fakedb__pq_proj *pr, char *name, long index)
{
    char **nn = realloc(pr->names, (size_t)(pr->n + 1) * sizeof *nn);
    if (nn)
        pr->names = nn;
    long *ni = realloc(pr->index, (size_t)(pr->n + 1) * sizeof *ni);
    if (ni)
        pr->index = ni;
    if (!nn || !ni) {
        free(name);
        return false;
    }
    pr->names[pr->n] = name;
    pr->index[pr->n] = index;
    pr->n++;
    return true;
}

/* A document path: name, then .name, [n] or ['name']. Writes it with #names. */
static void path(pq *p, sb *b, path_out *out)
{
    memset(out, 0, sizeof *out);
    char *name = identifier(p);
    if (!name)
        return;
    add_name(p, b, name);
    out->first = name;
    out->n = 1;
    if (!proj_push(&out->proj, strdup(name), 0))
        refuse(p, "out of memory");
    char label[160];
    snprintf(label, sizeof label, "%s", name);
    while (!p->failed) {
        if (accept_punct(p, ".")) {
            char *sub = identifier(p);
            if (!sub)
                break;
            sb_str(p, b, ".");
            add_name(p, b, sub);
            snprintf(label, sizeof label, "%s", sub);
            if (!proj_push(&out->proj, sub, 0))
                refuse(p, "out of memory");
        } else if (accept_punct(p, "[")) {
            if (p->cur.kind == T_STRING) {
                char *sub = unquote(p, &p->cur);
                next(p);
                expect_punct(p, "]");
                if (!sub || p->failed) {
                    free(sub);
                    break;
                }
                sb_str(p, b, ".");
                add_name(p, b, sub);
                snprintf(label, sizeof label, "%s", sub);
                if (!proj_push(&out->proj, sub, 0))
                    refuse(p, "out of memory");
            } else if (p->cur.kind == T_NUMBER && p->cur.len < 10 &&
                       strspn(p->src + p->cur.start, "0123456789") >= p->cur.len) {
                long ix = strtol(p->src + p->cur.start, NULL, 10);
                char buf[32];
                next(p);
                expect_punct(p, "]");
                snprintf(buf, sizeof buf, "[%ld]", ix);
                sb_str(p, b, buf);
                size_t l = strlen(label);
                snprintf(label + l, sizeof label - l, "%s", buf);
                if (!proj_push(&out->proj, NULL, ix))
                    refuse(p, "out of memory");
            } else {
                malformed(p);
            }
        } else {
            break;
        }
        out->n++;
    }
    out->proj.label = strdup(label);
}

static void path_clear(path_out *o)
{
    free(o->first);
    proj_clear(&o->proj);
}

/* ------------------------------------------------------------------ conditions */

typedef struct term_out {
    bool simple;                /* attr op value(s) */
    char *attr;
    fakedb__key_op op;
    json_object *v1, *v2;
} term_out;

static void condition(pq *p, sb *b, bool top);

/* An operand: a path, a value or size(path). is_path/attr describe a bare top-level
 * path; val is set for a value. */
static void operand(pq *p, sb *b, char **attr, json_object **val)
{
    *attr = NULL;
    *val = NULL;
    if (p->failed)
        return;
    if (value_start(p)) {
        *val = add_value(p, b, value(p));
        return;
    }
    if (is_word(p, "size")) {
        next(p);
        expect_punct(p, "(");
        sb_str(p, b, "size(");
        path_out po;
        path(p, b, &po);
        path_clear(&po);
        expect_punct(p, ")");
        sb_str(p, b, ")");
        return;
    }
    path_out po;
    path(p, b, &po);
    if (po.n == 1 && !p->failed) {
        *attr = po.first;
        po.first = NULL;
    }
    path_clear(&po);
}

static fakedb__key_op key_op_of(const char *op)
{
    static const struct { const char *s; fakedb__key_op k; } m[] = {
        { "=", FAKEDB_KEY_EQ }, { "<", FAKEDB_KEY_LT }, { "<=", FAKEDB_KEY_LE },
        { ">", FAKEDB_KEY_GT }, { ">=", FAKEDB_KEY_GE },
    };
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
        if (!strcmp(op, m[i].s))
            return m[i].k;
    return FAKEDB_KEY_NONE;
}

static fakedb__key_op flip(fakedb__key_op op)
{
    switch (op) {
    case FAKEDB_KEY_LT: return FAKEDB_KEY_GT;
    case FAKEDB_KEY_LE: return FAKEDB_KEY_GE;
    case FAKEDB_KEY_GT: return FAKEDB_KEY_LT;
    case FAKEDB_KEY_GE: return FAKEDB_KEY_LE;
    default: return op;
    }
}

static void function(pq *p, sb *b, term_out *t)
{
    static const char *const funcs[] = { "begins_with", "contains", "attribute_exists",
                                         "attribute_not_exists", "attribute_type" };
    size_t f = 0;
    while (f < sizeof funcs / sizeof funcs[0] && !is_word(p, funcs[f]))
        f++;
    if (f == sizeof funcs / sizeof funcs[0]) {
        refuse(p, "Unrecognized function: %.*s", (int)(p->cur.len > 64 ? 64 : p->cur.len), p->src + p->cur.start);
        return;
    }
    next(p);
    expect_punct(p, "(");
    sb_str(p, b, funcs[f]);
    sb_str(p, b, "(");
    path_out po;
    path(p, b, &po);
    json_object *v = NULL;
    if (f == 0 || f == 1 || f == 4) {
        expect_punct(p, ",");
        sb_str(p, b, ", ");
        char *attr2;
        operand(p, b, &attr2, &v);
        free(attr2);
    }
    expect_punct(p, ")");
    sb_str(p, b, ")");
    if (f == 0 && po.n == 1 && v && !p->failed) {
        t->simple = true;
        t->attr = po.first;
        po.first = NULL;
        t->op = FAKEDB_KEY_BEGINS_WITH;
        t->v1 = v;
    }
    path_clear(&po);
}

/* One predicate: a parenthesised condition, a function, or a comparison. */
static void predicate(pq *p, sb *b, term_out *t)
{
    memset(t, 0, sizeof *t);
    if (p->failed)
        return;
    if (accept_punct(p, "(")) {
        sb_str(p, b, "(");
        condition(p, b, false);
        expect_punct(p, ")");
        sb_str(p, b, ")");
        return;
    }
    if (p->cur.kind == T_IDENT && !is_keyword(p) && !is_word(p, "size")) {
        /* name( is a function call */
        size_t save = p->pos;
        tok cur = p->cur;
        next(p);
        bool call = is_punct(p, "(");
        p->pos = save;
        p->cur = cur;
        if (call) {
            function(p, b, t);
            return;
        }
    }
    char *attr = NULL;
    json_object *val = NULL;
    operand(p, b, &attr, &val);
    if (p->failed) {
        free(attr);
        return;
    }
    static const char *const cmps[] = { "=", "<>", "!=", "<", "<=", ">", ">=" };
    for (size_t i = 0; i < sizeof cmps / sizeof cmps[0]; i++) {
        if (!is_punct(p, cmps[i]))
            continue;
        next(p);
        sb_str(p, b, " ");
        sb_str(p, b, i == 2 ? "<>" : cmps[i]);
        sb_str(p, b, " ");
        char *attr2 = NULL;
        json_object *val2 = NULL;
        operand(p, b, &attr2, &val2);
        fakedb__key_op op = key_op_of(cmps[i]);
        if (op != FAKEDB_KEY_NONE && attr && val2) {
            *t = (term_out){ true, attr, op, val2, NULL };
            attr = NULL;
        } else if (op != FAKEDB_KEY_NONE && attr2 && val) {
            *t = (term_out){ true, attr2, flip(op), val, NULL };
            attr2 = NULL;
        }
        free(attr);
        free(attr2);
        return;
    }
    if (accept_word(p, "BETWEEN")) {
        char *a1, *a2;
        json_object *lo, *hi;
        sb_str(p, b, " BETWEEN ");
        operand(p, b, &a1, &lo);
        expect_word(p, "AND");
        sb_str(p, b, " AND ");
        operand(p, b, &a2, &hi);
        if (attr && lo && hi && !p->failed) {
            *t = (term_out){ true, attr, FAKEDB_KEY_BETWEEN, lo, hi };
            attr = NULL;
        }
        free(a1);
        free(a2);
        free(attr);
        return;
    }
    free(attr);
    if (accept_word(p, "IN")) {
        const char *close = accept_punct(p, "[") ? "]" : (expect_punct(p, "("), ")");
        sb_str(p, b, " IN (");
        int n = 0;
        do {
            if (n++)
                sb_str(p, b, ", ");
            add_value(p, b, value(p));
        } while (!p->failed && accept_punct(p, ","));
        expect_punct(p, close);
        sb_str(p, b, ")");
        return;
    }
    if (accept_word(p, "IS")) {
        /* Rewritten: the path written so far becomes a function's argument. */
        bool neg = accept_word(p, "NOT");
        const char *fn = NULL;
        if (accept_word(p, "MISSING"))
            fn = neg ? "attribute_exists(" : "attribute_not_exists(";
        else if (accept_word(p, "NULL"))
            fn = neg ? "NOT attribute_type(" : "attribute_type(";
        else
            malformed(p);
        if (!fn || val || (b->n > 0 && b->p[b->n - 1] == ')')) {
            malformed(p);
            return;
        }
        size_t at = b->n;
        while (at > 0 && b->p[at - 1] != '(' && b->p[at - 1] != ' ')
            at--;
        char *pathtext = strdup(b->p + at);
        if (!pathtext) {
            refuse(p, "out of memory");
            return;
        }
        b->n = at;
        b->p[at] = 0;
        sb_str(p, b, fn);
        sb_str(p, b, pathtext);
        free(pathtext);
        if (strstr(fn, "attribute_type")) {
            sb_str(p, b, ", ");
            add_value(p, b, av("S", json_object_new_string("NULL")));
        }
        sb_str(p, b, ")");
        return;
    }
    malformed(p);
}

static void not_cond(pq *p, sb *b, term_out *t)
{
    memset(t, 0, sizeof *t);
    if (++p->depth > PQ_MAX_DEPTH) {
        refuse(p, "Nesting Levels have exceeded supported limits");
        return;
    }
    if (accept_word(p, "NOT")) {
        term_out ignored;
        sb_str(p, b, "NOT ");
        not_cond(p, b, &ignored);
        free(ignored.attr);
        memset(t, 0, sizeof *t);
    } else {
        predicate(p, b, t);
    }
    p->depth--;
}

static void add_term(pq *p, term_out *t)
{
    fakedb__pq_stmt *st = p->st;
    st->nconjuncts++;
    if (!t->simple)
        return;
    fakedb__pq_term *nt = realloc(st->terms, (size_t)(st->nterms + 1) * sizeof *nt);
    if (!nt) {
        refuse(p, "out of memory");
        return;
    }
    st->terms = nt;
    st->terms[st->nterms++] = (fakedb__pq_term){ t->attr, t->op, t->v1, t->v2 };
    t->attr = NULL;
}

static void and_cond(pq *p, sb *b, bool top)
{
    term_out t;
    not_cond(p, b, &t);
    if (top)
        add_term(p, &t);
    free(t.attr);
    while (!p->failed && accept_word(p, "AND")) {
        sb_str(p, b, " AND ");
        not_cond(p, b, &t);
        if (top)
            add_term(p, &t);
        free(t.attr);
    }
}

/* OR of ANDs; at the top, the AND's conjuncts are recorded as terms. */
static void condition(pq *p, sb *b, bool top)
{
    if (++p->depth > PQ_MAX_DEPTH) {
        refuse(p, "Nesting Levels have exceeded supported limits");
        return;
    }
    int terms_before = p->st->nterms;
    and_cond(p, b, top);
    bool any_or = false;
    while (!p->failed && accept_word(p, "OR")) {
        any_or = true;
        sb_str(p, b, " OR ");
        and_cond(p, b, false);
    }
    if (top && any_or) {
        /* An OR at the top: no conjunct holds alone. */
        for (int i = terms_before; i < p->st->nterms; i++)
            free(p->st->terms[i].attr);
        p->st->nterms = terms_before;
        p->st->nconjuncts = 1;
    }
    p->depth--;
}

/* ------------------------------------------------------------------ statements */

static void target(pq *p, bool index_ok)
{
    p->st->table = identifier(p);
    if (index_ok && !p->failed && accept_punct(p, "."))
        p->st->index = identifier(p);
}

static void where(pq *p, bool required)
{
    if (!accept_word(p, "WHERE")) {
        if (required)
            malformed(p);
        return;
    }
    sb b = { 0 };
    condition(p, &b, true);
    p->st->where = sb_take(&b);
}

static void select_stmt(pq *p)
{
    fakedb__pq_stmt *st = p->st;
    st->kind = FAKEDB_PQ_SELECT;
    if (!accept_punct(p, "*")) {
        sb b = { 0 };
        do {
            if (st->nproj)
                sb_str(p, &b, ", ");
            path_out po;
            path(p, &b, &po);
            fakedb__pq_proj *np = realloc(st->proj, (size_t)(st->nproj + 1) * sizeof *np);
            if (!np || p->failed) {
                if (np)
                    st->proj = np;
                path_clear(&po);
                break;
            }
            st->proj = np;
            st->proj[st->nproj++] = po.proj;
            po.proj = (fakedb__pq_proj){ 0 };
            path_clear(&po);
        } while (accept_punct(p, ","));
        st->projection = sb_take(&b);
    }
    expect_word(p, "FROM");
    target(p, true);
    where(p, false);
    if (accept_word(p, "ORDER")) {
        expect_word(p, "BY");
        st->order_by = identifier(p);
        if (accept_word(p, "DESC"))
            st->order_desc = true;
        else
            accept_word(p, "ASC");
        if (is_punct(p, ","))
            refuse(p, "ORDER BY takes one key attribute in fakedb");
    }
}

static void returning(pq *p)
{
    if (!accept_word(p, "RETURNING"))
        return;
    bool all = accept_word(p, "ALL");
    if (!all)
        expect_word(p, "MODIFIED");
    bool old = accept_word(p, "OLD");
    if (!old)
        expect_word(p, "NEW");
    expect_punct(p, "*");
    p->st->returning = all ? (old ? FAKEDB_PQ_RET_ALL_OLD : FAKEDB_PQ_RET_ALL_NEW)
                           : (old ? FAKEDB_PQ_RET_MODIFIED_OLD : FAKEDB_PQ_RET_MODIFIED_NEW);
}

/* The right side of SET: value, path, path +/- operand, list_append, set_add,
 * set_delete, if_not_exists. ADD and DELETE actions go to their own buffers. */
static void set_value_expr(pq *p, sb *set, sb *add, sb *del, const char *target_text)
{
    static const char *const fns[] = { "list_append", "if_not_exists", "set_add", "set_delete" };
    for (size_t f = 0; f < 4; f++) {
        if (!is_word(p, fns[f]))
            continue;
        next(p);
        expect_punct(p, "(");
        if (f >= 2) {
            sb tmp = { 0 };
            path_out po;
            path(p, &tmp, &po);
            path_clear(&po);
            expect_punct(p, ",");
            if (!p->failed && strcmp(tmp.p ? tmp.p : "", target_text))
                refuse(p, "%s must update the attribute it is assigned to (SET a = %s(a, ...))", fns[f], fns[f]);
            sb *to = f == 2 ? add : del;
            if (to->n)
                sb_str(p, to, ", ");
            sb_str(p, to, target_text);
            sb_str(p, to, " ");
            add_value(p, to, value(p));
            free(tmp.p);
            expect_punct(p, ")");
            return;
        }
        if (set->n)
            sb_str(p, set, ", ");
        sb_str(p, set, target_text);
        sb_str(p, set, " = ");
        sb_str(p, set, fns[f]);
        sb_str(p, set, "(");
        char *a;
        json_object *v;
        operand(p, set, &a, &v);
        free(a);
        expect_punct(p, ",");
        sb_str(p, set, ", ");
        operand(p, set, &a, &v);
        free(a);
        expect_punct(p, ")");
        sb_str(p, set, ")");
        return;
    }
    if (set->n)
        sb_str(p, set, ", ");
    sb_str(p, set, target_text);
    sb_str(p, set, " = ");
    char *a;
    json_object *v;
    operand(p, set, &a, &v);
    free(a);
    if (is_punct(p, "+") || is_punct(p, "-")) {
        sb_str(p, set, is_punct(p, "+") ? " + " : " - ");
        next(p);
        operand(p, set, &a, &v);
        free(a);
    }
}

static void update_stmt(pq *p)
{
    fakedb__pq_stmt *st = p->st;
    st->kind = FAKEDB_PQ_UPDATE;
    target(p, false);
    sb set = { 0 }, rem = { 0 }, add = { 0 }, del = { 0 };
    int clauses = 0;
    while (!p->failed) {
        if (accept_word(p, "SET")) {
            do {
                sb tgt = { 0 };
                path_out po;
                path(p, &tgt, &po);
                path_clear(&po);
                expect_punct(p, "=");
                if (!p->failed)
                    set_value_expr(p, &set, &add, &del, tgt.p);
                free(tgt.p);
            } while (!p->failed && accept_punct(p, ","));
        } else if (accept_word(p, "REMOVE")) {
            do {
                path_out po;
                if (rem.n)
                    sb_str(p, &rem, ", ");
                path(p, &rem, &po);
                path_clear(&po);
            } while (!p->failed && accept_punct(p, ","));
        } else {
            break;
        }
        clauses++;
    }
    if (!clauses)
        malformed(p);
    sb u = { 0 };
    if (set.n) {
        sb_str(p, &u, "SET ");
        sb_str(p, &u, set.p);
    }
    if (rem.n) {
        sb_str(p, &u, u.n ? " REMOVE " : "REMOVE ");
        sb_str(p, &u, rem.p);
    }
    if (add.n) {
        sb_str(p, &u, u.n ? " ADD " : "ADD ");
        sb_str(p, &u, add.p);
    }
    if (del.n) {
        sb_str(p, &u, u.n ? " DELETE " : "DELETE ");
        sb_str(p, &u, del.p);
    }
    free(set.p);
    free(rem.p);
    free(add.p);
    free(del.p);
    st->update = sb_take(&u);
    where(p, true);
    returning(p);
}

static void statement(pq *p)
{
    fakedb__pq_stmt *st = p->st;
    if (accept_word(p, "SELECT")) {
        select_stmt(p);
    } else if (accept_word(p, "INSERT")) {
        st->kind = FAKEDB_PQ_INSERT;
        expect_word(p, "INTO");
        target(p, false);
        expect_word(p, "VALUE");
        json_object *v = value(p);
        json_object *m = NULL;
        if (v && fakedb__av_type(v, &m) && !strcmp(fakedb__av_type(v, &m), "M"))
            st->item = json_object_get(m);
        else if (!p->failed)
            malformed(p);
        json_object_put(v);
        if (is_word(p, "RETURNING"))
            refuse(p, "RETURNING is not supported in INSERT");
    } else if (accept_word(p, "UPDATE")) {
        update_stmt(p);
    } else if (accept_word(p, "DELETE")) {
        st->kind = FAKEDB_PQ_DELETE;
        expect_word(p, "FROM");
        target(p, false);
        where(p, true);
        returning(p);
        static const char *const names[] = { "", "ALL OLD", "ALL NEW", "MODIFIED OLD", "MODIFIED NEW" };
        if (st->returning != FAKEDB_PQ_RET_NONE && st->returning != FAKEDB_PQ_RET_ALL_OLD)
            refuse(p, "Invalid returning clause: RETURNING %s *. Only RETURNING ALL OLD * is allowed in DELETE statements.",
                   names[st->returning]);
    } else if (accept_word(p, "EXISTS")) {
        expect_punct(p, "(");
        expect_word(p, "SELECT");
        if (!p->failed)
            select_stmt(p);
        expect_punct(p, ")");
        st->kind = FAKEDB_PQ_EXISTS;
    } else {
        malformed(p);
    }
    accept_punct(p, ";");
    if (!p->failed && p->cur.kind != T_EOF)
        malformed(p);
}

int fakedb__pq_parse(const char *text, json_object *params, fakedb__pq_stmt *out,
                     char err[FAKEDB_EXPR_ERR_MAX])
{
    memset(out, 0, sizeof *out);
    pq p = { .src = text, .len = strlen(text), .params = params, .st = out, .err = err };
    p.nparams = params && json_object_is_type(params, json_type_array) ? json_object_array_length(params) : 0;
    err[0] = 0;
    next(&p);
    if (p.cur.kind == T_BAD)
        malformed(&p);
    statement(&p);
    if (p.failed) {
        fakedb__pq_free(out);
        if (!err[0])
            fakedb__expr_errf(err, PQ_NOT_WELL_FORMED "%.*s", (int)(p.len > 400 ? 400 : p.len), text);
        return -1;
    }
    return 0;
}

void fakedb__pq_free(fakedb__pq_stmt *s)
{
    free(s->table);
    free(s->index);
    json_object_put(s->names);
    json_object_put(s->values);
    free(s->where);
    for (int i = 0; i < s->nterms; i++)
        free(s->terms[i].attr);
    free(s->terms);
    free(s->projection);
    for (int i = 0; i < s->nproj; i++)
        proj_clear(&s->proj[i]);
    free(s->proj);
    free(s->update);
    json_object_put(s->item);
    free(s->order_by);
    memset(s, 0, sizeof *s);
}

json_object *fakedb__pq_resolve(json_object *item, const fakedb__pq_proj *pr)
{
    json_object *cur = NULL;
    if (!item || !json_object_object_get_ex(item, pr->names[0], &cur))
        return NULL;
    for (int i = 1; cur && i < pr->n; i++) {
        json_object *payload = NULL;
        const char *t = fakedb__av_type(cur, &payload);
        if (!t)
            return NULL;
        if (pr->names[i]) {
            json_object *sub = NULL;
            cur = !strcmp(t, "M") && json_object_object_get_ex(payload, pr->names[i], &sub) ? sub : NULL;
        } else {
            cur = !strcmp(t, "L") && pr->index[i] >= 0 && (size_t)pr->index[i] < json_object_array_length(payload)
                  ? json_object_array_get_idx(payload, (size_t)pr->index[i]) : NULL;
        }
    }
    return cur;
}
