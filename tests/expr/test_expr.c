/* test_expr.c: the expression language of the fake server, driven by the vector files in
 * tests/expr/vectors/ (one case a line: kind | expression | names | values | item |
 * expected), plus checks of value ordering, item sizes and hostile input. */
#include <check.h>

#include "dl_check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "expr.h"

#define VECTOR_DIR DYNALOCK_SOURCE_DIR "/tests/expr/vectors/"

static json_object *parse_json_field(const char *text)
{
    if (strcmp(text, "-") == 0)
        return NULL;
    json_object *o = json_tokener_parse(text);
    ck_assert_msg(o != NULL, "bad JSON in vector: %s", text);
    return o;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
        s[--n] = '\0';
    return s;
}

/* Splits on " | " into at most 6 fields. */
static int split_fields(char *line, char *fields[6])
{
    int n = 0;
    char *p = line;
    while (n < 5) {
        char *bar = strstr(p, " | ");
        if (bar == NULL)
            break;
        *bar = '\0';
        fields[n++] = trim(p);
        p = bar + 3;
    }
    fields[n++] = trim(p);
    return n;
}

static fakedb__expr_kind kind_of(const char *k)
{
    if (strcmp(k, "cond") == 0)
        return FAKEDB_EXPR_CONDITION;
    if (strcmp(k, "filter") == 0)
        return FAKEDB_EXPR_FILTER;
    if (strcmp(k, "key") == 0)
        return FAKEDB_EXPR_KEY_CONDITION;
    if (strcmp(k, "proj") == 0)
        return FAKEDB_EXPR_PROJECTION;
    ck_assert_msg(strcmp(k, "update") == 0, "unknown kind %s", k);
    return FAKEDB_EXPR_UPDATE;
}

static const char *key_op_name(fakedb__key_op op)
{
    static const char *const names[] = {"NONE", "EQ", "LT", "LE", "GT", "GE", "BETWEEN", "BEGINS_WITH"};
    return names[op];
}

/* The outcome of one vector as text comparable with its expected field. */
static void run_case(char **f, char *got, size_t cap)
{
    fakedb__expr_kind kind = kind_of(f[0]);
    json_object *names = parse_json_field(f[2]);
    json_object *values = parse_json_field(f[3]);
    json_object *item = parse_json_field(f[4]);
    char err[FAKEDB_EXPR_ERR_MAX] = "";
    fakedb__expr_ctx *ctx = fakedb__expr_ctx_new(names, values, err);
    fakedb__expr *e = NULL;
    if (ctx == NULL) {
        snprintf(got, cap, "error: %s", err);
        goto out;
    }
    e = fakedb__expr_parse(ctx, kind, f[1], err);
    if (e == NULL) {
        snprintf(got, cap, "error: %s", err);
        goto out;
    }
    if (fakedb__expr_check_unused(ctx, err) != 0) {
        snprintf(got, cap, "error: %s", err);
        goto out;
    }
    switch (kind) {
    case FAKEDB_EXPR_CONDITION:
    case FAKEDB_EXPR_FILTER: {
        bool result = false;
        if (fakedb__expr_eval(e, item, &result, err) != 0)
            snprintf(got, cap, "error: %s", err);
        else
            snprintf(got, cap, "%s", result ? "true" : "false");
        break;
    }
    case FAKEDB_EXPR_PROJECTION: {
        json_object *r = fakedb__expr_project(e, item);
        snprintf(got, cap, "%s", json_object_to_json_string_ext(r, JSON_C_TO_STRING_PLAIN));
        json_object_put(r);
        break;
    }
    case FAKEDB_EXPR_UPDATE: {
        static const char *const keys[] = {"pk", "sk", NULL};
        json_object *before = NULL;
        ck_assert_int_eq(json_object_deep_copy(item, &before, NULL), 0);
        if (fakedb__expr_apply_update(e, item, keys, err) != 0) {
            snprintf(got, cap, "error: %s", err);
            ck_assert_msg(json_object_equal(before, item), "item changed by a failed update");
        } else {
            snprintf(got, cap, "%s", json_object_to_json_string_ext(item, JSON_C_TO_STRING_PLAIN));
        }
        json_object_put(before);
        break;
    }
    case FAKEDB_EXPR_KEY_CONDITION: {
        /* the item field holds the key schema: {"pk": "S", "sk": "N"} */
        const char *pk_name = NULL, *sk_name = NULL;
        char pk_type = 'S', sk_type = 'S';
        int i = 0;
        json_object_object_foreach(item, k, v) {
            if (i == 0) {
                pk_name = k;
                pk_type = json_object_get_string(v)[0];
            } else {
                sk_name = k;
                sk_type = json_object_get_string(v)[0];
            }
            i++;
        }
        fakedb__key_cond kc;
        if (fakedb__expr_key_condition(e, pk_name, pk_type, sk_name, sk_type, &kc, err) != 0) {
            snprintf(got, cap, "error: %s", err);
            break;
        }
        json_object *r = json_object_new_object();
        json_object_object_add(r, "pk", json_object_get(kc.pk_value));
        json_object_object_add(r, "op", json_object_new_string(key_op_name(kc.sk_op)));
        if (kc.sk_value1 != NULL)
            json_object_object_add(r, "v1", json_object_get(kc.sk_value1));
        if (kc.sk_value2 != NULL)
            json_object_object_add(r, "v2", json_object_get(kc.sk_value2));
        snprintf(got, cap, "%s", json_object_to_json_string_ext(r, JSON_C_TO_STRING_PLAIN));
        json_object_put(r);
        break;
    }
    }
out:
    fakedb__expr_free(e);
    fakedb__expr_ctx_free(ctx);
    json_object_put(names);
    json_object_put(values);
    json_object_put(item);
}

/* Expected JSON results compare as JSON; everything else as text. */
static bool same_result(const char *got, const char *want)
{
    if (strcmp(got, want) == 0)
        return true;
    if (want[0] != '{')
        return false;
    json_object *a = json_tokener_parse(got), *b = json_tokener_parse(want);
    bool same = a != NULL && b != NULL && json_object_equal(a, b);
    json_object_put(a);
    json_object_put(b);
    return same;
}

static int run_file(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s%s", VECTOR_DIR, name);
    FILE *fp = fopen(path, "r");
    ck_assert_msg(fp != NULL, "cannot open %s", path);
    static char line[16384];
    static char got[16384];
    int lineno = 0, count = 0, failures = 0;
    while (fgets(line, sizeof line, fp) != NULL) {
        lineno++;
        char *l = trim(line);
        if (l[0] == '#' || l[0] == '\0')
            continue;
        /* "@repeat N TEXT" expands TEXT N times in the expression field */
        char *fields[6];
        int n = split_fields(l, fields);
        ck_assert_msg(n == 6, "%s:%d: want 6 fields, got %d", name, lineno, n);
        char expanded[8192];
        if (strncmp(fields[1], "@repeat ", 8) == 0) {
            char *end;
            long times = strtol(fields[1] + 8, &end, 10);
            const char *unit = end + 1;
            const char *tail = strstr(unit, " @then ");
            size_t unit_len = tail != NULL ? (size_t)(tail - unit) : strlen(unit);
            size_t len = 0;
            for (long i = 0; i < times && len + unit_len < sizeof expanded - 1; i++) {
                memcpy(expanded + len, unit, unit_len);
                len += unit_len;
            }
            expanded[len] = '\0';
            if (tail != NULL)
                snprintf(expanded + len, sizeof expanded - len, "%s", tail + 7);
            fields[1] = expanded;
        }
        got[0] = '\0';
        run_case(fields, got, sizeof got);
        if (!same_result(got, fields[5])) {
            fprintf(stderr, "%s:%d: %s\n   want: %s\n    got: %s\n", name, lineno,
                    fields[1], fields[5], got);
            failures++;
        }
        count++;
    }
    fclose(fp);
    ck_assert_msg(failures == 0, "%s: %d of %d vectors failed", name, failures, count);
    return count;
}

START_TEST(test_condition_vectors)
{
    ck_assert_int_ge(run_file("condition.txt"), 50);
}
END_TEST

START_TEST(test_update_vectors)
{
    ck_assert_int_ge(run_file("update.txt"), 50);
}
END_TEST

START_TEST(test_projection_vectors)
{
    ck_assert_int_ge(run_file("projection.txt"), 10);
}
END_TEST

START_TEST(test_key_condition_vectors)
{
    ck_assert_int_ge(run_file("key_condition.txt"), 15);
}
END_TEST

START_TEST(test_error_vectors)
{
    ck_assert_int_ge(run_file("errors.txt"), 50);
}
END_TEST

static json_object *av(const char *json)
{
    json_object *o = json_tokener_parse(json);
    ck_assert_ptr_nonnull(o);
    return o;
}

START_TEST(test_av_compare)
{
    static const struct { const char *a, *b; int want; } cases[] = {
        {"{\"N\":\"10\"}", "{\"N\":\"9\"}", 1},
        {"{\"N\":\"1.0\"}", "{\"N\":\"1\"}", 0},
        {"{\"N\":\"-5\"}", "{\"N\":\"2\"}", -1},
        {"{\"S\":\"a\"}", "{\"S\":\"b\"}", -1},
        {"{\"S\":\"ab\"}", "{\"S\":\"a\"}", 1},
        {"{\"S\":\"\\u00e9\"}", "{\"S\":\"z\"}", 1},  /* UTF-8 bytes, not code units */
        {"{\"B\":\"AQ==\"}", "{\"B\":\"Ag==\"}", -1},
        {"{\"B\":\"/w==\"}", "{\"B\":\"AQ==\"}", 1},  /* 0xFF > 0x01 even though '/' < 'A' */
        {"{\"S\":\"1\"}", "{\"N\":\"1\"}", 2},
        {"{\"BOOL\":true}", "{\"BOOL\":true}", 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_object *a = av(cases[i].a), *b = av(cases[i].b);
        int c = fakedb__av_compare(a, b);
        ck_assert_msg(c == cases[i].want, "%s vs %s: %d", cases[i].a, cases[i].b, c);
        json_object_put(a);
        json_object_put(b);
    }
}
END_TEST

START_TEST(test_av_equal)
{
    static const struct { const char *a, *b; bool want; } cases[] = {
        {"{\"SS\":[\"a\",\"b\"]}", "{\"SS\":[\"b\",\"a\"]}", true},
        {"{\"NS\":[\"1\",\"2.0\"]}", "{\"NS\":[\"2\",\"1.00\"]}", true},
        {"{\"NS\":[\"1\"]}", "{\"NS\":[\"1\",\"2\"]}", false},
        {"{\"L\":[{\"N\":\"1\"}]}", "{\"L\":[{\"N\":\"1.0\"}]}", true},
        {"{\"L\":[{\"N\":\"1\"},{\"S\":\"x\"}]}", "{\"L\":[{\"S\":\"x\"},{\"N\":\"1\"}]}", false},
        {"{\"M\":{\"a\":{\"S\":\"x\"}}}", "{\"M\":{\"a\":{\"S\":\"x\"}}}", true},
        {"{\"M\":{\"a\":{\"S\":\"x\"}}}", "{\"M\":{\"b\":{\"S\":\"x\"}}}", false},
        {"{\"NULL\":true}", "{\"NULL\":true}", true},
        {"{\"BOOL\":true}", "{\"BOOL\":false}", false},
        {"{\"S\":\"1\"}", "{\"N\":\"1\"}", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_object *a = av(cases[i].a), *b = av(cases[i].b);
        ck_assert_msg(fakedb__av_equal(a, b) == cases[i].want, "%s vs %s", cases[i].a, cases[i].b);
        json_object_put(a);
        json_object_put(b);
    }
}
END_TEST

START_TEST(test_item_size)
{
    json_object *small = av("{\"pk\":{\"S\":\"abc\"}}");
    json_object *big = av("{\"pk\":{\"S\":\"abc\"},\"n\":{\"N\":\"12345\"},\"l\":{\"L\":[{\"BOOL\":true}]}}");
    ck_assert_uint_eq(fakedb__item_size(small), 5);
    ck_assert_uint_gt(fakedb__item_size(big), fakedb__item_size(small));
    ck_assert_uint_eq(fakedb__item_size(NULL), 0);
    json_object_put(small);
    json_object_put(big);
}
END_TEST

START_TEST(test_update_targets)
{
    json_object *values = av("{\":v\":{\"N\":\"1\"}}");
    char err[FAKEDB_EXPR_ERR_MAX];
    fakedb__expr_ctx *ctx = fakedb__expr_ctx_new(NULL, values, err);
    ck_assert_ptr_nonnull(ctx);
    fakedb__expr *e = fakedb__expr_parse(ctx, FAKEDB_EXPR_UPDATE,
                                         "SET a = :v, m.x = :v, m.y = :v REMOVE b ADD c :v", err);
    ck_assert_msg(e != NULL, "%s", err);
    const char *const *t = fakedb__expr_update_targets(e);
    const char *want[] = {"a", "m", "b", "c"};
    int n = 0;
    for (; t[n] != NULL; n++)
        ck_assert_str_eq(t[n], want[n]);
    ck_assert_int_eq(n, 4);
    fakedb__expr_free(e);
    fakedb__expr_free(NULL);
    fakedb__expr_ctx_free(ctx);
    fakedb__expr_ctx_free(NULL);
    json_object_put(values);
}
END_TEST

/* One context shared by two expressions: a value used by either is not unused. */
START_TEST(test_shared_context)
{
    json_object *values = av("{\":a\":{\"N\":\"1\"},\":b\":{\"N\":\"2\"}}");
    char err[FAKEDB_EXPR_ERR_MAX];
    fakedb__expr_ctx *ctx = fakedb__expr_ctx_new(NULL, values, err);
    fakedb__expr *u = fakedb__expr_parse(ctx, FAKEDB_EXPR_UPDATE, "SET x = :a", err);
    ck_assert_ptr_nonnull(u);
    ck_assert_int_eq(fakedb__expr_check_unused(ctx, err), -1);
    ck_assert_str_eq(err, "Value provided in ExpressionAttributeValues unused in expressions: keys: {:b}");
    fakedb__expr *c = fakedb__expr_parse(ctx, FAKEDB_EXPR_CONDITION, "x <> :b", err);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(fakedb__expr_check_unused(ctx, err), 0);
    fakedb__expr_free(u);
    fakedb__expr_free(c);
    fakedb__expr_ctx_free(ctx);
    json_object_put(values);
}
END_TEST

/* Random token soup: every parse either fails with a message or yields an expression
 * that evaluates, updates and projects without crashing. */
START_TEST(test_hostile_input)
{
    static const char *const pieces[] = {
        "a", "#n", ":v", ":s", ":l", "=", "<>", "<", ">=", "(", ")", "[", "]", "0", "7", ",",
        ".", "+", "-", "AND", "OR", "NOT", "BETWEEN", "IN", "SET", "REMOVE", "ADD", "DELETE",
        "size", "contains", "begins_with", "attribute_exists", "if_not_exists", "list_append",
        "m", "l", "x", "@", "\xc3\xa9", " ",
    };
    json_object *names = av("{\"#n\":\"m\"}");
    json_object *values = av("{\":v\":{\"N\":\"1\"},\":s\":{\"SS\":[\"q\"]},\":l\":{\"L\":[]}}");
    json_object *item = av("{\"pk\":{\"S\":\"k\"},\"a\":{\"N\":\"5\"},\"m\":{\"M\":{\"x\":{\"L\":[{\"N\":\"1\"}]}}},"
                           "\"l\":{\"L\":[{\"S\":\"z\"},{\"N\":\"2\"}]}}");
    uint32_t seed = 12345;
    static const fakedb__expr_kind kinds[] = {FAKEDB_EXPR_CONDITION, FAKEDB_EXPR_UPDATE,
                                              FAKEDB_EXPR_PROJECTION, FAKEDB_EXPR_KEY_CONDITION};
    for (int round = 0; round < 20000; round++) {
        char text[256] = "";
        size_t len = 0;
        seed = seed * 1103515245u + 12345u;
        int count = 1 + (int)((seed >> 16) % 12);
        for (int i = 0; i < count; i++) {
            seed = seed * 1103515245u + 12345u;
            const char *piece = pieces[(seed >> 16) % (sizeof pieces / sizeof pieces[0])];
            len += (size_t)snprintf(text + len, sizeof text - len, "%s ", piece);
        }
        char err[FAKEDB_EXPR_ERR_MAX] = "";
        fakedb__expr_ctx *ctx = fakedb__expr_ctx_new(names, values, err);
        fakedb__expr_kind kind = kinds[round % 4];
        fakedb__expr *e = fakedb__expr_parse(ctx, kind, text, err);
        if (e == NULL) {
            ck_assert_msg(err[0] != '\0', "no message for %s", text);
        } else if (kind == FAKEDB_EXPR_CONDITION) {
            bool r;
            ck_assert_int_eq(fakedb__expr_eval(e, item, &r, err), 0);
            ck_assert_int_eq(fakedb__expr_eval(e, NULL, &r, err), 0);
        } else if (kind == FAKEDB_EXPR_UPDATE) {
            json_object *copy = NULL;
            json_object_deep_copy(item, &copy, NULL);
            static const char *const keys[] = {"pk", NULL};
            (void)fakedb__expr_apply_update(e, copy, keys, err);
            json_object_put(copy);
        } else if (kind == FAKEDB_EXPR_PROJECTION) {
            json_object_put(fakedb__expr_project(e, item));
        } else {
            fakedb__key_cond kc;
            (void)fakedb__expr_key_condition(e, "a", 'N', "l", 'S', &kc, err);
        }
        (void)fakedb__expr_check_unused(ctx, err);
        fakedb__expr_free(e);
        fakedb__expr_ctx_free(ctx);
    }
    json_object_put(names);
    json_object_put(values);
    json_object_put(item);
}
END_TEST

START_TEST(test_deep_nesting)
{
    /* deeply nested parentheses and NOTs stay within limits and fail cleanly */
    char text[4200];
    size_t len = 0;
    for (int i = 0; i < 1500; i++)
        text[len++] = '(';
    len += (size_t)snprintf(text + len, sizeof text - len, "a = :v");
    for (int i = 0; i < 1500; i++)
        text[len++] = ')';
    text[len] = '\0';
    json_object *values = av("{\":v\":{\"N\":\"1\"}}");
    char err[FAKEDB_EXPR_ERR_MAX];
    fakedb__expr_ctx *ctx = fakedb__expr_ctx_new(NULL, values, err);
    ck_assert_ptr_null(fakedb__expr_parse(ctx, FAKEDB_EXPR_CONDITION, text, err));
    len = 0;
    for (int i = 0; i < 1000; i++)
        len += (size_t)snprintf(text + len, sizeof text - len, "NOT ");
    snprintf(text + len, sizeof text - len, "a = :v");
    ck_assert_ptr_null(fakedb__expr_parse(ctx, FAKEDB_EXPR_CONDITION, text, err));
    ck_assert_str_eq(err, "Invalid ConditionExpression: The expression contains too many operators; operator count: 301");
    fakedb__expr_ctx_free(ctx);
    json_object_put(values);
}
END_TEST

static Suite *expr_suite(void)
{
    Suite *s = suite_create("expr");
    TCase *tc = tcase_create("vectors");
    tcase_add_test(tc, test_condition_vectors);
    tcase_add_test(tc, test_update_vectors);
    tcase_add_test(tc, test_projection_vectors);
    tcase_add_test(tc, test_key_condition_vectors);
    tcase_add_test(tc, test_error_vectors);
    suite_add_tcase(s, tc);
    TCase *units = tcase_create("units");
    tcase_add_test(units, test_av_compare);
    tcase_add_test(units, test_av_equal);
    tcase_add_test(units, test_item_size);
    tcase_add_test(units, test_update_targets);
    tcase_add_test(units, test_shared_context);
    tcase_add_test(units, test_hostile_input);
    tcase_add_test(units, test_deep_nesting);
    suite_add_tcase(s, units);
    return s;
}

int main(void)
{
    return dl_check_run(expr_suite());
}
