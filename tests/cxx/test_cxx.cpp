// test_cxx.cpp: the public headers from C++17. Every header is included (and the build
// compiles each one alone, cxx_each_header.cpp.in); every public enum, each of its
// values, every struct and typedef is named; every option struct zero-initialises with
// `T o{};`; and the C API does real work from C++: a fakedb started and faulted, a
// table created, an item put and got, telemetry and log callbacks written as C++, a
// lock acquired, seen held and released, a leader's term run. check_names.py fails when
// a public name is missing from this file.
#include <dynalock/coord.h>
#include <dynalock/ddb.h>
#include <dynalock/export.h>
#include <dynalock/otel.h>
#include <dynalock/testing.h>
#include <dynalock/version.h>
#include <fakedb/fakedb.h>

#include "cxx_all_headers.hpp" // generated: every public header, found by a glob

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

namespace {

int failures = 0;

#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            std::fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
            failures++;                                                                  \
        }                                                                                \
    } while (0)

#define CHECK_RC(expr, err)                                                              \
    do {                                                                                 \
        int rc_ = (expr);                                                                \
        if (rc_ != 0) {                                                                  \
            std::fprintf(stderr, "%s:%d: %s = %d (%s: %s)\n", __FILE__, __LINE__, #expr,  \
                         rc_, ddb_error_name(rc_), (err).message);                       \
            failures++;                                                                  \
        }                                                                                \
    } while (0)

// ------------------------------------------------------------------ names, at compile time

// The enums with a name, as types of their own.
static_assert(std::is_enum<ddb_attr_type>::value, "ddb_attr_type");
static_assert(std::is_enum<ddb_log_format>::value, "ddb_log_format");
static_assert(std::is_enum<ddb_type>::value, "ddb_type");
static_assert(std::is_enum<ddb_return_values>::value, "ddb_return_values");
static_assert(std::is_enum<ddb_tx_failure>::value, "ddb_tx_failure");
static_assert(std::is_enum<ddb_projection>::value, "ddb_projection");
static_assert(std::is_enum<ddb_lock_event>::value, "ddb_lock_event");
static_assert(std::is_enum<ddb_loss_reason>::value, "ddb_loss_reason");
static_assert(std::is_enum<fakedb_fault_kind>::value, "fakedb_fault_kind");

// ddb_attr's type member is the named enum, and the struct is a C struct.
static_assert(std::is_same<decltype(ddb_attr::type), ddb_attr_type>::value, "ddb_attr::type");
static_assert(std::is_standard_layout<ddb_attr>::value, "ddb_attr");

// Every value of every enum, with the numbers C programs rely on.
static_assert(DDB_ATTR_STR == 0 && DDB_ATTR_INT == 1 && DDB_ATTR_BOOL == 2 && DDB_ATTR_DOUBLE == 3,
              "ddb_attr_type values");
static_assert(DDB_OK == 0 && DDB_EINVAL == -1 && DDB_ENOMEM == -2 && DDB_ECANCELED == -3 &&
                  DDB_ETIMEDOUT == -4 && DDB_ENETWORK == -5 && DDB_ESERVICE == -6 &&
                  DDB_ECONDITION == -7 && DDB_ETXCANCELED == -8 && DDB_ENOTFOUND == -9 &&
                  DDB_ETHROTTLED == -10 && DDB_ECREDENTIALS == -11 && DDB_EPROTOCOL == -12 &&
                  DDB_ESTATE == -13 && DDB_EVALIDATION == -14 && DDB_EIO == -15 &&
                  DDB_EACCESS == -16 && DDB_EINUSE == -17 && DDB_EWORK == -18 && DDB_ELOST == -19 &&
                  DDB_EINDOUBT == -20,
              "error codes");
static_assert(DDB_LOG_TRACE == 1 && DDB_LOG_DEBUG == 2 && DDB_LOG_INFO == 3 && DDB_LOG_WARN == 4 &&
                  DDB_LOG_ERROR == 5 && DDB_LOG_OFF == 6,
              "log levels");
static_assert(DDB_LOG_LOGFMT == 0 && DDB_LOG_JSON == 1, "ddb_log_format values");
static_assert(DDB_S == 1 && DDB_N == 2 && DDB_B == 3 && DDB_BOOL == 4 && DDB_NULL == 5 && DDB_L == 6 &&
                  DDB_M == 7 && DDB_SS == 8 && DDB_NS == 9 && DDB_BS == 10,
              "ddb_type values");
static_assert(DDB_RETURN_NONE == 0 && DDB_RETURN_ALL_OLD == 1 && DDB_RETURN_UPDATED_OLD == 2 &&
                  DDB_RETURN_ALL_NEW == 3 && DDB_RETURN_UPDATED_NEW == 4,
              "ddb_return_values values");
static_assert(DDB_TXFAIL_NONE == 0 && DDB_TXFAIL_CONDITIONAL_CHECK_FAILED == 1 &&
                  DDB_TXFAIL_TRANSACTION_CONFLICT == 2 &&
                  DDB_TXFAIL_ITEM_COLLECTION_SIZE_LIMIT_EXCEEDED == 3 && DDB_TXFAIL_THROTTLING == 4 &&
                  DDB_TXFAIL_VALIDATION == 5 && DDB_TXFAIL_OTHER == 6,
              "ddb_tx_failure values");
static_assert(DDB_PROJECT_ALL == 0 && DDB_PROJECT_KEYS_ONLY == 1 && DDB_PROJECT_INCLUDE == 2,
              "ddb_projection values");
static_assert(DDB_EVENT_NONE == 0 && DDB_EVENT_LEASE_LOST == 40 && DDB_EVENT_LOCK_TAKEN_OVER == 41 &&
                  DDB_EVENT_RENEWAL_FAILED == 42 && DDB_EVENT_RELEASE_FAILED == 43 &&
                  DDB_EVENT_ELECTION_OUTAGE == 44 && DDB_EVENT_LEADING == 45 &&
                  DDB_EVENT_LEADING_ENDED == 46 && DDB_EVENT_WORK_FAILED_LOST == 47 &&
                  DDB_EVENT_WORK_FAILED_CANCELED == 48 && DDB_EVENT_ELECTION_RECOVERED == 49,
              "ddb_lock_event values");
static_assert(DDB_LOSS_NONE == 0 && DDB_LOSS_TAKEN_OVER == 1 && DDB_LOSS_DELETED == 2 &&
                  DDB_LOSS_EXPIRED == 3 && DDB_LOSS_TABLE_NOT_FOUND == 4,
              "ddb_loss_reason values");
static_assert(FAKEDB_OK == 0 && FAKEDB_EINVAL == -1 && FAKEDB_ENOMEM == -2 && FAKEDB_EIO == -3 &&
                  FAKEDB_ENOTFOUND == -4 && FAKEDB_EINUSE == -5 && FAKEDB_ETIMEDOUT == -6 &&
                  FAKEDB_ELIMIT == -7,
              "fakedb codes");
static_assert(FAKEDB_FAULT_ERROR == 1 && FAKEDB_FAULT_DELAY == 2 && FAKEDB_FAULT_LOST_RESPONSE == 3 &&
                  FAKEDB_FAULT_UNPROCESSED == 4 && FAKEDB_FAULT_LOST_REQUEST == 5,
              "fakedb_fault_kind values");

// The macros, usable in constant expressions.
static_assert(DDB_VERSION_NUM == DDB_VERSION_ENCODE(DDB_VERSION_MAJOR, DDB_VERSION_MINOR, DDB_VERSION_PATCH),
              "version");
static_assert(DDB_LEASE_MIN_MS < DDB_LEASE_MAX_MS, "lease bounds");
static_assert(DDB_LOCK_TTL_RETENTION_MIN_MS <= DDB_LOCK_TTL_RETENTION_DEFAULT_MS, "retention");
static_assert(DDB_HOLDER_LABEL_MAX_BYTES == 4 * DDB_HOLDER_LABEL_MAX, "label");
static_assert(DDB_ERROR_TYPE_MAX > 0 && DDB_ERROR_MESSAGE_MAX > 0 && DDB_REQUEST_ID_MAX > 0, "sizes");
static_assert(DDB_NO_RETRIES == 1, "no retries");

// The typedefs of functions and of the names list.
static_assert(std::is_pointer<ddb_log_fn>::value, "ddb_log_fn");
static_assert(std::is_pointer<ddb_refusal_fn>::value, "ddb_refusal_fn");
static_assert(std::is_pointer<ddb_leader_fn>::value, "ddb_leader_fn");
static_assert(std::is_pointer<ddb_lock_watch_fn>::value, "ddb_lock_watch_fn");
static_assert(std::is_same<ddb_names, const char *const *>::value, "ddb_names");

// Every struct with a body is a C struct a C++ program can copy and zero.
template <typename T> constexpr bool c_struct()
{
    return std::is_standard_layout<T>::value && std::is_trivially_copyable<T>::value &&
           std::is_trivially_default_constructible<T>::value;
}
static_assert(c_struct<ddb_error>() && c_struct<ddb_clock_ops>() && c_struct<ddb_log_field>() &&
                  c_struct<ddb_attr>() && c_struct<ddb_telemetry>() && c_struct<ddb_retry_options>() &&
                  c_struct<ddb_client_options>() && c_struct<ddb_result>() &&
                  c_struct<ddb_get_options>() && c_struct<ddb_write_options>() &&
                  c_struct<ddb_query_options>() && c_struct<ddb_tx_marker>() &&
                  c_struct<ddb_tx_options>() && c_struct<ddb_key_schema>() &&
                  c_struct<ddb_index_def>() && c_struct<ddb_create_table_options>() &&
                  c_struct<ddb_table_info>() && c_struct<ddb_lock_table_options>() &&
                  c_struct<ddb_lock_state>() && c_struct<ddb_lock_list_options>() &&
                  c_struct<ddb_lock_watch_options>() && c_struct<ddb_lock_slot_options>() &&
                  c_struct<ddb_test_server_options>() && c_struct<fakedb_error>() &&
                  c_struct<fakedb_options>() && c_struct<fakedb_fault>() && c_struct<fakedb_stats>(),
              "C structs");

// The opaque handles: named, and only ever pointed at.
struct opaque_handles {
    ddb_clock *clock;
    ddb_cancel *cancel;
    ddb_client *client;
    ddb_table *table;
    ddb_value *value;
    ddb_item *item;
    ddb_pages *pages;
    ddb_tx *tx;
    ddb_lock_table *locks;
    ddb_lease *lease;
    ddb_lock_list *list;
    ddb_test_server *server;
    ddb_refusal_watch *watch;
    fakedb *db;
};

// ------------------------------------------------------------------ zero-initialised options

template <typename T> bool all_zero(const T &v)
{
    unsigned char zero[sizeof(T)] = {};
    return std::memcmp(&v, zero, sizeof(T)) == 0;
}

void zero_init_options()
{
    // `T o{};` with no designated initialiser is each struct's default.
    ddb_retry_options retry{};
    ddb_client_options client{};
    ddb_get_options get{};
    ddb_write_options write{};
    ddb_query_options query{};
    ddb_tx_options tx{};
    ddb_create_table_options create{};
    ddb_lock_table_options locks{};
    ddb_lock_list_options list{};
    ddb_lock_watch_options watch{};
    ddb_test_server_options server{};
    fakedb_options fdb{};
    fakedb_fault fault{};
    ddb_key_schema key{};
    ddb_index_def index{};
    ddb_telemetry telemetry{};
    ddb_clock_ops clock_ops{};
    ddb_error err{};
    ddb_result result{};
    ddb_table_info info{};
    ddb_lock_state state{};
    ddb_attr attr{};
    ddb_log_field field{};
    ddb_log_stderr_options log_opts{};
    ddb_tx_marker marker{};
    fakedb_error ferr{};
    fakedb_stats stats{};
    CHECK(retry.max_attempts == 0 && client.endpoint == nullptr && client.clock == nullptr &&
          client.telemetry == nullptr && client.retry.max_attempts == 0);
    CHECK(get.projection == nullptr && !get.consistent_read);
    CHECK(write.return_values == DDB_RETURN_NONE && write.condition == nullptr);
    CHECK(query.limit == 0 && query.index == nullptr && !query.descending);
    CHECK(tx.condition == nullptr && create.n_gsi == 0 && !create.wait_active);
    CHECK(locks.holder_label == nullptr && locks.ttl_retention_ms == 0 && list.page_limit == 0 &&
          watch.free_poll_ms == 0);
    CHECK(!server.system_clock && server.start_wall_ms == 0);
    CHECK(fdb.port == 0 && fdb.host == nullptr && !fdb.fake_clock && fault.count == 0);
    CHECK(key.pk == nullptr && index.projection == DDB_PROJECT_ALL && telemetry.span_start == nullptr);
    CHECK(clock_ops.now_fn == nullptr && err.code == DDB_OK && result.item == nullptr);
    CHECK(info.item_count == 0 && !state.exists && attr.type == DDB_ATTR_STR && field.key == nullptr);
    CHECK(marker.index == 0 && ferr.code == FAKEDB_OK && stats.requests == 0);
    CHECK(log_opts.format == DDB_LOG_LOGFMT && log_opts.clock == nullptr);
    CHECK(all_zero(retry) && all_zero(client) && all_zero(get) && all_zero(write) && all_zero(query) &&
          all_zero(tx) && all_zero(create) && all_zero(locks) && all_zero(list) && all_zero(watch) && all_zero(server) &&
          all_zero(fdb) && all_zero(fault));
}

// ------------------------------------------------------------------ callbacks in C++

struct seen {
    std::mutex lock;
    std::vector<std::string> spans;      // names of started spans
    std::vector<std::string> metrics;    // names of metric points
    int attrs_by_type[4] = {0, 0, 0, 0}; // per ddb_attr_type
    std::atomic<int> log_lines{0};
};

void count_attr(seen *s, const ddb_attr *a)
{
    ddb_attr_type t = a->type; // the type can be named
    switch (t) {
    case DDB_ATTR_STR:
    case DDB_ATTR_INT:
    case DDB_ATTR_BOOL:
    case DDB_ATTR_DOUBLE:
        s->attrs_by_type[t]++;
        break;
    }
}

ddb_telemetry telemetry_of(seen *s)
{
    ddb_telemetry t{};
    t.arg = s;
    t.span_start = [](void *arg, uint64_t, uint64_t, const char *name, const uint64_t *, size_t) {
        seen *st = static_cast<seen *>(arg);
        std::lock_guard<std::mutex> g(st->lock);
        st->spans.emplace_back(name);
    };
    t.span_attr = [](void *arg, uint64_t, const ddb_attr *attr) {
        seen *st = static_cast<seen *>(arg);
        std::lock_guard<std::mutex> g(st->lock);
        count_attr(st, attr);
    };
    t.span_end = [](void *, uint64_t, const char *) {};
    t.metric = [](void *arg, const char *name, const char *, double, const ddb_attr *attrs, size_t n) {
        seen *st = static_cast<seen *>(arg);
        std::lock_guard<std::mutex> g(st->lock);
        st->metrics.emplace_back(name);
        for (size_t i = 0; i < n; i++)
            count_attr(st, &attrs[i]);
    };
    return t;
}

void log_to(void *arg, int, int, const char *, const char *, const ddb_log_field *, size_t)
{
    static_cast<seen *>(arg)->log_lines++;
}

// A watch's callback: records the first state it is shown and ends the watch.
int watch_once(void *arg, const char *, const ddb_lock_state *state)
{
    *static_cast<ddb_lock_state *>(arg) = *state;
    return 1;
}

int leader_work(ddb_lease *lease, ddb_cancel *stop, void *arg, ddb_error *)
{
    // The term's lease is current on this thread, and not stopped.
    *static_cast<int64_t *>(arg) = ddb_lease_current() == lease && !ddb_cancel_is_set(stop)
                                       ? ddb_lease_fencing_token(lease)
                                       : -1;
    return 0;
}

// ------------------------------------------------------------------ fakedb alone

void fakedb_from_cxx()
{
    fakedb_options o{};
    o.fake_clock = true;
    o.fake_clock_start_ms = 1700000000000LL;
    fakedb_error err{};
    fakedb *db = fakedb_start(&o, &err);
    CHECK(db != nullptr);
    if (!db)
        return;
    CHECK(fakedb_port(db) > 0 && std::strncmp(fakedb_endpoint(db), "http://", 7) == 0);
    CHECK(fakedb_create_table(db, "Plain", "pk", nullptr, &err) == FAKEDB_OK);
    CHECK(fakedb_create_table(db, "Plain", "pk", nullptr, &err) == FAKEDB_EINUSE);
    CHECK(fakedb_clock_now_ms(db) == 1700000000000LL);
    CHECK(fakedb_clock_advance(db, 1000) == FAKEDB_OK && fakedb_clock_now_ms(db) == 1700000001000LL);
    CHECK(fakedb_clock_set(db, 1700000002000LL) == FAKEDB_OK);
    fakedb_fault f{};
    f.kind = FAKEDB_FAULT_ERROR;
    f.operation = "GetItem";
    f.count = 1;
    long id = fakedb_fault_add(db, &f);
    CHECK(id > 0);
    fakedb_fault_remove(db, id);
    std::string long_type(FAKEDB_MAX_FAULT_ERROR_TYPE + 1, 'E');
    f.error_type = long_type.c_str();
    CHECK(fakedb_fault_add(db, &f) == FAKEDB_ELIMIT);
    static_assert(FAKEDB_MAX_FAULTS == 1000 && FAKEDB_MAX_FAULT_OPERATION == 64 && FAKEDB_MAX_FAULT_TABLE == 255 &&
                      FAKEDB_MAX_FAULT_KEY == 2048,
                  "fault limits");
    fakedb_fault_clear(db);
    CHECK(fakedb_faults_fired(db) == 0);
    CHECK(fakedb_wait_faults_fired(db, 0, 0) == FAKEDB_OK);
    fakedb_stats s = fakedb_get_stats(db, nullptr);
    CHECK(s.requests == 0 && s.condition_failures == 0);
    CHECK(std::string(fakedb_version()) == DDB_VERSION_STRING);
    fakedb_reset(db);
    fakedb_stop(db);
    // The first release's entry point, and the sized one with CORS off.
    o.cors = "";
    db = fakedb_start_sized(sizeof o, &o, &err);
    CHECK(db != nullptr);
    fakedb_stop(db);
    db = (fakedb_start)(&o, &err);
    CHECK(db != nullptr);
    fakedb_stop(db);
}

// ------------------------------------------------------------------ the client and the locks

void client_and_locks()
{
    ddb_error err{};
    ddb_test_server_options so{};
    ddb_test_server *server = ddb_test_server_start(&so, &err);
    CHECK(server != nullptr);
    if (!server)
        return;
    CHECK_RC(ddb_test_server_create_table(server, "Shop", "pk", "sk", &err), err);
    CHECK_RC(ddb_test_server_create_table(server, "Locks", "pk", nullptr, &err), err);
    CHECK(ddb_test_server_fakedb(server) != nullptr && ddb_test_server_endpoint(server) != nullptr);

    seen s;
    ddb_telemetry tel = telemetry_of(&s);
    ddb_client_options base{};
    base.telemetry = &tel;
    base.log = log_to;
    base.log_arg = &s;
    base.log_level = DDB_LOG_DEBUG;
    base.retry.max_attempts = DDB_NO_RETRIES;
    ddb_client *client = ddb_test_server_client_new(server, &base, &err);
    CHECK(client != nullptr);
    ddb_clock *clock = ddb_test_server_clock(server);
    CHECK(clock == ddb_client_clock(client) && ddb_clock_is_fake(clock));

    // An item, put and got back.
    ddb_table *shop = ddb_table_open(client, "Shop", "pk", "sk", &err);
    CHECK(shop != nullptr && std::string(ddb_table_name(shop)) == "Shop");
    ddb_item *item = ddb_item_new();
    ddb_item_set_s(item, "pk", "order#1");
    ddb_item_set_s(item, "sk", "line#1");
    ddb_item_set_i64(item, "qty", 3);
    ddb_item_set_bool(item, "gift", true);
    ddb_value *tags = ddb_value_ss();
    ddb_value_add_s(tags, "c++");
    ddb_item_set(item, "tags", tags);
    ddb_write_options wo{};
    wo.condition = "attribute_not_exists(#p)";
    const char *names[] = {"#p", "pk", nullptr};
    wo.names = names;
    CHECK_RC(ddb_table_put_item(shop, item, &wo, nullptr, nullptr, &err), err);
    CHECK(ddb_table_put_item(shop, item, &wo, nullptr, nullptr, &err) == DDB_ECONDITION);
    CHECK(std::string(err.aws_type) == "ConditionalCheckFailedException");

    ddb_item *key = ddb_item_new();
    ddb_item_set_s(key, "pk", "order#1");
    ddb_item_set_s(key, "sk", "line#1");
    ddb_get_options go{};
    go.consistent_read = true;
    ddb_result res{};
    CHECK_RC(ddb_table_get_item(shop, key, &go, &res, nullptr, &err), err);
    CHECK(res.item != nullptr && ddb_item_equal(res.item, item));
    int64_t qty = 0;
    CHECK(res.item && ddb_item_get_i64(res.item, "qty", &qty) == 0 && qty == 3);
    const ddb_value *got_tags = res.item ? ddb_item_get(res.item, "tags") : nullptr;
    CHECK(got_tags && ddb_value_type(got_tags) == DDB_SS && ddb_value_count(got_tags) == 1);
    ddb_result_cleanup(&res);

    // A query over the pages, and the item as JSON.
    ddb_query_options qo{};
    qo.key_condition = "pk = :p";
    ddb_item *values = ddb_item_new();
    ddb_item_set_s(values, ":p", "order#1");
    qo.values = values;
    ddb_pages *pages = ddb_table_query(shop, &qo, nullptr, &err);
    size_t found = 0;
    while (pages && ddb_pages_next(pages, &err) == 1)
        found += ddb_pages_count(pages);
    CHECK(found == 1);
    ddb_pages_free(pages);
    ddb_item_free(values);
    char *json = ddb_item_to_json(item);
    ddb_item *back = json ? ddb_item_from_json(json, std::strlen(json), &err) : nullptr;
    CHECK(back && ddb_item_equal(back, item));
    ddb_item_free(back);
    std::free(json);

    // A lock: acquired, seen held by another lock table, released.
    ddb_table *locks_table = ddb_table_open(client, "Locks", "pk", nullptr, &err);
    ddb_lock_table_options lo{};
    lo.holder_label = "cxx-test";
    ddb_lock_table *locks = ddb_lock_table_new(locks_table, &lo, &err);
    CHECK(locks != nullptr);
    ddb_client *other_client = ddb_test_server_client_new(server, nullptr, &err);
    ddb_table *other_table = ddb_table_open(other_client, "Locks", "pk", nullptr, &err);
    ddb_lock_table *other = ddb_lock_table_new(other_table, nullptr, &err);
    CHECK(other != nullptr);

    ddb_lease *lease = nullptr;
    CHECK_RC(ddb_lock_try_acquire(locks, "nightly", 30000, &lease, nullptr, &err), err);
    CHECK(lease != nullptr);
    if (lease) {
        CHECK(ddb_lease_fencing_token(lease) == 1 && std::string(ddb_lease_name(lease)) == "nightly");
        CHECK(ddb_lease_duration_ms(lease) == 30000 && !ddb_lease_takeover(lease));
        CHECK(!ddb_cancel_is_set(ddb_lease_ended(lease)));
        CHECK(ddb_lease_loss_reason(lease) == DDB_LOSS_NONE);
        ddb_lease *none = nullptr;
        CHECK_RC(ddb_lock_try_acquire(other, "nightly", 30000, &none, nullptr, &err), err);
        CHECK(none == nullptr); // held by this process
        ddb_lock_state st{};
        CHECK_RC(ddb_lock_get_state(other, "nightly", &st, &err), err);
        CHECK(st.exists && st.is_held && std::string(st.holder_label) == "cxx-test" && st.fencing_token == 1);
        bool held = false;
        CHECK_RC(ddb_lease_renew(lease, &held, nullptr, &err), err);
        CHECK(held);
        ddb_cancel *ended = ddb_cancel_ref(ddb_lease_ended(lease));
        ddb_lease_release(lease);
        CHECK(ddb_cancel_is_set(ended));
        ddb_cancel_unref(ended);
        CHECK_RC(ddb_lock_get_state(other, "nightly", &st, &err), err);
        CHECK(st.exists && !st.is_held);
        // followed by a watch, whose C++ callback ends it at the first state
        ddb_lock_watch_options wopt{};
        ddb_lock_state watched{};
        CHECK_RC(ddb_lock_table_watch(other, "nightly", &wopt, watch_once, &watched, nullptr, &err), err);
        CHECK(watched.exists && !watched.is_held && watched.fencing_token == 1);
    }

    // Slots: two of "pool" held, a third try refused, the names as the header builds them.
    {
        ddb_lock_slot_options sopt{};
        CHECK(all_zero(sopt));
        ddb_lease *a = nullptr, *b = nullptr, *c = nullptr;
        int sa = -1, sb = -1, sc = 0;
        CHECK_RC(ddb_lock_acquire_slot(locks, "pool", 2, 30000, &sopt, &a, &sa, nullptr, &err), err);
        sopt.no_wait = true;
        CHECK_RC(ddb_lock_acquire_slot(locks, "pool", 2, 30000, &sopt, &b, &sb, nullptr, &err), err);
        CHECK_RC(ddb_lock_acquire_slot(locks, "pool", 2, 30000, &sopt, &c, &sc, nullptr, &err), err);
        CHECK(a && b && !c && sa + sb == 1 && sc == -1);
        char name[DDB_LOCK_NAME_SIZE];
        CHECK_RC(ddb_lock_slot_name("pool", sa, name, sizeof name, &err), err);
        CHECK(std::string(ddb_lease_name(a)) == name);
        size_t base_len = 0;
        int k = -1;
        CHECK(ddb_lock_slot_parse(name, &base_len, &k) && base_len == 4 && k == sa);
        ddb_lease_release(a);
        ddb_lease_release(b);
    }

    // A leader's term through a C++ function pointer.
    int64_t term_token = 0;
    ddb_cancel *stop = ddb_cancel_new();
    CHECK_RC(ddb_lock_run_as_leader(locks, "leader", 30000, leader_work, &term_token, stop, &err), err);
    CHECK(term_token == 1);
    ddb_cancel_unref(stop);

    // What the callbacks saw.
    {
        std::lock_guard<std::mutex> g(s.lock);
        CHECK(!s.spans.empty() && s.attrs_by_type[DDB_ATTR_STR] > 0);
    }

    ddb_lock_table_free(other);
    ddb_table_close(other_table);
    ddb_client_free(other_client);
    ddb_lock_table_free(locks);
    ddb_table_close(locks_table);
    ddb_item_free(key);
    ddb_item_free(item);
    ddb_table_close(shop);
    ddb_client_free(client);
    ddb_test_server_stop(server);
}

void errors_and_clocks()
{
    ddb_error err{};
    CHECK(ddb_error_set(&err, DDB_EINVAL, "bad %s", "thing") == DDB_EINVAL);
    CHECK(std::string(err.message) == "bad thing" && std::string(ddb_error_name(DDB_EINVAL)) == "DDB_EINVAL");
    ddb_error_clear(&err);
    CHECK(err.code == DDB_OK);
    ddb_clock *fake = ddb_fake_clock_new(1700000000000LL);
    CHECK(ddb_clock_wall_ms(fake) == 1700000000000LL);
    CHECK(ddb_fake_clock_advance(fake, 250) == 0 && ddb_clock_wall_ms(fake) == 1700000000250LL);
    ddb_clock_unref(fake);
    CHECK(std::string(ddb_version()) == DDB_VERSION_STRING);
    CHECK(std::string(ddb_loss_reason_name(DDB_LOSS_EXPIRED)) == "expired");
    CHECK(ddb_lock_name_check("a lock", &err) == DDB_EINVAL);
}

#if DYNALOCK_CXX_OTEL
// libddb_otel from C++: an exporter made from options alone (no OTEL_* variable), its
// telemetry handed to a client's options, its stats read, freed with nothing to send.
void otel_from_cxx()
{
    static_assert(c_struct<ddb_otel_options>() && c_struct<ddb_otel_stats>(), "otel structs");
    ddb_otel_options o{};
    CHECK(all_zero(o));
    o.endpoint = "http://127.0.0.1:9";
    o.ignore_environment = true;
    o.shutdown_timeout_ms = 100;
    ddb_error err{};
    ddb_otel *exporter = ddb_otel_new(&o, &err);
    CHECK(exporter != nullptr);
    if (!exporter)
        return;
    const ddb_telemetry *t = ddb_otel_telemetry(exporter);
    CHECK(t != nullptr && t->span_start != nullptr && t->metric != nullptr);
    ddb_client_options co{};
    co.telemetry = t;
    CHECK(co.telemetry == t);
    ddb_otel_stats stats{};
    ddb_otel_get_stats(exporter, &stats);
    CHECK(stats.spans_exported == 0 && ddb_otel_dropped(exporter) == 0);
    ddb_otel_free(exporter);
}
#endif

} // namespace

int main()
{
    zero_init_options();
#if DYNALOCK_CXX_OTEL
    otel_from_cxx();
#endif
    errors_and_clocks();
    fakedb_from_cxx();
    client_and_locks();
    if (failures)
        std::fprintf(stderr, "%d check(s) failed\n", failures);
    return failures ? 1 : 0;
}
