/* test_sigv4.c: SigV4 signing checked against the vectors in vectors/<case>/ (one folder
 * per case: the raw request and the expected canonical request, string to sign,
 * signature), and verification as the fake server does it, including tampering. */
#include <check.h>

#include "dl_check.h"
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sigv4.h"

#define MAX_HEADERS 32

typedef struct vec {
    char name[128];
    char method[16];
    char *path, *query;
    dl_sigv4_header headers[MAX_HEADERS];
    size_t n_headers;
    char *body;
    size_t body_len;
    char *canonical_request, *string_to_sign, *signature, *authorization;
    char akid[64], secret[128], region[64], service[64], amz_date[17];
    char *store; /* the request text that headers point into */
} vec;

static char *read_file(const char *dir, const char *file, size_t *len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(p);
    size_t got = fread(p, 1, (size_t)n, f);
    fclose(f);
    p[got] = '\0';
    if (len)
        *len = got;
    return p;
}

/* Copies src into dst, cut to fit. */
static void copy(char *dst, size_t cap, const char *src)
{
    size_t n = strnlen(src, cap - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static void load_context(vec *v, const char *dir)
{
    copy(v->akid, sizeof v->akid, "AKIDEXAMPLE");
    copy(v->secret, sizeof v->secret, "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY");
    copy(v->region, sizeof v->region, "us-east-1");
    copy(v->service, sizeof v->service, "service");
    copy(v->amz_date, sizeof v->amz_date, "20150830T123600Z");
    char *ctx = read_file(dir, "context.txt", NULL);
    if (!ctx)
        return;
    char *save = NULL;
    for (char *line = strtok_r(ctx, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *eq = strchr(line, '=');
        if (!eq)
            continue;
        *eq = '\0';
        const char *val = eq + 1;
        if (strcmp(line, "access_key_id") == 0)
            copy(v->akid, sizeof v->akid, val);
        else if (strcmp(line, "secret_access_key") == 0)
            copy(v->secret, sizeof v->secret, val);
        else if (strcmp(line, "region") == 0)
            copy(v->region, sizeof v->region, val);
        else if (strcmp(line, "service") == 0)
            copy(v->service, sizeof v->service, val);
        else if (strcmp(line, "amz_date") == 0)
            copy(v->amz_date, sizeof v->amz_date, val);
    }
    free(ctx);
}

/* request.txt: "METHOD target HTTP/1.1\n", "Name:value\n" lines, "\n", body. */
static void load_vec(vec *v, const char *dir, const char *name)
{
    memset(v, 0, sizeof *v);
    copy(v->name, sizeof v->name, name);
    size_t len;
    v->store = read_file(dir, "request.txt", &len);
    ck_assert_msg(v->store != NULL, "%s: no request.txt", name);
    char *p = v->store;
    char *eol = strchr(p, '\n');
    ck_assert_ptr_nonnull(eol);
    *eol = '\0';
    char *sp1 = strchr(p, ' ');
    char *sp2 = strrchr(p, ' ');
    ck_assert(sp1 && sp2 && sp1 < sp2);
    *sp1 = '\0';
    *sp2 = '\0';
    copy(v->method, sizeof v->method, p);
    v->path = sp1 + 1;
    char *q = strchr(v->path, '?');
    if (q) {
        *q = '\0';
        v->query = q + 1;
    }
    p = eol + 1;
    while (*p && *p != '\n') {
        eol = strchr(p, '\n');
        ck_assert_ptr_nonnull(eol);
        *eol = '\0';
        char *colon = strchr(p, ':');
        ck_assert_ptr_nonnull(colon);
        *colon = '\0';
        ck_assert_uint_lt(v->n_headers, MAX_HEADERS);
        v->headers[v->n_headers].name = p;
        v->headers[v->n_headers].value = colon + 1;
        v->n_headers++;
        p = eol + 1;
    }
    if (*p == '\n')
        p++;
    v->body = p;
    v->body_len = len - (size_t)(p - v->store);
    v->canonical_request = read_file(dir, "canonical-request.txt", NULL);
    v->string_to_sign = read_file(dir, "string-to-sign.txt", NULL);
    v->signature = read_file(dir, "signature.txt", NULL);
    v->authorization = read_file(dir, "authorization.txt", NULL);
    ck_assert_msg(v->canonical_request && v->string_to_sign && v->signature,
                  "%s: missing expected files", name);
    load_context(v, dir);
}

static void free_vec(vec *v)
{
    free(v->store);
    free(v->canonical_request);
    free(v->string_to_sign);
    free(v->signature);
    free(v->authorization);
}

static int64_t epoch_of(const char *amz)
{
    struct tm tm = { 0 };
    ck_assert_int_eq(sscanf(amz, "%4d%2d%2dT%2d%2d%2dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                            &tm.tm_hour, &tm.tm_min, &tm.tm_sec), 6);
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    return (int64_t)timegm(&tm);
}

static int sign_vec(const vec *v, dl_sigv4_result *r)
{
    dl_sigv4_request req = {
        .method = v->method, .path = v->path, .query = v->query, .headers = v->headers,
        .n_headers = v->n_headers, .body = v->body, .body_len = v->body_len,
    };
    dl_sigv4_credentials creds = { .access_key_id = v->akid, .secret_access_key = v->secret };
    return dl__sigv4_sign(&req, &creds, v->region, v->service, epoch_of(v->amz_date), r);
}

/* The case folders, sorted, so that the loop test below can index them. */
static char g_names[64][128];
static int g_n;

static int cmp_names(const void *a, const void *b)
{
    return strcmp(a, b);
}

static void list_cases(void)
{
    DIR *d = opendir(SIGV4_VECTORS_DIR);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && g_n < 64) {
        if (e->d_name[0] == '.')
            continue;
        copy(g_names[g_n], sizeof g_names[0], e->d_name);
        g_n++;
    }
    closedir(d);
    qsort(g_names, (size_t)g_n, sizeof g_names[0], cmp_names);
}

START_TEST(vector_matches)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", SIGV4_VECTORS_DIR, g_names[_i]);
    vec v;
    load_vec(&v, dir, g_names[_i]);
    dl_sigv4_result r;
    ck_assert_msg(sign_vec(&v, &r) == 0, "%s: sign failed", v.name);
    ck_assert_msg(strcmp(r.canonical_request, v.canonical_request) == 0,
                  "%s: canonical request\n%s\n--- expected\n%s", v.name, r.canonical_request,
                  v.canonical_request);
    ck_assert_msg(strcmp(r.string_to_sign, v.string_to_sign) == 0,
                  "%s: string to sign\n%s\n--- expected\n%s", v.name, r.string_to_sign,
                  v.string_to_sign);
    ck_assert_msg(strcmp(r.signature, v.signature) == 0, "%s: signature %s, expected %s",
                  v.name, r.signature, v.signature);
    ck_assert_str_eq(r.amz_date, v.amz_date);
    if (v.authorization)
        ck_assert_str_eq(r.authorization, v.authorization);
    dl__sigv4_result_cleanup(&r);
    free_vec(&v);
}
END_TEST

START_TEST(vectors_present)
{
    /* The suite's cases and DynamoDB's own shapes are all there. */
    const char *want[] = { "get-vanilla", "get-vanilla-query-order-key-case",
                           "get-header-value-trim", "get-unreserved", "get-utf8", "get-space",
                           "post-vanilla", "post-x-www-form-urlencoded", "post-header-key-sort",
                           "get-relative-relative", "get-slash-dot-slash",
                           "post-sts-header-before", "dynamodb-get-item",
                           "dynamodb-put-item-session-token" };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        bool found = false;
        for (int k = 0; k < g_n; k++)
            found = found || strcmp(g_names[k], want[i]) == 0;
        ck_assert_msg(found, "vector %s is missing", want[i]);
    }
}
END_TEST

START_TEST(amz_date_and_hash)
{
    char buf[17];
    dl__sigv4_amz_date(1440938160, buf);
    ck_assert_str_eq(buf, "20150830T123600Z");
    dl__sigv4_amz_date(0, buf);
    ck_assert_str_eq(buf, "19700101T000000Z");
    dl__sigv4_amz_date(951868799, buf); /* leap day */
    ck_assert_str_eq(buf, "20000229T235959Z");
    char hex[65];
    dl__sha256_hex("", 0, hex);
    ck_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    dl__sha256_hex("abc", 3, hex);
    ck_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}
END_TEST

START_TEST(payload_hash_given)
{
    dl_sigv4_header h[] = { { "Host", "example.amazonaws.com" },
                            { "X-Amz-Date", "20150830T123600Z" } };
    dl_sigv4_request req = { .method = "POST", .path = "/", .headers = h, .n_headers = 2,
                             .body = "abc", .body_len = 3 };
    dl_sigv4_credentials creds = { "AKIDEXAMPLE", "secret", NULL };
    dl_sigv4_result a, b;
    ck_assert_int_eq(dl__sigv4_sign(&req, &creds, "us-east-1", "dynamodb", 1440938160, &a), 0);
    req.payload_hash = a.payload_hash;
    req.body = NULL;
    req.body_len = 0;
    ck_assert_int_eq(dl__sigv4_sign(&req, &creds, "us-east-1", "dynamodb", 1440938160, &b), 0);
    ck_assert_str_eq(a.signature, b.signature);
    ck_assert_str_eq(a.payload_hash,
                     "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    dl__sigv4_result_cleanup(&a);
    dl__sigv4_result_cleanup(&b);
}
END_TEST

START_TEST(bad_input)
{
    dl_sigv4_header nohost[] = { { "X-Amz-Date", "20150830T123600Z" } };
    dl_sigv4_header h[] = { { "Host", "h" } };
    dl_sigv4_credentials creds = { "AKID", "secret", NULL };
    dl_sigv4_result r;
    dl_sigv4_request req = { .method = "GET", .path = "/", .headers = nohost, .n_headers = 1 };
    ck_assert_int_eq(dl__sigv4_sign(&req, &creds, "r", "s", 0, &r), -1);
    ck_assert_ptr_null(r.authorization);
    req.headers = h;
    ck_assert_int_eq(dl__sigv4_sign(&req, NULL, "r", "s", 0, &r), -1);
    ck_assert_int_eq(dl__sigv4_sign(&req, &creds, NULL, "s", 0, &r), -1);
    req.payload_hash = "short";
    ck_assert_int_eq(dl__sigv4_sign(&req, &creds, "r", "s", 0, &r), -1);
    req.payload_hash = NULL;
    req.body_len = 4; /* with no body */
    ck_assert_int_eq(dl__sigv4_sign(&req, &creds, "r", "s", 0, &r), -1);
    dl__sigv4_result_cleanup(&r);
    dl__sigv4_result_cleanup(NULL);
}
END_TEST

/* ---- verification */

static const char *secret_for(void *arg, const char *akid)
{
    (void)arg;
    if (strcmp(akid, "AKIDEXAMPLE") == 0)
        return "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
    if (strcmp(akid, "ASIAEXAMPLEKEY123456") == 0)
        return "je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY";
    return NULL;
}

/* A DynamoDB request as the client sends it: the signed headers plus Authorization and
 * headers a proxy may add that are not signed. */
typedef struct sent {
    dl_sigv4_header h[12];
    size_t n;
    char body[256];
    char auth[512];
    char date[17];
} sent;

static void make_sent(sent *s, int64_t epoch)
{
    memset(s, 0, sizeof *s);
    dl__sigv4_amz_date(epoch, s->date);
    copy(s->body, sizeof s->body, "{\"TableName\":\"Shop\",\"Key\":{\"pk\":{\"S\":\"a\"}}}");
    s->h[0] = (dl_sigv4_header){ "Host", "127.0.0.1:8000" };
    s->h[1] = (dl_sigv4_header){ "Content-Type", "application/x-amz-json-1.0" };
    s->h[2] = (dl_sigv4_header){ "X-Amz-Date", s->date };
    s->h[3] = (dl_sigv4_header){ "X-Amz-Target", "DynamoDB_20120810.GetItem" };
    s->h[4] = (dl_sigv4_header){ "X-Amz-Security-Token", "token-1" };
    dl_sigv4_request req = { .method = "POST", .path = "/", .headers = s->h, .n_headers = 5,
                             .body = s->body, .body_len = strlen(s->body) };
    dl_sigv4_credentials creds = { "ASIAEXAMPLEKEY123456",
                                   "je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY", "token-1" };
    dl_sigv4_result r;
    ck_assert_int_eq(dl__sigv4_sign(&req, &creds, "eu-west-1", "dynamodb", epoch, &r), 0);
    copy(s->auth, sizeof s->auth, r.authorization);
    dl__sigv4_result_cleanup(&r);
    s->h[5] = (dl_sigv4_header){ "authorization", s->auth };
    s->h[6] = (dl_sigv4_header){ "User-Agent", "dynalock-test" };
    s->h[7] = (dl_sigv4_header){ "Content-Length", "44" };
    s->n = 8;
}

static dl_sigv4_verdict verify_sent(const sent *s, char *err, size_t err_len)
{
    return dl__sigv4_verify("POST", "/", NULL, s->h, s->n, s->body, strlen(s->body),
                            secret_for, NULL, err, err_len);
}

START_TEST(verify_accepts_signed)
{
    sent s;
    make_sent(&s, 1764477960);
    char err[512];
    ck_assert_int_eq(verify_sent(&s, err, sizeof err), DL_SIGV4_OK);
    /* Header names arrive in any case; unsigned headers may change. */
    s.h[0].name = "HOST";
    s.h[6].value = "another-agent";
    ck_assert_int_eq(verify_sent(&s, err, sizeof err), DL_SIGV4_OK);
}
END_TEST

START_TEST(verify_accepts_every_vector)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", SIGV4_VECTORS_DIR, g_names[_i]);
    vec v;
    load_vec(&v, dir, g_names[_i]);
    ck_assert_ptr_nonnull(v.authorization);
    ck_assert_uint_lt(v.n_headers, MAX_HEADERS);
    v.headers[v.n_headers].name = "Authorization";
    v.headers[v.n_headers].value = v.authorization;
    char err[512];
    dl_sigv4_verdict got = dl__sigv4_verify(v.method, v.path, v.query, v.headers,
                                            v.n_headers + 1, v.body, v.body_len, secret_for,
                                            NULL, err, sizeof err);
    ck_assert_msg(got == DL_SIGV4_OK, "%s: verdict %d (%s)", v.name, got, err);
    free_vec(&v);
}
END_TEST

START_TEST(verify_rejects_tampering)
{
    sent s;
    char err[512];
    static const char mismatch[] = "The request signature we calculated does not match";

    make_sent(&s, 1764477960);
    s.body[strlen(s.body) - 3] = 'b'; /* body */
    ck_assert_int_eq(verify_sent(&s, err, sizeof err), DL_SIGV4_MISMATCH);
    ck_assert_ptr_nonnull(strstr(err, mismatch));

    make_sent(&s, 1764477960);
    s.h[3].value = "DynamoDB_20120810.DeleteItem"; /* a signed header */
    ck_assert_int_eq(verify_sent(&s, err, sizeof err), DL_SIGV4_MISMATCH);

    make_sent(&s, 1764477960);
    s.h[4].value = "token-2"; /* the session token */
    ck_assert_int_eq(verify_sent(&s, err, sizeof err), DL_SIGV4_MISMATCH);

    make_sent(&s, 1764477960);
    s.date[14] = s.date[14] == '9' ? '8' : (char)(s.date[14] + 1); /* the time, same day */
    ck_assert_int_eq(verify_sent(&s, err, sizeof err), DL_SIGV4_MISMATCH);

    make_sent(&s, 1764477960);
    s.date[7] = s.date[7] == '9' ? '8' : (char)(s.date[7] + 1); /* the day */
    ck_assert_int_eq(verify_sent(&s, err, sizeof err), DL_SIGV4_MISMATCH);

    make_sent(&s, 1764477960);
    char *sig = strstr(s.auth, "Signature=") + 10;
    sig[5] = sig[5] == 'a' ? 'b' : 'a'; /* the signature */
    ck_assert_int_eq(verify_sent(&s, err, sizeof err), DL_SIGV4_MISMATCH);

    make_sent(&s, 1764477960);
    sig = strstr(s.auth, "Signature=") + 10;
    sig[63] = '\0'; /* a short signature */
    ck_assert_int_eq(verify_sent(&s, err, sizeof err), DL_SIGV4_MISMATCH);

    make_sent(&s, 1764477960);
    s.h[0].value = "127.0.0.1:8001"; /* the host */
    ck_assert_int_eq(verify_sent(&s, err, sizeof err), DL_SIGV4_MISMATCH);

    make_sent(&s, 1764477960);
    s.h[4].name = "X-Not-The-Token"; /* a signed header is missing */
    ck_assert_int_eq(verify_sent(&s, err, sizeof err), DL_SIGV4_MISMATCH);

    /* Region in the scope changed: the key differs. */
    make_sent(&s, 1764477960);
    char *reg = strstr(s.auth, "eu-west-1");
    reg[3] = 'e';
    reg[4] = 'a';
    reg[5] = 's';
    reg[6] = 't';
    ck_assert_int_eq(verify_sent(&s, err, sizeof err), DL_SIGV4_MISMATCH);
}
END_TEST

START_TEST(verify_malformed_and_unknown)
{
    sent s;
    char err[512];
    make_sent(&s, 1764477960);
    s.n = 5; /* no Authorization */
    ck_assert_int_eq(verify_sent(&s, err, sizeof err), DL_SIGV4_MISSING);
    ck_assert_str_eq(err, "Request is missing Authentication Token");

    make_sent(&s, 1764477960);
    s.h[5].value = "AWS4-HMAC-SHA256 Credential=ASIAEXAMPLEKEY123456/20251130/eu-west-1/"
                   "dynamodb/aws4_request, SignedHeaders=host;x-amz-date";
    ck_assert_int_eq(verify_sent(&s, err, sizeof err), DL_SIGV4_MALFORMED);
    ck_assert_ptr_nonnull(strstr(err, "requires 'Signature' parameter"));

    make_sent(&s, 1764477960);
    s.h[5].value = "AWS4-HMAC-SHA1 Credential=a/b/c/d/aws4_request, SignedHeaders=host, "
                   "Signature=00";
    ck_assert_int_eq(verify_sent(&s, err, sizeof err), DL_SIGV4_MALFORMED);

    make_sent(&s, 1764477960);
    s.h[5].value = "AWS4-HMAC-SHA256 Credential=onlyakid, SignedHeaders=host, Signature=00";
    ck_assert_int_eq(verify_sent(&s, err, sizeof err), DL_SIGV4_MALFORMED);

    make_sent(&s, 1764477960);
    s.h[2].value = "yesterday";
    ck_assert_int_eq(verify_sent(&s, err, sizeof err), DL_SIGV4_MALFORMED);

    make_sent(&s, 1764477960);
    s.h[2].name = "X-Other";
    ck_assert_int_eq(verify_sent(&s, err, sizeof err), DL_SIGV4_MALFORMED);

    make_sent(&s, 1764477960);
    char *akid = strstr(s.auth, "ASIA");
    akid[0] = 'X';
    ck_assert_int_eq(verify_sent(&s, err, sizeof err), DL_SIGV4_UNKNOWN_KEY);
    ck_assert_str_eq(err, "The security token included in the request is invalid.");

    /* Host must be signed. */
    dl_sigv4_header h[] = { { "Host", "example.amazonaws.com" },
                            { "X-Amz-Date", "20150830T123600Z" },
                            { "Authorization",
                              "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/"
                              "service/aws4_request, SignedHeaders=x-amz-date, Signature="
                              "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31" } };
    ck_assert_int_eq(dl__sigv4_verify("GET", "/", NULL, h, 3, "", 0, secret_for, NULL, err,
                                      sizeof err), DL_SIGV4_MISMATCH);
    /* Garbage never crashes. */
    const char *junk[] = { "", "AWS4-HMAC-SHA256", "AWS4-HMAC-SHA256 ", "AWS4-HMAC-SHA256 ,,,",
                           "AWS4-HMAC-SHA256 Credential=, SignedHeaders=, Signature=",
                           "AWS4-HMAC-SHA256 Credential=////, SignedHeaders=;;;, Signature=x" };
    for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++) {
        h[2].value = junk[i];
        ck_assert_int_ne(dl__sigv4_verify("GET", "/", NULL, h, 3, "", 0, secret_for, NULL,
                                          err, sizeof err), DL_SIGV4_OK);
    }
}
END_TEST

static Suite *sigv4_suite(void)
{
    Suite *s = suite_create("sigv4");
    TCase *tc = tcase_create("vectors");
    tcase_add_test(tc, vectors_present);
    tcase_add_loop_test(tc, vector_matches, 0, g_n);
    tcase_add_test(tc, amz_date_and_hash);
    tcase_add_test(tc, payload_hash_given);
    tcase_add_test(tc, bad_input);
    suite_add_tcase(s, tc);
    tc = tcase_create("verify");
    tcase_add_test(tc, verify_accepts_signed);
    tcase_add_loop_test(tc, verify_accepts_every_vector, 0, g_n);
    tcase_add_test(tc, verify_rejects_tampering);
    tcase_add_test(tc, verify_malformed_and_unknown);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    list_cases();
    if (g_n == 0) {
        fprintf(stderr, "no vectors in %s\n", SIGV4_VECTORS_DIR);
        return 1;
    }
    return dl_check_run(sigv4_suite());
}
