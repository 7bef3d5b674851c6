/* test_security.c: the security suite. Each test reproduces an attack found in a review
 * (issue 24, docs/security.md) and shows it fails: bytes smuggled into a header through
 * any credentials provider never reach the wire (checked on a raw server that keeps
 * every byte), the STS answer read as XML, expired credentials refused without a fetch
 * before every request, files never written through a planted link, log lines without
 * terminal controls, a credential_process that leaves a child behind, and the smaller
 * overflows and leaks. */
#include <check.h>

#include "dl_check.h"
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <dynalock/ddb.h>
#include <fakedb/fakedb.h>

#include "cli.h"
#include "client.h"
#include "internal.h"
#include "utf8.h"
#include "wire.h"

#ifdef SECURITY_OTEL
#include <dynalock/otel.h>
#endif

/* 2024-03-01T00:00:00Z */
#define T0_MS 1709251200000LL
#define SMUGGLE "t\r\nX-Injected: 1\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
#define SSO_SESSION_FILE ".aws/sso/cache/0ad374308c5a4e22f723adf10145eafad7c4031c.json"

static char g_home[64];
static wire *g_aws; /* STS, SSO, the container and IMDS endpoints */
static wire *g_ddb; /* DynamoDB: must never see a request in the injection tests */

static const char *const k_env[] = {
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
    "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_AUTHORIZATION_TOKEN",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", "AWS_EC2_METADATA_SERVICE_ENDPOINT",
    "AWS_EC2_METADATA_DISABLED", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_ARN", "AWS_ROLE_SESSION_NAME", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_STS",
    "AWS_ENDPOINT_URL_SSO", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_SSO_OIDC",
    "AWS_MAX_ATTEMPTS", NULL,
};

static const char *home_path(const char *rel)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", g_home, rel);
    return path;
}

static void write_file(const char *rel, const char *text)
{
    FILE *f = fopen(home_path(rel), "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    chmod(home_path(rel), 0700);
}

static void setup(void)
{
    for (int i = 0; k_env[i]; i++)
        unsetenv(k_env[i]);
    snprintf(g_home, sizeof g_home, "/tmp/ddb-sec-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(g_home));
    mkdir(home_path(".aws"), 0700);
    mkdir(home_path(".aws/sso"), 0700);
    mkdir(home_path(".aws/sso/cache"), 0700);
    setenv("HOME", g_home, 1);
    setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
    setenv("AWS_REGION", "us-east-1", 1);
    g_aws = wire_start();
    g_ddb = wire_start();
    ck_assert_ptr_nonnull(g_aws);
    ck_assert_ptr_nonnull(g_ddb);
    setenv("AWS_ENDPOINT_URL_STS", wire_url(g_aws), 1);
    setenv("AWS_ENDPOINT_URL_SSO", wire_url(g_aws), 1);
    setenv("AWS_ENDPOINT_URL_SSO_OIDC", wire_url(g_aws), 1);
    ddb__cred_set_process_timeout_ms(0);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void teardown(void)
{
    wire_stop(g_aws);
    wire_stop(g_ddb);
    ddb__cred_set_container_base(NULL);
    nftw(g_home, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* One DynamoDB call through a client on g_ddb: its error code, err filled. */
static int call_dynamodb(ddb_error *err)
{
    ddb_client_options o = { .endpoint = wire_url(g_ddb), .log_level = DDB_LOG_OFF,
                             .retry = { .max_attempts = DDB_NO_RETRIES } };
    ddb_client *c = ddb_client_new(&o, err);
    if (!c)
        return err->code;
    ddb_table_info info;
    int rc = ddb_client_describe_table(c, "t", &info, NULL, err);
    ddb_client_free(c);
    return rc;
}

/* The injection never left the process: no DynamoDB request at all, an error that
 * names the source and says "invalid header value", and no byte of the value. */
static void refused_before_the_wire(const char *source)
{
    ddb_error err;
    ddb_error_clear(&err);
    ck_assert_int_eq(call_dynamodb(&err), DDB_ECREDENTIALS);
    ck_assert_msg(strstr(err.message, "invalid header value"), "%s", err.message);
    ck_assert_msg(strstr(err.message, source), "'%s' not in: %s", source, err.message);
    ck_assert_msg(!strstr(err.message, "Injected") && !strstr(err.message, "smuggled"), "%s",
                  err.message);
    ck_assert_uint_eq(wire_bytes(g_ddb), 0);
    ck_assert(!wire_saw(g_aws, "smuggled"));
}

/* ---- 1. header injection through every provider */

START_TEST(injection_from_the_environment)
{
    setenv("AWS_ACCESS_KEY_ID", "AKID", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "secret", 1);
    setenv("AWS_SESSION_TOKEN", SMUGGLE, 1);
    refused_before_the_wire("environment");
    setenv("AWS_SESSION_TOKEN", "fine", 1);
    setenv("AWS_ACCESS_KEY_ID", "AK\nID", 1);
    refused_before_the_wire("access key id");
}
END_TEST

START_TEST(injection_from_the_profile_files)
{
    /* A lone CR inside a line stays in the value, as in the SDKs' parsers. */
    write_file(".aws/credentials", "[default]\naws_access_key_id = AKID\n"
                                   "aws_secret_access_key = s\n"
                                   "aws_session_token = t\rX-Injected: 1\n");
    refused_before_the_wire("shared credentials and config files (profile 'default')");
}
END_TEST

START_TEST(injection_from_the_options)
{
    ddb_client_options o = { .endpoint = wire_url(g_ddb), .access_key_id = "AKID",
                             .secret_access_key = "s", .session_token = SMUGGLE };
    ddb_error err;
    ck_assert_ptr_null(ddb_client_new(&o, &err));
    ck_assert_int_eq(err.code, DDB_EINVAL);
    ck_assert_msg(strstr(err.message, "invalid header value") &&
                      strstr(err.message, "session_token") && !strstr(err.message, "Injected"),
                  "%s", err.message);
}
END_TEST

static void sts_answer(const char *akid, const char *token, const char *expiration)
{
    char body[2048];
    snprintf(body, sizeof body,
             "<AssumeRoleWithWebIdentityResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">"
             "<AssumeRoleWithWebIdentityResult><Credentials>"
             "<AccessKeyId>%s</AccessKeyId><SecretAccessKey>secret</SecretAccessKey>"
             "<SessionToken>%s</SessionToken><Expiration>%s</Expiration>"
             "</Credentials></AssumeRoleWithWebIdentityResult>"
             "</AssumeRoleWithWebIdentityResponse>", akid, token, expiration);
    wire_route(g_aws, "POST", "/", 200, body);
}

static void web_identity(void)
{
    write_file("token", "eyJ.web.token");
    setenv("AWS_WEB_IDENTITY_TOKEN_FILE", home_path("token"), 1);
    setenv("AWS_ROLE_ARN", "arn:aws:iam::1:role/r", 1);
}

START_TEST(injection_from_sts_session_token)
{
    web_identity();
    /* Character references are decoded as XML says: CR LF, refused. */
    sts_answer("AKID", "t&#13;&#10;X-Injected: 1&#13;&#10;&#13;&#10;GET /smuggled HTTP/1.1",
               "2099-01-01T00:00:00Z");
    refused_before_the_wire("STS AssumeRoleWithWebIdentity");
    ck_assert_int_eq(wire_count(g_aws, "/"), 1);
}
END_TEST

START_TEST(injection_from_sts_access_key_id)
{
    web_identity();
    sts_answer("AKID\nX-Injected: 1", "token", "2099-01-01T00:00:00Z");
    refused_before_the_wire("the access key id");
}
END_TEST

START_TEST(injection_from_credential_process)
{
    write_file("creds.sh", "#!/bin/sh\nprintf '{\"Version\":1,\"AccessKeyId\":\"AKID\","
                           "\"SecretAccessKey\":\"s\",\"SessionToken\":\"t\\\\r\\\\nX-Injected: 1"
                           "\\\\r\\\\n\\\\r\\\\nGET /smuggled HTTP/1.1\"}'\n");
    char cfg[1024];
    snprintf(cfg, sizeof cfg, "[default]\ncredential_process = %s\n", home_path("creds.sh"));
    write_file(".aws/config", cfg);
    refused_before_the_wire("credential_process (profile 'default')");
}
END_TEST

/* A "\u0000" in a key would cut it short in C: "\u0000B" read as the empty key. Every
 * provider's parser refuses such a value instead of taking a part of it. */
START_TEST(credentials_holding_a_nul_are_refused)
{
    ddb__credentials c = { 0 };
    ck_assert(!ddb__parse_cred_json("{\"AccessKeyId\":\"\\u0000B\",\"SecretAccessKey\":\"s\"}", &c));
    ck_assert(!ddb__parse_cred_json("{\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"s\\u0000\"}", &c));
    ck_assert(!ddb__parse_cred_json("{\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"s\","
                                    "\"Token\":\"t\\u0000x\"}", &c));
    ck_assert(ddb__parse_cred_json("{\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"s\"}", &c));
    ck_assert_str_eq(c.access_key_id, "A");
    ddb__credentials_cleanup(&c);

    ddb_error err;
    ddb_error_clear(&err);
    ddb__cred_ctx ctx = { .err = &err };
    ck_assert_int_eq(ddb__sso_role_credentials(&ctx, "sso",
                         "{\"roleCredentials\":{\"accessKeyId\":\"\\u0000A\",\"secretAccessKey\":"
                         "\"s\",\"sessionToken\":\"t\",\"expiration\":4102444800000}}", &c),
                     DDB_ECREDENTIALS);
    ck_assert_int_eq(ddb__cred_process_parse(&ctx, "p",
                         "{\"Version\":1,\"AccessKeyId\":\"A\\u0000\",\"SecretAccessKey\":\"s\"}",
                         &c),
                     DDB_ECREDENTIALS);
}
END_TEST

START_TEST(injection_from_the_container_endpoint)
{
    wire_route(g_aws, "GET", "/creds", 200,
               "{\"AccessKeyId\":\"AKID\",\"SecretAccessKey\":\"s\",\"Token\":\"t\\r\\nX-Injected: 1"
               "\\r\\n\\r\\nGET /smuggled HTTP/1.1\",\"Expiration\":\"2099-01-01T00:00:00Z\"}");
    char url[128];
    snprintf(url, sizeof url, "%s/creds", wire_url(g_aws));
    setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", url, 1);
    refused_before_the_wire("container credentials endpoint");
    ck_assert_int_eq(wire_count(g_aws, "/creds"), 1);
    /* The container's own authorization token: refused before its request. */
    setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "a\x0b" "b", 1);
    ddb_error err;
    ck_assert_int_eq(call_dynamodb(&err), DDB_ECREDENTIALS);
    ck_assert_msg(strstr(err.message, "authorization token"), "%s", err.message);
    ck_assert_int_eq(wire_count(g_aws, "/creds"), 1);
}
END_TEST

static void sso_profile(void)
{
    write_file(".aws/config",
               "[default]\nsso_session = my-sso\nsso_account_id = 1\nsso_role_name = r\n"
               "[sso-session my-sso]\nsso_region = us-east-1\nsso_start_url = https://x\n");
}

START_TEST(injection_from_sso)
{
    sso_profile();
    /* The role credentials of the portal... */
    write_file(SSO_SESSION_FILE, "{\"accessToken\":\"at\",\"expiresAt\":\"2099-01-01T00:00:00Z\"}");
    wire_route(g_aws, "GET", "/federation/credentials", 200,
               "{\"roleCredentials\":{\"accessKeyId\":\"AKID\",\"secretAccessKey\":\"s\","
               "\"sessionToken\":\"t\\r\\nX-Injected: 1\",\"expiration\":4102444800000}}");
    refused_before_the_wire("SSO portal");
    ck_assert_int_eq(wire_count(g_aws, "/federation/credentials"), 1);
    /* ...and the cached access token, which would be the bearer token's header. */
    write_file(SSO_SESSION_FILE, "{\"accessToken\":\"at\\r\\nX-Injected: 1\","
                                 "\"expiresAt\":\"2099-01-01T00:00:00Z\"}");
    ddb_error err;
    ck_assert_int_eq(call_dynamodb(&err), DDB_ECREDENTIALS);
    ck_assert_msg(strstr(err.message, "invalid header value") && !strstr(err.message, "Injected"),
                  "%s", err.message);
    ck_assert_int_eq(wire_count(g_aws, "/federation/credentials"), 1);
}
END_TEST

/* The source credentials of an assume-role profile sign the STS call and their token is
 * one of its headers: checked before it. */
START_TEST(injection_from_a_source_profile)
{
    write_file(".aws/credentials", "[src]\naws_access_key_id = AKID\naws_secret_access_key = s\n"
                                   "aws_session_token = t\x01x\n");
    write_file(".aws/config", "[default]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = src\n");
    refused_before_the_wire("source credentials of profile 'default'");
    ck_assert_int_eq(wire_count(g_aws, NULL), 0);
}
END_TEST

/* ---- 2. the STS answer is XML */

static void expect_akid(const char *want)
{
    ddb_clock *clock = ddb_fake_clock_new(T0_MS);
    ddb_client_options o = { .log_level = DDB_LOG_OFF };
    ddb_error err;
    ddb__cred_provider *p = ddb__cred_provider_new(&o, NULL, clock, &err);
    ck_assert_ptr_nonnull(p);
    ddb__credentials c;
    int rc = ddb__cred_get(p, &c, NULL, &err);
    if (want) {
        ck_assert_msg(rc == 0, "%s", err.message);
        ck_assert_str_eq(c.access_key_id, want);
        ddb__credentials_cleanup(&c);
    } else {
        ck_assert_int_eq(rc, DDB_ECREDENTIALS);
    }
    ddb__cred_provider_free(p);
    ddb_clock_unref(clock);
}

START_TEST(sts_answer_is_parsed_as_xml)
{
    web_identity();
    /* Credentials in a comment before the real ones are not credentials. */
    wire_route(g_aws, "POST", "/", 200,
               "<AssumeRoleWithWebIdentityResponse><!-- <AssumeRoleWithWebIdentityResult>"
               "<Credentials><AccessKeyId>EVIL</AccessKeyId><SecretAccessKey>x</SecretAccessKey>"
               "<SessionToken>x</SessionToken><Expiration>2099-01-01T00:00:00Z</Expiration>"
               "</Credentials></AssumeRoleWithWebIdentityResult> -->"
               "<AssumeRoleWithWebIdentityResult><Credentials><AccessKeyId>&#75;EY</AccessKeyId>"
               "<SecretAccessKey><![CDATA[s<&>]]></SecretAccessKey><SessionToken>tok</SessionToken>"
               "<Expiration>2099-01-01T00:00:00Z</Expiration></Credentials>"
               "</AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>");
    expect_akid("KEY");
}
END_TEST

START_TEST(sts_answer_with_a_dtd_or_bad_xml_is_refused)
{
    web_identity();
    /* A DTD (entity expansion) is refused whole. */
    wire_route(g_aws, "POST", "/", 200,
               "<?xml version=\"1.0\"?><!DOCTYPE r [<!ENTITY a \"AKIDAKIDAKID\">"
               "<!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;\">]>"
               "<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult><Credentials>"
               "<AccessKeyId>&b;</AccessKeyId><SecretAccessKey>s</SecretAccessKey>"
               "<SessionToken>t</SessionToken><Expiration>2099-01-01T00:00:00Z</Expiration>"
               "</Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>");
    expect_akid(NULL);
    char *v = ddb__xml_text("<a><b>x</b>", "a", "b"); /* not well-formed */
    ck_assert_ptr_null(v);
    v = ddb__xml_text("<a><b>x<c/></b></a>", "a", "b"); /* not text */
    ck_assert_ptr_null(v);
    v = ddb__xml_text("<x:a xmlns:x=\"u\"><x:b> &lt;v&gt; </x:b></x:a>", "a", "b");
    ck_assert_str_eq(v, "<v>");
    free(v);
}
END_TEST

/* ---- 3. expired credentials: refused, and not fetched before every request */

START_TEST(expired_sts_credentials_refused_with_backoff)
{
    web_identity();
    sts_answer("AKID", "tok", "2020-01-01T00:00:00Z");
    ddb_clock *clock = ddb_fake_clock_new(T0_MS);
    ddb_client_options o = { .log_level = DDB_LOG_OFF };
    ddb_error err;
    ddb__cred_provider *p = ddb__cred_provider_new(&o, NULL, clock, &err);
    ck_assert_ptr_nonnull(p);
    /* A 4 s `run`: a request every 100 ms. */
    for (int i = 0; i < 40; i++) {
        ddb__credentials c;
        ck_assert_int_eq(ddb__cred_get(p, &c, NULL, &err), DDB_ECREDENTIALS);
        ck_assert_msg(strstr(err.message, "refreshed credentials are still expired"), "%s",
                      err.message);
        ck_assert_ptr_null(c.access_key_id);
        ddb_fake_clock_advance(clock, 100);
    }
    /* Fetched at 0, 1 s and 3 s (the wait doubles), not 40 times. */
    ck_assert_int_eq(wire_count(g_aws, "/"), 3);
    ddb__cred_provider_free(p);
    ddb_clock_unref(clock);
}
END_TEST

START_TEST(expired_process_credentials_refused_with_backoff)
{
    char script[1024];
    snprintf(script, sizeof script,
             "#!/bin/sh\necho run >> %s/spawns\nprintf '{\"Version\":1,\"AccessKeyId\":\"AKID\","
             "\"SecretAccessKey\":\"s\",\"Expiration\":\"2020-01-01T00:00:00Z\"}'\n", g_home);
    write_file("creds.sh", script);
    char cfg[1024];
    snprintf(cfg, sizeof cfg, "[default]\ncredential_process = %s\n", home_path("creds.sh"));
    write_file(".aws/config", cfg);
    ddb_clock *clock = ddb_fake_clock_new(T0_MS);
    ddb_client_options o = { .log_level = DDB_LOG_OFF };
    ddb_error err;
    ddb__cred_provider *p = ddb__cred_provider_new(&o, NULL, clock, &err);
    for (int i = 0; i < 20; i++) { /* 2 s */
        ddb__credentials c;
        ck_assert_int_eq(ddb__cred_get(p, &c, NULL, &err), DDB_ECREDENTIALS);
        ck_assert_msg(strstr(err.message, "credential_process") &&
                          strstr(err.message, "still expired"), "%s", err.message);
        ddb_fake_clock_advance(clock, 100);
    }
    char *spawns = ddb__read_small_file(home_path("spawns"), 4096);
    ck_assert_ptr_nonnull(spawns);
    int n = 0;
    for (const char *s = spawns; (s = strstr(s, "run")); s++)
        n++;
    free(spawns);
    ck_assert_int_eq(n, 2); /* at 0 and 1 s */
    ddb__cred_provider_free(p);
    ddb_clock_unref(clock);
}
END_TEST

/* Credentials that come back with less than the refresh margin left are used, and not
 * fetched again before each request either. */
START_TEST(near_expiry_credentials_used_without_a_fetch_per_request)
{
    web_identity();
    sts_answer("AKID", "tok", "2024-03-01T00:03:00Z"); /* 3 minutes */
    ddb_clock *clock = ddb_fake_clock_new(T0_MS);
    ddb_client_options o = { .log_level = DDB_LOG_OFF };
    ddb_error err;
    ddb__cred_provider *p = ddb__cred_provider_new(&o, NULL, clock, &err);
    for (int i = 0; i < 20; i++) {
        ddb__credentials c;
        ck_assert_msg(ddb__cred_get(p, &c, NULL, &err) == 0, "%s", err.message);
        ck_assert_str_eq(c.access_key_id, "AKID");
        ddb__credentials_cleanup(&c);
        ddb_fake_clock_advance(clock, 100);
    }
    ck_assert_int_eq(wire_count(g_aws, "/"), 2); /* at 0 and 1 s */
    ddb__cred_provider_free(p);
    ddb_clock_unref(clock);
}
END_TEST

/* ---- 4. files never written through a planted link */

START_TEST(sso_cache_never_written_through_a_link)
{
    sso_profile();
    write_file(SSO_SESSION_FILE, "{\"accessToken\":\"old\",\"expiresAt\":\"2024-03-01T00:02:00Z\","
                                 "\"clientId\":\"cid\",\"clientSecret\":\"csecret\","
                                 "\"refreshToken\":\"rt-1\",\"registrationExpiresAt\":"
                                 "\"2099-01-01T00:00:00Z\"}");
    wire_route(g_aws, "POST", "/token", 200,
               "{\"accessToken\":\"new-at\",\"expiresIn\":3600,\"tokenType\":\"Bearer\","
               "\"refreshToken\":\"rt-2\"}");
    wire_route(g_aws, "GET", "/federation/credentials", 200,
               "{\"roleCredentials\":{\"accessKeyId\":\"SSOAKID\",\"secretAccessKey\":\"s\","
               "\"sessionToken\":\"t\",\"expiration\":4102444800000}}");
    /* The names the old code wrote through, planted as links to a file of the
     * attacker's. */
    write_file("victim", "");
    char link[600];
    snprintf(link, sizeof link, "%s.tmp-%ld", home_path(SSO_SESSION_FILE), (long)getpid());
    ck_assert_int_eq(symlink(home_path("victim"), link), 0);
    expect_akid("SSOAKID");
    struct stat st;
    ck_assert_int_eq(stat(home_path("victim"), &st), 0);
    ck_assert_int_eq(st.st_size, 0);
    char *cache = ddb__read_small_file(home_path(SSO_SESSION_FILE), 65536);
    ck_assert_ptr_nonnull(cache);
    ck_assert_msg(strstr(cache, "new-at") && strstr(cache, "rt-2"), "%s", cache);
    free(cache);
    ck_assert_int_eq(lstat(home_path(SSO_SESSION_FILE), &st), 0);
    ck_assert(S_ISREG(st.st_mode));
    ck_assert_int_eq(st.st_mode & 0777, 0600);
}
END_TEST

START_TEST(fakedb_port_file_never_written_through_a_link)
{
    char port_file[600], victim[600];
    snprintf(port_file, sizeof port_file, "%s/port", g_home);
    snprintf(victim, sizeof victim, "%s/victim", g_home);
    write_file("victim", "");
    const char *bin = DYNALOCK_BINARY_DIR "/fakedb/fakedb";
    if (access(bin, X_OK) != 0) {
        dl_check_skip("fakedb_port_file_never_written_through_a_link", "no fakedb program");
        return;
    }
    int ready[2];
    ck_assert_int_eq(pipe(ready), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        /* The name the old code wrote through, which the child's pid makes known. */
        char link[700];
        snprintf(link, sizeof link, "%s.%ld.tmp", port_file, (long)getpid());
        if (symlink(victim, link) != 0)
            _exit(90);
        close(ready[0]);
        dup2(ready[1], 1); /* its first line on stdout says it listens */
        execl(bin, "fakedb", "--port", "0", "--port-file", port_file, (char *)NULL);
        _exit(91);
    }
    close(ready[1]);
    /* The port file is written before fakedb logs that it listens; wait for that line. */
    char buf[512];
    ssize_t n = read(ready[0], buf, sizeof buf);
    ck_assert_int_gt(n, 0);
    struct stat st;
    ck_assert_int_eq(lstat(port_file, &st), 0);
    ck_assert(S_ISREG(st.st_mode));
    char *text = ddb__read_small_file(port_file, 64);
    ck_assert_ptr_nonnull(text);
    ck_assert_int_gt(atoi(text), 0);
    free(text);
    ck_assert_int_eq(stat(victim, &st), 0);
    ck_assert_int_eq(st.st_size, 0);
    kill(pid, SIGTERM);
    int status;
    waitpid(pid, &status, 0);
    close(ready[0]);
}
END_TEST

/* ---- 5. log lines: no terminal controls */

START_TEST(log_lines_escape_c1_and_bidi)
{
    char path[600];
    snprintf(path, sizeof path, "%s/log", g_home);
    fflush(stderr);
    int saved = dup(2);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_ge(fd, 0);
    dup2(fd, 2);
    close(fd);
    /* NEL (C1), CSI (C1), RLO, an isolate, a line separator, and ESC (C0). */
    ddb_log_field f[] = { { "holder", "ab\xc2\x85" "c\xc2\x9b" "31m\xe2\x80\xae" "gpj.exe"
                                      "\xe2\x81\xa6" "x\xe2\x80\xa8" "y\x1b[2J" } };
    ddb_log_to_stderr(NULL, DDB_LOG_WARN, 0, "dynalock.coord", "taken over", f, 1);
    ddb_log_format json = DDB_LOG_JSON;
    ddb_log_to_stderr(&json, DDB_LOG_WARN, 0, "dynalock.coord", "taken over", f, 1);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char *text = ddb__read_small_file(path, 65536);
    ck_assert_ptr_nonnull(text);
    ck_assert_msg(!strstr(text, "\xc2\x85") && !strstr(text, "\xc2\x9b") &&
                      !strstr(text, "\xe2\x80\xae") && !strstr(text, "\xe2\x81\xa6") &&
                      !strstr(text, "\xe2\x80\xa8") && !strchr(text, 0x1b), "%s", text);
    ck_assert_msg(strstr(text, "ab\\u0085c\\u009b31m\\u202egpj.exe\\u2066x\\u2028y\\u001b[2J"),
                  "%s", text);
    free(text);
    /* The one test that the command's output (cli_safe_text) uses too. */
    char out[64];
    ck_assert_str_eq(cli_safe_text("a\xc2\x85" "b\xe2\x80\xae", out, sizeof out),
                     "a\\xc2\\x85b\\xe2\\x80\\xae");
    ck_assert(dl__utf8_is_control((const unsigned char *)"\xc2\x85", 2));
    ck_assert(dl__utf8_is_control((const unsigned char *)"\xe2\x81\xa9", 3));
    ck_assert(!dl__utf8_is_control((const unsigned char *)"\xc2\xa0", 2));
    ck_assert(!dl__utf8_is_control((const unsigned char *)"\xe2\x82\xac", 3));
}
END_TEST

/* ---- 6. a credential_process that leaves a child holding stdout */

/* Whether the process pid (not a child of ours) ends within a bound: a pidfd becomes
 * readable when it does (a SIGKILL sent is delivered a moment later). */
static bool process_ends(pid_t pid)
{
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (fd >= 0) {
        struct pollfd pf = { .fd = fd, .events = POLLIN };
        int r = poll(&pf, 1, (int)dl_check_bound_ms(5000));
        close(fd);
        return r == 1;
    }
    if (errno == ESRCH)
        return true; /* already gone */
    /* No pidfds (valgrind does not know the call): its state, looked at until the bound
     * (gone, or a zombie that its new parent has yet to reap). */
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        char path[64], st[512] = "";
        snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
        FILE *f = fopen(path, "r");
        if (!f)
            return true;
        bool read_ok = fgets(st, sizeof st, f) != NULL;
        fclose(f);
        const char *state = strrchr(st, ')');
        if (!read_ok || (state && state[1] && state[2] == 'Z'))
            return true;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 >
            dl_check_bound_ms(5000))
            return false;
        poll(NULL, 0, 10);
    }
}

START_TEST(credential_process_child_holding_stdout)
{
    char script[1024];
    snprintf(script, sizeof script,
             "#!/bin/sh\nsleep 600 &\necho $! > %s/child\nprintf '{\"Version\":1,"
             "\"AccessKeyId\":\"AKID\",\"SecretAccessKey\":\"s\"}'\n", g_home);
    write_file("creds.sh", script);
    char cfg[1024];
    snprintf(cfg, sizeof cfg, "[default]\ncredential_process = %s\n", home_path("creds.sh"));
    write_file(".aws/config", cfg);
    ddb__cred_set_process_timeout_ms(dl_check_bound_ms(20000));
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    expect_akid("AKID");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    int64_t ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    ck_assert_msg(ms < dl_check_bound_ms(5000), "took %lld ms", (long long)ms);
    /* The child it left behind was killed with its process group. */
    char *child = ddb__read_small_file(home_path("child"), 64);
    ck_assert_ptr_nonnull(child);
    pid_t cpid = (pid_t)atoi(child);
    free(child);
    ck_assert_int_gt(cpid, 1);
    ck_assert_msg(process_ends(cpid), "the child %d is still alive", (int)cpid);
}
END_TEST

START_TEST(credential_process_group_killed_at_the_timeout)
{
    char script[1024];
    snprintf(script, sizeof script, "#!/bin/sh\nsleep 600 &\necho $! > %s/child\nwait\n", g_home);
    write_file("creds.sh", script);
    char cfg[1024];
    snprintf(cfg, sizeof cfg, "[default]\ncredential_process = %s\n", home_path("creds.sh"));
    write_file(".aws/config", cfg);
    /* The timeout runs from the spawn: on a loaded machine the script may not have started
     * its child by then, and the check would have nothing to look at. Then it runs again
     * with a longer timeout, until the child was there to be killed. */
    char *child = NULL;
    for (int64_t timeout_ms = 300; !child && timeout_ms <= 300 * 64; timeout_ms *= 4) {
        unlink(home_path("child"));
        ddb__cred_set_process_timeout_ms(timeout_ms);
        expect_akid(NULL);
        child = ddb__read_small_file(home_path("child"), 64);
    }
    ck_assert_msg(child != NULL, "the script never started its child before the timeout");
    pid_t cpid = (pid_t)atoi(child);
    free(child);
    ck_assert_int_gt(cpid, 1);
    ck_assert_msg(process_ends(cpid), "the child %d is still alive", (int)cpid);
}
END_TEST

/* ---- 7. the smaller ones */

START_TEST(lease_duration_overflow)
{
    /* args.c is built here with -ftrapv: an overflow aborts the test. */
    int64_t ms = 0;
    ck_assert_int_eq(cli_parse_duration("10995116277769d", &ms), -1);
    ck_assert_int_eq(cli_parse_duration("10995116277769h", &ms), -1);
    ck_assert_int_eq(cli_parse_duration("1099511627776.5m", &ms), -1);
    ck_assert_int_eq(cli_parse_duration("3650d", &ms), 0);
    ck_assert_int_eq(ms, INT64_C(3650) * 86400000);
}
END_TEST

START_TEST(fakedb_wait_timeout_overflow)
{
    fakedb_options fo = { .port = 0 };
    fakedb_error ferr;
    fakedb *db = fakedb_start(&fo, &ferr);
    ck_assert_ptr_nonnull(db);
    char url[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/fake/clock/wait?until_ms=%lld&"
             "timeout_ms=9223372036854775807", fakedb_port(db), (long long)INT64_MAX);
    /* curl, to read the status: 400, where the overflow answered at once. */
    char cmd[512];
    snprintf(cmd, sizeof cmd, "curl -s -o /dev/null -m 10 -w '%%{http_code}' '%s'", url);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    char code[16] = "";
    ck_assert_ptr_nonnull(fgets(code, sizeof code, p));
    pclose(p);
    ck_assert_str_eq(code, "400");
    fakedb_stop(db);
}
END_TEST

START_TEST(otlp_url_password_redacted)
{
#ifdef SECURITY_OTEL
    ddb_otel_options o = { .endpoint = "htp://user:hunter2@collector:4318" };
    ddb_error err;
    ck_assert_ptr_null(ddb_otel_new(&o, &err));
    ck_assert_int_eq(err.code, DDB_EINVAL);
    ck_assert_msg(!strstr(err.message, "hunter2") && strstr(err.message, "***@collector"), "%s",
                  err.message);
#else
    dl_check_skip("otlp_url_password_redacted", "built without libddb_otel");
#endif
}
END_TEST

START_TEST(config_file_size_is_capped)
{
    setenv("AWS_CONFIG_FILE", "/dev/zero", 1);
    setenv("AWS_SHARED_CREDENTIALS_FILE", home_path("none"), 1);
    ddb_error err;
    ck_assert_int_eq(call_dynamodb(&err), DDB_ECREDENTIALS);
    ck_assert_msg(strstr(err.message, "/dev/zero is larger than"), "%s", err.message);
    ck_assert_uint_eq(wire_bytes(g_ddb), 0);
}
END_TEST

START_TEST(imds_role_names_are_checked)
{
    static const char *const bad[] = { "..", ".", "?x", "r#x", "a b", "%2e%2e", "r\\x" };
    unsetenv("AWS_EC2_METADATA_DISABLED");
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        wire_stop(g_aws);
        g_aws = wire_start();
        wire_route(g_aws, "PUT", "/latest/api/token", 200, "imds-token");
        wire_route(g_aws, "GET", "/latest/meta-data/iam/security-credentials/", 200, bad[i]);
        ddb_client_options o = { .imds_endpoint = wire_url(g_aws), .log_level = DDB_LOG_OFF };
        ddb_error err;
        ddb__cred_provider *p = ddb__cred_provider_new(&o, NULL, NULL, &err);
        ddb__credentials c;
        ck_assert_int_eq(ddb__cred_get(p, &c, NULL, &err), DDB_ECREDENTIALS);
        ck_assert_msg(strstr(err.message, "a bad role name"), "%s: %s", bad[i], err.message);
        /* The token and the role list; never a third request built from the name. */
        ck_assert_int_eq(wire_count(g_aws, NULL), 2);
        ddb__cred_provider_free(p);
    }
    /* A good name goes through. */
    wire_stop(g_aws);
    g_aws = wire_start();
    wire_route(g_aws, "PUT", "/latest/api/token", 200, "imds-token");
    wire_route(g_aws, "GET", "/latest/meta-data/iam/security-credentials/my-role+1", 200,
               "{\"AccessKeyId\":\"IMDSAKID\",\"SecretAccessKey\":\"s\",\"Token\":\"t\","
               "\"Expiration\":\"2099-01-01T00:00:00Z\"}");
    wire_route(g_aws, "GET", "/latest/meta-data/iam/security-credentials/", 200, "my-role+1");
    ddb_client_options o = { .imds_endpoint = wire_url(g_aws), .log_level = DDB_LOG_OFF };
    ddb_error err;
    ddb__cred_provider *p = ddb__cred_provider_new(&o, NULL, NULL, &err);
    ddb__credentials c;
    ck_assert_msg(ddb__cred_get(p, &c, NULL, &err) == 0, "%s", err.message);
    ck_assert_str_eq(c.access_key_id, "IMDSAKID");
    ddb__credentials_cleanup(&c);
    ddb__cred_provider_free(p);
}
END_TEST

static Suite *security_suite(void)
{
    Suite *s = suite_create("security");
    TCase *t = tcase_create("injection");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, injection_from_the_environment);
    tcase_add_test(t, injection_from_the_profile_files);
    tcase_add_test(t, injection_from_the_options);
    tcase_add_test(t, injection_from_sts_session_token);
    tcase_add_test(t, injection_from_sts_access_key_id);
    tcase_add_test(t, injection_from_credential_process);
    tcase_add_test(t, injection_from_the_container_endpoint);
    tcase_add_test(t, credentials_holding_a_nul_are_refused);
    tcase_add_test(t, injection_from_sso);
    tcase_add_test(t, injection_from_a_source_profile);
    suite_add_tcase(s, t);
    t = tcase_create("xml");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, sts_answer_is_parsed_as_xml);
    tcase_add_test(t, sts_answer_with_a_dtd_or_bad_xml_is_refused);
    suite_add_tcase(s, t);
    t = tcase_create("expired");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, expired_sts_credentials_refused_with_backoff);
    tcase_add_test(t, expired_process_credentials_refused_with_backoff);
    tcase_add_test(t, near_expiry_credentials_used_without_a_fetch_per_request);
    suite_add_tcase(s, t);
    t = tcase_create("files");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, sso_cache_never_written_through_a_link);
    tcase_add_test(t, fakedb_port_file_never_written_through_a_link);
    suite_add_tcase(s, t);
    t = tcase_create("output");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, log_lines_escape_c1_and_bidi);
    suite_add_tcase(s, t);
    t = tcase_create("process");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, credential_process_child_holding_stdout);
    tcase_add_test(t, credential_process_group_killed_at_the_timeout);
    suite_add_tcase(s, t);
    t = tcase_create("smaller");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, lease_duration_overflow);
    tcase_add_test(t, fakedb_wait_timeout_overflow);
    tcase_add_test(t, otlp_url_password_redacted);
    tcase_add_test(t, config_file_size_is_capped);
    tcase_add_test(t, imds_role_names_are_checked);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    return dl_check_run(security_suite());
}
