/* decimal.h: DynamoDB numbers, exactly. A number has up to 38 significant decimal
 * digits and an exponent that keeps it within 1E-130 .. 9.9999999999999999999999999999999999999E+125
 * in magnitude (or is zero). Never a double. Shared by the client and the fake server. */
#ifndef DL_DECIMAL_H
#define DL_DECIMAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DL_DECIMAL_DIGITS 38
/* Longest normalised text: sign, 38 digits, point, and up to 130 zeros of padding. */
#define DL_DECIMAL_TEXT_MAX 200
/* Longest sort key (see dl__decimal_sortkey). */
#define DL_DECIMAL_SORTKEY_MAX 24

typedef struct dl_decimal {
    bool negative;
    int ndigits;                       /* 0 for zero; else 1..38, no leading/trailing 0 */
    uint8_t digits[DL_DECIMAL_DIGITS]; /* most significant first, each 0..9 */
    int exponent;                      /* value = 0.d1d2...dn * 10^exponent */
} dl_decimal;

typedef enum dl_decimal_status {
    DL_DEC_OK = 0,
    DL_DEC_SYNTAX,      /* not a number: DynamoDB's "... is not a valid number" */
    DL_DEC_PRECISION,   /* more than 38 significant digits */
    DL_DEC_OVERFLOW,    /* magnitude larger than 9.99..E+125 */
    DL_DEC_UNDERFLOW,   /* magnitude smaller than 1E-130 */
} dl_decimal_status;

/* Parses DynamoDB number text: optional sign, digits with an optional point, optional
 * exponent (e/E, sign, digits); leading/trailing white space is not allowed. */
dl_decimal_status dl__decimal_parse(const char *s, size_t len, dl_decimal *out);
/* Normalised text as DynamoDB returns it ("1.50" -> "1.5", "1e2" -> "100", "-0" -> "0").
 * buf needs DL_DECIMAL_TEXT_MAX bytes; returns the length. */
size_t dl__decimal_format(const dl_decimal *d, char *buf);
int dl__decimal_cmp(const dl_decimal *a, const dl_decimal *b);
/* a + b and a - b, exactly; DL_DEC_PRECISION/OVERFLOW/UNDERFLOW when the result does
 * not fit (DynamoDB's "Number overflow" / "Number underflow" / precision errors). */
dl_decimal_status dl__decimal_add(const dl_decimal *a, const dl_decimal *b, dl_decimal *out);
dl_decimal_status dl__decimal_sub(const dl_decimal *a, const dl_decimal *b, dl_decimal *out);
void dl__decimal_from_i64(int64_t v, dl_decimal *out);
/* 0, or -1 when not integral or out of int64 range. */
int dl__decimal_to_i64(const dl_decimal *d, int64_t *out);
/* A byte string whose memcmp order is the numeric order, for storing keys. Returns its
 * length (at most DL_DECIMAL_SORTKEY_MAX). */
size_t dl__decimal_sortkey(const dl_decimal *d, uint8_t *buf);
/* Convenience: parse then format. 0 and the normalised text, or -1. */
int dl__decimal_normalize(const char *s, size_t len, char *buf, dl_decimal_status *why);

#endif
