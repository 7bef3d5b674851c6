/* test_decimal.c: the decimal module against tests/decimal/vectors.txt, plus properties
 * that the vectors cannot spell out: sort keys ordered as numbers, add/sub round trips,
 * and formatting that parses back to the same number. */
#include <check.h>

#include "dl_check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decimal.h"

#define VECTORS DYNALOCK_SOURCE_DIR "/tests/decimal/vectors.txt"
#define MAX_FIELDS 6

/* Splits a vector line on blanks; "..." quotes a field; <empty> is the empty string. */
static int split(char *line, char *fields[MAX_FIELDS])
{
    int n = 0;
    char *p = line;
    while (*p != '\0' && n < MAX_FIELDS) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '\0' || *p == '\n')
            break;
        char *start;
        if (*p == '"') {
            start = ++p;
            while (*p != '\0' && *p != '"')
                p++;
        } else {
            start = p;
            while (*p != '\0' && *p != ' ' && *p != '\t' && *p != '\n')
                p++;
        }
        if (*p != '\0')
            *p++ = '\0';
        fields[n++] = strcmp(start, "<empty>") == 0 ? start + strlen(start) : start;
    }
    return n;
}

static const char *status_name(dl_decimal_status st)
{
    switch (st) {
    case DL_DEC_OK: return "OK";
    case DL_DEC_SYNTAX: return "SYNTAX";
    case DL_DEC_PRECISION: return "PRECISION";
    case DL_DEC_OVERFLOW: return "OVERFLOW";
    case DL_DEC_UNDERFLOW: return "UNDERFLOW";
    }
    return "?";
}

static void parse_ok(const char *s, dl_decimal *d)
{
    dl_decimal_status st = dl__decimal_parse(s, strlen(s), d);
    ck_assert_msg(st == DL_DEC_OK, "cannot parse %s: %s", s, status_name(st));
}

static int run_vector(char **f, int n, int lineno)
{
    char buf[DL_DECIMAL_TEXT_MAX];
    dl_decimal a, b, r;
    const char *op = f[0];
    if (strcmp(op, "parse") == 0 && n == 3) {
        dl_decimal_status st = dl__decimal_parse(f[1], strlen(f[1]), &a);
        if (st != DL_DEC_OK) {
            ck_assert_msg(strcmp(status_name(st), f[2]) == 0, "line %d: %s gave %s, want %s",
                          lineno, f[1], status_name(st), f[2]);
            return 1;
        }
        size_t len = dl__decimal_format(&a, buf);
        ck_assert_uint_eq(len, strlen(buf));
        ck_assert_msg(strcmp(buf, f[2]) == 0, "line %d: %s gave %s, want %s", lineno, f[1],
                      buf, f[2]);
        char norm[DL_DECIMAL_TEXT_MAX];
        dl_decimal_status why;
        ck_assert_int_eq(dl__decimal_normalize(f[1], strlen(f[1]), norm, &why), 0);
        ck_assert_str_eq(norm, buf);
        return 1;
    }
    if ((strcmp(op, "add") == 0 || strcmp(op, "sub") == 0) && n == 4) {
        parse_ok(f[1], &a);
        parse_ok(f[2], &b);
        memset(&r, 0xAB, sizeof r);
        dl_decimal_status st = op[0] == 'a' ? dl__decimal_add(&a, &b, &r)
                                            : dl__decimal_sub(&a, &b, &r);
        if (st != DL_DEC_OK) {
            ck_assert_msg(strcmp(status_name(st), f[3]) == 0, "line %d: %s %s %s gave %s",
                          lineno, op, f[1], f[2], status_name(st));
            return 1;
        }
        dl__decimal_format(&r, buf);
        ck_assert_msg(strcmp(buf, f[3]) == 0, "line %d: %s %s %s gave %s, want %s", lineno,
                      op, f[1], f[2], buf, f[3]);
        return 1;
    }
    if (strcmp(op, "cmp") == 0 && n == 4) {
        parse_ok(f[1], &a);
        parse_ok(f[2], &b);
        int want = atoi(f[3]);
        int got = dl__decimal_cmp(&a, &b);
        ck_assert_msg(got == want, "line %d: cmp %s %s gave %d", lineno, f[1], f[2], got);
        ck_assert_int_eq(dl__decimal_cmp(&b, &a), -want);
        return 1;
    }
    if (strcmp(op, "i64") == 0 && n == 3) {
        parse_ok(f[1], &a);
        int64_t v = 42;
        int rc = dl__decimal_to_i64(&a, &v);
        if (strcmp(f[2], "NONE") == 0) {
            ck_assert_msg(rc == -1, "line %d: %s converted to %lld", lineno, f[1], (long long)v);
        } else {
            ck_assert_msg(rc == 0, "line %d: %s did not convert", lineno, f[1]);
            ck_assert_int_eq(v, strtoll(f[2], NULL, 10));
        }
        return 1;
    }
    if (strcmp(op, "fromi64") == 0 && n == 3) {
        dl__decimal_from_i64(strtoll(f[1], NULL, 10), &a);
        dl__decimal_format(&a, buf);
        ck_assert_str_eq(buf, f[2]);
        return 1;
    }
    ck_abort_msg("line %d: malformed vector", lineno);
    return 0;
}

START_TEST(test_vectors)
{
    FILE *fp = fopen(VECTORS, "r");
    ck_assert_msg(fp != NULL, "cannot open %s", VECTORS);
    char line[1024];
    int lineno = 0, count = 0;
    while (fgets(line, sizeof line, fp) != NULL) {
        lineno++;
        if (line[0] == '#' || line[0] == '\n' || line[0] == '\0')
            continue;
        char *f[MAX_FIELDS];
        int n = split(line, f);
        if (n == 0)
            continue;
        count += run_vector(f, n, lineno);
    }
    fclose(fp);
    ck_assert_int_ge(count, 100);
}
END_TEST

/* Numbers in increasing order; every pair's sort keys must compare as the numbers do. */
static const char *const ordered[] = {
    "-9.9999999999999999999999999999999999999E+125", "-1E125", "-1000", "-999.99",
    "-101", "-100.5", "-100", "-99", "-10.01", "-10", "-9", "-1.1", "-1.01", "-1.001",
    "-1", "-0.5", "-0.101", "-0.1", "-0.01", "-1E-129", "-1E-130", "0", "1E-130",
    "1.5E-130", "1E-129", "0.001", "0.01", "0.09", "0.1", "0.101", "0.11", "0.5", "1",
    "1.0000000000000000000000000000000000001", "1.01", "1.1", "2", "9", "10", "11",
    "99", "100", "100.5", "101", "12345678901234567890123456789012345678", "1E38",
    "1E125", "9.9999999999999999999999999999999999999E+125",
};

static int memcmp_keys(const uint8_t *a, size_t na, const uint8_t *b, size_t nb)
{
    size_t n = na < nb ? na : nb;
    int c = memcmp(a, b, n);
    if (c != 0)
        return c < 0 ? -1 : 1;
    return na < nb ? -1 : na > nb ? 1 : 0;
}

START_TEST(test_sortkey_order)
{
    size_t count = sizeof ordered / sizeof ordered[0];
    for (size_t i = 0; i < count; i++) {
        dl_decimal a;
        uint8_t ka[DL_DECIMAL_SORTKEY_MAX];
        parse_ok(ordered[i], &a);
        size_t na = dl__decimal_sortkey(&a, ka);
        ck_assert_uint_le(na, DL_DECIMAL_SORTKEY_MAX);
        for (size_t j = 0; j < count; j++) {
            dl_decimal b;
            uint8_t kb[DL_DECIMAL_SORTKEY_MAX];
            parse_ok(ordered[j], &b);
            size_t nb = dl__decimal_sortkey(&b, kb);
            int want = i < j ? -1 : i > j ? 1 : 0;
            ck_assert_msg(dl__decimal_cmp(&a, &b) == want, "cmp %s %s", ordered[i], ordered[j]);
            ck_assert_msg(memcmp_keys(ka, na, kb, nb) == want, "sortkey %s %s", ordered[i],
                          ordered[j]);
        }
    }
}
END_TEST

START_TEST(test_sortkey_longest)
{
    dl_decimal d;
    uint8_t key[DL_DECIMAL_SORTKEY_MAX];
    parse_ok("-1.2345678901234567890123456789012345678E-100", &d);
    ck_assert_uint_le(dl__decimal_sortkey(&d, key), DL_DECIMAL_SORTKEY_MAX);
    parse_ok("9.9999999999999999999999999999999999999E+125", &d);
    ck_assert_uint_le(dl__decimal_sortkey(&d, key), DL_DECIMAL_SORTKEY_MAX);
}
END_TEST

/* A small deterministic generator so that failures repeat. */
static uint64_t rng_state = 0x9E3779B97F4A7C15u;
static uint64_t next_rand(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void random_number(char *buf)
{
    int digits = (int)(next_rand() % 20) + 1;
    int n = 0;
    if (next_rand() % 2)
        buf[n++] = '-';
    for (int i = 0; i < digits; i++)
        buf[n++] = (char)('0' + next_rand() % 10);
    n += sprintf(buf + n, "E%d", (int)(next_rand() % 41) - 20);
    buf[n] = '\0';
}

START_TEST(test_add_sub_roundtrip)
{
    for (int i = 0; i < 2000; i++) {
        char sa[64], sb[64], text[DL_DECIMAL_TEXT_MAX];
        dl_decimal a, b, s, back, again;
        random_number(sa);
        random_number(sb);
        parse_ok(sa, &a);
        parse_ok(sb, &b);
        if (dl__decimal_add(&a, &b, &s) != DL_DEC_OK)
            continue;
        ck_assert_int_eq(dl__decimal_sub(&s, &b, &back), DL_DEC_OK);
        ck_assert_msg(dl__decimal_cmp(&back, &a) == 0, "(%s + %s) - %s", sa, sb, sb);
        /* a + b == b + a, and the sum orders against a as b orders against 0 */
        dl_decimal s2, zero;
        ck_assert_int_eq(dl__decimal_add(&b, &a, &s2), DL_DEC_OK);
        ck_assert_int_eq(dl__decimal_cmp(&s, &s2), 0);
        dl__decimal_from_i64(0, &zero);
        ck_assert_int_eq(dl__decimal_cmp(&s, &a), dl__decimal_cmp(&b, &zero));
        /* formatted text parses back to the same number */
        size_t len = dl__decimal_format(&s, text);
        ck_assert_int_eq(dl__decimal_parse(text, len, &again), DL_DEC_OK);
        ck_assert_int_eq(dl__decimal_cmp(&again, &s), 0);
        ck_assert_int_eq(again.negative, s.negative);
        ck_assert_int_eq(again.ndigits, s.ndigits);
        ck_assert_int_eq(again.exponent, s.exponent);
        ck_assert_int_eq(memcmp(again.digits, s.digits, sizeof s.digits), 0);
    }
}
END_TEST

START_TEST(test_i64_roundtrip)
{
    static const int64_t values[] = {0, 1, -1, 10, -10, 1234567890123, INT64_MAX, INT64_MIN,
                                     INT64_MAX - 1, INT64_MIN + 1, 1000000000000000000};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        dl_decimal d;
        int64_t back = 0;
        dl__decimal_from_i64(values[i], &d);
        ck_assert_int_eq(dl__decimal_to_i64(&d, &back), 0);
        ck_assert_int_eq(back, values[i]);
    }
}
END_TEST

START_TEST(test_bad_input_no_crash)
{
    dl_decimal d;
    char buf[4096];
    memset(buf, '9', sizeof buf);
    ck_assert_int_eq(dl__decimal_parse(buf, sizeof buf, &d), DL_DEC_OVERFLOW);
    memset(buf, '0', sizeof buf);
    buf[0] = '.';
    buf[sizeof buf - 1] = '1';
    ck_assert_int_eq(dl__decimal_parse(buf, sizeof buf, &d), DL_DEC_UNDERFLOW);
    buf[0] = '1';
    buf[1] = '.';
    ck_assert_int_eq(dl__decimal_parse(buf, sizeof buf, &d), DL_DEC_PRECISION);
    ck_assert_int_eq(dl__decimal_parse("12", 1, &d), DL_DEC_OK); /* length is honoured */
    ck_assert_int_eq(d.ndigits, 1);
    ck_assert_int_eq(dl__decimal_parse("1\0" "2", 3, &d), DL_DEC_SYNTAX);
    ck_assert_int_eq(dl__decimal_parse(NULL, 0, &d), DL_DEC_SYNTAX);
}
END_TEST

static Suite *decimal_suite(void)
{
    Suite *s = suite_create("decimal");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_vectors);
    tcase_add_test(tc, test_sortkey_order);
    tcase_add_test(tc, test_sortkey_longest);
    tcase_add_test(tc, test_add_sub_roundtrip);
    tcase_add_test(tc, test_i64_roundtrip);
    tcase_add_test(tc, test_bad_input_no_crash);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return dl_check_run(decimal_suite());
}
