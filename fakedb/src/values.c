/* values.c: AttributeValues as DynamoDB checks them (one type, numbers normalised, sets
 * non-empty and without duplicates, nesting depth), and keys encoded into byte strings
 * whose memcmp order is DynamoDB's key order (S and B by bytes, N numerically). */
#include "values.h"

#include <utf8.h>

#include <base64.h>
#include <decimal.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FDB_MAX_NESTING 32

json_object *fakedb__json_get(json_object *o, const char *key)
{
    json_object *v = NULL;
    if (!o || !json_object_is_type(o, json_type_object))
        return NULL;
    if (!json_object_object_get_ex(o, key, &v))
        return NULL;
    if (json_object_is_type(v, json_type_null))
        return NULL;
    return v;
}

const char *fakedb__json_str(json_object *o, const char *key)
{
    json_object *v = fakedb__json_get(o, key);
    return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

int fakedb__json_int_param(json_object *req, const char *key, int64_t *out, fakedb__error *r)
{
    json_object *v = fakedb__json_get(req, key);
    if (!v)
        return 0;
    /* json-c reads 1.5 and 1e400 as doubles and an integer past int64 as a double too;
     * DynamoDB's integer members are Java Integers. */
    if (!json_object_is_type(v, json_type_int))
        return fakedb__fail(r, FDB_E_SERIALIZATION, "%s cannot be converted to Integer",
                            json_object_is_type(v, json_type_double) ? "NUMBER_VALUE"
                            : json_object_is_type(v, json_type_string) ? "STRING_VALUE"
                                                                      : "Value");
    errno = 0;
    int64_t n = json_object_get_int64(v);
    if (errno || n < INT32_MIN || n > INT32_MAX)
        return fakedb__fail(r, FDB_E_SERIALIZATION, "NUMBER_VALUE cannot be converted to Integer");
    *out = n;
    return 0;
}

/* One tokener per thread, made at its first parse and freed when the thread ends: a
 * tokener is a stack of FDB_JSON_DEPTH frames, which json_tokener_new_ex allocates and
 * clears, and a request parsed its body and then each stored item it read, so making one
 * per parse cost more than the parse of a small request (bench/RESULTS.md, issue 26).
 * A tokener keeps the buffer of the longest string it read, so a text longer than
 * TOK_KEEP_BYTES gets a tokener of its own, freed after it. */
#define TOK_KEEP_BYTES 65536
static pthread_key_t tok_key;
static pthread_once_t tok_once = PTHREAD_ONCE_INIT;
static bool tok_key_ok;

static void tok_free(void *tok)
{
    json_tokener_free(tok);
}

static void tok_key_make(void)
{
    tok_key_ok = pthread_key_create(&tok_key, tok_free) == 0;
}

json_tokener *fakedb__tokener_get(size_t len, int flags)
{
    json_tokener *tok = NULL;
    if (len <= TOK_KEEP_BYTES) {
        pthread_once(&tok_once, tok_key_make);
        tok = tok_key_ok ? pthread_getspecific(tok_key) : NULL;
        if (tok)
            pthread_setspecific(tok_key, NULL); /* lent out until fakedb__tokener_put */
    }
    if (!tok)
        tok = json_tokener_new_ex(FDB_JSON_DEPTH);
    if (!tok)
        return NULL;
    json_tokener_reset(tok);
    json_tokener_set_flags(tok, flags);
    return tok;
}

void fakedb__tokener_put(json_tokener *tok, size_t len)
{
    if (!tok)
        return;
    if (len <= TOK_KEEP_BYTES && tok_key_ok && !pthread_getspecific(tok_key) &&
        pthread_setspecific(tok_key, tok) == 0)
        return;
    json_tokener_free(tok);
}

json_object *fakedb__json_from_text(const char *text)
{
    if (!text)
        return NULL;
    size_t len = strlen(text);
    json_tokener *tok = fakedb__tokener_get(len, 0);
    if (!tok)
        return NULL;
    json_object *o = json_tokener_parse_ex(tok, text, (int)len);
    if (json_tokener_get_error(tok) != json_tokener_success) {
        json_object_put(o);
        o = NULL;
    }
    fakedb__tokener_put(tok, len);
    return o;
}

json_object *fakedb__json_object_from(const char *text, size_t len)
{
    json_tokener *tok = fakedb__tokener_get(len, 0);
    if (!tok)
        return NULL;
    json_object *o = json_tokener_parse_ex(tok, text, (int)len);
    bool ok = json_tokener_get_error(tok) == json_tokener_success;
    fakedb__tokener_put(tok, len);
    if (!ok || !o || !json_object_is_type(o, json_type_object)) {
        json_object_put(o);
        return NULL;
    }
    return o;
}

json_object *fakedb__json_copy(json_object *o)
{
    json_object *c = NULL;
    if (!o)
        return NULL;
    if (json_object_deep_copy(o, &c, NULL) != 0)
        return NULL;
    return c;
}

void fakedb__copy_str(char *dst, size_t n, const char *src)
{
    size_t l = strlen(src);
    if (n == 0)
        return;
    if (l >= n)
        l = n - 1;
    memcpy(dst, src, l);
    dst[l] = 0;
}

char *fakedb__log_text(const char *s, char *buf, size_t size)
{
    if (!size)
        return buf;
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t n = strlen((const char *)p), o = 0;
    for (size_t i = 0; i < n;) {
        size_t k = dl__utf8_seq(p + i, n - i);
        bool control = k == 0 || p[i] < 0x20 || p[i] == 0x7F || (k == 2 && p[i] == 0xC2 && p[i + 1] < 0xA0) ||
                       (k == 3 && p[i] == 0xE2 && p[i + 1] == 0x80 && p[i + 2] >= 0xA8 && p[i + 2] <= 0xAE) ||
                       (k == 3 && p[i] == 0xE2 && p[i + 1] == 0x81 && p[i + 2] >= 0xA6 && p[i + 2] <= 0xA9);
        size_t bytes = k ? k : 1, need = control ? 4 * bytes : bytes;
        if (o + need >= size)
            break;
        for (size_t j = 0; j < bytes; j++) {
            if (control)
                o += (size_t)snprintf(buf + o, size - o, "\\x%02x", p[i + j]);
            else
                buf[o++] = (char)p[i + j];
        }
        i += bytes;
    }
    buf[o] = 0;
    return buf;
}

static const char *json_kind_name(json_object *v)
{
    switch (json_object_get_type(v)) {
    case json_type_boolean: return json_object_get_boolean(v) ? "TRUE_VALUE" : "FALSE_VALUE";
    case json_type_int:
    case json_type_double: return "NUMBER_VALUE";
    case json_type_array: return "START_ARRAY";
    case json_type_object: return "START_OBJECT";
    case json_type_string: return "VALUE_STRING";
    default: return "VALUE_NULL";
    }
}

static int want_string(json_object *v, fakedb__error *r)
{
    if (json_object_is_type(v, json_type_string))
        return 0;
    return fakedb__fail(r, FDB_E_SERIALIZATION, "%s cannot be converted to String",
                        json_kind_name(v));
}

static int number_error(dl_decimal_status st, fakedb__error *r)
{
    switch (st) {
    case DL_DEC_PRECISION:
        return fakedb__fail_validation(r, "Attempting to store more than 38 significant digits in a Number");
    case DL_DEC_OVERFLOW:
        return fakedb__fail_validation(r, "Number overflow. Attempting to store a number with magnitude larger than supported range");
    case DL_DEC_UNDERFLOW:
        return fakedb__fail_validation(r, "Number underflow. Attempting to store a number with magnitude smaller than supported range");
    default:
        return fakedb__fail_validation(r, "A value provided cannot be converted into a number");
    }
}

/* Normalises a number held in a json string; returns a new json string or NULL. */
static json_object *normal_number(json_object *v, fakedb__error *r)
{
    char buf[DL_DECIMAL_TEXT_MAX];
    dl_decimal_status st = DL_DEC_SYNTAX;
    if (want_string(v, r))
        return NULL;
    const char *s = json_object_get_string(v);
    if (dl__decimal_normalize(s, (size_t)json_object_get_string_len(v), buf, &st) != 0) {
        number_error(st, r);
        return NULL;
    }
    return json_object_new_string(buf);
}

static int set_dup_error(json_object *arr, char t, fakedb__error *r)
{
    if (t == 'N')    /* DynamoDB names no elements for a number set */
        return fakedb__fail_validation(r, "Input collection contains duplicates");
    char list[512];
    size_t o = 0;
    size_t n = json_object_array_length(arr);
    list[0] = 0;
    for (size_t i = 0; i < n && o < sizeof list - 8; i++) {
        int w = snprintf(list + o, sizeof list - o, "%s%s", i ? ", " : "",
                         json_object_get_string(json_object_array_get_idx(arr, i)));
        if (w < 0)
            break;
        o += (size_t)w;
    }
    if (o >= sizeof list)
        o = sizeof list - 1;
    return fakedb__fail_validation(r, "One or more parameter values were invalid: Input collection [%s] contains duplicates", list);
}

static int cmp_strings(const void *a, const void *b)
{
    json_object *x = *(json_object *const *)a, *y = *(json_object *const *)b;
    size_t lx = (size_t)json_object_get_string_len(x), ly = (size_t)json_object_get_string_len(y);
    int c = memcmp(json_object_get_string(x), json_object_get_string(y), lx < ly ? lx : ly);
    return c ? c : (lx < ly ? -1 : lx > ly);
}

static int validate_set(json_object *arr, char kind, fakedb__error *r)
{
    if (!json_object_is_type(arr, json_type_array))
        return fakedb__fail(r, FDB_E_SERIALIZATION, "Unexpected value type in payload");
    size_t n = json_object_array_length(arr);
    if (n == 0)
        return fakedb__fail_validation(r, "One or more parameter values were invalid: An %s set  may not be empty",
                                       kind == 'S' ? "string" : kind == 'N' ? "number" : "binary");
    for (size_t i = 0; i < n; i++) {
        json_object *e = json_object_array_get_idx(arr, i);
        if (!e || want_string(e, r))
            return e ? -1 : fakedb__fail(r, FDB_E_SERIALIZATION, "VALUE_NULL cannot be converted to String");
        if (kind == 'N') {
            json_object *nv = normal_number(e, r);
            if (!nv)
                return -1;
            json_object_array_put_idx(arr, i, nv);
        } else if (kind == 'B') {
            size_t bl;
            const char *s = json_object_get_string(e);
            if (dl__base64_decode_to(s, strlen(s), NULL, 0, &bl) != DL_B64_OK)
                return fakedb__fail(r, FDB_E_SERIALIZATION, "Base64 encoded length is expected a multiple of 4 bytes but found: %zu", strlen(s));
        }
    }
    json_object **sorted = malloc(n * sizeof *sorted);
    if (!sorted)
        return fakedb__fail(r, FDB_E_INTERNAL, "out of memory");
    for (size_t i = 0; i < n; i++)
        sorted[i] = json_object_array_get_idx(arr, i);
    bool dup = false;
    if (kind == 'N') {
        for (size_t i = 0; i < n && !dup; i++)
            for (size_t k = i + 1; k < n && !dup; k++)
                dup = strcmp(json_object_get_string(sorted[i]), json_object_get_string(sorted[k])) == 0;
    } else {
        qsort(sorted, n, sizeof *sorted, cmp_strings);
        for (size_t i = 1; i < n && !dup; i++)
            dup = cmp_strings(&sorted[i - 1], &sorted[i]) == 0;
    }
    free(sorted);
    return dup ? set_dup_error(arr, kind, r) : 0;
}

static int validate_av(json_object *av, int depth, fakedb__error *r);

static int validate_map(json_object *m, int depth, fakedb__error *r)
{
    if (!json_object_is_type(m, json_type_object))
        return fakedb__fail(r, FDB_E_SERIALIZATION, "Unexpected value type in payload");
    json_object_object_foreach(m, k, v) {
        (void)k;
        if (validate_av(v, depth + 1, r))
            return -1;
    }
    return 0;
}

static int validate_av(json_object *av, int depth, fakedb__error *r)
{
    if (depth > FDB_MAX_NESTING)
        return fakedb__fail_validation(r, "Nesting Levels have exceeded supported limits: Attributes in the item have nested levels beyond supported limit");
    if (!av || !json_object_is_type(av, json_type_object))
        return fakedb__fail(r, FDB_E_SERIALIZATION, "Unexpected value type in payload");
    const char *type = NULL;
    json_object *val = NULL;
    int n = 0;
    json_object_object_foreach(av, k, v) {
        static const char *const known[] = { "S", "N", "B", "SS", "NS", "BS", "M", "L", "NULL", "BOOL" };
        bool ok = false;
        for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
            ok = ok || strcmp(k, known[i]) == 0;
        if (!ok || json_object_is_type(v, json_type_null))
            continue;
        n++;
        type = k;
        val = v;
    }
    if (n == 0)
        return fakedb__fail_validation(r, "Supplied AttributeValue is empty, must contain exactly one of the supported datatypes");
    if (n > 1)
        return fakedb__fail_validation(r, "Supplied AttributeValue has more than one datatypes set, must contain exactly one of the supported datatypes");
    if (!strcmp(type, "S"))
        return want_string(val, r);
    if (!strcmp(type, "N")) {
        json_object *nv = normal_number(val, r);
        if (!nv)
            return -1;
        json_object_object_add(av, "N", nv);
        return 0;
    }
    if (!strcmp(type, "B")) {
        size_t bl;
        if (want_string(val, r))
            return -1;
        const char *s = json_object_get_string(val);
        if (dl__base64_decode_to(s, strlen(s), NULL, 0, &bl) != DL_B64_OK)
            return fakedb__fail(r, FDB_E_SERIALIZATION, "Base64 encoded length is expected a multiple of 4 bytes but found: %zu", strlen(s));
        return 0;
    }
    if (!strcmp(type, "SS") || !strcmp(type, "NS") || !strcmp(type, "BS"))
        return validate_set(val, type[0], r);
    if (!strcmp(type, "BOOL")) {
        if (!json_object_is_type(val, json_type_boolean))
            return fakedb__fail(r, FDB_E_SERIALIZATION, "%s cannot be converted to Boolean", json_kind_name(val));
        return 0;
    }
    if (!strcmp(type, "NULL")) {
        if (!json_object_is_type(val, json_type_boolean))
            return fakedb__fail(r, FDB_E_SERIALIZATION, "%s cannot be converted to Boolean", json_kind_name(val));
        if (!json_object_get_boolean(val))
            return fakedb__fail_validation(r, "One or more parameter values were invalid: Null attribute value types must have the value of true");
        return 0;
    }
    if (!strcmp(type, "M"))
        return validate_map(val, depth, r);
    /* L */
    if (!json_object_is_type(val, json_type_array))
        return fakedb__fail(r, FDB_E_SERIALIZATION, "Unexpected value type in payload");
    for (size_t i = 0; i < json_object_array_length(val); i++)
        if (validate_av(json_object_array_get_idx(val, i), depth + 1, r))
            return -1;
    return 0;
}

int fakedb__item_validate(json_object *item, fakedb__error *r)
{
    if (!item || !json_object_is_type(item, json_type_object))
        return fakedb__fail(r, FDB_E_SERIALIZATION, "Unexpected value type in payload");
    json_object_object_foreach(item, k, v) {
        if (k[0] == 0)
            return fakedb__fail_validation(r, "One or more parameter values are not valid. A value specified for an attribute name is empty");
        /* the model's AttributeName: at most 65535 (DynamoDB Local's text; AWS's not verified) */
        if (strlen(k) > 65535)
            return fakedb__fail_validation(r, "Attribute name is too large, must be less than 65536 bytes");
        if (validate_av(v, 1, r))
            return -1;
    }
    return 0;
}

int fakedb__av_validate(json_object *av, fakedb__error *r)
{
    return validate_av(av, 1, r);
}

int fakedb__values_validate(json_object *values, fakedb__error *r)
{
    if (!values)
        return 0;
    if (!json_object_is_type(values, json_type_object))
        return fakedb__fail(r, FDB_E_SERIALIZATION, "Unexpected value type in payload");
    json_object_object_foreach(values, k, v) {
        if (validate_av(v, 1, r)) {
            if (r->type && !strcmp(r->type, FDB_E_VALIDATION)) {
                char inner[sizeof r->message];
                memcpy(inner, r->message, sizeof inner);
                return fakedb__fail_validation(r, "ExpressionAttributeValues contains invalid value: %s for key %s", inner, k);
            }
            return -1;
        }
    }
    return 0;
}

char fakedb__av_scalar(json_object *av)
{
    if (!av || !json_object_is_type(av, json_type_object) || json_object_object_length(av) != 1)
        return 0;
    json_object_object_foreach(av, k, v) {
        (void)v;
        if (k[1] == 0 && (k[0] == 'S' || k[0] == 'N' || k[0] == 'B'))
            return k[0];
    }
    return 0;
}

static const char *av_type_name(json_object *av)
{
    if (av && json_object_is_type(av, json_type_object)) {
        json_object_object_foreach(av, k, v) {
            (void)v;
            return k;
        }
    }
    return "?";
}

int fakedb__encode_scalar(json_object *av, char type, uint8_t *buf, size_t cap, size_t *len)
{
    char key[2] = { type, 0 };
    json_object *v = fakedb__json_get(av, key);
    if (!v || !json_object_is_type(v, json_type_string))
        return -1;
    const char *s = json_object_get_string(v);
    size_t sl = (size_t)json_object_get_string_len(v);
    if (type == 'S') {
        if (sl > cap)
            return -2;
        memcpy(buf, s, sl);
        *len = sl;
        return 0;
    }
    if (type == 'B') {
        dl_base64_status st = dl__base64_decode_to(s, sl, buf, cap, len);
        return st == DL_B64_OK ? 0 : st == DL_B64_SPACE ? -2 : -1;
    }
    dl_decimal d;
    if (dl__decimal_parse(s, sl, &d) != DL_DEC_OK)
        return -1;
    uint8_t tmp[DL_DECIMAL_SORTKEY_MAX];
    size_t n = dl__decimal_sortkey(&d, tmp);
    if (n > cap)
        return -2;
    memcpy(buf, tmp, n);
    *len = n;
    return 0;
}

static bool av_is_empty_value(json_object *av, char type)
{
    char key[2] = { type, 0 };
    json_object *v = fakedb__json_get(av, key);
    return (type == 'S' || type == 'B') && v && json_object_get_string_len(v) == 0;
}

static int key_part(const char *name, char type, json_object *av, int mode, bool is_pk,
                    uint8_t *buf, size_t cap, size_t *len, fakedb__error *r)
{
    char t = fakedb__av_scalar(av);
    if (t != type) {
        if (mode == FDB_KEY_PARAM)
            return fakedb__fail_validation(r, "The provided key element does not match the schema");
        return fakedb__fail_validation(r, "One or more parameter values were invalid: Type mismatch for key %s expected: %c actual: %s",
                                       name, type, av_type_name(av));
    }
    if (av_is_empty_value(av, type))
        return fakedb__fail_validation(r, "One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty %s value. Key: %s",
                                       type == 'S' ? "string" : "binary", name);
    int rc = fakedb__encode_scalar(av, type, buf, cap, len);
    if (rc == -2) {
        if (is_pk)
            return fakedb__fail_validation(r, "One or more parameter values were invalid: Size of hashkey has exceeded the maximum size limit of2048 bytes");
        return fakedb__fail_validation(r, "One or more parameter values were invalid: Aggregated size of all range keys has exceeded the size limit of 1024 bytes");
    }
    if (rc)
        return fakedb__fail_validation(r, "The provided key element does not match the schema");
    return 0;
}

int fakedb__key_make(const fakedb__table *t, json_object *attrs, int mode, fakedb__key *out,
                     fakedb__error *r)
{
    if (!attrs || !json_object_is_type(attrs, json_type_object))
        return fakedb__fail_validation(r, "The provided key element does not match the schema");
    json_object *pk = fakedb__json_get(attrs, t->pk);
    json_object *sk = t->sk ? fakedb__json_get(attrs, t->sk) : NULL;
    if (mode == FDB_KEY_PARAM) {
        int want = t->sk ? 2 : 1;
        if (!pk || (t->sk && !sk) || json_object_object_length(attrs) != want)
            return fakedb__fail_validation(r, "The provided key element does not match the schema");
    } else {
        if (!pk)
            return fakedb__fail_validation(r, "One or more parameter values were invalid: Missing the key %s in the item", t->pk);
        if (t->sk && !sk)
            return fakedb__fail_validation(r, "One or more parameter values were invalid: Missing the key %s in the item", t->sk);
    }
    if (key_part(t->pk, t->pk_type, pk, mode, true, out->pk, FDB_MAX_PK_BYTES, &out->pk_len, r))
        return -1;
    out->sk_len = 0;
    if (t->sk && key_part(t->sk, t->sk_type, sk, mode, false, out->sk, FDB_MAX_SK_BYTES, &out->sk_len, r))
        return -1;
    return 0;
}

static int multi_index_key(const fakedb__index *ix, json_object *item, fakedb__key *out,
                           fakedb__error *r);

int fakedb__index_key(const fakedb__index *ix, json_object *item, fakedb__key *out,
                      fakedb__error *r)
{
    if (ix->multi)
        return multi_index_key(ix, item, out, r);
    json_object *pk = fakedb__json_get(item, ix->pk);
    json_object *sk = ix->sk ? fakedb__json_get(item, ix->sk) : NULL;
    const char *names[2] = { ix->pk, ix->sk };
    json_object *avs[2] = { pk, sk };
    char types[2] = { ix->pk_type, ix->sk_type };
    for (int i = 0; i < 2; i++) {
        if (!names[i] || !avs[i])
            continue;
        char t = fakedb__av_scalar(avs[i]);
        if (t != types[i])
            return fakedb__fail_validation(r, "One or more parameter values were invalid: Type mismatch for Index Key %s Expected: %c Actual: %s IndexName: %s",
                                           names[i], types[i], av_type_name(avs[i]), ix->name);
        if (av_is_empty_value(avs[i], t))
            return fakedb__fail_validation(r, "One or more parameter values are not valid. A value specified for a secondary index key is not supported. The AttributeValue for a key attribute cannot contain an empty %s value. IndexName: %s, IndexKey: %s",
                                           t == 'S' ? "string" : "binary", ix->name, names[i]);
    }
    if (!pk || (ix->sk && !sk))
        return 0;
    if (fakedb__encode_scalar(pk, ix->pk_type, out->pk, FDB_MAX_PK_BYTES, &out->pk_len))
        return fakedb__fail_validation(r, "One or more parameter values were invalid: Size of hashkey has exceeded the maximum size limit of2048 bytes");
    out->sk_len = 0;
    if (sk && fakedb__encode_scalar(sk, ix->sk_type, out->sk, FDB_MAX_SK_BYTES, &out->sk_len))
        return fakedb__fail_validation(r, "One or more parameter values were invalid: Aggregated size of all range keys has exceeded the size limit of 1024 bytes");
    return 1;
}

static void copy_attr(json_object *dst, json_object *src, const char *name)
{
    json_object *v = name ? fakedb__json_get(src, name) : NULL;
    if (v)
        json_object_object_add(dst, name, json_object_get(v));
}

/* ---- multi-attribute index keys ----
 * The HASH part: each attribute's encoding after its length in 2 bytes (equality is all a
 * partition needs). The RANGE part: each attribute's encoding with 0x00 written 00 FF and
 * closed by 00 01, so that comparing the bytes compares the attributes left to right, a
 * shorter value first, and an encoded value's prefix is the encoded prefix of the value
 * (begins_with). The aggregated sizes of the encodings are held to FDB_MAX_PK_BYTES and
 * FDB_MAX_SK_BYTES, as one attribute's is. */

static const char k_hash_size[] = "One or more parameter values were invalid: Size of hashkey has exceeded the maximum size limit of2048 bytes";
static const char k_range_size[] = "One or more parameter values were invalid: Aggregated size of all range keys has exceeded the size limit of 1024 bytes";

/* Appends one attribute's n encoded bytes to a RANGE part at out + at, escaped, closed
 * when `close`; the new length. */
static size_t range_part_append(uint8_t *out, size_t at, const uint8_t *v, size_t n, bool close)
{
    for (size_t i = 0; i < n; i++) {
        out[at++] = v[i];
        if (v[i] == 0)
            out[at++] = 0xFF;
    }
    if (close) {
        out[at++] = 0;
        out[at++] = 1;
    }
    return at;
}

int fakedb__key_part_encode(json_object *const *avs, const char *types, size_t n, bool hash,
                            bool open_last, uint8_t *out, size_t *len)
{
    uint8_t v[FDB_MAX_PK_BYTES];
    size_t at = 0, total = 0, limit = hash ? FDB_MAX_PK_BYTES : FDB_MAX_SK_BYTES;
    for (size_t i = 0; i < n; i++) {
        size_t vn = 0;
        if (!avs[i] || fakedb__av_scalar(avs[i]) != types[i])
            return -1;
        int rc = fakedb__encode_scalar(avs[i], types[i], v, limit - total, &vn);
        if (rc)
            return rc;
        total += vn;
        if (hash) {
            out[at++] = (uint8_t)(vn >> 8);
            out[at++] = (uint8_t)vn;
            memcpy(out + at, v, vn);
            at += vn;
        } else {
            at = range_part_append(out, at, v, vn, !(open_last && i + 1 == n));
        }
    }
    *len = at;
    return 0;
}

/* The HASH and RANGE attributes of a multi-attribute key in obj (NULL when missing). */
static void key_avs(const fakedb__index *ix, json_object *obj, json_object **hash, json_object **range)
{
    for (size_t i = 0; i < ix->n_hash; i++)
        hash[i] = fakedb__json_get(obj, ix->hash[i]);
    for (size_t i = 0; i < ix->n_range; i++)
        range[i] = fakedb__json_get(obj, ix->range[i]);
}

int fakedb__index_key_encode(const fakedb__index *ix, json_object *obj, fakedb__key *out)
{
    if (!ix->multi) {
        json_object *pk = fakedb__json_get(obj, ix->pk), *sk = ix->sk ? fakedb__json_get(obj, ix->sk) : NULL;
        out->sk_len = 0;
        if (!pk || fakedb__av_scalar(pk) != ix->pk_type ||
            fakedb__encode_scalar(pk, ix->pk_type, out->pk, FDB_MAX_PK_BYTES, &out->pk_len))
            return -1;
        if (ix->sk && (!sk || fakedb__av_scalar(sk) != ix->sk_type ||
                       fakedb__encode_scalar(sk, ix->sk_type, out->sk, FDB_MAX_SK_BYTES, &out->sk_len)))
            return -1;
        return 0;
    }
    json_object *h[FDB_MAX_KEY_ATTRS], *rg[FDB_MAX_KEY_ATTRS];
    key_avs(ix, obj, h, rg);
    out->sk_len = 0;
    if (fakedb__key_part_encode(h, ix->hash_type, ix->n_hash, true, false, out->pk, &out->pk_len) ||
        fakedb__key_part_encode(rg, ix->range_type, ix->n_range, false, false, out->sk, &out->sk_len))
        return -1;
    return 0;
}

bool fakedb__index_has_key_attr(const fakedb__index *ix, const char *name)
{
    for (size_t i = 0; i < ix->n_hash; i++)
        if (!strcmp(ix->hash[i], name))
            return true;
    for (size_t i = 0; i < ix->n_range; i++)
        if (!strcmp(ix->range[i], name))
            return true;
    return false;
}

/* fakedb__index_key of a multi-attribute key: each attribute present is checked (type,
 * empty value) in key order, HASH first; the item is in the index only with all. */
static int multi_index_key(const fakedb__index *ix, json_object *item, fakedb__key *out,
                           fakedb__error *r)
{
    json_object *hv[FDB_MAX_KEY_ATTRS], *rv[FDB_MAX_KEY_ATTRS];
    key_avs(ix, item, hv, rv);
    bool all = true;
    for (size_t i = 0; i < ix->n_hash + ix->n_range; i++) {
        bool h = i < ix->n_hash;
        const char *name = h ? ix->hash[i] : ix->range[i - ix->n_hash];
        char want = h ? ix->hash_type[i] : ix->range_type[i - ix->n_hash];
        json_object *av = h ? hv[i] : rv[i - ix->n_hash];
        if (!av) {
            all = false;
            continue;
        }
        char t = fakedb__av_scalar(av);
        if (t != want)
            return fakedb__fail_validation(r, "One or more parameter values were invalid: Type mismatch for Index Key %s Expected: %c Actual: %s IndexName: %s",
                                           name, want, av_type_name(av), ix->name);
        if (av_is_empty_value(av, t))
            return fakedb__fail_validation(r, "One or more parameter values are not valid. A value specified for a secondary index key is not supported. The AttributeValue for a key attribute cannot contain an empty %s value. IndexName: %s, IndexKey: %s",
                                           t == 'S' ? "string" : "binary", ix->name, name);
    }
    if (!all)
        return 0;
    out->sk_len = 0;
    if (fakedb__key_part_encode(hv, ix->hash_type, ix->n_hash, true, false, out->pk, &out->pk_len))
        return fakedb__fail_validation(r, "%s", k_hash_size);
    if (fakedb__key_part_encode(rv, ix->range_type, ix->n_range, false, false, out->sk, &out->sk_len))
        return fakedb__fail_validation(r, "%s", k_range_size);
    return 1;
}

json_object *fakedb__key_of(const fakedb__table *t, json_object *item)
{
    json_object *k = json_object_new_object();
    copy_attr(k, item, t->pk);
    copy_attr(k, item, t->sk);
    return k;
}

json_object *fakedb__project_index(const fakedb__table *t, const fakedb__index *ix,
                                   json_object *item)
{
    if (!ix || ix->projection == FDB_PROJ_ALL)
        return json_object_get(item);
    json_object *o = fakedb__key_of(t, item);
    for (size_t i = 0; i < ix->n_hash; i++)
        copy_attr(o, item, ix->hash[i]);
    for (size_t i = 0; i < ix->n_range; i++)
        copy_attr(o, item, ix->range[i]);
    for (size_t i = 0; i < ix->n_include; i++)
        copy_attr(o, item, ix->include[i]);
    return o;
}
