/* Fuzz target: the option helpers every C tool shares (tools/cli/cli.c).
 *
 * Input: NUL-separated arguments.  Each argument goes through tk_cli_parse_int over
 * three ranges and tk_cli_parse_double over two; then the whole list is walked as a
 * tool walks argv, with tk_cli_is and tk_cli_value for a few flags.
 *
 * Asserts: an accepted integer lies in its range and equals the value read here digit by
 * digit (optional leading blanks and sign, decimal digits, nothing after, no overflow);
 * an accepted number is finite, in its range, and the text holds a digit; a rejected one
 * leaves the output untouched.  tk_cli_is(arg, flag) holds exactly when arg is the flag
 * or "flag=..."; tk_cli_value returns the text after '=' without moving, else the next
 * argument moving one on, else NULL at the end of the list. */
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <string.h>

#include "cli.h"
#include "fuzz_common.h"
#include "fuzz_quiet.h"

#define MAX_ARGS 64

/* 1 and *out when text is a whole decimal integer that fits a long. */
static int decimal(const char *text, long *out)
{
    const char *p = text;
    while (isspace((unsigned char)*p)) ++p;
    int negative = *p == '-';
    if (*p == '-' || *p == '+') ++p;
    if (!isdigit((unsigned char)*p)) return 0;
    unsigned long magnitude = 0, limit = negative ? (unsigned long)LONG_MAX + 1 : (unsigned long)LONG_MAX;
    for (; isdigit((unsigned char)*p); ++p) {
        unsigned digit = (unsigned)(*p - '0');
        if (magnitude > (limit - digit) / 10) return 0;
        magnitude = magnitude * 10 + digit;
    }
    if (*p) return 0;
    *out = negative ? (magnitude == (unsigned long)LONG_MAX + 1 ? LONG_MIN : -(long)magnitude) : (long)magnitude;
    return 1;
}

static void check_int(const char *text, long lo, long hi)
{
    long got = 12345, want = 0;
    int ok = tk_cli_parse_int("fuzz", "--n", text, lo, hi, &got);
    int expect = decimal(text, &want) && want >= lo && want <= hi;
    TK_FUZZ_CHECK(ok == expect, "'%s' in [%ld, %ld]: parse_int says %d", text, lo, hi, ok);
    TK_FUZZ_CHECK(ok ? got == want : got == 12345, "'%s': got %ld, expected %ld", text, got, ok ? want : 12345L);
}

static void check_double(const char *text, double lo, double hi)
{
    double got = -7.5;
    if (tk_cli_parse_double("fuzz", "--x", text, lo, hi, &got)) {
        TK_FUZZ_CHECK(isfinite(got) && got >= lo && got <= hi, "'%s' gave %g outside [%g, %g]", text, got, lo, hi);
        const char *digit = text;
        while (*digit && !isdigit((unsigned char)*digit)) ++digit;
        TK_FUZZ_CHECK(*digit, "'%s' accepted as %g without a digit", text, got);
    } else {
        TK_FUZZ_CHECK(got == -7.5, "'%s' rejected, yet the output changed", text);
    }
}

static int is_flag(const char *arg, const char *flag)
{
    size_t n = strlen(flag);
    return strncmp(arg, flag, n) == 0 && (arg[n] == '\0' || arg[n] == '=');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *argv[MAX_ARGS + 1], *copy;
    const int argc = tk_fuzz_command_line(data, size, "tk-fuzz", MAX_ARGS, argv, &copy);

    tk_fuzz_quiet_begin();
    for (int i = 1; i < argc; ++i) {
        check_int(argv[i], 1, 4096);
        check_int(argv[i], -3, 3);
        check_int(argv[i], LONG_MIN, LONG_MAX);
        check_double(argv[i], 0, 1);
        check_double(argv[i], -1e300, 1e300);
    }
    static const char *const flags[] = {"--input", "--threads", "--x", "-q"};
    for (int i = 1; i < argc; ++i) {
        int matched = 0;
        for (size_t f = 0; f < sizeof flags / sizeof flags[0] && !matched; ++f) {
            const int is = tk_cli_is(argv[i], flags[f]);
            TK_FUZZ_CHECK(is == is_flag(argv[i], flags[f]), "tk_cli_is('%s', '%s') = %d", argv[i], flags[f], is);
            if (!is) continue;
            matched = 1;
            const int before = i;
            const char *v = tk_cli_value("fuzz", argc, argv, &i, flags[f]);
            const char *eq = strchr(argv[before], '=');
            if (eq) TK_FUZZ_CHECK(v == eq + 1 && i == before, "'%s': value not the text after '='", argv[before]);
            else if (before + 1 < argc) TK_FUZZ_CHECK(v == argv[before + 1] && i == before + 1, "'%s': not the next argument", argv[before]);
            else TK_FUZZ_CHECK(v == NULL && i == before, "'%s' at the end: a value came back", argv[before]);
        }
    }
    tk_fuzz_quiet_end();
    free(copy);
    return 0;
}
