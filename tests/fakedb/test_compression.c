/* test_compression.c: content codings over real HTTP (issue #25 item 2). Request bodies
 * sent gzip, deflate (zlib and raw) are read once decoded; garbage, truncated data and
 * unknown codings get a 400 in DynamoDB's error shape; a small gzip bomb is refused by
 * its decoded size without being inflated to its end; answers are gzipped only when
 * Accept-Encoding asks, with x-amz-crc32 over the bytes sent. */
#include "fdbt.h"

#include <check.h>

#include "dl_check.h"
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#define AUTH "Authorization: AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20231114/us-east-1/dynamodb/aws4_request, SignedHeaders=host;x-amz-date;x-amz-target, Signature=0123456789abcdef"

typedef struct answer {
    long status;
    char *body;          /* the bytes received, as sent (not decoded) */
    size_t len;
    char encoding[64];   /* Content-Encoding, or "" */
    char crc32[32];      /* x-amz-crc32 */
} answer;

static size_t on_body(char *p, size_t sz, size_t n, void *arg)
{
    answer *a = arg;
    char *q = realloc(a->body, a->len + sz * n + 1);
    if (!q)
        return 0;
    memcpy(q + a->len, p, sz * n);
    a->body = q;
    a->len += sz * n;
    a->body[a->len] = 0;
    return sz * n;
}

static void header_value(const char *p, size_t len, const char *name, char *dst, size_t cap)
{
    size_t nl = strlen(name);
    if (len <= nl || strncasecmp(p, name, nl))
        return;
    size_t s = nl, e = len;
    while (s < len && p[s] == ' ')
        s++;
    while (e > s && (p[e - 1] == '\r' || p[e - 1] == '\n'))
        e--;
    size_t l = e - s < cap - 1 ? e - s : cap - 1;
    memcpy(dst, p + s, l);
    dst[l] = 0;
}

static size_t on_header(char *p, size_t sz, size_t n, void *arg)
{
    answer *a = arg;
    header_value(p, sz * n, "Content-Encoding:", a->encoding, sizeof a->encoding);
    header_value(p, sz * n, "x-amz-crc32:", a->crc32, sizeof a->crc32);
    return sz * n;
}

/* POSTs body (len bytes) as DynamoDB_20120810.<op> with the given Content-Encoding and
 * Accept-Encoding (NULL: none; libcurl sends no Accept-Encoding of its own). */
static answer post(const char *op, const void *body, size_t len, const char *content_encoding,
                   const char *accept_encoding)
{
    answer a;
    memset(&a, 0, sizeof a);
    CURL *c = curl_easy_init();
    ck_assert_ptr_nonnull(c);
    char url[256], target[128], ce[128], ae[128];
    snprintf(url, sizeof url, "%s/", fakedb_endpoint(fdbt_db));
    snprintf(target, sizeof target, "X-Amz-Target: DynamoDB_20120810.%s", op);
    struct curl_slist *hl = NULL;
    hl = curl_slist_append(hl, target);
    hl = curl_slist_append(hl, "Content-Type: application/x-amz-json-1.0");
    hl = curl_slist_append(hl, AUTH);
    hl = curl_slist_append(hl, "X-Amz-Date: 20231114T221320Z");
    hl = curl_slist_append(hl, "Expect:");
    if (content_encoding) {
        snprintf(ce, sizeof ce, "Content-Encoding: %s", content_encoding);
        hl = curl_slist_append(hl, ce);
    }
    if (accept_encoding) {
        snprintf(ae, sizeof ae, "Accept-Encoding: %s", accept_encoding);
        hl = curl_slist_append(hl, ae);
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &a);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &a);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)dl_check_bound_ms(60000));
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    ck_assert_int_eq(curl_easy_perform(c), CURLE_OK);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &a.status);
    curl_slist_free_all(hl);
    curl_easy_cleanup(c);
    return a;
}

/* in compressed with zlib's window bits (15 + 16 gzip, 15 zlib, -15 raw deflate). */
static unsigned char *compress_as(int wbits, const void *in, size_t len, size_t *out_len)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    ck_assert_int_eq(deflateInit2(&z, 1, Z_DEFLATED, wbits, 8, Z_DEFAULT_STRATEGY), Z_OK);
    uLong cap = deflateBound(&z, (uLong)len);
    unsigned char *out = malloc(cap);
    ck_assert_ptr_nonnull(out);
    z.next_in = (Bytef *)(uintptr_t)in;
    z.avail_in = (uInt)len;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    ck_assert_int_eq(deflate(&z, Z_FINISH), Z_STREAM_END);
    *out_len = cap - z.avail_out;
    deflateEnd(&z);
    return out;
}

/* a's body, gunzipped (a NUL-terminated copy when it was not compressed). */
static char *gunzip(const answer *a)
{
    if (!a->encoding[0])
        return strdup(a->body ? a->body : "");
    ck_assert_str_eq(a->encoding, "gzip");
    z_stream z;
    memset(&z, 0, sizeof z);
    ck_assert_int_eq(inflateInit2(&z, 15 + 16), Z_OK);
    size_t cap = 1 << 20;
    char *out = malloc(cap);
    ck_assert_ptr_nonnull(out);
    z.next_in = (Bytef *)a->body;
    z.avail_in = (uInt)a->len;
    z.next_out = (Bytef *)out;
    z.avail_out = (uInt)cap - 1;
    ck_assert_int_eq(inflate(&z, Z_FINISH), Z_STREAM_END);
    out[cap - 1 - z.avail_out] = 0;
    inflateEnd(&z);
    return out;
}

static json_object *json_of(const answer *a)
{
    char *text = gunzip(a);
    json_object *o = json_tokener_parse(text);
    ck_assert_msg(o != NULL, "not JSON: %s", text);
    free(text);
    return o;
}

static void answer_free(answer *a)
{
    free(a->body);
    a->body = NULL;
}

/* The error's __type after '#' and its message, checked against want_type and a part of
 * the message (NULL: any). */
static void expect_error(const answer *a, long status, const char *want_type, const char *want_msg)
{
    ck_assert_msg(a->status == status, "status %ld: %s", a->status, a->body);
    json_object *o = json_of(a);
    json_object *t = json_object_object_get(o, "__type"), *m = json_object_object_get(o, "message");
    ck_assert_ptr_nonnull(t);
    const char *type = strchr(json_object_get_string(t), '#');
    ck_assert_msg(type && !strcmp(type + 1, want_type), "type %s", json_object_get_string(t));
    if (want_msg)
        ck_assert_msg(m && strstr(json_object_get_string(m), want_msg), "message %s",
                      m ? json_object_get_string(m) : "(none)");
    json_object_put(o);
}

static void setup(void)
{
    fdbt_start(NULL);
    fdbt_table("Zipped", NULL, NULL);
}

static void teardown(void)
{
    fdbt_stop();
}

static const char put_body[] = "{\"TableName\":\"Zipped\",\"Item\":{\"pk\":{\"S\":\"%s\"},\"v\":{\"S\":\"%s\"}}}";

/* The item pk's attribute v, read back without any coding ("" when missing). */
static void value_of(const char *pk, char *out, size_t cap)
{
    char body[256];
    snprintf(body, sizeof body, "{\"TableName\":\"Zipped\",\"Key\":{\"pk\":{\"S\":\"%s\"}}}", pk);
    fdbt_resp r = fdbt_call("GetItem", body);
    ck_assert_int_eq(r.status, 200);
    const char *v = fdbt_str(&r, "Item.v.S");
    snprintf(out, cap, "%s", v ? v : "");
    fdbt_free(&r);
}

START_TEST(request_bodies_decoded)
{
    static const struct { const char *coding; int wbits; } cases[] = {
        { "gzip", 15 + 16 }, { "GZIP", 15 + 16 }, { "x-gzip", 15 + 16 },
        { "deflate", 15 }, { "deflate", -15 }, { " gzip ", 15 + 16 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char pk[16], value[64], body[512], got[64];
        snprintf(pk, sizeof pk, "k%zu", i);
        snprintf(value, sizeof value, "value %s %d", cases[i].coding, cases[i].wbits);
        snprintf(body, sizeof body, put_body, pk, value);
        size_t zlen;
        unsigned char *z = compress_as(cases[i].wbits, body, strlen(body), &zlen);
        answer a = post("PutItem", z, zlen, cases[i].coding, NULL);
        ck_assert_msg(a.status == 200, "%s/%d: %ld %s", cases[i].coding, cases[i].wbits, a.status, a.body);
        ck_assert_str_eq(a.encoding, "");
        answer_free(&a);
        free(z);
        value_of(pk, got, sizeof got);
        ck_assert_str_eq(got, value);
    }
    /* identity, named, is the body as it is */
    char body[256], got[64];
    snprintf(body, sizeof body, put_body, "plain", "as sent");
    answer a = post("PutItem", body, strlen(body), "identity", NULL);
    ck_assert_int_eq(a.status, 200);
    answer_free(&a);
    value_of("plain", got, sizeof got);
    ck_assert_str_eq(got, "as sent");
}
END_TEST

START_TEST(bad_encodings_refused)
{
    char body[256], got[64];
    snprintf(body, sizeof body, put_body, "bad", "never");
    size_t zlen;
    unsigned char *z = compress_as(15 + 16, body, strlen(body), &zlen);

    /* not compressed at all, though it says so */
    answer a = post("PutItem", body, strlen(body), "gzip", NULL);
    expect_error(&a, 400, "SerializationException", "corrupt");
    answer_free(&a);
    /* garbage after a valid gzip header */
    unsigned char garbage[64];
    memcpy(garbage, z, 10);
    for (size_t i = 10; i < sizeof garbage; i++)
        garbage[i] = (unsigned char)(0xff - i * 7);
    a = post("PutItem", garbage, sizeof garbage, "gzip", NULL);
    expect_error(&a, 400, "SerializationException", "could not be decoded");
    answer_free(&a);
    /* cut short: half of the stream, then all but the trailer's last byte */
    a = post("PutItem", z, zlen / 2, "gzip", NULL);
    expect_error(&a, 400, "SerializationException", "truncated");
    answer_free(&a);
    a = post("PutItem", z, zlen - 1, "gzip", NULL);
    expect_error(&a, 400, "SerializationException", "truncated");
    answer_free(&a);
    /* a wrong CRC in the trailer */
    unsigned char *bad_crc = malloc(zlen);
    ck_assert_ptr_nonnull(bad_crc);
    memcpy(bad_crc, z, zlen);
    bad_crc[zlen - 8] ^= 0x55;
    a = post("PutItem", bad_crc, zlen, "gzip", NULL);
    expect_error(&a, 400, "SerializationException", "corrupt");
    answer_free(&a);
    free(bad_crc);
    /* bytes after the end of the stream */
    unsigned char *tail = malloc(zlen + 3);
    ck_assert_ptr_nonnull(tail);
    memcpy(tail, z, zlen);
    memcpy(tail + zlen, "xyz", 3);
    a = post("PutItem", tail, zlen + 3, "gzip", NULL);
    expect_error(&a, 400, "SerializationException", "follow the end");
    answer_free(&a);
    free(tail);
    /* an empty body said to be gzip */
    a = post("PutItem", "", 0, "gzip", NULL);
    expect_error(&a, 400, "SerializationException", "truncated");
    answer_free(&a);
    /* codings fakedb does not know, and two at once */
    a = post("PutItem", z, zlen, "br", NULL);
    expect_error(&a, 400, "SerializationException", "not supported");
    answer_free(&a);
    a = post("PutItem", z, zlen, "gzip, gzip", NULL);
    expect_error(&a, 400, "SerializationException", "only one content coding");
    answer_free(&a);
    /* gzip of something that is not JSON is the usual refusal of the JSON */
    size_t nlen;
    unsigned char *notjson = compress_as(15 + 16, "{\"TableName\":", 13, &nlen);
    a = post("PutItem", notjson, nlen, "gzip", NULL);
    expect_error(&a, 400, "SerializationException", NULL);
    answer_free(&a);
    free(notjson);
    free(z);
    value_of("bad", got, sizeof got);
    ck_assert_str_eq(got, "");
}
END_TEST

/* A gzip bomb: 64 MB of spaces in a few dozen KB. Its decoded size is over the 16 MB
 * limit, and it is refused as a body that large is. Its trailer's CRC is wrong: had it
 * been inflated to the end, the answer would be the corrupt-data 400, not the 413. */
START_TEST(gzip_bomb_refused_by_decoded_size)
{
    size_t big = 64u << 20;
    char *spaces = malloc(big);
    ck_assert_ptr_nonnull(spaces);
    memset(spaces, ' ', big);
    size_t zlen;
    unsigned char *z = compress_as(15 + 16, spaces, big, &zlen);
    free(spaces);
    ck_assert_uint_lt(zlen, 1u << 20);
    z[zlen - 8] ^= 0x55;
    answer a = post("PutItem", z, zlen, "gzip", NULL);
    expect_error(&a, 413, "ValidationException", "Request size exceeded 16777216 bytes");
    answer_free(&a);
    free(z);

    /* just under the limit decoded: read, and refused only as JSON it is not */
    size_t under = (16u << 20) - 2;
    char *doc = malloc(under);
    ck_assert_ptr_nonnull(doc);
    memset(doc, ' ', under);
    doc[0] = '[';
    doc[under - 1] = ']';
    z = compress_as(15 + 16, doc, under, &zlen);
    free(doc);
    a = post("PutItem", z, zlen, "gzip", NULL);
    expect_error(&a, 400, "SerializationException", NULL);
    answer_free(&a);
    free(z);
}
END_TEST

START_TEST(answers_gzipped_when_asked)
{
    char body[256];
    snprintf(body, sizeof body, put_body, "a", "compressible compressible compressible");
    fdbt_resp r = fdbt_call("PutItem", body);
    ck_assert_int_eq(r.status, 200);
    fdbt_free(&r);
    const char get[] = "{\"TableName\":\"Zipped\",\"Key\":{\"pk\":{\"S\":\"a\"}}}";
    static const struct { const char *accept; bool gzip; } cases[] = {
        { NULL, false }, { "identity", false }, { "gzip", true }, { "gzip, deflate, br", true },
        { "br;q=1.0, gzip;q=0.5", true }, { "*", true }, { "gzip;q=0", false },
        { "gzip;q=0.0, identity", false }, { "*, gzip;q=0", false }, { "br", false },
        { "deflate", false }, { "GZip", true }, { "gzipx", false },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        answer a = post("GetItem", get, strlen(get), NULL, cases[i].accept);
        ck_assert_int_eq(a.status, 200);
        ck_assert_msg(!strcmp(a.encoding, cases[i].gzip ? "gzip" : ""), "%s: %s",
                      cases[i].accept ? cases[i].accept : "(none)", a.encoding);
        /* x-amz-crc32 is of the bytes on the wire, as the SDKs check it */
        char crc[32];
        snprintf(crc, sizeof crc, "%lu", crc32(0, (const Bytef *)a.body, (uInt)a.len));
        ck_assert_str_eq(a.crc32, crc);
        json_object *o = json_of(&a);
        ck_assert_str_eq(json_object_get_string(fdbt_get(o, "Item.v.S")), "compressible compressible compressible");
        json_object_put(o);
        answer_free(&a);
    }
    /* an error answer too, and a compressed request with a compressed answer */
    answer a = post("GetItem", "{}", 2, NULL, "gzip");
    ck_assert_str_eq(a.encoding, "gzip");
    expect_error(&a, 400, "ValidationException", NULL);
    answer_free(&a);
    size_t zlen;
    unsigned char *z = compress_as(15 + 16, get, strlen(get), &zlen);
    a = post("GetItem", z, zlen, "gzip", "gzip");
    ck_assert_int_eq(a.status, 200);
    ck_assert_str_eq(a.encoding, "gzip");
    json_object *o = json_of(&a);
    ck_assert_ptr_nonnull(fdbt_get(o, "Item.v.S"));
    json_object_put(o);
    answer_free(&a);
    free(z);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fakedb_compression");
    TCase *tc = tcase_create("compression");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, request_bodies_decoded);
    tcase_add_test(tc, bad_encodings_refused);
    tcase_add_test(tc, gzip_bomb_refused_by_decoded_size);
    tcase_add_test(tc, answers_gzipped_when_asked);
    suite_add_tcase(s, tc);
    return dl_check_run(s);
}
