/* test_items.c: values, items and DynamoDB JSON: every type, insertion order, copies
 * and equality, and conversion both ways including malformed input. */
#include <check.h>

#include "dl_check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dynalock/ddb.h>

#include "client.h" /* ddb__text_item, the request encoder */
#include "items.h"

START_TEST(scalars)
{
    ddb_value *s = ddb_value_s("héllo");
    ck_assert_int_eq(ddb_value_type(s), DDB_S);
    size_t len;
    ck_assert_str_eq(ddb_value_get_s(s, &len), "héllo");
    ck_assert_uint_eq(len, strlen("héllo"));
    ck_assert_ptr_null(ddb_value_get_n(s));

    ddb_value *n = ddb_value_n("-12.50e3");
    ck_assert_ptr_nonnull(n);
    ck_assert_str_eq(ddb_value_get_n(n), "-12.50e3");
    int64_t i;
    ck_assert_int_eq(ddb_value_get_i64(n, &i), 0);
    ck_assert_int_eq(i, -12500);
    ddb_value *frac = ddb_value_n("1.5");
    ck_assert_int_eq(ddb_value_get_i64(frac, &i), DDB_EINVAL);

    ck_assert_ptr_null(ddb_value_n("abc"));
    ck_assert_ptr_null(ddb_value_n(""));
    ck_assert_ptr_null(ddb_value_n(" 1"));
    ck_assert_ptr_null(ddb_value_n("1e999"));
    ck_assert_ptr_null(ddb_value_n("123456789012345678901234567890123456789"));
    ck_assert_ptr_null(ddb_value_n(NULL));

    ddb_value *big = ddb_value_n_i64(INT64_MIN);
    ck_assert_str_eq(ddb_value_get_n(big), "-9223372036854775808");
    ck_assert_int_eq(ddb_value_get_i64(big, &i), 0);
    ck_assert(i == INT64_MIN);

    const unsigned char raw[] = { 0, 1, 2, 255 };
    ddb_value *b = ddb_value_b(raw, sizeof raw);
    const void *got = ddb_value_get_b(b, &len);
    ck_assert_uint_eq(len, 4);
    ck_assert_mem_eq(got, raw, 4);

    ddb_value *t = ddb_value_bool(true);
    bool bv = false;
    ck_assert_int_eq(ddb_value_get_bool(t, &bv), 0);
    ck_assert(bv);
    ck_assert_int_eq(ddb_value_get_bool(s, &bv), DDB_EINVAL);
    ddb_value *nul = ddb_value_null();
    ck_assert_int_eq(ddb_value_type(nul), DDB_NULL);

    ddb_value *values[] = { s, n, frac, big, b, t, nul };
    for (size_t k = 0; k < sizeof values / sizeof values[0]; k++)
        ddb_value_free(values[k]);
}
END_TEST

START_TEST(numbers_compare_by_value)
{
    ddb_value *a = ddb_value_n("1.50"), *b = ddb_value_n("1.5"), *c = ddb_value_n("15e-1");
    ddb_value *d = ddb_value_n("1.51");
    ck_assert(ddb_value_equal(a, b));
    ck_assert(ddb_value_equal(a, c));
    ck_assert(!ddb_value_equal(a, d));
    ddb_value_free(a);
    ddb_value_free(b);
    ddb_value_free(c);
    ddb_value_free(d);
}
END_TEST

START_TEST(lists_maps_sets)
{
    ddb_value *l = ddb_value_l();
    ck_assert_int_eq(ddb_value_append(l, ddb_value_s("a")), 0);
    ck_assert_int_eq(ddb_value_append(l, ddb_value_n_i64(2)), 0);
    ck_assert_int_eq(ddb_value_append(l, l), DDB_EINVAL); /* itself: refused, not freed */
    ddb_value *notlist = ddb_value_s("x");
    ck_assert_int_eq(ddb_value_append(notlist, ddb_value_s("y")), DDB_EINVAL);
    ddb_value_free(notlist);
    ck_assert_uint_eq(ddb_value_count(l), 2);
    ck_assert_str_eq(ddb_value_get_s(ddb_value_at(l, 0), NULL), "a");
    ck_assert_ptr_null(ddb_value_at(l, 2));

    ddb_value *m = ddb_value_m();
    ddb_item *mi = ddb_value_get_m_mut(m);
    ck_assert_int_eq(ddb_item_set_s(mi, "k", "v"), 0);
    ck_assert_uint_eq(ddb_value_count(m), 1);
    ck_assert_str_eq(ddb_item_get_s(ddb_value_get_m(m), "k"), "v");

    ddb_value *ss = ddb_value_ss();
    ck_assert_int_eq(ddb_value_add_s(ss, "x"), 0);
    ck_assert_int_eq(ddb_value_add_s(ss, "y"), 0);
    ck_assert_int_eq(ddb_value_add_s(ss, "x"), 0); /* already there */
    ck_assert_uint_eq(ddb_value_count(ss), 2);
    ck_assert_int_eq(ddb_value_add_n(ss, "1"), DDB_EINVAL);

    ddb_value *ns = ddb_value_ns();
    ck_assert_int_eq(ddb_value_add_n(ns, "1"), 0);
    ck_assert_int_eq(ddb_value_add_n(ns, "1.0"), 0); /* same number */
    ck_assert_int_eq(ddb_value_add_n(ns, "bad"), DDB_EINVAL);
    ck_assert_uint_eq(ddb_value_count(ns), 1);
    ck_assert_int_eq(ddb_value_type(ddb_value_at(ns, 0)), DDB_N);

    ddb_value *bs = ddb_value_bs();
    ck_assert_int_eq(ddb_value_add_b(bs, "\x01\x02", 2), 0);
    ck_assert_int_eq(ddb_value_add_b(bs, "\x03", 1), 0);
    ck_assert_uint_eq(ddb_value_count(bs), 2);

    /* Sets are equal in any order; lists are not. */
    ddb_value *ss2 = ddb_value_ss();
    ddb_value_add_s(ss2, "y");
    ddb_value_add_s(ss2, "x");
    ck_assert(ddb_value_equal(ss, ss2));
    ddb_value *l2 = ddb_value_l();
    ddb_value_append(l2, ddb_value_n_i64(2));
    ddb_value_append(l2, ddb_value_s("a"));
    ck_assert(!ddb_value_equal(l, l2));

    ddb_value *lc = ddb_value_copy(l);
    ck_assert(ddb_value_equal(l, lc));
    ddb_value *mc = ddb_value_copy(m);
    ck_assert(ddb_value_equal(m, mc));

    ddb_value *all[] = { l, m, ss, ns, bs, ss2, l2, lc, mc };
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
        ddb_value_free(all[k]);
}
END_TEST

START_TEST(item_order_and_access)
{
    ddb_item *it = ddb_item_new();
    ck_assert_int_eq(ddb_item_set_s(it, "pk", "a"), 0);
    ck_assert_int_eq(ddb_item_set_i64(it, "n", 42), 0);
    ck_assert_int_eq(ddb_item_set_bool(it, "flag", true), 0);
    ck_assert_int_eq(ddb_item_set_null(it, "nothing"), 0);
    ck_assert_int_eq(ddb_item_set_b(it, "bin", "xy", 2), 0);
    ck_assert_int_eq(ddb_item_set_n(it, "bad", "1..2"), DDB_EINVAL);
    ck_assert_int_eq(ddb_item_set(it, "none", NULL), DDB_EINVAL);
    ck_assert_uint_eq(ddb_item_count(it), 5);
    const char *order[] = { "pk", "n", "flag", "nothing", "bin" };
    for (size_t i = 0; i < 5; i++)
        ck_assert_str_eq(ddb_item_name_at(it, i), order[i]);

    /* Replacing keeps the position. */
    ck_assert_int_eq(ddb_item_set_s(it, "n", "text"), 0);
    ck_assert_str_eq(ddb_item_name_at(it, 1), "n");
    ck_assert_str_eq(ddb_item_get_s(it, "n"), "text");
    int64_t v;
    ck_assert_int_eq(ddb_item_get_i64(it, "n", &v), DDB_EINVAL);
    ck_assert_int_eq(ddb_item_get_i64(it, "missing", &v), DDB_EINVAL);
    bool b;
    ck_assert_int_eq(ddb_item_get_bool(it, "flag", &b), 0);
    ck_assert(b);

    ck_assert_int_eq(ddb_item_remove(it, "flag"), 0);
    ck_assert_int_eq(ddb_item_remove(it, "flag"), DDB_ENOTFOUND);
    ck_assert_str_eq(ddb_item_name_at(it, 2), "nothing");
    ck_assert_ptr_null(ddb_item_name_at(it, 4));

    ddb_item *c = ddb_item_copy(it);
    ck_assert(ddb_item_equal(it, c));
    ddb_item_set_s(c, "pk", "b");
    ck_assert(!ddb_item_equal(it, c));
    ddb_item_free(c);
    ddb_item_free(it);
    ddb_item_free(NULL);
    ddb_value_free(NULL);
}
END_TEST

START_TEST(json_round_trip_every_type)
{
    ddb_item *it = ddb_item_new();
    ddb_item_set_s(it, "s", "a\"b\\c\n/é");
    ddb_item_set_n(it, "n", "-0.001");
    ddb_item_set_b(it, "b", "\x00\xff\x10", 3);
    ddb_item_set_bool(it, "t", false);
    ddb_item_set_null(it, "z");
    ddb_value *l = ddb_value_l();
    ddb_value_append(l, ddb_value_s("x"));
    ddb_value *m = ddb_value_m();
    ddb_item_set_i64(ddb_value_get_m_mut(m), "deep", 7);
    ddb_value_append(l, m);
    ddb_item_set(it, "l", l);
    ddb_value *ss = ddb_value_ss();
    ddb_value_add_s(ss, "p");
    ddb_item_set(it, "ss", ss);
    ddb_value *ns = ddb_value_ns();
    ddb_value_add_n(ns, "3");
    ddb_value_add_n(ns, "4.5");
    ddb_item_set(it, "ns", ns);
    ddb_value *bs = ddb_value_bs();
    ddb_value_add_b(bs, "ab", 2);
    ddb_item_set(it, "bs", bs);

    char *json = ddb_item_to_json(it);
    ck_assert_ptr_nonnull(json);
    ck_assert_ptr_nonnull(strstr(json, "\"b\":{\"B\":\"AP8Q\"}"));
    ck_assert_ptr_nonnull(strstr(json, "\"z\":{\"NULL\":true}"));
    ck_assert_ptr_nonnull(strstr(json, "\"n\":{\"N\":\"-0.001\"}"));
    ddb_error err;
    ddb_item *back = ddb_item_from_json(json, strlen(json), &err);
    ck_assert_ptr_nonnull(back);
    ck_assert(ddb_item_equal(it, back));
    for (size_t i = 0; i < ddb_item_count(it); i++)
        ck_assert_str_eq(ddb_item_name_at(it, i), ddb_item_name_at(back, i));
    size_t len;
    ck_assert_mem_eq(ddb_value_get_b(ddb_item_get(back, "b"), &len), "\x00\xff\x10", 3);
    free(json);
    ddb_item_free(back);
    ddb_item_free(it);
}
END_TEST

START_TEST(json_malformed)
{
    const char *bad[] = {
        "", "{", "[]", "{\"a\":1}", "{\"a\":{}}", "{\"a\":{\"S\":1}}",
        "{\"a\":{\"S\":\"x\",\"N\":\"1\"}}", "{\"a\":{\"N\":\"x\"}}", "{\"a\":{\"N\":\"1e400\"}}",
        "{\"a\":{\"B\":\"###\"}}", "{\"a\":{\"BOOL\":\"true\"}}", "{\"a\":{\"NULL\":false}}",
        "{\"a\":{\"L\":{}}}", "{\"a\":{\"L\":[1]}}", "{\"a\":{\"M\":[]}}", "{\"a\":{\"SS\":[1]}}",
        "{\"a\":{\"NS\":[\"x\"]}}", "{\"a\":{\"BS\":[\"@\"]}}", "{\"a\":{\"Q\":\"x\"}}",
        "{\"a\":{\"S\":\"x\"}} trailing", "{\"a\":{\"M\":{\"b\":{\"L\":[{\"X\":1}]}}}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ddb_error err;
        ddb_item *it = ddb_item_from_json(bad[i], strlen(bad[i]), &err);
        ck_assert_msg(it == NULL, "accepted %s", bad[i]);
        ck_assert_int_eq(err.code, DDB_EINVAL);
        ck_assert(err.message[0] != '\0');
    }
    /* Deep nesting is refused, never a stack overflow. */
    size_t depth = 5000;
    char *deep = malloc(depth * 16 + 32);
    size_t at = 0;
    at += (size_t)sprintf(deep + at, "{\"a\":");
    for (size_t i = 0; i < depth; i++)
        at += (size_t)sprintf(deep + at, "{\"L\":[");
    deep[at] = '\0';
    ddb_error err;
    ck_assert_ptr_null(ddb_item_from_json(deep, at, &err));
    free(deep);
    ck_assert_ptr_null(ddb_item_from_json(NULL, 0, NULL));
}
END_TEST

START_TEST(value_json)
{
    ddb_error err;
    const char *j = "{\"NS\":[\"1\",\"2\"]}";
    ddb_value *v = ddb_value_from_json(j, strlen(j), &err);
    ck_assert_ptr_nonnull(v);
    ck_assert_int_eq(ddb_value_type(v), DDB_NS);
    ck_assert_uint_eq(ddb_value_count(v), 2);
    char *out = ddb_value_to_json(v);
    ck_assert_str_eq(out, j);
    free(out);
    ddb_value_free(v);
}
END_TEST

/* ---- the two encoders of DynamoDB JSON: the json-c tree (ddb__item_to_jobj, serialised
 * as ddb__client_send does) and the request text (ddb__text_item) must agree byte for
 * byte on every item, or a request would depend on which path built it. */

static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 11) % n;
}

/* Random text: plain letters, every character JSON escapes, '/', DEL, multi-byte UTF-8,
 * and now and then bytes that are not UTF-8 at all. */
static size_t random_text(char *out, size_t cap, bool allow_nul)
{
    static const char *const pieces[] = {
        "a", "Z", "0", " ", "\"", "\\", "/", "\x7f", "\b", "\f", "\n", "\r", "\t", "\x01",
        "\x1f", "\x1b", "caf\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xed\x9f\xbf",
        "\xef\xbf\xbf", "\xc3", "\xff", "\x80", "<", "&", "'", "\\u0000", "%",
    };
    size_t n = 0, want = rnd(12);
    for (size_t i = 0; i < want; i++) {
        if (allow_nul && rnd(20) == 0) {
            if (n + 1 >= cap)
                break;
            out[n++] = '\0';
            continue;
        }
        const char *p = pieces[rnd(sizeof pieces / sizeof *pieces)];
        size_t l = strlen(p);
        if (n + l >= cap)
            break;
        memcpy(out + n, p, l);
        n += l;
    }
    out[n] = '\0';
    return n;
}

static void random_number(char *out, size_t cap)
{
    static const char *const fixed[] = { "0", "-0", "1", "-1", "0.5", "1e2", "1E-130",
        "9.9999999999999999999999999999999999999E+125", "-123.4500", "00012", ".5", "5.",
        "12345678901234567890123456789012345678" };
    if (rnd(3) == 0) {
        snprintf(out, cap, "%s", fixed[rnd(sizeof fixed / sizeof *fixed)]);
        return;
    }
    int n = snprintf(out, cap, "%s%u", rnd(2) ? "-" : "", rnd(1000000));
    if (rnd(2))
        n += snprintf(out + n, cap - (size_t)n, ".%u", rnd(10000));
    if (rnd(3) == 0)
        snprintf(out + n, cap - (size_t)n, "e%s%u", rnd(2) ? "-" : "+", rnd(40));
}

static ddb_item *random_item(int depth);

static ddb_value *random_value(int depth)
{
    char text[256];
    int kind = rnd(depth > 3 ? 8 : 10);
    switch (kind) {
    case 0: {
        size_t n = random_text(text, sizeof text, true);
        return ddb_value_s_len(text, n);
    }
    case 1:
        random_number(text, sizeof text);
        return ddb_value_n(text); /* NULL for the rare invalid one: skipped */
    case 2: {
        unsigned char b[40];
        size_t n = rnd(sizeof b);
        for (size_t i = 0; i < n; i++)
            b[i] = (unsigned char)rnd(256);
        return ddb_value_b(b, n);
    }
    case 3: return ddb_value_bool(rnd(2));
    case 4: return ddb_value_null();
    case 5: case 6: case 7: {
        ddb_value *set = kind == 5 ? ddb_value_ss() : kind == 6 ? ddb_value_ns() : ddb_value_bs();
        for (uint32_t i = 0, n = 1 + rnd(4); set && i < n; i++) {
            if (kind == 5) {
                random_text(text, sizeof text, false);
                (void)ddb_value_add_s(set, text);
            } else if (kind == 6) {
                random_number(text, sizeof text);
                (void)ddb_value_add_n(set, text);
            } else {
                random_text(text, sizeof text, false);
                (void)ddb_value_add_b(set, text, strlen(text));
            }
        }
        return set;
    }
    case 8: {
        ddb_value *l = ddb_value_l();
        for (uint32_t i = 0, n = rnd(4); l && i < n; i++) {
            ddb_value *e = random_value(depth + 1);
            if (e)
                ck_assert_int_eq(ddb_value_append(l, e), 0);
        }
        return l;
    }
    default: {
        ddb_value *m = ddb_value_m();
        ddb_item *inner = random_item(depth + 1);
        for (size_t i = 0; m && i < ddb_item_count(inner); i++)
            ck_assert_int_eq(ddb_item_set(ddb_value_get_m_mut(m), ddb_item_name_at(inner, i),
                                          ddb_value_copy(ddb_item_value_at(inner, i))), 0);
        ddb_item_free(inner);
        return m;
    }
    }
}

static ddb_item *random_item(int depth)
{
    ddb_item *it = ddb_item_new();
    ck_assert_ptr_nonnull(it);
    char name[256];
    for (uint32_t i = 0, n = rnd(6); i < n; i++) {
        if (random_text(name, sizeof name, false) == 0)
            snprintf(name, sizeof name, "k%u", i);
        ddb_value *v = random_value(depth);
        if (v)
            ck_assert_int_eq(ddb_item_set(it, name, v), 0);
    }
    return it;
}

START_TEST(encoders_agree_byte_for_byte)
{
    for (uint64_t seed = 1; seed <= 3000; seed++) {
        rng_state = seed * 0x9E3779B97F4A7C15ull;
        ddb_item *it = random_item(0);
        json_object *tree = ddb__item_to_jobj(it);
        ck_assert_ptr_nonnull(tree);
        size_t tlen;
        const char *ttext = json_object_to_json_string_length(
            tree, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &tlen);
        dl_buf text = { 0 };
        ddb__text_item(&text, it);
        ck_assert(!text.oom);
        if (tlen != text.len || memcmp(ttext, text.p, tlen) != 0)
            ck_abort_msg("seed %llu: the encoders differ:\n tree %s\n text %s",
                         (unsigned long long)seed, ttext, text.p);
        /* and what they write reads back as the same item */
        ddb_error err;
        ddb_item *back = ddb_item_from_json(text.p, text.len, &err);
        ck_assert_msg(back != NULL, "seed %llu: %s", (unsigned long long)seed, err.message);
        ck_assert(ddb_item_equal(back, it));
        ddb_item_free(back);
        dl__buf_cleanup(&text);
        json_object_put(tree);
        ddb_item_free(it);
    }
}
END_TEST

static Suite *items_suite(void)
{
    Suite *s = suite_create("items");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, scalars);
    tcase_add_test(tc, numbers_compare_by_value);
    tcase_add_test(tc, lists_maps_sets);
    tcase_add_test(tc, item_order_and_access);
    tcase_add_test(tc, json_round_trip_every_type);
    tcase_add_test(tc, json_malformed);
    tcase_add_test(tc, value_json);
    tcase_add_test(tc, encoders_agree_byte_for_byte);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return dl_check_run(items_suite());
}
