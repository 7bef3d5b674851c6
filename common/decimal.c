/* decimal.c: DynamoDB numbers held exactly as up to 38 decimal digits and an exponent.
 * Parsing, DynamoDB's normalised text, exact addition and subtraction, ordering, int64
 * conversion and a byte key whose memcmp order is the numeric order. No floating point. */
#include "decimal.h"

#include <string.h>

/* value = 0.d1..dn * 10^exponent, so 1E-130 has exponent -129 and the largest
 * number, 0.99..9 * 10^126, has exponent 126. */
#define EXP_MIN (-129)
#define EXP_MAX 126

/* Room for aligning two numbers at the far ends of the range, plus a carry digit. */
#define WORK_DIGITS (EXP_MAX - EXP_MIN + 2 * DL_DECIMAL_DIGITS + 4)

static void set_zero(dl_decimal *d)
{
    memset(d, 0, sizeof *d);
}

/* Builds *out from significant digits (most significant first, leading zeros allowed),
 * where the first digit given has place value 10^(top-1). Strips zeros and checks range. */
static dl_decimal_status finish(bool negative, const uint8_t *digits, int n, long top,
                                dl_decimal *out)
{
    int first = 0;
    while (first < n && digits[first] == 0)
        first++;
    int last = n;
    while (last > first && digits[last - 1] == 0)
        last--;
    if (first == last) {
        set_zero(out);
        return DL_DEC_OK;
    }
    long exponent = top - first;
    int count = last - first;
    if (count > DL_DECIMAL_DIGITS)
        return DL_DEC_PRECISION;
    if (exponent > EXP_MAX)
        return DL_DEC_OVERFLOW;
    if (exponent < EXP_MIN)
        return DL_DEC_UNDERFLOW;
    out->negative = negative;
    out->ndigits = count;
    out->exponent = (int)exponent;
    memset(out->digits, 0, sizeof out->digits);
    memcpy(out->digits, digits + first, (size_t)count);
    return DL_DEC_OK;
}

dl_decimal_status dl__decimal_parse(const char *s, size_t len, dl_decimal *out)
{
    size_t i = 0;
    bool negative = false;
    set_zero(out);
    if (s == NULL)
        return DL_DEC_SYNTAX;
    if (i < len && (s[i] == '+' || s[i] == '-')) {
        negative = s[i] == '-';
        i++;
    }
    /* The first 38 significant digits; more than that is an error anyway. */
    uint8_t sig[DL_DECIMAL_DIGITS];
    int nsig = 0;
    long int_digits = 0;         /* digits before the point, after leading zeros */
    long lead_frac_zeros = 0;    /* zeros right after the point before any digit */
    bool seen_digit = false, seen_point = false, seen_sig = false;
    long sig_total = 0;          /* significant digits including zeros after the first */
    long zeros_pending = 0;      /* trailing zeros not yet known to be significant */
    for (; i < len; i++) {
        char c = s[i];
        if (c == '.') {
            if (seen_point)
                return DL_DEC_SYNTAX;
            seen_point = true;
            continue;
        }
        if (c < '0' || c > '9')
            break;
        seen_digit = true;
        int v = c - '0';
        if (!seen_sig && v == 0) {
            if (seen_point)
                lead_frac_zeros++;
            continue;
        }
        seen_sig = true;
        if (!seen_point)
            int_digits++;
        if (v == 0) {
            zeros_pending++;
            continue;
        }
        /* a non-zero digit: the pending zeros are significant */
        for (; zeros_pending > 0; zeros_pending--) {
            if (nsig < DL_DECIMAL_DIGITS)
                sig[nsig++] = 0;
            sig_total++;
        }
        if (nsig < DL_DECIMAL_DIGITS)
            sig[nsig++] = (uint8_t)v;
        sig_total++;
    }
    if (!seen_digit)
        return DL_DEC_SYNTAX;
    long exp10 = 0;
    if (i < len) {
        if (s[i] != 'e' && s[i] != 'E')
            return DL_DEC_SYNTAX;
        i++;
        bool eneg = false;
        if (i < len && (s[i] == '+' || s[i] == '-')) {
            eneg = s[i] == '-';
            i++;
        }
        if (i >= len)
            return DL_DEC_SYNTAX;
        for (; i < len; i++) {
            if (s[i] < '0' || s[i] > '9')
                return DL_DEC_SYNTAX;
            if (exp10 < 100000000)
                exp10 = exp10 * 10 + (s[i] - '0');
        }
        if (eneg)
            exp10 = -exp10;
    }
    if (!seen_sig)
        return DL_DEC_OK; /* zero, whatever its sign and exponent */
    /* Position of the first significant digit: 0.d * 10^top. */
    long top = (int_digits > 0 ? int_digits : -lead_frac_zeros) + exp10;
    if (top > EXP_MAX)
        return DL_DEC_OVERFLOW;
    if (top < EXP_MIN)
        return DL_DEC_UNDERFLOW;
    if (sig_total > DL_DECIMAL_DIGITS)
        return DL_DEC_PRECISION;
    return finish(negative, sig, nsig, top, out);
}

size_t dl__decimal_format(const dl_decimal *d, char *buf)
{
    size_t n = 0;
    if (d->ndigits == 0) {
        buf[0] = '0';
        buf[1] = '\0';
        return 1;
    }
    if (d->negative)
        buf[n++] = '-';
    if (d->exponent <= 0) {
        buf[n++] = '0';
        buf[n++] = '.';
        for (int z = 0; z < -d->exponent; z++)
            buf[n++] = '0';
        for (int k = 0; k < d->ndigits; k++)
            buf[n++] = (char)('0' + d->digits[k]);
    } else {
        for (int k = 0; k < d->exponent || k < d->ndigits; k++) {
            if (k == d->exponent)
                buf[n++] = '.';
            buf[n++] = (char)('0' + (k < d->ndigits ? d->digits[k] : 0));
        }
    }
    buf[n] = '\0';
    return n;
}

/* Compares magnitudes. */
static int cmp_abs(const dl_decimal *a, const dl_decimal *b)
{
    if (a->ndigits == 0 || b->ndigits == 0)
        return (a->ndigits != 0) - (b->ndigits != 0);
    if (a->exponent != b->exponent)
        return a->exponent < b->exponent ? -1 : 1;
    int n = a->ndigits > b->ndigits ? a->ndigits : b->ndigits;
    for (int k = 0; k < n; k++) {
        int da = k < a->ndigits ? a->digits[k] : 0;
        int db = k < b->ndigits ? b->digits[k] : 0;
        if (da != db)
            return da < db ? -1 : 1;
    }
    return 0;
}

int dl__decimal_cmp(const dl_decimal *a, const dl_decimal *b)
{
    int sa = a->ndigits == 0 ? 0 : (a->negative ? -1 : 1);
    int sb = b->ndigits == 0 ? 0 : (b->negative ? -1 : 1);
    if (sa != sb)
        return sa < sb ? -1 : 1;
    if (sa == 0)
        return 0;
    int c = cmp_abs(a, b);
    return sa < 0 ? -c : c;
}

/* Adds (or subtracts, when negate_b) exactly in a wide buffer, then checks the result. */
static dl_decimal_status add_signed(const dl_decimal *a, const dl_decimal *b, bool negate_b,
                                    dl_decimal *out)
{
    bool bneg = b->ndigits != 0 && (b->negative != negate_b);
    if (a->ndigits == 0) {
        *out = *b;
        out->negative = bneg;
        return DL_DEC_OK;
    }
    if (b->ndigits == 0) {
        *out = *a;
        return DL_DEC_OK;
    }
    /* Digit k of x has place value 10^(exponent-1-k). Work in places [low, high]. */
    int high = (a->exponent > b->exponent ? a->exponent : b->exponent); /* exclusive top + carry */
    int low_a = a->exponent - a->ndigits, low_b = b->exponent - b->ndigits;
    int low = low_a < low_b ? low_a : low_b;
    int width = high - low + 1; /* one more place for a carry */
    uint8_t xa[WORK_DIGITS], xb[WORK_DIGITS];
    int8_t res[WORK_DIGITS];
    memset(xa, 0, sizeof xa);
    memset(xb, 0, sizeof xb);
    /* index 0 is place `high` (the carry place), index width-1 is place `low` */
    for (int k = 0; k < a->ndigits; k++)
        xa[high - (a->exponent - 1 - k)] = a->digits[k];
    for (int k = 0; k < b->ndigits; k++)
        xb[high - (b->exponent - 1 - k)] = b->digits[k];
    bool negative;
    if (a->negative == bneg) {
        int carry = 0;
        for (int k = width - 1; k >= 0; k--) {
            int v = xa[k] + xb[k] + carry;
            carry = v >= 10;
            res[k] = (int8_t)(carry ? v - 10 : v);
        }
        negative = a->negative;
    } else {
        const uint8_t *big = xa, *small = xb;
        negative = a->negative;
        int c = cmp_abs(a, b);
        if (c == 0) {
            set_zero(out);
            return DL_DEC_OK;
        }
        if (c < 0) {
            big = xb;
            small = xa;
            negative = bneg;
        }
        int borrow = 0;
        for (int k = width - 1; k >= 0; k--) {
            int v = big[k] - small[k] - borrow;
            borrow = v < 0;
            res[k] = (int8_t)(borrow ? v + 10 : v);
        }
    }
    uint8_t digits[WORK_DIGITS];
    for (int k = 0; k < width; k++)
        digits[k] = (uint8_t)res[k];
    return finish(negative, digits, width, (long)high + 1, out);
}

dl_decimal_status dl__decimal_add(const dl_decimal *a, const dl_decimal *b, dl_decimal *out)
{
    dl_decimal r;
    dl_decimal_status st = add_signed(a, b, false, &r);
    if (st == DL_DEC_OK)
        *out = r;
    return st;
}

dl_decimal_status dl__decimal_sub(const dl_decimal *a, const dl_decimal *b, dl_decimal *out)
{
    dl_decimal r;
    dl_decimal_status st = add_signed(a, b, true, &r);
    if (st == DL_DEC_OK)
        *out = r;
    return st;
}

void dl__decimal_from_i64(int64_t v, dl_decimal *out)
{
    set_zero(out);
    if (v == 0)
        return;
    uint64_t mag = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    uint8_t tmp[20];
    int n = 0;
    while (mag > 0) {
        tmp[n++] = (uint8_t)(mag % 10);
        mag /= 10;
    }
    out->negative = v < 0;
    out->exponent = n;
    int count = 0;
    for (int k = n - 1; k >= 0; k--)
        out->digits[count++] = tmp[k];
    while (count > 0 && out->digits[count - 1] == 0)
        count--;
    out->ndigits = count;
}

int dl__decimal_to_i64(const dl_decimal *d, int64_t *out)
{
    if (d->ndigits == 0) {
        *out = 0;
        return 0;
    }
    if (d->exponent < d->ndigits || d->exponent > 19)
        return -1;
    uint64_t mag = 0;
    for (int k = 0; k < d->exponent; k++) {
        uint64_t digit = k < d->ndigits ? d->digits[k] : 0;
        if (mag > (UINT64_MAX - digit) / 10)
            return -1;
        mag = mag * 10 + digit;
    }
    if (d->negative) {
        if (mag > (uint64_t)INT64_MAX + 1)
            return -1;
        *out = mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag;
    } else {
        if (mag > (uint64_t)INT64_MAX)
            return -1;
        *out = (int64_t)mag;
    }
    return 0;
}

/* Layout: a class byte (1 negative, 2 zero, 3 positive), the exponent in one byte, then
 * digit pairs (10*d1+d2) in one byte each. Negative numbers complement the exponent and
 * the pairs and end with 0xFF, so that a shorter key (a larger negative) sorts later. */
size_t dl__decimal_sortkey(const dl_decimal *d, uint8_t *buf)
{
    if (d->ndigits == 0) {
        buf[0] = 2;
        return 1;
    }
    size_t n = 0;
    uint8_t e = (uint8_t)(d->exponent - EXP_MIN);
    buf[n++] = d->negative ? 1 : 3;
    buf[n++] = d->negative ? (uint8_t)(255 - e) : e;
    for (int k = 0; k < d->ndigits; k += 2) {
        int hi = d->digits[k];
        int lo = k + 1 < d->ndigits ? d->digits[k + 1] : 0;
        uint8_t pair = (uint8_t)(hi * 10 + lo);
        buf[n++] = d->negative ? (uint8_t)(255 - pair) : pair;
    }
    if (d->negative)
        buf[n++] = 0xFF;
    return n;
}

int dl__decimal_normalize(const char *s, size_t len, char *buf, dl_decimal_status *why)
{
    dl_decimal d;
    dl_decimal_status st = dl__decimal_parse(s, len, &d);
    if (why != NULL)
        *why = st;
    if (st != DL_DEC_OK)
        return -1;
    dl__decimal_format(&d, buf);
    return 0;
}
