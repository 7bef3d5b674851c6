/* fake_meta.c: the fake metadata server of fake_meta.h. IMDS credentials are numbered
 * (IMDSAKID1, IMDSAKID2, ...) so that a test sees a refresh; so are container ones. */
#include "fake_meta.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ROLE "test-role"

struct fake_meta {
    struct MHD_Daemon *d;
    char url[64];
    pthread_mutex_t mu;
    int64_t expiration_ms;
    char container_token[256];
    bool any_container_token;
    bool failing;
    int token_seq;
    char token[64];
    fake_meta_counts counts;
};

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *body)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), (void *)(uintptr_t)body,
                                                             MHD_RESPMEM_MUST_COPY);
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

static void cred_json(fake_meta *m, const char *prefix, int n, char *out, size_t cap)
{
    char exp[64] = "";
    if (m->expiration_ms)
        iso8601(m->expiration_ms, exp, sizeof exp);
    snprintf(out, cap,
             "{\"Code\":\"Success\",\"LastUpdated\":\"2024-01-01T00:00:00Z\",\"Type\":\"AWS-HMAC\","
             "\"AccessKeyId\":\"%sAKID%d\",\"SecretAccessKey\":\"%s-secret-%d\","
             "\"Token\":\"%s-token-%d\"%s%s%s}",
             prefix, n, prefix, n, prefix, n, exp[0] ? ",\"Expiration\":\"" : "", exp,
             exp[0] ? "\"" : "");
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **state)
{
    (void)version;
    (void)upload;
    fake_meta *m = cls;
    static int marker;
    if (*state == NULL) {
        *state = &marker;
        return MHD_YES;
    }
    if (*upload_size) {
        *upload_size = 0;
        return MHD_YES;
    }
    char body[1024];
    unsigned status = 404;
    snprintf(body, sizeof body, "not found");
    pthread_mutex_lock(&m->mu);
    m->counts.requests++;
    const char *tok = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                  "X-aws-ec2-metadata-token");
    bool tok_ok = tok && m->token[0] && strcmp(tok, m->token) == 0;
    if (m->failing) {
        status = 500;
        snprintf(body, sizeof body, "failing");
    } else if (strcmp(url, "/latest/api/token") == 0) {
        const char *ttl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                      "X-aws-ec2-metadata-token-ttl-seconds");
        if (strcmp(method, "PUT") != 0) {
            status = 405;
        } else if (!ttl || atoi(ttl) <= 0) {
            status = 400;
            m->counts.refused++;
        } else {
            snprintf(m->token, sizeof m->token, "imds-session-%d", ++m->token_seq);
            snprintf(body, sizeof body, "%s", m->token);
            status = 200;
            m->counts.token_puts++;
        }
    } else if (strcmp(url, "/latest/meta-data/iam/security-credentials/") == 0) {
        if (!tok_ok) {
            status = 401;
            m->counts.refused++;
        } else {
            status = 200;
            snprintf(body, sizeof body, "%s\n", ROLE);
        }
    } else if (strcmp(url, "/latest/meta-data/iam/security-credentials/" ROLE) == 0) {
        if (!tok_ok) {
            status = 401;
            m->counts.refused++;
        } else {
            status = 200;
            cred_json(m, "IMDS", ++m->counts.imds_creds, body, sizeof body);
        }
    } else if (strcmp(url, "/container/creds") == 0) {
        const char *auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
        if (!m->any_container_token && (!auth || strcmp(auth, m->container_token) != 0)) {
            status = 403;
            m->counts.refused++;
        } else {
            status = 200;
            cred_json(m, "CONTAINER", ++m->counts.container_creds, body, sizeof body);
        }
    }
    pthread_mutex_unlock(&m->mu);
    return reply(conn, status, body);
}

fake_meta *fake_meta_start(void)
{
    fake_meta *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    pthread_mutex_init(&m->mu, NULL);
    m->any_container_token = true;
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = 0 };
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    m->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL,
                            handle, m, MHD_OPTION_SOCK_ADDR, &addr, MHD_OPTION_END);
    if (!m->d) {
        free(m);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(m->d, MHD_DAEMON_INFO_BIND_PORT);
    snprintf(m->url, sizeof m->url, "http://127.0.0.1:%u", (unsigned)info->port);
    return m;
}

void fake_meta_stop(fake_meta *m)
{
    if (!m)
        return;
    MHD_stop_daemon(m->d);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

const char *fake_meta_url(const fake_meta *m)
{
    return m->url;
}

void fake_meta_set_expiration(fake_meta *m, int64_t wall_ms)
{
    pthread_mutex_lock(&m->mu);
    m->expiration_ms = wall_ms;
    pthread_mutex_unlock(&m->mu);
}

void fake_meta_set_container_token(fake_meta *m, const char *token)
{
    pthread_mutex_lock(&m->mu);
    m->any_container_token = token == NULL;
    snprintf(m->container_token, sizeof m->container_token, "%s", token ? token : "");
    pthread_mutex_unlock(&m->mu);
}

void fake_meta_set_failing(fake_meta *m, bool failing)
{
    pthread_mutex_lock(&m->mu);
    m->failing = failing;
    pthread_mutex_unlock(&m->mu);
}

fake_meta_counts fake_meta_counts_get(fake_meta *m)
{
    pthread_mutex_lock(&m->mu);
    fake_meta_counts c = m->counts;
    pthread_mutex_unlock(&m->mu);
    return c;
}
