/* expr_internal.h: the parsed form of DynamoDB expressions shared by the lexer, parser,
 * evaluator and update modules of the fake server. Not part of any public interface. */
#ifndef FAKEDB_EXPR_INTERNAL_H
#define FAKEDB_EXPR_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "expr.h"

#define FAKEDB_EXPR_MAX_BYTES 4096   /* longest expression text */
#define FAKEDB_EXPR_MAX_DEPTH 32     /* nesting levels of a document path */
#define FAKEDB_EXPR_MAX_IN 100       /* operands of IN after the first */
#define FAKEDB_EXPR_MAX_OPERATORS 300

/* ---- tokens ---- */
typedef enum expr_tok_kind {
    TOK_EOF, TOK_BAD, TOK_NAME, TOK_HASH, TOK_COLON, TOK_NUMBER,
    TOK_EQ, TOK_NE, TOK_LT, TOK_LE, TOK_GT, TOK_GE,
    TOK_LPAREN, TOK_RPAREN, TOK_LBRACKET, TOK_RBRACKET, TOK_COMMA, TOK_DOT,
    TOK_PLUS, TOK_MINUS,
} expr_tok_kind;

typedef struct expr_token {
    expr_tok_kind kind;
    size_t start, len; /* in the expression text */
} expr_token;

/* Splits text into tokens, always ending with TOK_EOF. Returns the count, or -1 when out
 * of memory. *out is malloc'd. */
int fakedb__expr_lex(const char *text, size_t len, expr_token **out);
bool fakedb__expr_is_reserved(const char *word, size_t len);

/* ---- document paths ---- */
typedef struct expr_path_elem {
    char *name;  /* map key; NULL for a list index */
    long index;
} expr_path_elem;

typedef struct expr_path {
    int n;
    expr_path_elem *elems;
} expr_path;

/* ---- operands and conditions ---- */
typedef enum expr_node_kind {
    NODE_PATH, NODE_VALUE, NODE_FUNC, NODE_PLUS, NODE_MINUS,
    NODE_CMP, NODE_BETWEEN, NODE_IN, NODE_AND, NODE_OR, NODE_NOT,
} expr_node_kind;

typedef enum expr_func {
    FN_NONE, FN_ATTRIBUTE_EXISTS, FN_ATTRIBUTE_NOT_EXISTS, FN_ATTRIBUTE_TYPE,
    FN_BEGINS_WITH, FN_CONTAINS, FN_SIZE, FN_IF_NOT_EXISTS, FN_LIST_APPEND,
} expr_func;

typedef enum expr_cmp { CMP_EQ, CMP_NE, CMP_LT, CMP_LE, CMP_GT, CMP_GE } expr_cmp;

typedef struct expr_node {
    expr_node_kind kind;
    int op;                  /* expr_cmp for NODE_CMP, expr_func for NODE_FUNC */
    expr_path path;          /* NODE_PATH */
    json_object *value;      /* NODE_VALUE: borrowed from the context */
    struct expr_node **args; /* operands, sub-conditions, function arguments */
    int nargs;
} expr_node;

/* ---- update ---- */
typedef enum expr_action_kind { ACT_SET, ACT_REMOVE, ACT_ADD, ACT_DELETE } expr_action_kind;

typedef struct expr_action {
    expr_action_kind kind;
    expr_path path;
    expr_node *value; /* NULL for REMOVE */
} expr_action;

struct fakedb__expr_ctx {
    json_object *names, *values;
    char **name_keys, **value_keys; /* keys in request order */
    bool *name_used, *value_used;
    int nnames, nvalues;
};

struct fakedb__expr {
    fakedb__expr_kind kind;
    expr_node *cond;          /* condition, filter, key condition */
    expr_action *actions;     /* update */
    int nactions;
    expr_path *paths;         /* projection */
    int npaths;
    char **targets;           /* update: top-level names, NULL-terminated */
    bool legacy;              /* translated from a legacy parameter (expr_legacy.c) */
};

/* Shared helpers (expr_parse.c). */
void fakedb__expr_errf(char err[FAKEDB_EXPR_ERR_MAX], const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void fakedb__expr_node_free(expr_node *n);
void fakedb__expr_path_clear(expr_path *p);
/* "[a, b, [0]]" for overlap messages. */
void fakedb__expr_path_text(const expr_path *p, char *buf, size_t cap);
/* 0 same, 1 one is a prefix of the other (overlap), 2 conflict (name vs index at the
 * same place), -1 independent. */
int fakedb__expr_path_relation(const expr_path *a, const expr_path *b);
/* Checks a set of paths for overlap and conflict; 0 or -1 with the message. */
int fakedb__expr_check_paths(const expr_path *const *paths, int n, const char *label,
                             char err[FAKEDB_EXPR_ERR_MAX]);

/* Values (expr_eval.c). */
/* The type key of an AttributeValue ("S", "N", ...) and its payload, or NULL. */
const char *fakedb__av_type(json_object *av, json_object **payload);
/* Equality of two set elements (JSON strings) of a set of type t ('S', 'N' or 'B'). */
bool fakedb__expr_set_elem_equal(char t, json_object *a, json_object *b);
json_object *fakedb__expr_resolve(json_object *item, const expr_path *p);
/* Operand value under item, or NULL when absent. *owned is set when the result is a new
 * object the caller must put. */
json_object *fakedb__expr_operand(const expr_node *n, json_object *item, bool *owned);

#endif
