/* fdbt.c: the fakedb test helpers (see fdbt.h). */
#include "fdbt.h"

#include "dl_check.h"

#include <check.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

fakedb *fdbt_db;

void fdbt_start_opts(const fakedb_options *o)
{
    fakedb_error err;
    fdbt_db = fakedb_start(o, &err);
    ck_assert_msg(fdbt_db != NULL, "fakedb_start: %s", err.message);
}

void fdbt_start(const char *db_path)
{
    fakedb_options o = { .fake_clock = true, .fake_clock_start_ms = 1700000000000LL,
                         .db_path = db_path, .threads = 2 };
    fdbt_start_opts(&o);
}

void fdbt_stop(void)
{
    fakedb_stop(fdbt_db);
    fdbt_db = NULL;
}

typedef struct buf {
    char *p;
    size_t n;
} buf;

static size_t on_body(char *p, size_t sz, size_t n, void *arg)
{
    buf *b = arg;
    char *q = realloc(b->p, b->n + sz * n + 1);
    if (!q)
        return 0;
    memcpy(q + b->n, p, sz * n);
    b->p = q;
    b->n += sz * n;
    b->p[b->n] = 0;
    return sz * n;
}

static size_t on_header(char *p, size_t sz, size_t n, void *arg)
{
    fdbt_resp *r = arg;
    size_t len = sz * n;
    const char *names[2] = { "x-amzn-RequestId:", "x-amz-crc32:" };
    char *dst[2] = { r->request_id, r->crc32 };
    size_t cap[2] = { sizeof r->request_id, sizeof r->crc32 };
    for (int i = 0; i < 2; i++) {
        size_t nl = strlen(names[i]);
        if (len > nl && !strncasecmp(p, names[i], nl)) {
            size_t s = nl;
            while (s < len && p[s] == ' ')
                s++;
            size_t e = len;
            while (e > s && (p[e - 1] == '\r' || p[e - 1] == '\n'))
                e--;
            size_t l = e - s < cap[i] - 1 ? e - s : cap[i] - 1;
            memcpy(dst[i], p + s, l);
            dst[i][l] = 0;
        }
    }
    return len;
}

fdbt_resp fdbt_raw(const char *method, const char *path, const char *target,
                   const char *content_type, const char *auth, const char *body, size_t len)
{
    fdbt_resp r;
    memset(&r, 0, sizeof r);
    CURL *c = curl_easy_init();
    if (!c) {
        r.curl_code = CURLE_FAILED_INIT; /* status 0: the caller's assertion fails */
        return r;
    }
    char url[256], h[3][512];
    struct curl_slist *hl = NULL;
    snprintf(url, sizeof url, "%s%s", fakedb_endpoint(fdbt_db), path);
    if (target) {
        snprintf(h[0], sizeof h[0], "X-Amz-Target: %s", target);
        hl = curl_slist_append(hl, h[0]);
    }
    if (content_type) {
        snprintf(h[1], sizeof h[1], "Content-Type: %s", content_type);
        hl = curl_slist_append(hl, h[1]);
    } else {
        hl = curl_slist_append(hl, "Content-Type:");
    }
    if (auth) {
        snprintf(h[2], sizeof h[2], "Authorization: %s", auth);
        hl = curl_slist_append(hl, h[2]);
    }
    hl = curl_slist_append(hl, "X-Amz-Date: 20231114T221320Z");
    hl = curl_slist_append(hl, "Expect:");
    buf b = { NULL, 0 };
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &r);
    /* 30 s, stretched under valgrind and the sanitizers (DYNALOCK_TEST_TIME_SCALE) */
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)dl_check_bound_ms(30000));
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    r.curl_code = (int)curl_easy_perform(c);
    if (r.curl_code == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
    curl_slist_free_all(hl);
    curl_easy_cleanup(c);
    r.body = b.p;
    if (b.p) {
        /* deeper than json-c's default 32: items nest up to DynamoDB's limit */
        json_tokener *tok = json_tokener_new_ex(128);
        r.json = tok ? json_tokener_parse_ex(tok, b.p, -1) : NULL;
        json_tokener_free(tok);
    }
    return r;
}

#define AUTH "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20231114/us-east-1/dynamodb/aws4_request, SignedHeaders=host;x-amz-date;x-amz-target, Signature=0123456789abcdef"

fdbt_resp fdbt_call(const char *op, const char *body)
{
    char target[128];
    snprintf(target, sizeof target, "DynamoDB_20120810.%s", op);
    return fdbt_raw("POST", "/", target, "application/x-amz-json-1.0", AUTH, body, strlen(body));
}

void fdbt_free(fdbt_resp *r)
{
    json_object_put(r->json);
    free(r->body);
    memset(r, 0, sizeof *r);
}

const char *fdbt_error(const fdbt_resp *r)
{
    json_object *t = NULL;
    if (!r->json || !json_object_object_get_ex(r->json, "__type", &t))
        return "";
    const char *s = json_object_get_string(t);
    const char *h = strchr(s, '#');
    return h ? h + 1 : s;
}

const char *fdbt_message(const fdbt_resp *r)
{
    json_object *t = NULL;
    if (!r->json || !json_object_object_get_ex(r->json, "message", &t))
        return "";
    return json_object_get_string(t);
}

bool fdbt_next_page(fdbt_resp *r, char *start, size_t cap)
{
    json_object *lek = fdbt_get(r->json, "LastEvaluatedKey");
    int n = lek ? snprintf(start, cap, ",\"ExclusiveStartKey\":%s",
                           json_object_to_json_string_ext(lek, JSON_C_TO_STRING_PLAIN))
                : snprintf(start, cap, "%s", "");
    ck_assert_msg(n >= 0 && (size_t)n < cap, "LastEvaluatedKey longer than %zu bytes", cap);
    fdbt_free(r);
    return lek != NULL;
}

json_object *fdbt_get(json_object *o, const char *path)
{
    char part[256];
    const char *p = path;
    while (o && *p) {
        size_t n = strcspn(p, ".");
        if (n >= sizeof part)
            return NULL;
        memcpy(part, p, n);
        part[n] = 0;
        p += n;
        if (*p == '.')
            p++;
        if (json_object_is_type(o, json_type_array)) {
            char *end;
            long i = strtol(part, &end, 10);
            o = *end ? NULL : json_object_array_get_idx(o, (size_t)i);
        } else if (json_object_is_type(o, json_type_object)) {
            json_object *v = NULL;
            o = json_object_object_get_ex(o, part, &v) ? v : NULL;
        } else {
            o = NULL;
        }
    }
    return o;
}

const char *fdbt_str(const fdbt_resp *r, const char *path)
{
    json_object *v = fdbt_get(r->json, path);
    return v ? json_object_get_string(v) : NULL;
}

void fdbt_table(const char *name, const char *sk, const char *sk_type)
{
    char body[1024];
    if (sk)
        snprintf(body, sizeof body,
                 "{\"TableName\":\"%s\",\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"},"
                 "{\"AttributeName\":\"%s\",\"KeyType\":\"RANGE\"}],\"AttributeDefinitions\":["
                 "{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"},{\"AttributeName\":\"%s\",\"AttributeType\":\"%s\"}],"
                 "\"BillingMode\":\"PAY_PER_REQUEST\"}", name, sk, sk, sk_type);
    else
        snprintf(body, sizeof body,
                 "{\"TableName\":\"%s\",\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"}],"
                 "\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"}],"
                 "\"BillingMode\":\"PAY_PER_REQUEST\"}", name);
    fdbt_resp r = fdbt_call("CreateTable", body);
    ck_assert_msg(r.status == 200, "CreateTable %s: %s", name, r.body ? r.body : "(none)");
    fdbt_free(&r);
}

static void expect_answer(fdbt_resp *r, long status, const char *type, const char *msg, bool exact,
                          const char *what)
{
    const char *w = what ? what : "";
    const char *body = r->body ? r->body : "";
    ck_assert_msg(r->status == status, "%s: status %ld, want %ld: %s", w, r->status, status, body);
    ck_assert_msg(!strcmp(fdbt_error(r), type), "%s: type '%s', want '%s': %s", w, fdbt_error(r), type,
                  body);
    if (msg)
        ck_assert_msg(exact ? !strcmp(fdbt_message(r), msg) : strstr(fdbt_message(r), msg) != NULL,
                      "%s: message '%s', want %s'%s'", w, fdbt_message(r), exact ? "" : "a part ", msg);
    fdbt_free(r);
}

void fdbt_expect_answer(fdbt_resp *r, long status, const char *type, const char *msg,
                        const char *what)
{
    expect_answer(r, status, type, msg, false, what);
}

void fdbt_expect_answer_exact(fdbt_resp *r, long status, const char *type, const char *msg,
                              const char *what)
{
    expect_answer(r, status, type, msg, true, what);
}

void fdbt_expect_ok(const char *op, const char *body)
{
    fdbt_resp r = fdbt_call(op, body);
    ck_assert_msg(r.status == 200, "%s %s: %ld %s", op, body, r.status, r.body ? r.body : "");
    fdbt_free(&r);
}

/* "op body", cut to fit: names the call in a failure. */
static const char *call_name(char *out, size_t cap, const char *op, const char *body)
{
    snprintf(out, cap, "%s %s", op, body);
    return out;
}

void fdbt_expect_call(const char *op, const char *body, long status, const char *type)
{
    char what[512];
    fdbt_resp r = fdbt_call(op, body);
    expect_answer(&r, status, type, NULL, false, call_name(what, sizeof what, op, body));
}

void fdbt_expect_error(const char *op, const char *body, const char *type, const char *msg)
{
    char what[512];
    fdbt_resp r = fdbt_call(op, body);
    expect_answer(&r, 400, type, msg, false, call_name(what, sizeof what, op, body));
}

void fdbt_expect_error_exact(const char *op, const char *body, const char *type, const char *msg)
{
    char what[512];
    fdbt_resp r = fdbt_call(op, body);
    expect_answer(&r, 400, type, msg, true, call_name(what, sizeof what, op, body));
}

void fdbt_remove_dir(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}

int fdbt_dial(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert_msg(fd >= 0, "socket: %s", strerror(errno));
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_msg(connect(fd, (struct sockaddr *)&a, sizeof a) == 0, "connect: %s", strerror(errno));
    return fd;
}

char *fdbt_program(void)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/fakedb/fakedb", DYNALOCK_BINARY_DIR);
    return path;
}

pid_t fdbt_spawn(char *const argv[], int *out_fd)
{
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        dup2(p[1], 1);
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0)
            dup2(devnull, 2);
        close(p[0]);
        close(p[1]);
        execv(argv[0], argv);
        _exit(127);
    }
    close(p[1]);
    *out_fd = p[0];
    return pid;
}

int fdbt_read_port(int fd)
{
    static const char listening[] = "fakedb listening on http://127.0.0.1:";
    char line[256];
    size_t n = 0;
    while (n < sizeof line - 1) {
        ssize_t k = read(fd, line + n, 1);
        if (k <= 0 || line[n] == '\n')
            break;
        n++;
    }
    line[n] = 0;
    const char *p = strstr(line, listening);
    ck_assert_msg(p != NULL, "output: %s", line);
    return atoi(p + strlen(listening));
}

void fdbt_stop_program(pid_t pid, int fd)
{
    int st;
    kill(pid, SIGTERM);
    waitpid(pid, &st, 0);
    close(fd);
    ck_assert(WIFEXITED(st));
    ck_assert_int_eq(WEXITSTATUS(st), 0);
}
