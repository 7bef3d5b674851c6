/* test_codecs.c: the codecs every side shares (common/base64, common/utf8, common/buf):
 * the RFC vectors and round trips, every kind of bad input, and what an allocation
 * failure leaves behind. */
#include <check.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_shim.h"
#include "base64.h"
#include "buf.h"
#include "dl_check.h"
#include "utf8.h"

/* ---------------------------------------------------------------- base64 */

START_TEST(base64_rfc4648_vectors)
{
    static const char *plain[] = { "", "f", "fo", "foo", "foob", "fooba", "foobar" };
    static const char *coded[] = { "", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy" };
    for (size_t i = 0; i < 7; i++) {
        size_t n = 99;
        char *e = dl__base64_encode(plain[i], strlen(plain[i]), &n);
        ck_assert_ptr_nonnull(e);
        ck_assert_str_eq(e, coded[i]);
        ck_assert_uint_eq(n, strlen(coded[i]));
        ck_assert_uint_eq(dl__base64_encoded_len(strlen(plain[i])), n);
        free(e);
        unsigned char *d = NULL;
        ck_assert_int_eq(dl__base64_decode(coded[i], strlen(coded[i]), &d, &n), DL_B64_OK);
        ck_assert_ptr_nonnull(d); /* never NULL on success, even when empty */
        ck_assert_uint_eq(n, strlen(plain[i]));
        ck_assert_mem_eq(d, plain[i], n);
        ck_assert_int_eq(d[n], 0);
        free(d);
    }
}
END_TEST

START_TEST(base64_round_trip_all_bytes)
{
    unsigned char in[300];
    uint32_t x = 12345;
    for (size_t len = 0; len <= sizeof in; len++) {
        for (size_t i = 0; i < len; i++) {
            x = x * 1103515245u + 12345u;
            in[i] = (unsigned char)(len < 256 ? i ^ len : x >> 16);
        }
        size_t elen;
        char *e = dl__base64_encode(in, len, &elen);
        ck_assert_ptr_nonnull(e);
        ck_assert_uint_eq(elen, (len + 2) / 3 * 4);
        ck_assert_uint_eq(strlen(e), elen);
        unsigned char out[300];
        size_t dlen = 0;
        ck_assert_int_eq(dl__base64_decode_to(e, elen, out, sizeof out, &dlen), DL_B64_OK);
        ck_assert_uint_eq(dlen, len);
        ck_assert(len == 0 || memcmp(out, in, len) == 0);
        /* counting only (out NULL) gives the same length */
        ck_assert_int_eq(dl__base64_decode_to(e, elen, NULL, 0, &dlen), DL_B64_OK);
        ck_assert_uint_eq(dlen, len);
        /* one byte short of room is refused, never overrun */
        if (len > 0)
            ck_assert_int_eq(dl__base64_decode_to(e, elen, out, len - 1, &dlen), DL_B64_SPACE);
        free(e);
    }
}
END_TEST

START_TEST(base64_refuses_bad_text)
{
    static const char *bad[] = {
        "Z", "Zg", "Zg=", "Zm9vY", "Zm9vYg=",               /* length not a multiple of 4 */
        "Zm9*", "Zm9v!A==", "Zm9\x80", " Zm9", "Zm9v\n",    /* outside the alphabet */
        "Zm-v", "Zm_v",                                     /* the URL-safe alphabet */
        "=Zm9", "Z=m9", "Zm=v", "Z===", "====",             /* padding not at the end */
        "Zg==Zg==", "Zm8=Zm9v",                             /* padding before the end */
        "Zg=A", "Zm9v=A==",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        unsigned char *d = (unsigned char *)"untouched";
        size_t n;
        ck_assert_msg(dl__base64_decode(bad[i], strlen(bad[i]), &d, &n) == DL_B64_INVALID,
                      "'%s' was accepted", bad[i]);
        ck_assert_ptr_null(d);
        ck_assert_int_eq(dl__base64_decode_to(bad[i], strlen(bad[i]), NULL, 0, &n), DL_B64_INVALID);
    }
    /* a NUL inside the text is not base64 either */
    unsigned char *d;
    size_t n;
    ck_assert_int_eq(dl__base64_decode("Zm\0v", 4, &d, &n), DL_B64_INVALID);
    /* unused low bits of the last character are ignored, as DynamoDB does */
    ck_assert_int_eq(dl__base64_decode("QR==", 4, &d, &n), DL_B64_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(d[0], 'A');
    free(d);
}
END_TEST

START_TEST(base64_out_of_memory)
{
    size_t n;
    shim_fail_nth(1);
    char *e = dl__base64_encode("foobar", 6, &n);
    bool fired = shim_fired();
    shim_fail_nth(0);
    ck_assert(fired);
    ck_assert_ptr_null(e);

    unsigned char *d = (unsigned char *)"untouched";
    shim_fail_nth(1);
    dl_base64_status st = dl__base64_decode("Zm9vYmFy", 8, &d, &n);
    fired = shim_fired();
    shim_fail_nth(0);
    ck_assert(fired);
    ck_assert_int_eq(st, DL_B64_NOMEM);
    ck_assert_ptr_null(d);

    /* a length whose text would not fit in memory's address space */
    ck_assert_uint_eq(dl__base64_encoded_len(SIZE_MAX), 0);
    ck_assert_uint_eq(dl__base64_encoded_len((PTRDIFF_MAX / 4 + 1) * 3), 0);
    ck_assert_uint_eq(dl__base64_encoded_len(PTRDIFF_MAX / 4 * 3), PTRDIFF_MAX / 4 * 4);
    ck_assert_ptr_null(dl__base64_encode("x", SIZE_MAX, &n));
}
END_TEST

/* ------------------------------------------------------------------ UTF-8 */

/* The reference: a code point written the RFC 3629 way (1..4 bytes). */
static size_t encode_cp(uint32_t cp, unsigned char *o)
{
    if (cp < 0x80) {
        o[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (unsigned char)(0xC0 | cp >> 6);
        o[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xE0 | cp >> 12);
        o[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        o[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | cp >> 18);
    o[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
    o[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
    o[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

START_TEST(utf8_every_code_point)
{
    unsigned char b[4];
    for (uint32_t cp = 0; cp <= 0x10FFFF; cp++) {
        size_t n = encode_cp(cp, b);
        bool surrogate = cp >= 0xD800 && cp <= 0xDFFF;
        size_t got = dl__utf8_seq(b, n);
        if (got != (surrogate ? 0 : n))
            ck_abort_msg("U+%04X: %zu, not %zu", (unsigned)cp, got, surrogate ? 0 : n);
        /* cut short by one byte, it is refused */
        if (n > 1 && dl__utf8_seq(b, n - 1) != 0)
            ck_abort_msg("U+%04X cut to %zu bytes was accepted", (unsigned)cp, n - 1);
    }
}
END_TEST

START_TEST(utf8_refuses_each_kind)
{
    static const struct { const char *what, *s; } bad[] = {
        { "overlong NUL", "\xC0\x80" },
        { "overlong 2-byte", "\xC1\xBF" },
        { "overlong 3-byte", "\xE0\x80\x80" },
        { "overlong 3-byte top", "\xE0\x9F\xBF" },
        { "overlong 4-byte", "\xF0\x80\x80\x80" },
        { "overlong 4-byte top", "\xF0\x8F\xBF\xBF" },
        { "high surrogate", "\xED\xA0\x80" },
        { "low surrogate", "\xED\xBF\xBF" },
        { "surrogate pair (CESU-8)", "\xED\xA0\xBD\xED\xB8\x80" },
        { "past U+10FFFF", "\xF4\x90\x80\x80" },
        { "F5 lead", "\xF5\x80\x80\x80" },
        { "5-byte form", "\xF8\x88\x80\x80\x80" },
        { "FE", "\xFE" },
        { "FF", "\xFF" },
        { "lone continuation", "\x80" },
        { "lone continuation BF", "a\xBF" },
        { "truncated 2-byte", "\xC2" },
        { "truncated 3-byte", "\xE2\x82" },
        { "truncated 4-byte", "\xF0\x9F\x98" },
        { "truncated before ASCII", "\xE2\x82z" },
        { "bad continuation", "\xC2\x41" },
        { "bad third byte", "\xE2\x28\xA1" },
        { "bad fourth byte", "\xF0\x9F\x98\x28" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char text[32];
        int n = snprintf(text, sizeof text, "ok %s ok", bad[i].s);
        ck_assert_msg(!dl__utf8_valid(text, (size_t)n), "%s was accepted", bad[i].what);
        ck_assert_msg(!dl__utf8_valid(bad[i].s, strlen(bad[i].s)), "%s alone was accepted",
                      bad[i].what);
    }
    static const char *good[] = {
        "", "plain", "\xC2\x80", "\xDF\xBF", "\xE0\xA0\x80", "\xED\x9F\xBF", "\xEE\x80\x80",
        "\xEF\xBF\xBF", "\xF0\x90\x80\x80", "\xF4\x8F\xBF\xBF", "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80",
    };
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        ck_assert_msg(dl__utf8_valid(good[i], strlen(good[i])), "'%s' was refused", good[i]);
    /* a NUL byte is a character; the length decides, not the terminator */
    ck_assert(dl__utf8_valid("a\0b", 3));
    /* never reads past n: the valid 2-byte sequence is refused when only 1 byte is given */
    ck_assert_uint_eq(dl__utf8_seq((const unsigned char *)"\xC3\xA9", 1), 0);
    ck_assert(!dl__utf8_valid("\xC3\xA9", 1));
}
END_TEST

/* ------------------------------------------------------------------ buffer */

START_TEST(buf_appends_and_grows)
{
    dl_buf b = { 0 };
    ck_assert_ptr_null(b.p);
    dl__buf_puts(&b, "ab");
    dl__buf_putc(&b, 'c');
    dl__buf_put(&b, "d\0e", 3);
    ck_assert_uint_eq(b.len, 6);
    ck_assert_mem_eq(b.p, "abcd\0e", 7); /* NUL-terminated too */
    /* growth far past the first capacity: 24 MiB in 4 KiB pieces, then 8 MiB at once */
    char piece[4096];
    for (size_t i = 0; i < sizeof piece; i++)
        piece[i] = (char)('a' + i % 26);
    for (int i = 0; i < 6 * 1024; i++)
        dl__buf_put(&b, piece, sizeof piece);
    size_t big = 8u << 20;
    char *chunk = malloc(big);
    ck_assert_ptr_nonnull(chunk);
    memset(chunk, 'z', big);
    dl__buf_put(&b, chunk, big);
    free(chunk);
    ck_assert(!b.oom);
    ck_assert_uint_eq(b.len, 6 + (24u << 20) + big);
    ck_assert_uint_ge(b.cap, b.len + 1);
    ck_assert_int_eq(b.p[6 + 4095], piece[4095]);
    ck_assert_int_eq(b.p[6 + (24u << 20)], 'z');
    ck_assert_int_eq(b.p[b.len], '\0');
    dl__buf_reset(&b);
    ck_assert_uint_eq(b.len, 0);
    ck_assert_str_eq(b.p, "");
    size_t n = 99;
    dl__buf_puts(&b, "kept");
    char *s = dl__buf_take(&b, &n);
    ck_assert_str_eq(s, "kept");
    ck_assert_uint_eq(n, 4);
    ck_assert_ptr_null(b.p);
    ck_assert_uint_eq(b.len, 0);
    free(s);
    /* an empty buffer hands over an empty heap string */
    s = dl__buf_take(&b, &n);
    ck_assert_ptr_nonnull(s);
    ck_assert_str_eq(s, "");
    ck_assert_uint_eq(n, 0);
    free(s);
    dl__buf_cleanup(&b);
    dl__buf_cleanup(NULL);
}
END_TEST

START_TEST(buf_storage_moves_to_heap)
{
    char storage[8];
    dl_buf b;
    dl__buf_init_storage(&b, storage, sizeof storage);
    dl__buf_puts(&b, "1234567"); /* fits with its NUL */
    ck_assert_ptr_eq(b.p, storage);
    dl__buf_puts(&b, "89");
    ck_assert_ptr_ne(b.p, storage);
    ck_assert_str_eq(b.p, "123456789");
    char *s = dl__buf_take(&b, NULL);
    ck_assert_str_eq(s, "123456789");
    free(s);
    /* taken while still in the storage: a heap copy */
    dl__buf_init_storage(&b, storage, sizeof storage);
    dl__buf_puts(&b, "abc");
    s = dl__buf_take(&b, NULL);
    ck_assert_ptr_ne(s, storage);
    ck_assert_str_eq(s, "abc");
    free(s);
    dl__buf_init_storage(&b, storage, sizeof storage);
    dl__buf_cleanup(&b); /* frees nothing of the caller's */
}
END_TEST

START_TEST(buf_out_of_memory_sticks)
{
    dl_buf b = { 0 };
    dl__buf_puts(&b, "start");
    char piece[1000];
    memset(piece, 'x', sizeof piece);
    shim_fail_nth(1);
    dl__buf_put(&b, piece, sizeof piece); /* must grow: the realloc fails */
    bool fired = shim_fired();
    shim_fail_nth(0);
    ck_assert(fired);
    ck_assert(b.oom);
    ck_assert_uint_eq(b.len, 5);
    ck_assert_str_eq(b.p, "start"); /* what was there stays whole */
    dl__buf_puts(&b, "more");            /* later appends do nothing */
    ck_assert_uint_eq(b.len, 5);
    ck_assert(!dl__buf_reserve(&b, 1));
    size_t n = 99;
    ck_assert_ptr_null(dl__buf_take(&b, &n)); /* the error reaches the end, b is released */
    ck_assert_ptr_null(b.p);

    /* the move from the caller's storage fails: the storage keeps its prefix */
    char storage[4];
    dl__buf_init_storage(&b, storage, sizeof storage);
    dl__buf_puts(&b, "ab");
    shim_fail_nth(1);
    dl__buf_puts(&b, "cdef");
    fired = shim_fired();
    shim_fail_nth(0);
    ck_assert(fired);
    ck_assert(b.oom);
    ck_assert_ptr_eq(b.p, storage);
    ck_assert_str_eq(storage, "ab");
    dl__buf_cleanup(&b);

    /* the take of an empty buffer fails to allocate */
    b = (dl_buf){ 0 };
    shim_fail_nth(1);
    char *s = dl__buf_take(&b, &n);
    fired = shim_fired();
    shim_fail_nth(0);
    ck_assert(fired);
    ck_assert_ptr_null(s);

    /* a size past the address space is an allocation failure, not a wrap-around */
    b = (dl_buf){ 0 };
    dl__buf_puts(&b, "x");
    ck_assert(!dl__buf_reserve(&b, SIZE_MAX));
    ck_assert(b.oom);
    ck_assert_uint_eq(b.len, 1);
    dl__buf_cleanup(&b);
    b = (dl_buf){ 0 };
    ck_assert(!dl__buf_reserve(&b, PTRDIFF_MAX));
    ck_assert(b.oom);
    dl__buf_cleanup(&b);
}
END_TEST

static Suite *codecs_suite(void)
{
    Suite *s = suite_create("codecs");
    TCase *tc = tcase_create("base64");
    tcase_add_test(tc, base64_rfc4648_vectors);
    tcase_add_test(tc, base64_round_trip_all_bytes);
    tcase_add_test(tc, base64_refuses_bad_text);
    tcase_add_test(tc, base64_out_of_memory);
    suite_add_tcase(s, tc);
    tc = tcase_create("utf8");
    tcase_add_test(tc, utf8_every_code_point);
    tcase_add_test(tc, utf8_refuses_each_kind);
    suite_add_tcase(s, tc);
    tc = tcase_create("buf");
    tcase_add_test(tc, buf_appends_and_grows);
    tcase_add_test(tc, buf_storage_moves_to_heap);
    tcase_add_test(tc, buf_out_of_memory_sticks);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return dl_check_run(codecs_suite());
}
