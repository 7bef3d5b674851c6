/* fake_sts.c: the fake STS and SSO portal of fake_sts.h. Credentials are numbered
 * (WEBAKID1, ROLEAKID1, SSOAKID1, ...) so a test sees each call and each refresh. */
#include "fake_sts.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sigv4.h"

#define MAX_KEYS 4

struct fake_sts {
    struct MHD_Daemon *d;
    char url[64];
    pthread_mutex_t mu;
    int64_t expiration_ms;
    char error_code[64];
    int error_status;
    char next_code[64];
    int next_status, next_n;
    char web_token[512];
    char sso_token[256];
    char refresh_token[256];
    char keys[MAX_KEYS][2][128];
    int n_keys;
    char last_body[4096];
    char last_akid[128];
    char last_account[64], last_role[128];
    fake_sts_counts counts;
};

typedef struct conn_state {
    char body[4096];
    size_t len;
} conn_state;

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *ctype,
                             const char *body)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), (void *)(uintptr_t)body,
                                                             MHD_RESPMEM_MUST_COPY);
    MHD_add_response_header(r, "Content-Type", ctype);
    enum MHD_Result ok = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ok;
}

static void iso8601(int64_t ms, char *buf, size_t n)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* A form field, %-decoded, of body into out. */
static void form_field(const char *body, const char *name, char *out, size_t n)
{
    out[0] = '\0';
    size_t nl = strlen(name);
    for (const char *p = body; p && *p; p = strchr(p, '&') ? strchr(p, '&') + 1 : NULL) {
        if (strncmp(p, name, nl) != 0 || p[nl] != '=')
            continue;
        const char *v = p + nl + 1;
        size_t o = 0;
        while (*v && *v != '&' && o + 1 < n) {
            if (*v == '%' && v[1] && v[2]) {
                char hex[3] = { v[1], v[2], 0 };
                out[o++] = (char)strtol(hex, NULL, 16);
                v += 3;
            } else {
                out[o++] = *v == '+' ? ' ' : *v;
                v++;
            }
        }
        out[o] = '\0';
        return;
    }
}

typedef struct hdrs {
    dl_sigv4_header h[32];
    size_t n;
} hdrs;

static enum MHD_Result collect(void *cls, enum MHD_ValueKind kind, const char *key,
                               const char *value)
{
    (void)kind;
    hdrs *h = cls;
    if (h->n < 32)
        h->h[h->n++] = (dl_sigv4_header){ key, value };
    return MHD_YES;
}

static const char *secret_for(void *arg, const char *akid)
{
    fake_sts *s = arg;
    for (int i = 0; i < s->n_keys; i++)
        if (strcmp(s->keys[i][0], akid) == 0)
            return s->keys[i][1];
    return NULL;
}

static void sts_error(fake_sts *s, const char *code, const char *msg, char *out, size_t n)
{
    (void)s;
    snprintf(out, n,
             "<ErrorResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><Error>"
             "<Type>Sender</Type><Code>%s</Code><Message>%s</Message></Error>"
             "<RequestId>fake-request-1</RequestId></ErrorResponse>", code, msg);
}

static unsigned handle_sts(fake_sts *s, struct MHD_Connection *conn, const char *body,
                           char *out, size_t n)
{
    char action[64], field[600];
    form_field(body, "Action", action, sizeof action);
    snprintf(s->last_body, sizeof s->last_body, "%s", body);
    if (s->next_n > 0) {
        s->next_n--;
        s->counts.refused++;
        sts_error(s, s->next_code, "the fake STS was told to fail this call", out, n);
        return (unsigned)s->next_status;
    }
    if (s->error_code[0]) {
        s->counts.refused++;
        sts_error(s, s->error_code, "the fake STS was told to fail", out, n);
        return (unsigned)s->error_status;
    }
    const char *prefix;
    int num;
    if (strcmp(action, "AssumeRoleWithWebIdentity") == 0) {
        form_field(body, "WebIdentityToken", field, sizeof field);
        if (s->web_token[0] && strcmp(field, s->web_token) != 0) {
            s->counts.refused++;
            sts_error(s, "InvalidIdentityToken", "Incorrect token audience", out, n);
            return 400;
        }
        prefix = "WEB";
        num = ++s->counts.web_identity;
    } else if (strcmp(action, "AssumeRole") == 0) {
        hdrs h = { .n = 0 };
        MHD_get_connection_values(conn, MHD_HEADER_KIND, collect, &h);
        char err[256] = "";
        dl_sigv4_verdict v = dl__sigv4_verify("POST", "/", NULL, h.h, h.n, body, strlen(body),
                                              secret_for, s, err, sizeof err);
        const char *auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
        const char *cred = auth ? strstr(auth, "Credential=") : NULL;
        s->last_akid[0] = '\0';
        if (cred)
            snprintf(s->last_akid, sizeof s->last_akid, "%.*s", (int)strcspn(cred + 11, "/"),
                     cred + 11);
        if (v != DL_SIGV4_OK || !auth || !strstr(auth, "/sts/aws4_request")) {
            s->counts.refused++;
            sts_error(s, "SignatureDoesNotMatch", "bad signature", out, n);
            return 403;
        }
        prefix = "ROLE";
        num = ++s->counts.assume_role;
    } else {
        s->counts.refused++;
        sts_error(s, "InvalidAction", "unknown action", out, n);
        return 400;
    }
    char exp[40];
    iso8601(s->expiration_ms, exp, sizeof exp);
    snprintf(out, n,
             "<%sResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">\n"
             "  <%sResult>\n    <Credentials>\n"
             "      <AccessKeyId>%sAKID%d</AccessKeyId>\n"
             "      <SecretAccessKey>%s-secret-%d</SecretAccessKey>\n"
             "      <SessionToken>%s-token-%d&amp;x</SessionToken>\n"
             "      <Expiration>%s</Expiration>\n"
             "    </Credentials>\n  </%sResult>\n</%sResponse>\n",
             action, action, prefix, num, prefix, num, prefix, num, exp, action, action);
    return 200;
}

static unsigned handle_sso(fake_sts *s, struct MHD_Connection *conn, char *out, size_t n)
{
    const char *tok = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "x-amz-sso_bearer_token");
    const char *acct = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "account_id");
    const char *role = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "role_name");
    snprintf(s->last_account, sizeof s->last_account, "%s", acct ? acct : "");
    snprintf(s->last_role, sizeof s->last_role, "%s", role ? role : "");
    if (!tok || !s->sso_token[0] || strcmp(tok, s->sso_token) != 0) {
        s->counts.refused++;
        snprintf(out, n, "{\"message\":\"Session token not found or invalid\"}");
        return 401;
    }
    int num = ++s->counts.sso;
    snprintf(out, n,
             "{\"roleCredentials\":{\"accessKeyId\":\"SSOAKID%d\",\"secretAccessKey\":"
             "\"SSO-secret-%d\",\"sessionToken\":\"SSO-token-%d\",\"expiration\":%lld}}",
             num, num, num, (long long)s->expiration_ms);
    return 200;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **state)
{
    (void)version;
    fake_sts *s = cls;
    if (*state == NULL) {
        conn_state *cs = calloc(1, sizeof *cs);
        if (!cs)
            return MHD_NO;
        *state = cs;
        return MHD_YES;
    }
    conn_state *cs = *state;
    if (*upload_size) {
        size_t k = *upload_size;
        if (cs->len + k >= sizeof cs->body)
            k = sizeof cs->body - 1 - cs->len;
        memcpy(cs->body + cs->len, upload, k);
        cs->len += k;
        cs->body[cs->len] = '\0';
        *upload_size = 0;
        return MHD_YES;
    }
    char out[4096];
    unsigned status = 404;
    const char *ctype = "text/xml";
    snprintf(out, sizeof out, "not found");
    pthread_mutex_lock(&s->mu);
    if (strcmp(method, "POST") == 0 && strcmp(url, "/") == 0) {
        status = handle_sts(s, conn, cs->body, out, sizeof out);
    } else if (strcmp(method, "POST") == 0 && strcmp(url, "/token") == 0) {
        ctype = "application/json";
        char want[300];
        snprintf(want, sizeof want, "\"refreshToken\":\"%s\"", s->refresh_token);
        if (!s->refresh_token[0] || !strstr(cs->body, want) ||
            !strstr(cs->body, "\"grantType\":\"refresh_token\"")) {
            s->counts.refused++;
            status = 400;
            snprintf(out, sizeof out, "{\"error\":\"invalid_grant\"}");
        } else {
            int n = ++s->counts.oidc;
            snprintf(s->sso_token, sizeof s->sso_token, "sso-refreshed-%d", n);
            snprintf(out, sizeof out, "{\"accessToken\":\"%s\",\"expiresIn\":3600,"
                     "\"tokenType\":\"Bearer\",\"refreshToken\":\"%s\"}", s->sso_token,
                     s->refresh_token);
            status = 200;
        }
    } else if (strcmp(method, "GET") == 0 && strcmp(url, "/federation/credentials") == 0) {
        status = handle_sso(s, conn, out, sizeof out);
        ctype = "application/json";
    }
    pthread_mutex_unlock(&s->mu);
    return reply(conn, status, ctype, out);
}

static void done(void *cls, struct MHD_Connection *conn, void **state,
                 enum MHD_RequestTerminationCode code)
{
    (void)cls, (void)conn, (void)code;
    free(*state);
    *state = NULL;
}

fake_sts *fake_sts_start(void)
{
    fake_sts *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    pthread_mutex_init(&s->mu, NULL);
    s->expiration_ms = 4070908800000LL; /* 2099-01-01 */
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = 0 };
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    s->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL,
                            handle, s, MHD_OPTION_SOCK_ADDR, &addr,
                            MHD_OPTION_NOTIFY_COMPLETED, done, s, MHD_OPTION_END);
    if (!s->d) {
        pthread_mutex_destroy(&s->mu);
        free(s);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    snprintf(s->url, sizeof s->url, "http://127.0.0.1:%u", (unsigned)info->port);
    return s;
}

void fake_sts_stop(fake_sts *s)
{
    if (!s)
        return;
    MHD_stop_daemon(s->d);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

const char *fake_sts_url(const fake_sts *s)
{
    return s->url;
}

void fake_sts_set_expiration(fake_sts *s, int64_t wall_ms)
{
    pthread_mutex_lock(&s->mu);
    s->expiration_ms = wall_ms;
    pthread_mutex_unlock(&s->mu);
}

void fake_sts_set_error(fake_sts *s, const char *code, int status)
{
    pthread_mutex_lock(&s->mu);
    snprintf(s->error_code, sizeof s->error_code, "%s", code ? code : "");
    s->error_status = status;
    pthread_mutex_unlock(&s->mu);
}

void fake_sts_set_web_token(fake_sts *s, const char *token)
{
    pthread_mutex_lock(&s->mu);
    snprintf(s->web_token, sizeof s->web_token, "%s", token ? token : "");
    pthread_mutex_unlock(&s->mu);
}

void fake_sts_add_key(fake_sts *s, const char *akid, const char *secret)
{
    pthread_mutex_lock(&s->mu);
    if (s->n_keys < MAX_KEYS) {
        snprintf(s->keys[s->n_keys][0], sizeof s->keys[0][0], "%s", akid);
        snprintf(s->keys[s->n_keys][1], sizeof s->keys[0][1], "%s", secret);
        s->n_keys++;
    }
    pthread_mutex_unlock(&s->mu);
}

void fake_sts_set_sso_token(fake_sts *s, const char *token)
{
    pthread_mutex_lock(&s->mu);
    snprintf(s->sso_token, sizeof s->sso_token, "%s", token ? token : "");
    pthread_mutex_unlock(&s->mu);
}

fake_sts_counts fake_sts_counts_get(fake_sts *s)
{
    pthread_mutex_lock(&s->mu);
    fake_sts_counts c = s->counts;
    pthread_mutex_unlock(&s->mu);
    return c;
}

void fake_sts_last(fake_sts *s, const char *field, char *out, size_t n)
{
    pthread_mutex_lock(&s->mu);
    if (strcmp(field, "signer") == 0)
        snprintf(out, n, "%s", s->last_akid);
    else if (strcmp(field, "account_id") == 0)
        snprintf(out, n, "%s", s->last_account);
    else if (strcmp(field, "role_name") == 0)
        snprintf(out, n, "%s", s->last_role);
    else
        form_field(s->last_body, field, out, n);
    pthread_mutex_unlock(&s->mu);
}

void fake_sts_set_refresh_token(fake_sts *s, const char *token)
{
    pthread_mutex_lock(&s->mu);
    snprintf(s->refresh_token, sizeof s->refresh_token, "%s", token ? token : "");
    pthread_mutex_unlock(&s->mu);
}

void fake_sts_fail_next(fake_sts *s, const char *code, int status, int n)
{
    pthread_mutex_lock(&s->mu);
    snprintf(s->next_code, sizeof s->next_code, "%s", code);
    s->next_status = status;
    s->next_n = n;
    pthread_mutex_unlock(&s->mu);
}
