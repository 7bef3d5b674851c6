/* credentials.c: the AWS credentials chain in the SDKs' order (explicit, environment,
 * web identity, the profile, container endpoint, IMDSv2), resolved lazily, cached, and
 * refreshed before credentials that expire do so. One refresh at a time per provider.
 * A provider that is configured and fails ends the chain with its error. */
#include "internal.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <json-c/json.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#define REFRESH_BEFORE_MS (5 * 60 * 1000)
/* Credentials that come back expired, or expiring within REFRESH_BEFORE_MS, are not
 * fetched again before this wait, doubled each time up to the most. */
#define STALE_BACKOFF_MS 1000
#define STALE_BACKOFF_MAX_MS (5 * 60 * 1000)
#define IMDS_TOKEN_TTL_S "21600"
/* An instance metadata endpoint, its longest path with a role name, a role name, the
 * session token's header: what does not fit is refused, never cut. */
#define IMDS_ENDPOINT_MAX 512
#define IMDS_ENDPOINT_MAX_TEXT "511"
#define IMDS_ROLE_MAX 256
#define IMDS_PATH_MAX (sizeof "/latest/meta-data/iam/security-credentials/" + IMDS_ROLE_MAX)
#define IMDS_TOKEN_HEADER_MAX 1024
#define MAX_PROFILE_CHAIN 8
/* The container authorization token file is read whole, up to this size. */
#define CONTAINER_TOKEN_FILE_MAX (16 * 1024)
#define NOT_CONFIGURED 1 /* a provider's "not set up here": the chain goes on */

struct ddb__cred_provider {
    pthread_mutex_t mu; /* guards everything below; held during a refresh */
    ddb_clock *clock;
    char *explicit_akid, *explicit_secret, *explicit_token;
    char *profile;       /* NULL: AWS_PROFILE or "default", read at resolution */
    char *imds_endpoint; /* NULL: AWS_EC2_METADATA_SERVICE_ENDPOINT or the default */
    bool imds_disabled;
    char *region;        /* resolved as the client does: for STS, and the log */
    const char *region_from; /* where the region came from (static text) */
    char *endpoint;      /* the client's DynamoDB endpoint, for the log */
    ddb_log_fn log;
    void *log_arg;
    int log_level;
    bool logged;         /* the first-use event was logged */
    bool have;
    ddb__credentials cur;
    const char *source;
    /* After credentials that came back stale: no fetch before retry_at_ns (the clock's
     * monotonic time); while nothing usable is held, stale_err is the answer. */
    int64_t retry_at_ns, backoff_ms;
    int stale_rc;
    ddb_error stale_err;
};

static char *g_container_base; /* tests only */

void ddb__cred_set_container_base(const char *base_url)
{
    free(g_container_base);
    g_container_base = base_url ? strdup(base_url) : NULL;
}

static void plog(ddb__cred_provider *p, int level, const char *msg, const ddb_log_field *f,
                 size_t n)
{
    if (p->log && level >= p->log_level && level < DDB_LOG_OFF)
        p->log(p->log_arg, level, DDB_EVENT_NONE, "dynalock.ddb.credentials", msg, f, n);
}

ddb__cred_provider *ddb__cred_provider_new(const ddb_client_options *opts,
                                           const ddb__settings *settings, ddb_clock *clock,
                                           ddb_error *err)
{
    ddb_client_options none = { 0 };
    if (!opts)
        opts = &none;
    bool some = opts->access_key_id || opts->secret_access_key;
    if (some && (!opts->access_key_id || !opts->secret_access_key ||
                 !*opts->access_key_id || !*opts->secret_access_key)) {
        ddb__fail(err, DDB_EINVAL, "explicit credentials need both an access key id and a "
                                   "secret access key");
        return NULL;
    }
    ddb__settings own;
    if (!settings) {
        if (ddb__settings_resolve(opts, &own, err) != 0)
            return NULL;
        settings = &own;
    }
    /* A profile named (option or AWS_PROFILE) must exist, as in the SDKs. */
    if (settings->profile_named && !settings->profile_found) {
        ddb__fail(err, DDB_ECREDENTIALS,
                  "profile '%.100s' not found in the shared config or credentials file",
                  settings->profile);
        if (settings == &own)
            ddb__settings_cleanup(&own);
        return NULL;
    }
    /* Options that would become header values are checked here, at once. */
    const char *bad_opt = some && !ddb__header_value_ok(opts->access_key_id) ? "access_key_id"
                          : some && opts->session_token && !ddb__header_value_ok(opts->session_token)
                              ? "session_token" : NULL;
    ddb__cred_provider *p = bad_opt ? NULL : calloc(1, sizeof *p);
    if (!p) {
        if (bad_opt)
            ddb__fail(err, DDB_EINVAL, "explicit credentials: invalid header value: the option "
                      "%s holds a line break or another control character, which an HTTP "
                      "header cannot carry", bad_opt);
        else
            ddb__fail(err, DDB_ENOMEM, "out of memory");
        if (settings == &own)
            ddb__settings_cleanup(&own);
        return NULL;
    }
    pthread_mutex_init(&p->mu, NULL);
    p->clock = ddb_clock_ref(clock ? clock : ddb_clock_system());
    p->source = "";
    p->imds_disabled = opts->imds_disabled;
    p->log = opts->log ? opts->log : ddb_log_to_stderr;
    p->log_arg = opts->log ? opts->log_arg : NULL;
    p->log_level = opts->log_level ? opts->log_level : DDB_LOG_INFO;
    bool oom = false;
    if (some) {
        p->explicit_akid = strdup(opts->access_key_id);
        p->explicit_secret = strdup(opts->secret_access_key);
        oom = !p->explicit_akid || !p->explicit_secret;
        if (opts->session_token && *opts->session_token) {
            p->explicit_token = strdup(opts->session_token);
            oom = oom || !p->explicit_token;
        }
    }
    if (opts->profile) {
        p->profile = strdup(opts->profile);
        oom = oom || !p->profile;
    }
    if (opts->imds_endpoint) {
        p->imds_endpoint = strdup(opts->imds_endpoint);
        oom = oom || !p->imds_endpoint;
    }
    p->region = strdup(settings->region);
    p->region_from = settings->region_from;
    p->endpoint = strdup(settings->endpoint);
    oom = oom || !p->region || !p->endpoint;
    if (settings == &own)
        ddb__settings_cleanup(&own);
    if (oom) {
        ddb__cred_provider_free(p);
        ddb__fail(err, DDB_ENOMEM, "out of memory");
        return NULL;
    }
    return p;
}

void ddb__cred_provider_free(ddb__cred_provider *p)
{
    if (!p)
        return;
    ddb__credentials_cleanup(&p->cur);
    free(p->explicit_akid);
    ddb__free_secret(p->explicit_secret);
    ddb__free_secret(p->explicit_token);
    free(p->profile);
    free(p->imds_endpoint);
    free(p->region);
    free(p->endpoint);
    ddb_clock_unref(p->clock);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

const char *ddb__cred_source(ddb__cred_provider *p)
{
    pthread_mutex_lock(&p->mu);
    const char *s = p->source;
    pthread_mutex_unlock(&p->mu);
    return s;
}

char *ddb__profile_region(const char *profile)
{
    ddb__config *cfg = ddb__config_load();
    const char *r = ddb__config_get(cfg, DDB__SEC_PROFILE, ddb__config_profile_name(profile),
                                    "region");
    char *out = r ? strdup(r) : NULL;
    ddb__config_free(cfg);
    return out;
}

/* ---- parsing the metadata endpoints' answer */

/* {"AccessKeyId","SecretAccessKey","Token","Expiration"} (container and IMDS). */
bool ddb__parse_cred_json(const char *body, ddb__credentials *out)
{
    if (!body)
        return false;
    json_object *o = json_tokener_parse(body);
    if (!o || !json_object_is_type(o, json_type_object)) {
        json_object_put(o);
        return false;
    }
    json_object *a = NULL, *s = NULL, *t = NULL, *e = NULL, *code = NULL;
    json_object_object_get_ex(o, "AccessKeyId", &a);
    json_object_object_get_ex(o, "SecretAccessKey", &s);
    json_object_object_get_ex(o, "Token", &t);
    json_object_object_get_ex(o, "Expiration", &e);
    json_object_object_get_ex(o, "Code", &code);
    const char *akid = ddb__json_text(a), *secret = ddb__json_text(s);
    bool ok = akid && secret && *akid && *secret;
    if (code && json_object_is_type(code, json_type_string) &&
        strcmp(json_object_get_string(code), "Success") != 0)
        ok = false;
    if (ok && t && json_object_is_type(t, json_type_string) && !ddb__json_text(t))
        ok = false; /* a token with a NUL in it is no token */
    if (ok) {
        const char *tok = ddb__json_text(t);
        int64_t exp = e && json_object_is_type(e, json_type_string)
                          ? ddb__parse_iso8601_ms(json_object_get_string(e)) : 0;
        ok = ddb__creds_set(out, akid, secret, tok, exp);
    }
    json_object_put(o);
    return ok;
}

/* ---- container endpoint (ECS, EKS Pod Identity) */

static bool addr_allowed(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET) {
        uint32_t a = ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr);
        return (a >> 24) == 127 || a == 0xA9FEAA02u /* 169.254.170.2 */ ||
               a == 0xA9FEAA17u /* 169.254.170.23 */;
    }
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        static const struct in6_addr eks = { { { 0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0, 0,
                                                 0, 0, 0, 0, 0, 0, 0, 0x23 } } };
        return IN6_IS_ADDR_LOOPBACK(a) || memcmp(a, &eks, sizeof eks) == 0;
    }
    return false;
}

int ddb__container_url_check(const char *url, char **resolve, ddb_error *err)
{
    *resolve = NULL;
    CURLU *u = curl_url();
    if (!u)
        return ddb__fail(err, DDB_ENOMEM, "out of memory");
    char *scheme = NULL, *host = NULL, *port = NULL, *user = NULL;
    int rc = 0;
    if (curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
        strcasecmp(scheme, "http") != 0 && strcasecmp(scheme, "https") != 0) {
        rc = ddb__fail(err, DDB_ECREDENTIALS, "container: the credentials URL must be http or "
                                              "https, not %.20s", scheme);
        goto out;
    }
    if (!scheme || curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK) {
        rc = ddb__fail(err, DDB_ECREDENTIALS, "container: the credentials URL '%.200s' is not a "
                                              "URL", url);
        goto out;
    }
    if (curl_url_get(u, CURLUPART_USER, &user, 0) == CURLUE_OK) {
        rc = ddb__fail(err, DDB_ECREDENTIALS, "container: the credentials URL has user info; "
                                              "refused");
        goto out;
    }
    if (strcasecmp(scheme, "https") == 0)
        goto out; /* any host over TLS */
    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT);
    char bare[256];
    size_t hl = strlen(host);
    if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']')
        snprintf(bare, sizeof bare, "%.*s", (int)(hl - 2), host + 1);
    else
        snprintf(bare, sizeof bare, "%s", host);
    char *zone = strchr(bare, '%');
    if (zone)
        *zone = '\0';
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
    struct addrinfo *ai = NULL;
    int gr = getaddrinfo(bare, NULL, &hints, &ai);
    if (gr != 0 || !ai) {
        rc = ddb__fail(err, DDB_ECREDENTIALS, "container: the host '%.100s' of the credentials "
                       "URL does not resolve (%s); over http it must be a loopback or the ECS/EKS "
                       "address", bare, gai_strerror(gr));
        goto out;
    }
    char list[512] = "";
    size_t ll = 0;
    bool numeric = false;
    for (struct addrinfo *a = ai; a; a = a->ai_next) {
        char txt[INET6_ADDRSTRLEN] = "";
        const void *bin = a->ai_family == AF_INET
                              ? (const void *)&((struct sockaddr_in *)a->ai_addr)->sin_addr
                              : (const void *)&((struct sockaddr_in6 *)a->ai_addr)->sin6_addr;
        inet_ntop(a->ai_family, bin, txt, sizeof txt);
        if (!addr_allowed(a->ai_addr)) {
            rc = ddb__fail(err, DDB_ECREDENTIALS,
                           "container: the host '%.100s' of the credentials URL is not allowed: "
                           "it resolves to %s, and over http only loopback, 169.254.170.2, "
                           "169.254.170.23 and fd00:ec2::23 are", bare, txt);
            break;
        }
        if (strcmp(txt, bare) == 0)
            numeric = true;
        if (ll + strlen(txt) + 4 < sizeof list)
            ll += (size_t)snprintf(list + ll, sizeof list - ll, "%s%s%s%s", ll ? "," : "",
                                   a->ai_family == AF_INET6 ? "[" : "", txt,
                                   a->ai_family == AF_INET6 ? "]" : "");
    }
    freeaddrinfo(ai);
    /* Connect to the addresses checked, not to a second lookup's answer. */
    if (rc == 0 && !numeric && asprintf(resolve, "%s:%s:%s", host, port ? port : "80", list) < 0) {
        *resolve = NULL;
        rc = ddb__fail(err, DDB_ENOMEM, "out of memory");
    }
out:
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_free(user);
    curl_url_cleanup(u);
    return rc;
}

static int from_container(const ddb__cred_ctx *ctx, ddb__credentials *out)
{
    const char *rel = ddb__env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
    const char *full = ddb__env("AWS_CONTAINER_CREDENTIALS_FULL_URI");
    if (!rel && !full)
        return NOT_CONFIGURED;
    char *url = NULL, *resolve = NULL, *token = NULL, *auth_hdr = NULL, *body = NULL;
    int rc = 0;
    if (rel) {
        const char *base = g_container_base ? g_container_base : "http://169.254.170.2";
        if (asprintf(&url, "%s%s%s", base, rel[0] == '/' ? "" : "/", rel) < 0) {
            url = NULL;
            rc = ddb__fail(ctx->err, DDB_ENOMEM, "out of memory");
            goto out;
        }
    } else {
        if ((rc = ddb__container_url_check(full, &resolve, ctx->err)) != 0)
            goto out;
        if (!(url = strdup(full))) {
            rc = ddb__fail(ctx->err, DDB_ENOMEM, "out of memory");
            goto out;
        }
    }
    const char *token_file = ddb__env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
    if (token_file) {
        errno = 0;
        token = ddb__read_small_file(token_file, CONTAINER_TOKEN_FILE_MAX);
        if (!token) {
            rc = ddb__fail(ctx->err, DDB_ECREDENTIALS, "container: cannot read the authorization "
                           "token file %.200s: %s", token_file, strerror(errno ? errno : EIO));
            goto out;
        }
    } else if (ddb__env("AWS_CONTAINER_AUTHORIZATION_TOKEN")) {
        token = strdup(ddb__env("AWS_CONTAINER_AUTHORIZATION_TOKEN"));
        if (!token) {
            rc = ddb__fail(ctx->err, DDB_ENOMEM, "out of memory");
            goto out;
        }
    }
    const char *hdrs[2] = { "Accept: application/json", NULL };
    size_t nh = 1;
    if (token) {
        if (!*token || !ddb__header_value_ok(token)) {
            rc = ddb__fail(ctx->err, DDB_ECREDENTIALS, "container: the authorization token is "
                                                       "empty or has a line break or another "
                                                       "control character; refused");
            goto out;
        }
        if (asprintf(&auth_hdr, "Authorization: %s", token) < 0) {
            auth_hdr = NULL;
            rc = ddb__fail(ctx->err, DDB_ENOMEM, "out of memory");
            goto out;
        }
        hdrs[nh++] = auth_hdr;
    }
    ddb__cred_http_req req = { .method = "GET", .url = url, .headers = hdrs, .n_headers = nh,
                               .metadata = true, .resolve = resolve };
    char terr[CURL_ERROR_SIZE];
    long status = ddb__cred_http(ctx, &req, &body, terr, sizeof terr);
    if (status == 0)
        rc = ddb_cancel_is_set(ctx->cancel)
                 ? ddb__fail(ctx->err, DDB_ECANCELED, "container: cancelled")
                 : ddb__fail(ctx->err, DDB_ECREDENTIALS, "container: no answer from the "
                             "credentials endpoint: %s", terr);
    else if (status != 200)
        rc = ddb__fail(ctx->err, DDB_ECREDENTIALS, "container: the credentials endpoint "
                                                   "answered HTTP %ld", status);
    else if (!ddb__parse_cred_json(body, out))
        rc = ddb__fail(ctx->err, DDB_ECREDENTIALS, "container: the credentials endpoint's "
                                                   "answer has no credentials");
out:
    ddb__free_secret(body);
    ddb__free_secret(auth_hdr);
    ddb__free_secret(token);
    free(resolve);
    free(url);
    return rc;
}

/* ---- IMDSv2 */

/* A role name as IAM allows them (letters, digits and +=,.@_-), and never "." or "..":
 * it becomes a path segment of the next URL, where "..", "/", "?" or "#" would name
 * another resource than the role's credentials. */
static bool imds_role_ok(const char *role)
{
    size_t n = strlen(role);
    if (n == 0 || n > IMDS_ROLE_MAX || strcmp(role, ".") == 0 || strcmp(role, "..") == 0)
        return false;
    for (const char *c = role; *c; c++)
        if (!isalnum((unsigned char)*c) && !strchr("+=,.@_-", *c))
            return false;
    return true;
}

static int from_imds(const ddb__cred_ctx *ctx, const char *endpoint, ddb__credentials *out)
{
    char base[IMDS_ENDPOINT_MAX];
    char url[IMDS_ENDPOINT_MAX + IMDS_PATH_MAX], terr[CURL_ERROR_SIZE] = "";
    char *token = NULL, *body = NULL;
    long st;
    int rc = DDB_ECREDENTIALS;
    const char *what = "no answer";
    if ((size_t)snprintf(base, sizeof base, "%s", endpoint) >= sizeof base) {
        what = "an endpoint longer than " IMDS_ENDPOINT_MAX_TEXT " bytes";
        goto out;
    }
    size_t bl = strlen(base);
    while (bl > 0 && base[bl - 1] == '/')
        base[--bl] = '\0';

    snprintf(url, sizeof url, "%s/latest/api/token", base);
    const char *put_hdrs[] = { "X-aws-ec2-metadata-token-ttl-seconds: " IMDS_TOKEN_TTL_S };
    ddb__cred_http_req req = { .method = "PUT", .url = url, .headers = put_hdrs, .n_headers = 1,
                               .metadata = true };
    if ((st = ddb__cred_http(ctx, &req, &token, terr, sizeof terr)) != 200 || !token) {
        what = st ? "the session token was refused" : terr;
        goto out;
    }
    char *tk = token;
    while (isspace((unsigned char)*tk))
        tk++;
    tk[strcspn(tk, "\r\n")] = '\0';
    char tok_hdr[IMDS_TOKEN_HEADER_MAX];
    if (!*tk || !ddb__header_value_ok(tk) || snprintf(tok_hdr, sizeof tok_hdr, "X-aws-ec2-metadata-token: %s", tk) >= (int)sizeof tok_hdr) {
        what = "a bad session token";
        goto out;
    }
    const char *get_hdrs[] = { tok_hdr };
    snprintf(url, sizeof url, "%s/latest/meta-data/iam/security-credentials/", base);
    req = (ddb__cred_http_req){ .method = "GET", .url = url, .headers = get_hdrs, .n_headers = 1,
                                .metadata = true };
    if ((st = ddb__cred_http(ctx, &req, &body, terr, sizeof terr)) != 200 || !body) {
        what = st ? "no instance role" : terr;
        goto out;
    }
    char *role = body;
    while (isspace((unsigned char)*role))
        role++;
    role[strcspn(role, "\r\n")] = '\0';
    if (!imds_role_ok(role)) {
        what = "a bad role name";
        goto out;
    }
    char role_copy[IMDS_ROLE_MAX + 1];
    snprintf(role_copy, sizeof role_copy, "%s", role);
    free(body);
    body = NULL;
    snprintf(url, sizeof url, "%s/latest/meta-data/iam/security-credentials/%s", base, role_copy);
    if ((st = ddb__cred_http(ctx, &req, &body, terr, sizeof terr)) != 200) {
        what = st ? "the role's credentials were refused" : terr;
        goto out;
    }
    if (ddb__parse_cred_json(body, out))
        rc = 0;
    else
        what = "the answer has no credentials";
out:
    if (rc != 0)
        rc = ddb_cancel_is_set(ctx->cancel)
                 ? ddb__fail(ctx->err, DDB_ECANCELED, "instance metadata: cancelled")
                 : ddb__fail(ctx->err, DDB_ECREDENTIALS, "instance metadata (%.100s): %.200s",
                             base, what);
    ddb__free_secret(token);
    ddb__free_secret(body);
    return rc;
}

static const char *imds_endpoint(const ddb__cred_provider *p, const ddb__config *cfg,
                                 const char *profile)
{
    if (p->imds_endpoint)
        return p->imds_endpoint;
    const char *e = ddb__env("AWS_EC2_METADATA_SERVICE_ENDPOINT");
    if (!e)
        e = ddb__config_get(cfg, DDB__SEC_PROFILE, profile, "ec2_metadata_service_endpoint");
    if (e)
        return e;
    const char *mode = ddb__env("AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE");
    if (!mode)
        mode = ddb__config_get(cfg, DDB__SEC_PROFILE, profile,
                               "ec2_metadata_service_endpoint_mode");
    return mode && strcasecmp(mode, "IPv6") == 0 ? "http://[fd00:ec2::254]"
                                                 : "http://169.254.169.254";
}

static bool imds_disabled(const ddb__cred_provider *p)
{
    return p->imds_disabled || ddb__truthy(ddb__env("AWS_EC2_METADATA_DISABLED"));
}

/* ---- profiles */

typedef struct walk {
    ddb__cred_provider *p;
    const ddb__cred_ctx *ctx;
    const char *chain[MAX_PROFILE_CHAIN];
    size_t depth;
    const char **source;
} walk;

static const char *pget(const walk *w, const char *profile, const char *key)
{
    return ddb__config_get(w->ctx->cfg, DDB__SEC_PROFILE, profile, key);
}

static int from_env_keys(const ddb__cred_ctx *ctx, const char *what, ddb__credentials *out)
{
    const char *ak = ddb__env("AWS_ACCESS_KEY_ID");
    const char *sk = ddb__env("AWS_SECRET_ACCESS_KEY");
    if (!ak && !sk)
        return NOT_CONFIGURED;
    if (!ak || !sk)
        return ddb__fail(ctx->err, DDB_ECREDENTIALS, "%s: %s is set but %s is not", what,
                         ak ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY",
                         ak ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID");
    return ddb__creds_set(out, ak, sk, ddb__env("AWS_SESSION_TOKEN"), 0)
               ? 0 : ddb__fail(ctx->err, DDB_ENOMEM, "out of memory");
}

static int static_keys(const walk *w, const char *profile, ddb__credentials *out)
{
    const char *ak = pget(w, profile, "aws_access_key_id");
    const char *sk = pget(w, profile, "aws_secret_access_key");
    if (!ak && !sk)
        return NOT_CONFIGURED;
    if (!ak || !sk)
        return ddb__fail(w->ctx->err, DDB_ECREDENTIALS,
                         "profile '%.100s': aws_access_key_id and aws_secret_access_key go "
                         "together; one is missing", profile);
    return ddb__creds_set(out, ak, sk, pget(w, profile, "aws_session_token"), 0)
               ? 0 : ddb__fail(w->ctx->err, DDB_ENOMEM, "out of memory");
}

static void default_session_name(const walk *w, char *buf, size_t n)
{
    snprintf(buf, n, "dynalock-%lld", (long long)(ddb_clock_wall_ms(w->ctx->clock) / 1000));
}

static int from_profile(walk *w, const char *profile, ddb__credentials *out);

/* The credentials that a role_arn profile assumes the role with. */
static int role_source(walk *w, const char *profile, ddb__credentials *src)
{
    const ddb__cred_ctx *ctx = w->ctx;
    const char *sp = pget(w, profile, "source_profile");
    const char *cs = pget(w, profile, "credential_source");
    if (sp && cs)
        return ddb__fail(ctx->err, DDB_ECREDENTIALS, "profile '%.100s': source_profile and "
                         "credential_source exclude each other", profile);
    if (!sp && !cs)
        return ddb__fail(ctx->err, DDB_ECREDENTIALS, "profile '%.100s': role_arn needs "
                         "source_profile or credential_source", profile);
    if (cs) {
        char what[160];
        snprintf(what, sizeof what, "credential_source %.20s of profile '%.100s'", cs, profile);
        int rc;
        if (strcmp(cs, "Environment") == 0) {
            rc = from_env_keys(ctx, what, src);
        } else if (strcmp(cs, "EcsContainer") == 0) {
            rc = from_container(ctx, src);
        } else if (strcmp(cs, "Ec2InstanceMetadata") == 0) {
            rc = imds_disabled(w->p) ? NOT_CONFIGURED
                                     : from_imds(ctx, imds_endpoint(w->p, ctx->cfg, profile), src);
        } else {
            return ddb__fail(ctx->err, DDB_ECREDENTIALS, "profile '%.100s': credential_source "
                             "'%.40s' is not Environment, Ec2InstanceMetadata or EcsContainer",
                             profile, cs);
        }
        if (rc == NOT_CONFIGURED)
            rc = ddb__fail(ctx->err, DDB_ECREDENTIALS, "%s: nothing is configured there", what);
        return rc;
    }
    if (strcmp(sp, profile) == 0) { /* a profile that is its own source: its static keys */
        int rc = static_keys(w, profile, src);
        if (rc == NOT_CONFIGURED)
            rc = ddb__fail(ctx->err, DDB_ECREDENTIALS, "profile '%.100s' is its own "
                           "source_profile but has no static keys", profile);
        return rc;
    }
    for (size_t i = 0; i < w->depth; i++) {
        if (strcmp(w->chain[i], sp) == 0) {
            char path[300] = "";
            size_t pl = 0;
            for (size_t j = 0; j < w->depth && pl < sizeof path - 1; j++)
                pl += (size_t)snprintf(path + pl, sizeof path - pl, "%s -> ", w->chain[j]);
            return ddb__fail(ctx->err, DDB_ECREDENTIALS, "profile '%.100s': the source_profile "
                             "chain has a cycle: %s%.60s", w->chain[0], path, sp);
        }
    }
    if (!ddb__config_has(ctx->cfg, DDB__SEC_PROFILE, sp))
        return ddb__fail(ctx->err, DDB_ECREDENTIALS, "profile '%.100s': source_profile "
                         "'%.100s' not found", profile, sp);
    int rc = from_profile(w, sp, src);
    if (rc == NOT_CONFIGURED)
        rc = ddb__fail(ctx->err, DDB_ECREDENTIALS, "profile '%.100s': source_profile '%.100s' "
                       "has no credentials", profile, sp);
    return rc;
}

static int assume_role(walk *w, const char *profile, const char *role_arn, ddb__credentials *out)
{
    const ddb__cred_ctx *ctx = w->ctx;
    char what[160];
    snprintf(what, sizeof what, "assume role of profile '%.100s'", profile);
    if (pget(w, profile, "mfa_serial"))
        return ddb__fail(ctx->err, DDB_ECREDENTIALS, "%s: mfa_serial needs a code typed in; "
                         "not supported (use credential_process with an MFA tool)", what);
    ddb__assume_role a = { .role_arn = role_arn, .profile = profile };
    const char *dur = pget(w, profile, "duration_seconds");
    if (dur) {
        char *end;
        long d = strtol(dur, &end, 10);
        if (*end || d < 900 || d > 43200)
            return ddb__fail(ctx->err, DDB_ECREDENTIALS, "%s: duration_seconds '%.20s' is not "
                             "a number of seconds from 900 to 43200", what, dur);
        a.duration_s = (int)d;
    }
    a.external_id = pget(w, profile, "external_id");
    char session[64];
    a.session_name = pget(w, profile, "role_session_name");
    if (!a.session_name) {
        default_session_name(w, session, sizeof session);
        a.session_name = session;
    }
    ddb__credentials src = { 0 };
    int rc = role_source(w, profile, &src);
    if (rc == 0) {
        /* They sign the AssumeRole call, and their token is one of its headers. */
        char src_what[200];
        snprintf(src_what, sizeof src_what, "the source credentials of profile '%.100s'",
                 profile);
        rc = ddb__creds_check(&src, src_what, ctx->err);
    }
    if (rc == 0)
        rc = ddb__sts_assume_role(ctx, what, &a, &src, out);
    ddb__credentials_cleanup(&src);
    return rc;
}

static int web_identity(walk *w, const char *what, const char *profile, const char *token_file,
                        const char *role_arn, const char *session_name, ddb__credentials *out)
{
    if (!role_arn)
        return ddb__fail(w->ctx->err, DDB_ECREDENTIALS, "%s: a web identity token file is set "
                         "but no role ARN", what);
    char session[64];
    if (!session_name) {
        default_session_name(w, session, sizeof session);
        session_name = session;
    }
    ddb__assume_role a = { .role_arn = role_arn, .session_name = session_name, .profile = profile };
    return ddb__sts_web_identity(w->ctx, what, &a, token_file, out);
}

/* The credentials of one profile: NOT_CONFIGURED when it has none to give. */
static int from_profile(walk *w, const char *profile, ddb__credentials *out)
{
    if (w->depth == MAX_PROFILE_CHAIN)
        return ddb__fail(w->ctx->err, DDB_ECREDENTIALS, "profile '%.100s': the source_profile "
                         "chain is longer than %d", w->chain[0], MAX_PROFILE_CHAIN);
    w->chain[w->depth++] = profile;
    int rc;
    const char *role_arn = pget(w, profile, "role_arn");
    const char *wif = pget(w, profile, "web_identity_token_file");
    if (role_arn && !wif) {
        rc = assume_role(w, profile, role_arn, out);
        if (rc == 0 && w->depth == 1)
            *w->source = "assume-role";
    } else if (wif) {
        char what[160];
        snprintf(what, sizeof what, "web identity of profile '%.100s'", profile);
        rc = web_identity(w, what, profile, wif, role_arn, pget(w, profile, "role_session_name"),
                          out);
        if (rc == 0 && w->depth == 1)
            *w->source = "web-identity";
    } else if ((rc = static_keys(w, profile, out)) != NOT_CONFIGURED) {
        if (rc == 0 && w->depth == 1)
            *w->source = "shared-files";
    } else if (pget(w, profile, "sso_session") || pget(w, profile, "sso_start_url")) {
        rc = ddb__cred_sso(w->ctx, profile, out);
        if (rc == 0 && w->depth == 1)
            *w->source = "sso";
    } else if (pget(w, profile, "credential_process")) {
        rc = ddb__cred_process(w->ctx, profile, pget(w, profile, "credential_process"), out);
        if (rc == 0 && w->depth == 1)
            *w->source = "process";
    } else {
        rc = NOT_CONFIGURED;
    }
    w->depth--;
    return rc;
}

/* ---- the chain */

static void tried_add(char *buf, size_t n, const char *what)
{
    size_t l = strlen(buf);
    if (l + 3 >= n)
        return;
    snprintf(buf + l, n - l, "%s%s", l ? ", " : "", what);
}

/* A source's name in an error. */
static const char *source_label(const char *source)
{
    static const struct { const char *source, *label; } labels[] = {
        { "environment", "the environment (AWS_ACCESS_KEY_ID, AWS_SESSION_TOKEN)" },
        { "web-identity", "STS AssumeRoleWithWebIdentity" },
        { "assume-role", "STS AssumeRole" },
        { "shared-files", "the shared credentials and config files" },
        { "sso", "the SSO portal" },
        { "process", "credential_process" },
        { "container", "the container credentials endpoint" },
        { "imds", "the instance metadata service" },
    };
    for (size_t i = 0; i < sizeof labels / sizeof labels[0]; i++)
        if (strcmp(labels[i].source, source) == 0)
            return labels[i].label;
    return source;
}

static bool is_profile_source(const char *source)
{
    return strcmp(source, "assume-role") == 0 || strcmp(source, "shared-files") == 0 ||
           strcmp(source, "sso") == 0 || strcmp(source, "process") == 0;
}

/* Walks the chain; fills out and the source. Called with p->mu held. */
static int resolve(ddb__cred_provider *p, ddb_cancel *cancel, ddb__credentials *out,
                   const char **source, ddb_error *err)
{
    if (p->explicit_akid) {
        *source = "explicit";
        return ddb__creds_set(out, p->explicit_akid, p->explicit_secret, p->explicit_token, 0)
                   ? 0 : ddb__fail(err, DDB_ENOMEM, "out of memory");
    }
    ddb__config *cfg = ddb__config_load();
    if (!cfg)
        return ddb__fail(err, DDB_ENOMEM, "out of memory");
    if (ddb__config_problem(cfg)) {
        int rc = ddb__fail(err, DDB_ECREDENTIALS, "%s", ddb__config_problem(cfg));
        ddb__config_free(cfg);
        return rc;
    }
    const char *profile = ddb__config_profile_name(p->profile);
    char *ca = ddb__config_ca_bundle(cfg, profile);
    ddb__cred_ctx ctx = { .cfg = cfg, .region = p->region, .ca_bundle = ca, .clock = p->clock,
                          .cancel = cancel, .err = err };
    walk w = { .p = p, .ctx = &ctx, .source = source };
    char tried[300] = "";
    /* A profile chosen in the options goes before the environment's keys and web
     * identity, as in botocore and aws-sdk-go-v2 (AWS_PROFILE does not). */
    bool profile_option = p->profile && *p->profile;
    int rc = profile_option ? NOT_CONFIGURED : from_env_keys(&ctx, "environment", out);
    if (rc == 0)
        *source = "environment";
    if (rc == NOT_CONFIGURED && !profile_option) {
        tried_add(tried, sizeof tried, "environment");
        const char *wif = ddb__env("AWS_WEB_IDENTITY_TOKEN_FILE");
        if (wif) {
            rc = web_identity(&w, "web identity (AWS_WEB_IDENTITY_TOKEN_FILE)", profile, wif,
                              ddb__env("AWS_ROLE_ARN"), ddb__env("AWS_ROLE_SESSION_NAME"), out);
            if (rc == 0)
                *source = "web-identity";
        } else {
            tried_add(tried, sizeof tried, "web identity");
        }
    }
    if (rc == NOT_CONFIGURED && ddb_cancel_is_set(cancel))
        rc = ddb__fail(err, DDB_ECANCELED, "cancelled while fetching credentials");
    if (rc == NOT_CONFIGURED) {
        rc = from_profile(&w, profile, out);
        if (rc == NOT_CONFIGURED) {
            char what[100];
            snprintf(what, sizeof what, "profile '%.60s'", profile);
            tried_add(tried, sizeof tried, what);
        }
    }
    if (rc == NOT_CONFIGURED) {
        rc = from_container(&ctx, out);
        if (rc == 0)
            *source = "container";
        else if (rc == NOT_CONFIGURED)
            tried_add(tried, sizeof tried, "container endpoint");
    }
    if (rc == NOT_CONFIGURED && ddb_cancel_is_set(cancel))
        rc = ddb__fail(err, DDB_ECANCELED, "cancelled while fetching credentials");
    if (rc == NOT_CONFIGURED) {
        if (imds_disabled(p)) {
            tried_add(tried, sizeof tried, "instance metadata (disabled)");
        } else {
            ddb_error imds_err;
            ddb_error_clear(&imds_err);
            ctx.err = &imds_err;
            rc = from_imds(&ctx, imds_endpoint(p, cfg, profile), out);
            ctx.err = err;
            if (rc == 0) {
                *source = "imds";
            } else if (rc == DDB_ECANCELED) {
                ddb__fail(err, rc, "cancelled while fetching credentials");
            } else {
                tried_add(tried, sizeof tried, imds_err.message);
                rc = NOT_CONFIGURED;
            }
        }
    }
    if (rc == NOT_CONFIGURED)
        rc = ddb__fail(err, DDB_ECREDENTIALS, "no AWS credentials were found; tried: %s", tried);
    if (rc == 0) {
        char what[200];
        snprintf(what, sizeof what, "credentials from %s%s%.100s%s", source_label(*source),
                 is_profile_source(*source) ? " (profile '" : "",
                 is_profile_source(*source) ? profile : "", is_profile_source(*source) ? "')" : "");
        rc = ddb__creds_check(out, what, err);
    }
    free(ca);
    ddb__config_free(cfg);
    return rc;
}

static bool fresh(const ddb__credentials *c, int64_t now_wall_ms)
{
    return c->expires_wall_ms == 0 || now_wall_ms < c->expires_wall_ms - REFRESH_BEFORE_MS;
}

/* Credentials fetched that are not fresh: the next fetch waits (doubling), and those
 * already expired are refused, as botocore refuses them ("refreshed credentials are
 * still expired") rather than fetching again before every request. 0 when got may be
 * used; else got is cleared and rerr says why. Called with p->mu held. */
static int stale_check(ddb__cred_provider *p, ddb__credentials *got, const char *source,
                       int64_t now, ddb_error *rerr)
{
    if (fresh(got, now)) {
        p->retry_at_ns = p->backoff_ms = 0;
        return 0;
    }
    p->backoff_ms = p->backoff_ms ? p->backoff_ms * 2 : STALE_BACKOFF_MS;
    if (p->backoff_ms > STALE_BACKOFF_MAX_MS)
        p->backoff_ms = STALE_BACKOFF_MAX_MS;
    p->retry_at_ns = ddb_clock_mono_ns(p->clock) + p->backoff_ms * 1000000;
    char exp[32] = "?";
    time_t t = (time_t)(got->expires_wall_ms / 1000);
    struct tm tm;
    if (gmtime_r(&t, &tm))
        strftime(exp, sizeof exp, "%Y-%m-%dT%H:%M:%SZ", &tm);
    if (now < got->expires_wall_ms) {
        char left[32], wait[32];
        snprintf(left, sizeof left, "%lld", (long long)(got->expires_wall_ms - now));
        snprintf(wait, sizeof wait, "%lld", (long long)p->backoff_ms);
        ddb_log_field f[] = { { "source", source }, { "expiration", exp },
                              { "expires_in_ms", left }, { "next_fetch_in_ms", wait } };
        plog(p, DDB_LOG_WARN, "credentials fetched expire soon; used until then", f, 4);
        return 0;
    }
    ddb__credentials_cleanup(got);
    int rc = ddb__fail(rerr, DDB_ECREDENTIALS, "credentials from %s: refreshed credentials are "
                       "still expired (expiration %s); not fetched again for %lld ms",
                       source_label(source), exp, (long long)p->backoff_ms);
    p->stale_rc = rc;
    p->stale_err = *rerr;
    return rc;
}

int ddb__cred_get(ddb__cred_provider *p, ddb__credentials *out, ddb_cancel *cancel,
                  ddb_error *err)
{
    if (!p || !out)
        return ddb__fail(err, DDB_EINVAL, "no credentials provider");
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&p->mu);
    int64_t now = ddb_clock_wall_ms(p->clock);
    bool need = !p->have || !fresh(&p->cur, now);
    if (need && p->retry_at_ns && ddb_clock_mono_ns(p->clock) < p->retry_at_ns) {
        /* Waiting after stale credentials: the current ones while they last, else the
         * error that began the wait. */
        if (p->have && now < p->cur.expires_wall_ms) {
            need = false;
        } else {
            int rc = p->stale_rc;
            if (err)
                *err = p->stale_err;
            pthread_mutex_unlock(&p->mu);
            return rc;
        }
    }
    if (need) {
        ddb__credentials got = { 0 };
        const char *source = "";
        ddb_error rerr;
        ddb_error_clear(&rerr);
        int rc = resolve(p, cancel, &got, &source, &rerr);
        if (rc == 0)
            rc = stale_check(p, &got, source, now, &rerr);
        if (rc == 0) {
            bool first = !p->have;
            ddb__credentials_cleanup(&p->cur);
            p->cur = got;
            p->have = true;
            p->source = source;
            char exp[32] = "never";
            if (got.expires_wall_ms)
                snprintf(exp, sizeof exp, "%lld", (long long)got.expires_wall_ms);
            ddb_log_field f[] = {
                { "source", source },
                { "profile", ddb__config_profile_name(p->profile) },
                { "region", p->region ? p->region : "" },
                { "endpoint", p->endpoint ? p->endpoint : "" },
                { "expires_wall_ms", exp },
                { "region_from", p->region_from ? p->region_from : "" },
            };
            if (first && !p->logged) {
                p->logged = true;
                plog(p, DDB_LOG_INFO, "credentials resolved", f, 6);
            } else if (!first) {
                plog(p, DDB_LOG_DEBUG, "credentials refreshed", f, 6);
            }
        } else if (!p->have || now >= p->cur.expires_wall_ms) {
            /* Nothing usable: no credentials yet, or the old ones have expired. */
            pthread_mutex_unlock(&p->mu);
            if (err) {
                *err = rerr;
                err->code = rc;
            }
            return rc;
        } else {
            /* The refresh failed; the old credentials are still valid for a while. */
            ddb_log_field f[] = { { "source", p->source }, { "error", rerr.message } };
            plog(p, DDB_LOG_WARN, "credentials refresh failed; the current ones are used until "
                                  "they expire", f, 2);
        }
    }
    bool ok = ddb__creds_set(out, p->cur.access_key_id, p->cur.secret_access_key,
                             p->cur.session_token, p->cur.expires_wall_ms);
    pthread_mutex_unlock(&p->mu);
    return ok ? 0 : ddb__fail(err, DDB_ENOMEM, "out of memory");
}
