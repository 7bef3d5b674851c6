/* cred_util.c: what the credential providers share: one HTTP request through http.c's
 * ddb__http_send (no proxy and short timeouts for metadata endpoints, the CA bundle for
 * STS and SSO, a cap on the answer, the cancel token's eventfd),
 * ISO 8601 times, the few XML elements of an STS answer (expat), form encoding, small
 * files. */
#include "internal.h"
#include "buf.h"

#include <ctype.h>
#include <errno.h>
#include <expat.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <dynalock/version.h>

/* A provider's answers are small documents: a larger one is refused, not read. */
#define CRED_HTTP_MAX_ANSWER (64 * 1024)
/* Header lines a provider's request carries at most (besides the User-Agent). */
#define CRED_HTTP_MAX_HEADER_LINES 8
/* A link-local or loopback metadata endpoint answers at once or not at all. */
#define CRED_METADATA_CONNECT_TIMEOUT_MS 1000
#define CRED_METADATA_TIMEOUT_MS 2000
/* STS and SSO, over the internet. */
#define CRED_HTTP_CONNECT_TIMEOUT_MS 3000
#define CRED_HTTP_TIMEOUT_MS 10000

void ddb__free_secret(char *s)
{
    if (s) {
        explicit_bzero(s, strlen(s)); /* a memset before free may be optimised away */
        free(s);
    }
}

void ddb__credentials_cleanup(ddb__credentials *c)
{
    if (!c)
        return;
    free(c->access_key_id);
    ddb__free_secret(c->secret_access_key);
    ddb__free_secret(c->session_token);
    memset(c, 0, sizeof *c);
}

bool ddb__creds_set(ddb__credentials *out, const char *akid, const char *secret,
                    const char *token, int64_t expires_wall_ms)
{
    memset(out, 0, sizeof *out);
    out->access_key_id = strdup(akid);
    out->secret_access_key = strdup(secret);
    out->session_token = token && *token ? strdup(token) : NULL;
    out->expires_wall_ms = expires_wall_ms;
    if (!out->access_key_id || !out->secret_access_key || (token && *token && !out->session_token)) {
        ddb__credentials_cleanup(out);
        return false;
    }
    return true;
}

bool ddb__header_value_ok(const char *s)
{
    /* RFC 9110's field-value: visible ASCII, space, tab and obs-text (0x80-0xFF). A CR
     * or LF would end the header line, and with it the request: what follows would be
     * a header or a request of the sender's choosing. */
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if ((*p < 0x20 && *p != '\t') || *p == 0x7f)
            return false;
    return true;
}

const char *ddb__json_text(json_object *v)
{
    if (!v || !json_object_is_type(v, json_type_string))
        return NULL;
    const char *s = json_object_get_string(v);
    return strlen(s) == (size_t)json_object_get_string_len(v) ? s : NULL;
}

int ddb__creds_check(ddb__credentials *c, const char *source, ddb_error *err)
{
    const char *bad = !ddb__header_value_ok(c->access_key_id) ? "access key id"
                      : c->session_token && !ddb__header_value_ok(c->session_token)
                          ? "session token" : NULL;
    if (!bad)
        return 0;
    ddb__credentials_cleanup(c);
    /* The value itself never goes in the error: it is a secret, and it is hostile. */
    return ddb__fail(err, DDB_ECREDENTIALS, "%s: invalid header value: the %s holds a line "
                     "break or another control character, which an HTTP header cannot carry; "
                     "refused before any request", source, bad);
}

long ddb__cred_http(const ddb__cred_ctx *ctx, const ddb__cred_http_req *r, char **body,
                    char *transport_err, size_t n)
{
    *body = NULL;
    if (transport_err && n)
        transport_err[0] = '\0';
    /* The provider's header lines and ours, on the stack: a provider sends a few. */
    const char *lines[CRED_HTTP_MAX_HEADER_LINES + 1];
    if (r->n_headers > CRED_HTTP_MAX_HEADER_LINES) {
        snprintf(transport_err, n, "%zu header lines, more than the %d a provider sends",
                 r->n_headers, CRED_HTTP_MAX_HEADER_LINES);
        return 0;
    }
    for (size_t i = 0; i < r->n_headers; i++)
        lines[i] = r->headers[i];
    lines[r->n_headers] = "User-Agent: dynalock/" DDB_VERSION_STRING;
    ddb__http_request req = {
        .method = r->method,
        .url = r->url,
        .headers = lines,
        .n_headers = r->n_headers + 1,
        .body = r->body,
        .body_len = r->body ? strlen(r->body) : 0,
        .connect_timeout_ms = r->metadata ? CRED_METADATA_CONNECT_TIMEOUT_MS
                                          : CRED_HTTP_CONNECT_TIMEOUT_MS,
        .timeout_ms = r->metadata ? CRED_METADATA_TIMEOUT_MS : CRED_HTTP_TIMEOUT_MS,
        .max_answer = CRED_HTTP_MAX_ANSWER,
        /* metadata never goes through a proxy, and needs no CA bundle */
        .no_proxy = r->metadata,
        .ca_bundle = !r->metadata && ctx ? ctx->ca_bundle : NULL,
        .resolve = r->resolve,
    };
    ddb__http_answer a;
    ddb_error err;
    ddb_error_clear(&err);
    if (ddb__http_send(NULL, &req, ctx ? ctx->cancel : NULL, &a, &err) != 0) {
        snprintf(transport_err, n, "%s", err.message);
        return 0;
    }
    *body = a.body;
    a.body = NULL;
    long status = a.status;
    ddb__http_answer_cleanup(&a);
    return status;
}

int64_t ddb__parse_iso8601_ms(const char *s)
{
    struct tm tm = { 0 };
    int consumed = 0;
    if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                     &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &consumed) != 6)
        return 0;
    if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 ||
        tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
        return 0;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    int64_t t = (int64_t)timegm(&tm);
    const char *p = s + consumed;
    if (*p == '.')
        for (p++; isdigit((unsigned char)*p); p++)
            ;
    if (*p == '+' || *p == '-') {
        int oh = 0, om = 0;
        if (sscanf(p + 1, "%2d:%2d", &oh, &om) >= 1)
            t -= (*p == '+' ? 1 : -1) * (int64_t)(oh * 3600 + om * 60);
    } else if (*p != 'Z' && *p != 'z' && *p != '\0') {
        return 0;
    }
    return t * 1000;
}

/* The STS answer, parsed by expat: no DTD (one ends the parse, so no entity but XML's
 * five is ever defined or expanded), comments skipped, character references and CDATA
 * read as XML reads them. Element names are compared by their local part. */
typedef struct xml_find {
    const char *within, *tag;
    int depth;
    int within_depth;  /* depth of the first <within> while open, else 0 */
    bool within_done;  /* the first <within> has closed */
    int tag_depth;     /* depth of the <tag> being read, else 0 */
    bool found, nested;
    dl_buf text;
    XML_Parser parser;
} xml_find;

static const char *local_name(const char *name)
{
    const char *sep = strrchr(name, '\x01');
    return sep ? sep + 1 : name;
}

static void XMLCALL xml_start(void *arg, const XML_Char *name, const XML_Char **attrs)
{
    (void)attrs;
    xml_find *f = arg;
    f->depth++;
    const char *n = local_name(name);
    if (f->tag_depth) {
        f->nested = true; /* an element inside: not a text value */
        return;
    }
    if (f->within && !f->within_depth && !f->within_done && strcmp(n, f->within) == 0) {
        f->within_depth = f->depth;
        return;
    }
    if (!f->found && (!f->within || f->within_depth) && strcmp(n, f->tag) == 0)
        f->tag_depth = f->depth;
}

static void XMLCALL xml_end(void *arg, const XML_Char *name)
{
    (void)name;
    xml_find *f = arg;
    if (f->tag_depth == f->depth) {
        f->tag_depth = 0;
        f->found = true;
    } else if (f->within_depth == f->depth) {
        f->within_depth = 0;
        f->within_done = true;
    }
    f->depth--;
}

static void XMLCALL xml_chars(void *arg, const XML_Char *s, int len)
{
    xml_find *f = arg;
    if (f->tag_depth && !f->found)
        dl__buf_put(&f->text, s, (size_t)len);
}

static void XMLCALL xml_doctype(void *arg, const XML_Char *name, const XML_Char *sysid,
                                const XML_Char *pubid, int has_internal_subset)
{
    (void)name, (void)sysid, (void)pubid, (void)has_internal_subset;
    xml_find *f = arg;
    XML_StopParser(f->parser, XML_FALSE);
}

char *ddb__xml_text(const char *doc, const char *within, const char *tag)
{
    if (!doc)
        return NULL;
    size_t len = strlen(doc);
    if (len > INT_MAX)
        return NULL;
    XML_Parser p = XML_ParserCreateNS("UTF-8", '\x01');
    if (!p)
        return NULL;
    xml_find f = { .within = within, .tag = tag, .parser = p };
    XML_SetUserData(p, &f);
    XML_SetElementHandler(p, xml_start, xml_end);
    XML_SetCharacterDataHandler(p, xml_chars);
    XML_SetStartDoctypeDeclHandler(p, xml_doctype);
    XML_SetParamEntityParsing(p, XML_PARAM_ENTITY_PARSING_NEVER);
    bool ok = XML_Parse(p, doc, (int)len, XML_TRUE) == XML_STATUS_OK;
    XML_ParserFree(p);
    char *out = NULL;
    if (ok && f.found && !f.nested && !f.text.oom) {
        /* the text, trimmed */
        const char *t = f.text.p ? f.text.p : "";
        size_t n = f.text.len;
        while (n > 0 && isspace((unsigned char)*t))
            t++, n--;
        while (n > 0 && isspace((unsigned char)t[n - 1]))
            n--;
        if (!memchr(t, '\0', n) && (out = malloc(n + 1))) {
            memcpy(out, t, n);
            out[n] = '\0';
        }
    }
    if (f.text.p)
        memset(f.text.p, 0, f.text.len); /* may be a secret */
    dl__buf_cleanup(&f.text);
    return out;
}

bool ddb__form_add(char **buf, const char *key, const char *value)
{
    size_t have = *buf ? strlen(*buf) : 0;
    size_t need = have + 1 + strlen(key) + 1 + 3 * strlen(value) + 1;
    char *nb = realloc(*buf, need);
    if (!nb)
        return false;
    *buf = nb;
    char *p = nb + have;
    if (have)
        *p++ = '&';
    p += sprintf(p, "%s=", key);
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *v = (const unsigned char *)value; *v; v++) {
        if (isalnum(*v) || *v == '-' || *v == '_' || *v == '.' || *v == '~') {
            *p++ = (char)*v;
        } else {
            *p++ = '%';
            *p++ = hex[*v >> 4];
            *p++ = hex[*v & 15];
        }
    }
    *p = '\0';
    return true;
}

char *ddb__read_small_file(const char *path, size_t max)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *buf = malloc(max + 1);
    if (!buf) {
        fclose(f);
        errno = ENOMEM;
        return NULL;
    }
    size_t n = fread(buf, 1, max, f);
    bool more = fgetc(f) != EOF;
    fclose(f);
    if (more) {
        free(buf);
        errno = EFBIG;
        return NULL;
    }
    buf[n] = '\0';
    size_t s = 0;
    while (isspace((unsigned char)buf[s]))
        s++;
    while (n > s && isspace((unsigned char)buf[n - 1]))
        buf[--n] = '\0';
    memmove(buf, buf + s, n - s + 1);
    return buf;
}
