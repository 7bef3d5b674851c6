/* sigv4.c: AWS Signature Version 4 with OpenSSL: the canonical request, the string to
 * sign, the signing key chain and the Authorization header, and the fake server's check
 * of a received signature. The signing time is an input so that vectors replay exactly. */
#include "sigv4.h"
#include "buf.h"

#include <ctype.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#define ALGORITHM "AWS4-HMAC-SHA256"

/* ---- hashing
 * SHA-256 through one EVP_MD fetched once per process: the one-shot SHA256() and HMAC()
 * of OpenSSL 3 look the algorithm up in the provider store on every call, which costs
 * more than hashing a request. HMAC is built on it (RFC 2104), one digest context per
 * signing reused for every hash of it. */

static const char k_hex[] = "0123456789abcdef";

static void to_hex(const unsigned char *d, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = k_hex[d[i] >> 4];
        out[2 * i + 1] = k_hex[d[i] & 15];
    }
    out[2 * n] = '\0';
}

static pthread_once_t md_once = PTHREAD_ONCE_INIT;
static const EVP_MD *md_sha256;

static void md_fetch(void)
{
    EVP_MD *md = EVP_MD_fetch(NULL, "SHA256", NULL);
    md_sha256 = md ? md : EVP_sha256();
}

static const EVP_MD *sha256_md(void)
{
    pthread_once(&md_once, md_fetch);
    return md_sha256;
}

/* SHA-256 of up to two pieces with ctx; false when OpenSSL fails (out of memory). */
static bool digest2(EVP_MD_CTX *ctx, const void *a, size_t al, const void *b, size_t bl,
                    unsigned char out[32])
{
    unsigned int n = 32;
    return EVP_DigestInit_ex(ctx, sha256_md(), NULL) == 1 &&
           (al == 0 || EVP_DigestUpdate(ctx, a, al) == 1) &&
           (bl == 0 || EVP_DigestUpdate(ctx, b, bl) == 1) &&
           EVP_DigestFinal_ex(ctx, out, &n) == 1;
}

void dl__sha256_hex(const void *data, size_t len, char out[65])
{
    unsigned char md[32];
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx || !digest2(ctx, data, len, NULL, 0, md))
        memset(md, 0, sizeof md); /* out of memory: a hash that matches nothing real */
    EVP_MD_CTX_free(ctx);
    to_hex(md, sizeof md, out);
}

/* HMAC-SHA256 (RFC 2104) with a 64-byte block. */
static bool hmac(EVP_MD_CTX *ctx, const void *key, size_t key_len, const void *msg,
                 size_t msg_len, unsigned char out[32])
{
    unsigned char k[64] = { 0 }, pad[64], inner[32];
    if (key_len > sizeof k) {
        if (!digest2(ctx, key, key_len, NULL, 0, k))
            return false;
    } else {
        memcpy(k, key, key_len);
    }
    for (size_t i = 0; i < 64; i++)
        pad[i] = k[i] ^ 0x36;
    bool ok = digest2(ctx, pad, 64, msg, msg_len, inner);
    for (size_t i = 0; i < 64; i++)
        pad[i] = k[i] ^ 0x5c;
    ok = ok && digest2(ctx, pad, 64, inner, 32, out);
    OPENSSL_cleanse(k, sizeof k);
    OPENSSL_cleanse(pad, sizeof pad);
    return ok;
}

/* The signing key for (secret, date, region, service), cached per thread: it changes
 * once a day, and deriving it is four HMACs per request otherwise. */
typedef struct key_cache {
    bool valid;
    char secret[129];
    char date[9];
    char region[64];
    char service[64];
    unsigned char key[32];
} key_cache;
static _Thread_local key_cache tl_key;

static bool signing_key(EVP_MD_CTX *ctx, const char *secret, const char *date8,
                        const char *region, const char *service, unsigned char key[32])
{
    size_t ls = strlen(secret), lr = strlen(region), lv = strlen(service);
    bool cacheable = ls < sizeof tl_key.secret && lr < sizeof tl_key.region &&
                     lv < sizeof tl_key.service;
    if (cacheable && tl_key.valid && memcmp(tl_key.date, date8, 9) == 0 &&
        strcmp(tl_key.secret, secret) == 0 && strcmp(tl_key.region, region) == 0 &&
        strcmp(tl_key.service, service) == 0) {
        memcpy(key, tl_key.key, 32);
        return true;
    }
    size_t kl = ls + 4;
    char *k = malloc(kl + 1);
    unsigned char a[32], b[32];
    if (!k)
        return false;
    memcpy(k, "AWS4", 4);
    memcpy(k + 4, secret, ls + 1);
    bool ok = hmac(ctx, k, kl, date8, 8, a) && hmac(ctx, a, 32, region, lr, b) &&
              hmac(ctx, b, 32, service, lv, a) && hmac(ctx, a, 32, "aws4_request", 12, key);
    OPENSSL_cleanse(k, kl);
    free(k);
    if (ok && cacheable) {
        memcpy(tl_key.secret, secret, ls + 1);
        memcpy(tl_key.date, date8, 9);
        memcpy(tl_key.region, region, lr + 1);
        memcpy(tl_key.service, service, lv + 1);
        memcpy(tl_key.key, key, 32);
        tl_key.valid = true;
    }
    return ok;
}

/* ---- dates */

void dl__sigv4_amz_date(int64_t epoch_s, char buf[17])
{
    time_t t = (time_t)epoch_s;
    struct tm tm;
    if (!gmtime_r(&t, &tm) || tm.tm_year + 1900 > 9999 || tm.tm_year + 1900 < 0) {
        memcpy(buf, "19700101T000000Z", 17);
        return;
    }
    unsigned v[6] = { (unsigned)(tm.tm_year + 1900), (unsigned)tm.tm_mon + 1,
                      (unsigned)tm.tm_mday, (unsigned)tm.tm_hour, (unsigned)tm.tm_min,
                      (unsigned)tm.tm_sec };
    buf[0] = (char)('0' + v[0] / 1000 % 10);
    buf[1] = (char)('0' + v[0] / 100 % 10);
    buf[2] = (char)('0' + v[0] / 10 % 10);
    buf[3] = (char)('0' + v[0] % 10);
    for (int i = 1, o = 4; i < 6; i++) {
        if (i == 3)
            buf[o++] = 'T';
        buf[o++] = (char)('0' + v[i] / 10 % 10);
        buf[o++] = (char)('0' + v[i] % 10);
    }
    buf[15] = 'Z';
    buf[16] = '\0';
}

/* Parses YYYYMMDD'T'HHMMSS'Z'. */
static bool parse_amz_date(const char *s, int64_t *epoch_s)
{
    if (strlen(s) != 16 || s[8] != 'T' || s[15] != 'Z')
        return false;
    for (int i = 0; i < 15; i++)
        if (i != 8 && !isdigit((unsigned char)s[i]))
            return false;
    struct tm tm = { 0 };
    tm.tm_year = (s[0] - '0') * 1000 + (s[1] - '0') * 100 + (s[2] - '0') * 10 + (s[3] - '0') - 1900;
    tm.tm_mon = (s[4] - '0') * 10 + (s[5] - '0') - 1;
    tm.tm_mday = (s[6] - '0') * 10 + (s[7] - '0');
    tm.tm_hour = (s[9] - '0') * 10 + (s[10] - '0');
    tm.tm_min = (s[11] - '0') * 10 + (s[12] - '0');
    tm.tm_sec = (s[13] - '0') * 10 + (s[14] - '0');
    if (tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31 ||
        tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
        return false;
    *epoch_s = (int64_t)timegm(&tm);
    return true;
}

/* ---- canonical pieces */

static bool unreserved(unsigned char c)
{
    return isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~';
}

static void put_uri_encoded(dl_buf *b, const char *s, size_t n)
{
    static const char up[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (unreserved(c)) {
            dl__buf_putc(b, (char)c);
        } else {
            char e[3] = { '%', up[c >> 4], up[c & 15] };
            dl__buf_put(b, e, 3);
        }
    }
}

/* The path with empty, "." and ".." segments resolved, each segment URI-encoded (so an
 * already-encoded path is encoded again, as SigV4 does for every service but S3). */
static void canonical_uri(dl_buf *b, const char *path)
{
    if (!path || !*path) {
        dl__buf_putc(b, '/');
        return;
    }
    size_t n = strlen(path);
    /* segments as (start, len) pairs; a short path (every real one) needs no allocation */
    size_t local[2 * 33];
    size_t *seg = n < 32 ? local : malloc((n + 1) * 2 * sizeof *seg);
    if (!seg) {
        b->oom = true;
        return;
    }
    size_t nseg = 0;
    bool trailing = false;
    size_t i = 0;
    while (i <= n) {
        size_t j = i;
        while (j < n && path[j] != '/')
            j++;
        size_t len = j - i;
        bool last = j >= n;
        if (len == 0 || (len == 1 && path[i] == '.')) {
            if (last)
                trailing = true;
        } else if (len == 2 && path[i] == '.' && path[i + 1] == '.') {
            if (nseg > 0)
                nseg--;
            if (last)
                trailing = true;
        } else {
            seg[2 * nseg] = i;
            seg[2 * nseg + 1] = len;
            nseg++;
            if (last)
                trailing = false;
        }
        i = j + 1;
    }
    dl__buf_putc(b, '/');
    for (size_t k = 0; k < nseg; k++) {
        if (k > 0)
            dl__buf_putc(b, '/');
        put_uri_encoded(b, path + seg[2 * k], seg[2 * k + 1]);
    }
    if (nseg > 0 && trailing)
        dl__buf_putc(b, '/');
    if (seg != local)
        free(seg);
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Decodes %XX (a '%' without two hex digits stays as it is), then encodes strictly. */
static void put_reencoded(dl_buf *b, const char *s, size_t n)
{
    char *tmp = malloc(n + 1);
    if (!tmp) {
        b->oom = true;
        return;
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        int h, l;
        if (s[i] == '%' && i + 2 < n && (h = hexval(s[i + 1])) >= 0 &&
            (l = hexval(s[i + 2])) >= 0) {
            tmp[m++] = (char)(h * 16 + l);
            i += 2;
        } else {
            tmp[m++] = s[i];
        }
    }
    put_uri_encoded(b, tmp, m);
    free(tmp);
}

typedef struct qparam {
    char *key, *value; /* encoded */
} qparam;

static int cmp_qparam(const void *a, const void *b)
{
    const qparam *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : strcmp(x->value, y->value);
}

static void canonical_query(dl_buf *b, const char *query)
{
    if (!query || !*query)
        return;
    size_t n = strlen(query), cap = 1;
    for (size_t i = 0; i < n; i++)
        if (query[i] == '&')
            cap++;
    qparam *ps = calloc(cap, sizeof *ps);
    if (!ps) {
        b->oom = true;
        return;
    }
    size_t np = 0;
    for (size_t i = 0; i <= n;) {
        size_t j = i;
        while (j < n && query[j] != '&')
            j++;
        if (j > i) {
            size_t eq = i;
            while (eq < j && query[eq] != '=')
                eq++;
            dl_buf k = { 0 }, v = { 0 };
            put_reencoded(&k, query + i, eq - i);
            if (eq < j)
                put_reencoded(&v, query + eq + 1, j - eq - 1);
            dl__buf_puts(&k, "");
            dl__buf_puts(&v, "");
            if (k.oom || v.oom) {
                b->oom = true;
                free(k.p);
                free(v.p);
            } else {
                ps[np].key = k.p;
                ps[np].value = v.p;
                np++;
            }
        }
        i = j + 1;
    }
    qsort(ps, np, sizeof *ps, cmp_qparam);
    for (size_t i = 0; i < np; i++) {
        if (i > 0)
            dl__buf_putc(b, '&');
        dl__buf_puts(b, ps[i].key);
        dl__buf_putc(b, '=');
        dl__buf_puts(b, ps[i].value);
        free(ps[i].key);
        free(ps[i].value);
    }
    free(ps);
}

typedef struct chdr {
    const char *name;    /* lower case */
    const char *value;
    size_t order;
} chdr;

static int cmp_chdr(const void *a, const void *b)
{
    const chdr *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c)
        return c;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* The value trimmed, with every run of whitespace folded to one space; copied in
 * spans between whitespace. */
static void put_header_value(dl_buf *b, const char *v)
{
    const char *p = v ? v : "";
    bool started = false;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
            p++;
        if (!*p)
            return;
        const char *e = p;
        while (*e && *e != ' ' && *e != '\t' && *e != '\r' && *e != '\n')
            e++;
        if (started)
            dl__buf_putc(b, ' ');
        dl__buf_put(b, p, (size_t)(e - p));
        started = true;
        p = e;
    }
}

/* Canonical headers into ch (each "name:value\n") and signed headers into sh. -1 on
 * bad input (no host, empty name), -2 out of memory. A request of a few headers (the
 * client's) is handled on the stack: lower-cased names in one buffer, insertion sort. */
static int canonical_headers(const dl_sigv4_header *h, size_t n, dl_buf *ch, dl_buf *sh)
{
    if (n == 0 || !h)
        return -1;
    chdr local_v[16];
    char local_names[512];
    size_t names_len = 0;
    for (size_t i = 0; i < n; i++) {
        if (!h[i].name || !*h[i].name)
            return -1;
        names_len += strlen(h[i].name) + 1;
    }
    chdr *v = n <= 16 ? local_v : calloc(n, sizeof *v);
    char *names = names_len <= sizeof local_names ? local_names : malloc(names_len);
    int rc = 0;
    if (!v || !names) {
        rc = -2;
        goto out;
    }
    bool host = false;
    char *np = names;
    for (size_t i = 0; i < n; i++) {
        const char *src = h[i].name;
        v[i].name = np;
        while (*src)
            *np++ = (char)tolower((unsigned char)*src++);
        *np++ = '\0';
        v[i].value = h[i].value;
        v[i].order = i;
        if (strcmp(v[i].name, "host") == 0)
            host = true;
    }
    if (!host) {
        rc = -1;
        goto out;
    }
    if (n <= 16) {
        for (size_t i = 1; i < n; i++) {
            chdr x = v[i];
            size_t j = i;
            while (j > 0 && cmp_chdr(&v[j - 1], &x) > 0) {
                v[j] = v[j - 1];
                j--;
            }
            v[j] = x;
        }
    } else {
        qsort(v, n, sizeof *v, cmp_chdr);
    }
    for (size_t i = 0; i < n; i++) {
        bool same = i > 0 && strcmp(v[i].name, v[i - 1].name) == 0;
        if (same) {
            dl__buf_putc(ch, ',');
        } else {
            if (i > 0) {
                dl__buf_putc(ch, '\n');
                dl__buf_putc(sh, ';');
            }
            dl__buf_puts(ch, v[i].name);
            dl__buf_putc(ch, ':');
            dl__buf_puts(sh, v[i].name);
        }
        put_header_value(ch, v[i].value);
    }
    dl__buf_putc(ch, '\n');
    if (ch->oom || sh->oom)
        rc = -2;
out:
    if (v != local_v)
        free(v);
    if (names != local_names)
        free(names);
    return rc;
}

/* ---- signing */

void dl__sigv4_result_cleanup(dl_sigv4_result *r)
{
    if (!r)
        return;
    free(r->canonical_request);
    free(r->string_to_sign);
    free(r->authorization);
    r->canonical_request = r->string_to_sign = r->authorization = NULL;
}

int dl__sigv4_sign(const dl_sigv4_request *req, const dl_sigv4_credentials *creds,
                   const char *region, const char *service, int64_t epoch_s,
                   dl_sigv4_result *out)
{
    if (!out)
        return -1;
    memset(out, 0, sizeof *out);
    if (!req || !req->method || !creds || !creds->access_key_id ||
        !creds->secret_access_key || !region || !service || (!req->body && req->body_len))
        return -1;
    dl__sigv4_amz_date(epoch_s, out->amz_date);
    if (req->payload_hash && strlen(req->payload_hash) != 64)
        return -1;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx)
        return -1;
    unsigned char md[32];
    dl_buf cr = { 0 }, ch = { 0 }, sh = { 0 }, sts = { 0 }, auth = { 0 };
    int rc = -2;
    if (req->payload_hash) {
        memcpy(out->payload_hash, req->payload_hash, 65);
    } else {
        if (!digest2(ctx, req->body, req->body_len, NULL, 0, md))
            goto fail;
        to_hex(md, sizeof md, out->payload_hash);
    }
    rc = canonical_headers(req->headers, req->n_headers, &ch, &sh);
    if (rc < 0)
        goto fail;
    dl__buf_puts(&cr, req->method);
    dl__buf_putc(&cr, '\n');
    canonical_uri(&cr, req->path);
    dl__buf_putc(&cr, '\n');
    canonical_query(&cr, req->query);
    dl__buf_putc(&cr, '\n');
    dl__buf_put(&cr, ch.p, ch.len);
    dl__buf_putc(&cr, '\n');
    dl__buf_put(&cr, sh.p, sh.len);
    dl__buf_putc(&cr, '\n');
    dl__buf_puts(&cr, out->payload_hash);
    if (cr.oom) {
        rc = -2;
        goto fail;
    }

    char date8[9];
    memcpy(date8, out->amz_date, 8);
    date8[8] = '\0';
    char cr_hash[65];
    if (!digest2(ctx, cr.p, cr.len, NULL, 0, md)) {
        rc = -2;
        goto fail;
    }
    to_hex(md, sizeof md, cr_hash);
    dl__buf_puts(&sts, ALGORITHM "\n");
    dl__buf_puts(&sts, out->amz_date);
    dl__buf_putc(&sts, '\n');
    dl__buf_puts(&sts, date8);
    dl__buf_putc(&sts, '/');
    dl__buf_puts(&sts, region);
    dl__buf_putc(&sts, '/');
    dl__buf_puts(&sts, service);
    dl__buf_puts(&sts, "/aws4_request\n");
    dl__buf_puts(&sts, cr_hash);
    if (sts.oom) {
        rc = -2;
        goto fail;
    }

    unsigned char key[32], sig[32];
    if (!signing_key(ctx, creds->secret_access_key, date8, region, service, key) ||
        !hmac(ctx, key, sizeof key, sts.p, sts.len, sig)) {
        rc = -2;
        goto fail;
    }
    OPENSSL_cleanse(key, sizeof key);
    to_hex(sig, sizeof sig, out->signature);

    dl__buf_puts(&auth, ALGORITHM " Credential=");
    dl__buf_puts(&auth, creds->access_key_id);
    dl__buf_putc(&auth, '/');
    dl__buf_puts(&auth, date8);
    dl__buf_putc(&auth, '/');
    dl__buf_puts(&auth, region);
    dl__buf_putc(&auth, '/');
    dl__buf_puts(&auth, service);
    dl__buf_puts(&auth, "/aws4_request, SignedHeaders=");
    dl__buf_put(&auth, sh.p, sh.len);
    dl__buf_puts(&auth, ", Signature=");
    dl__buf_puts(&auth, out->signature);
    if (auth.oom) {
        rc = -2;
        goto fail;
    }
    free(ch.p);
    free(sh.p);
    EVP_MD_CTX_free(ctx);
    out->canonical_request = cr.p;
    out->string_to_sign = sts.p;
    out->authorization = auth.p;
    return 0;
fail:
    EVP_MD_CTX_free(ctx);
    free(cr.p);
    free(ch.p);
    free(sh.p);
    free(sts.p);
    free(auth.p);
    memset(out->signature, 0, sizeof out->signature);
    return -1;
}

/* ---- verification */

static const char k_mismatch[] =
    "The request signature we calculated does not match the signature you provided. "
    "Check your AWS Secret Access Key and signing method. Consult the service "
    "documentation for details.";

static void set_err(char *err, size_t err_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t err_len, const char *fmt, ...)
{
    if (!err || err_len == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_len, fmt, ap);
    va_end(ap);
}

static const char *find_header(const dl_sigv4_header *h, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (h[i].name && strcasecmp(h[i].name, name) == 0)
            return h[i].value ? h[i].value : "";
    return NULL;
}

/* Copies the value of `name=` within the comma-separated parameters of auth into out
 * (trimmed). false when absent. */
static bool auth_param(const char *params, const char *name, char *out, size_t out_len)
{
    size_t nl = strlen(name);
    const char *p = params;
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        const char *end = strchr(p, ',');
        if (!end)
            end = p + strlen(p);
        if ((size_t)(end - p) > nl && strncmp(p, name, nl) == 0 && p[nl] == '=') {
            const char *v = p + nl + 1;
            const char *ve = end;
            while (ve > v && ve[-1] == ' ')
                ve--;
            size_t len = (size_t)(ve - v);
            if (len >= out_len)
                return false;
            memcpy(out, v, len);
            out[len] = '\0';
            return true;
        }
        p = end;
    }
    return false;
}

dl_sigv4_verdict dl__sigv4_verify(const char *method, const char *path, const char *query,
                                  const dl_sigv4_header *headers, size_t n_headers,
                                  const void *body, size_t body_len,
                                  dl_sigv4_secret_fn secret_fn, void *arg,
                                  char *err, size_t err_len)
{
    set_err(err, err_len, "%s", "");
    const char *auth = find_header(headers, n_headers, "authorization");
    if (!auth || !*auth) {
        set_err(err, err_len, "Request is missing Authentication Token");
        return DL_SIGV4_MISSING;
    }
    size_t al = strlen(ALGORITHM);
    if (strncmp(auth, ALGORITHM, al) != 0 || (auth[al] != ' ' && auth[al] != '\0')) {
        set_err(err, err_len, "Unsupported AWS 'algorithm': '%.64s'", auth);
        return DL_SIGV4_MALFORMED;
    }
    const char *params = auth + al;
    char cred[512], signed_hdrs[2048], sig[128];
    bool has_c = auth_param(params, "Credential", cred, sizeof cred);
    bool has_h = auth_param(params, "SignedHeaders", signed_hdrs, sizeof signed_hdrs);
    bool has_s = auth_param(params, "Signature", sig, sizeof sig);
    if (!has_c || !has_h || !has_s) {
        set_err(err, err_len, "%s%s%sAuthorization=%.200s",
                has_c ? "" : "Authorization header requires 'Credential' parameter. ",
                has_s ? "" : "Authorization header requires 'Signature' parameter. ",
                has_h ? "" : "Authorization header requires 'SignedHeaders' parameter. ",
                auth);
        return DL_SIGV4_MALFORMED;
    }
    /* AKID/date/region/service/aws4_request */
    char *part[5];
    int np = 0;
    char *save = NULL;
    for (char *t = strtok_r(cred, "/", &save); t; t = strtok_r(NULL, "/", &save)) {
        if (np == 5) {
            np = 6;
            break;
        }
        part[np++] = t;
    }
    if (np != 5 || strcmp(part[4], "aws4_request") != 0 || strlen(part[1]) != 8) {
        set_err(err, err_len, "Credential should be scoped to a valid region. ");
        return DL_SIGV4_MALFORMED;
    }
    const char *date_hdr = find_header(headers, n_headers, "x-amz-date");
    int64_t epoch_s;
    if (!date_hdr) {
        set_err(err, err_len, "Authorization header requires existence of either a "
                              "'X-Amz-Date' or a 'Date' header. Authorization=%.200s", auth);
        return DL_SIGV4_MALFORMED;
    }
    if (!parse_amz_date(date_hdr, &epoch_s)) {
        set_err(err, err_len, "Date must be in ISO-8601 'basic format'. Got '%.32s'.",
                date_hdr);
        return DL_SIGV4_MALFORMED;
    }
    const char *secret = secret_fn ? secret_fn(arg, part[0]) : NULL;
    if (!secret) {
        set_err(err, err_len, "The security token included in the request is invalid.");
        return DL_SIGV4_UNKNOWN_KEY;
    }
    if (strncmp(date_hdr, part[1], 8) != 0) {
        set_err(err, err_len, "Date in Credential scope does not match YYYYMMDD from "
                              "ISO-8601 version of date from HTTP: '%.8s' != '%.8s', from '%.16s'.",
                part[1], date_hdr, date_hdr);
        return DL_SIGV4_MISMATCH;
    }

    /* The received headers that the client says it signed. */
    size_t nsig = 1;
    for (const char *p = signed_hdrs; *p; p++)
        if (*p == ';')
            nsig++;
    dl_sigv4_header *pick = calloc(n_headers ? n_headers : 1, sizeof *pick);
    char **names = calloc(nsig, sizeof *names);
    dl_sigv4_verdict verdict = DL_SIGV4_MISMATCH;
    size_t npick = 0, nnames = 0;
    bool host = false;
    if (!pick || !names) {
        set_err(err, err_len, "out of memory");
        goto out;
    }
    save = NULL;
    for (char *t = strtok_r(signed_hdrs, ";", &save); t; t = strtok_r(NULL, ";", &save)) {
        if (nnames < nsig)
            names[nnames++] = t;
        if (strcasecmp(t, "host") == 0)
            host = true;
    }
    if (!host) {
        set_err(err, err_len, "'Host' or ':authority' must be a 'SignedHeader' in the AWS "
                              "Authorization.");
        goto out;
    }
    for (size_t k = 0; k < nnames; k++) {
        bool found = false;
        for (size_t i = 0; i < n_headers; i++) {
            if (headers[i].name && strcasecmp(headers[i].name, names[k]) == 0) {
                /* Each received header once, even if its name is listed twice. */
                bool dup = false;
                for (size_t q = 0; q < k; q++)
                    if (strcasecmp(names[q], names[k]) == 0)
                        dup = true;
                if (!dup)
                    pick[npick++] = headers[i];
                found = true;
            }
        }
        if (!found) {
            set_err(err, err_len, "%s", k_mismatch);
            goto out;
        }
    }
    dl_sigv4_request req = {
        .method = method ? method : "",
        .path = path,
        .query = query,
        .headers = pick,
        .n_headers = npick,
        .body = body,
        .body_len = body_len,
    };
    dl_sigv4_credentials creds = { .access_key_id = part[0], .secret_access_key = secret };
    dl_sigv4_result r;
    if (dl__sigv4_sign(&req, &creds, part[2], part[3], epoch_s, &r) != 0) {
        set_err(err, err_len, "%s", k_mismatch);
        goto out;
    }
    bool ok = strlen(sig) == 64 && CRYPTO_memcmp(sig, r.signature, 64) == 0;
    dl__sigv4_result_cleanup(&r);
    if (ok)
        verdict = DL_SIGV4_OK;
    else
        set_err(err, err_len, "%s", k_mismatch);
out:
    free(pick);
    free(names);
    return verdict;
}
