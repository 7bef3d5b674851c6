/* json.c: DynamoDB JSON ({"pk":{"S":"a"}}) to and from items, over json-c. Numbers stay
 * decimal text (checked with common/decimal.h), binary values travel as base64. Input
 * from the network or the caller is checked shape by shape: bad input is an error,
 * never a crash. */
#include "items.h"

#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "buf.h"
#include "client.h"
#include "internal.h"

/* ------------------------------------------------------------ to DynamoDB JSON */

static json_object *buf_string(const ddb_value *v)
{
    if (v->type == DDB_B) {
        size_t n;
        char *enc = dl__base64_encode(v->u.buf.p, v->u.buf.len, &n);
        if (!enc)
            return NULL;
        json_object *s = json_object_new_string_len(enc, (int)n);
        free(enc);
        return s;
    }
    return json_object_new_string_len(v->u.buf.p, (int)v->u.buf.len);
}

static const char *type_tag(ddb_type t)
{
    switch (t) {
    case DDB_S: return "S";
    case DDB_N: return "N";
    case DDB_B: return "B";
    case DDB_BOOL: return "BOOL";
    case DDB_NULL: return "NULL";
    case DDB_L: return "L";
    case DDB_M: return "M";
    case DDB_SS: return "SS";
    case DDB_NS: return "NS";
    case DDB_BS: return "BS";
    }
    return NULL;
}

json_object *ddb__value_to_jobj(const ddb_value *v)
{
    if (!v || !type_tag(v->type))
        return NULL;
    json_object *inner = NULL;
    switch (v->type) {
    case DDB_S:
    case DDB_N:
    case DDB_B:
        inner = buf_string(v);
        break;
    case DDB_BOOL:
        inner = json_object_new_boolean(v->u.b);
        break;
    case DDB_NULL:
        inner = json_object_new_boolean(1);
        break;
    case DDB_M:
        inner = ddb__item_to_jobj(v->u.m);
        break;
    case DDB_L:
    case DDB_SS:
    case DDB_NS:
    case DDB_BS:
        inner = json_object_new_array_ext((int)v->u.list.n);
        if (!inner)
            break;
        for (size_t i = 0; i < v->u.list.n; i++) {
            const ddb_value *e = v->u.list.v[i];
            json_object *je = v->type == DDB_L ? ddb__value_to_jobj(e) : buf_string(e);
            if (!je || json_object_array_add(inner, je) != 0) {
                json_object_put(je);
                json_object_put(inner);
                return NULL;
            }
        }
        break;
    }
    if (!inner)
        return NULL;
    json_object *o = json_object_new_object();
    if (!o || json_object_object_add(o, type_tag(v->type), inner) != 0) {
        json_object_put(inner);
        json_object_put(o);
        return NULL;
    }
    return o;
}

json_object *ddb__item_to_jobj(const ddb_item *it)
{
    if (!it)
        return NULL;
    json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    for (size_t i = 0; i < it->n; i++) {
        json_object *jv = ddb__value_to_jobj(it->attrs[i].value);
        if (!jv || json_object_object_add(o, it->attrs[i].name, jv) != 0) {
            json_object_put(jv);
            json_object_put(o);
            return NULL;
        }
    }
    return o;
}

/* ------------------------------------------------- DynamoDB JSON as text, directly
 * The request path writes items straight into the request text: building a json-c tree
 * and serialising it costs an allocation per node and a second pass. */

void ddb__text_json_str(dl_buf *t, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    dl__buf_put(t, "\"", 1);
    size_t run = 0; /* start of the bytes not yet copied */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        dl__buf_put(t, s + run, i - run);
        run = i + 1;
        char e[6] = { '\\', 0 };
        size_t el = 2;
        switch (c) {
        case '"': e[1] = '"'; break;
        case '\\': e[1] = '\\'; break;
        case '\b': e[1] = 'b'; break;
        case '\f': e[1] = 'f'; break;
        case '\n': e[1] = 'n'; break;
        case '\r': e[1] = 'r'; break;
        case '\t': e[1] = 't'; break;
        default:
            e[1] = 'u';
            e[2] = '0';
            e[3] = '0';
            e[4] = hex[c >> 4];
            e[5] = hex[c & 15];
            el = 6;
        }
        dl__buf_put(t, e, el);
    }
    dl__buf_put(t, s + run, n - run);
    dl__buf_put(t, "\"", 1);
}

static void text_buf(dl_buf *t, const ddb_value *v)
{
    if (v->type == DDB_B) {
        /* the base64 alphabet needs no JSON escape: written straight into t */
        size_t n = dl__base64_encoded_len(v->u.buf.len);
        dl__buf_putc(t, '"');
        if ((n > 0 || v->u.buf.len == 0) && dl__buf_reserve(t, n))
            t->len += dl__base64_encode_to(v->u.buf.p, v->u.buf.len, t->p + t->len);
        else
            t->oom = true;
        dl__buf_putc(t, '"');
        return;
    }
    ddb__text_json_str(t, v->u.buf.p, v->u.buf.len);
}

static void text_value(dl_buf *t, const ddb_value *v)
{
    const char *tag = v ? type_tag(v->type) : NULL;
    if (!tag) {
        t->oom = true; /* not a value libddb made; nothing sensible to send */
        return;
    }
    dl__buf_puts(t, "{\"");
    dl__buf_puts(t, tag);
    dl__buf_puts(t, "\":");
    switch (v->type) {
    case DDB_S:
    case DDB_N:
    case DDB_B:
        text_buf(t, v);
        break;
    case DDB_BOOL:
        dl__buf_puts(t, v->u.b ? "true" : "false");
        break;
    case DDB_NULL:
        dl__buf_puts(t, "true");
        break;
    case DDB_M:
        ddb__text_item(t, v->u.m);
        break;
    case DDB_L:
    case DDB_SS:
    case DDB_NS:
    case DDB_BS:
        dl__buf_put(t, "[", 1);
        for (size_t i = 0; i < v->u.list.n; i++) {
            if (i > 0)
                dl__buf_put(t, ",", 1);
            if (v->type == DDB_L)
                text_value(t, v->u.list.v[i]);
            else
                text_buf(t, v->u.list.v[i]);
        }
        dl__buf_put(t, "]", 1);
        break;
    }
    dl__buf_put(t, "}", 1);
}

void ddb__text_item(dl_buf *t, const ddb_item *it)
{
    if (!it) {
        t->oom = true;
        return;
    }
    dl__buf_put(t, "{", 1);
    for (size_t i = 0; i < it->n; i++) {
        if (i > 0)
            dl__buf_put(t, ",", 1);
        ddb__text_json_str(t, it->attrs[i].name, strlen(it->attrs[i].name));
        dl__buf_put(t, ":", 1);
        text_value(t, it->attrs[i].value);
    }
    dl__buf_put(t, "}", 1);
}

static char *jobj_text(json_object *o)
{
    if (!o)
        return NULL;
    size_t len;
    const char *s = json_object_to_json_string_length(
        o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
    char *r = s ? strndup(s, len) : NULL;
    json_object_put(o);
    return r;
}

char *ddb_item_to_json(const ddb_item *it)
{
    return jobj_text(ddb__item_to_jobj(it));
}

char *ddb_value_to_json(const ddb_value *v)
{
    return jobj_text(ddb__value_to_jobj(v));
}

/* ---------------------------------------------------------- from DynamoDB JSON */

static ddb_value *value_from(json_object *o, int code, int depth, ddb_error *err);
static ddb_item *item_from(json_object *o, int code, int depth, ddb_error *err);

/* DynamoDB nests documents at most 32 levels; json-c stops deeper input anyway. */
#define MAX_DEPTH 64

static ddb_value *scalar_from(ddb_type t, json_object *s, int code, ddb_error *err)
{
    if (!json_object_is_type(s, json_type_string)) {
        ddb__fail(err, code, "a %s value must be a JSON string", type_tag(t));
        return NULL;
    }
    const char *p = json_object_get_string(s);
    size_t len = (size_t)json_object_get_string_len(s);
    if (t == DDB_S)
        return ddb_value_s_len(p, len);
    if (t == DDB_N) {
        if (!ddb__number_valid(p, len)) {
            ddb__fail(err, code, "'%.64s' is not a valid DynamoDB number", p);
            return NULL;
        }
        return ddb_value_n(p);
    }
    size_t n;
    unsigned char *bytes;
    dl_base64_status brc = dl__base64_decode(p, len, &bytes, &n);
    if (brc == DL_B64_NOMEM) {
        ddb__fail(err, DDB_ENOMEM, "out of memory");
        return NULL;
    }
    if (brc != DL_B64_OK) {
        ddb__fail(err, code, "a B value is not valid base64");
        return NULL;
    }
    ddb_value *v = ddb_value_b(bytes, n);
    free(bytes);
    return v;
}

static ddb_value *value_from(json_object *o, int code, int depth, ddb_error *err)
{
    if (depth > MAX_DEPTH) {
        ddb__fail(err, code, "the value is nested too deeply");
        return NULL;
    }
    if (!json_object_is_type(o, json_type_object) || json_object_object_length(o) != 1) {
        ddb__fail(err, code, "an attribute value must be an object with one type key");
        return NULL;
    }
    struct json_object_iterator it = json_object_iter_begin(o);
    const char *tag = json_object_iter_peek_name(&it);
    json_object *inner = json_object_iter_peek_value(&it);
    ddb_value *v = NULL;

    if (strcmp(tag, "S") == 0 || strcmp(tag, "N") == 0 || strcmp(tag, "B") == 0) {
        ddb_type t = tag[0] == 'S' ? DDB_S : tag[0] == 'N' ? DDB_N : DDB_B;
        v = scalar_from(t, inner, code, err);
        if (!v && err && err->code == 0)
            ddb__fail(err, DDB_ENOMEM, "out of memory");
        return v;
    }
    if (strcmp(tag, "BOOL") == 0 || strcmp(tag, "NULL") == 0) {
        if (!json_object_is_type(inner, json_type_boolean)) {
            ddb__fail(err, code, "a %s value must be a JSON boolean", tag);
            return NULL;
        }
        if (tag[0] == 'N' && !json_object_get_boolean(inner)) {
            ddb__fail(err, code, "a NULL value must be true");
            return NULL;
        }
        v = tag[0] == 'B' ? ddb_value_bool(json_object_get_boolean(inner)) : ddb_value_null();
        if (!v)
            ddb__fail(err, DDB_ENOMEM, "out of memory");
        return v;
    }
    if (strcmp(tag, "M") == 0) {
        ddb_item *m = item_from(inner, code, depth + 1, err);
        if (!m)
            return NULL;
        v = calloc(1, sizeof *v);
        if (!v) {
            ddb_item_free(m);
            ddb__fail(err, DDB_ENOMEM, "out of memory");
            return NULL;
        }
        v->type = DDB_M;
        v->u.m = m;
        return v;
    }
    ddb_type lt = strcmp(tag, "L") == 0    ? DDB_L
                  : strcmp(tag, "SS") == 0 ? DDB_SS
                  : strcmp(tag, "NS") == 0 ? DDB_NS
                  : strcmp(tag, "BS") == 0 ? DDB_BS
                                           : (ddb_type)0;
    if (!lt) {
        ddb__fail(err, code, "unknown attribute type '%.32s'", tag);
        return NULL;
    }
    if (!json_object_is_type(inner, json_type_array)) {
        ddb__fail(err, code, "a %s value must be a JSON array", tag);
        return NULL;
    }
    v = lt == DDB_L ? ddb_value_l() : lt == DDB_SS ? ddb_value_ss() : lt == DDB_NS ? ddb_value_ns() : ddb_value_bs();
    if (!v) {
        ddb__fail(err, DDB_ENOMEM, "out of memory");
        return NULL;
    }
    size_t n = json_object_array_length(inner);
    for (size_t i = 0; i < n; i++) {
        json_object *je = json_object_array_get_idx(inner, i);
        ddb_value *e;
        if (lt == DDB_L)
            e = value_from(je, code, depth + 1, err);
        else
            e = scalar_from(lt == DDB_SS ? DDB_S : lt == DDB_NS ? DDB_N : DDB_B, je, code, err);
        if (!e) {
            if (err && err->code == 0)
                ddb__fail(err, DDB_ENOMEM, "out of memory");
            ddb_value_free(v);
            return NULL;
        }
        /* Elements are appended as they come: a set from DynamoDB has no duplicates. */
        if (v->u.list.n == v->u.list.cap) {
            size_t cap = v->u.list.cap ? v->u.list.cap * 2 : 4;
            ddb_value **nv = realloc(v->u.list.v, cap * sizeof *nv);
            if (!nv) {
                ddb_value_free(e);
                ddb_value_free(v);
                ddb__fail(err, DDB_ENOMEM, "out of memory");
                return NULL;
            }
            v->u.list.v = nv;
            v->u.list.cap = cap;
        }
        v->u.list.v[v->u.list.n++] = e;
    }
    return v;
}

static ddb_item *item_from(json_object *o, int code, int depth, ddb_error *err)
{
    if (!json_object_is_type(o, json_type_object)) {
        ddb__fail(err, code, "an item must be a JSON object");
        return NULL;
    }
    ddb_item *it = ddb_item_new();
    if (!it) {
        ddb__fail(err, DDB_ENOMEM, "out of memory");
        return NULL;
    }
    json_object_object_foreach(o, key, val) {
        ddb_value *v = value_from(val, code, depth, err);
        if (!v) {
            ddb_item_free(it);
            return NULL;
        }
        int rc = ddb_item_set(it, key, v);
        if (rc != 0) {
            ddb__fail(err, rc, "out of memory");
            ddb_item_free(it);
            return NULL;
        }
    }
    return it;
}

ddb_item *ddb__item_from_jobj(json_object *o, ddb_error *err)
{
    if (err)
        err->code = 0;
    return item_from(o, DDB_EPROTOCOL, 0, err);
}

json_object *ddb__json_parse(const char *text, size_t len, int bad_code, ddb_error *err)
{
    if (!text || len == 0 || len > INT32_MAX) {
        ddb__fail(err, bad_code, "empty or oversized JSON text");
        return NULL;
    }
    json_tokener *tok = json_tokener_new();
    if (!tok) {
        ddb__fail(err, DDB_ENOMEM, "out of memory");
        return NULL;
    }
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
    json_object *o = json_tokener_parse_ex(tok, text, (int)len);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    size_t end = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    if (!o || jerr != json_tokener_success) {
        json_object_put(o);
        ddb__fail(err, bad_code, "malformed JSON (%s)",
                  jerr == json_tokener_continue ? "unexpected end" : json_tokener_error_desc(jerr));
        return NULL;
    }
    while (end < len && (text[end] == ' ' || text[end] == '\n' || text[end] == '\r' || text[end] == '\t'))
        end++;
    if (end != len) {
        json_object_put(o);
        ddb__fail(err, bad_code, "malformed JSON (text after the document)");
        return NULL;
    }
    return o;
}

ddb_item *ddb_item_from_json(const char *json, size_t len, ddb_error *err)
{
    if (err)
        err->code = 0;
    json_object *o = ddb__json_parse(json, len, DDB_EINVAL, err);
    if (!o)
        return NULL;
    ddb_item *it = item_from(o, DDB_EINVAL, 0, err);
    json_object_put(o);
    return it;
}

ddb_value *ddb_value_from_json(const char *json, size_t len, ddb_error *err)
{
    if (err)
        err->code = 0;
    json_object *o = ddb__json_parse(json, len, DDB_EINVAL, err);
    if (!o)
        return NULL;
    ddb_value *v = value_from(o, DDB_EINVAL, 0, err);
    json_object_put(o);
    return v;
}
