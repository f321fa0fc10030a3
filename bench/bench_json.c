/* tk-bench --json: the document is built in memory (settings, rows and references arrive
 * interleaved) and written at the end. */
#include "bench_json.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

typedef struct {
    char *data;
    size_t len, cap;
} text;

static struct {
    int active, row_open, failed;
    const char *path;
    tk_output out; /* opened at the start: an unwritable path fails before the timing */
    text head, settings, rows, refs;
} doc;

static void put(text *t, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void put(text *t, const char *fmt, ...)
{
    if (doc.failed) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if (t->len + (size_t)n + 1 > t->cap) {
        size_t cap = (t->cap ? 2 * t->cap : 1024) + (size_t)n;
        char *grown = realloc(t->data, cap);
        if (!grown) {
            doc.failed = 1;
            return;
        }
        t->data = grown, t->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(t->data + t->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

static void put_string(text *t, const char *s)
{
    put(t, "\"");
    for (; s && *s; ++s) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') put(t, "\\%c", c);
        else if (c == '\n') put(t, "\\n");
        else if (c == '\t') put(t, "\\t");
        else if (c < 0x20) put(t, "\\u%04x", c);
        else put(t, "%c", c);
    }
    put(t, "\"");
}

static void put_number(text *t, double v)
{
    if (isfinite(v)) put(t, "%.10g", v);
    else put(t, "null");
}

static void put_key(text *t, const char *key, int first)
{
    put(t, first ? "" : ", ");
    put_string(t, key);
    put(t, ": ");
}

int tk_bench_json_take_option(int *argc, char **argv, const char **path)
{
    *path = NULL;
    for (int i = 1; i < *argc; ++i) {
        if (!tk_cli_is(argv[i], "--json")) continue;
        int from = i;
        const char *v = tk_cli_value("tk-bench", *argc, argv, &i, "--json");
        if (!v) return 0;
        *path = v;
        int used = i - from + 1; /* --json FILE or --json=FILE */
        memmove(argv + from, argv + from + used, sizeof(char *) * (size_t)(*argc - from - used + 1));
        *argc -= used;
        i = from - 1;
    }
    return 1;
}

int tk_bench_json_begin(const char *path, const char *suite, int argc, char **argv)
{
    memset(&doc, 0, sizeof doc);
    if (!path) return 1;
    if (!tk_output_open(&doc.out, path, "tk-bench")) return 0;
    doc.active = 1, doc.path = path;
    put(&doc.head, "{\n  \"tool\": \"tk-bench\",\n  \"suite\": ");
    put_string(&doc.head, suite);
    put(&doc.head, ",\n  \"command\": ");
    text cmd = {0, 0, 0};
    put(&cmd, "tk-bench");
    for (int i = 0; i < argc; ++i) put(&cmd, " %s", argv[i]);
    put_string(&doc.head, cmd.data);
    free(cmd.data);
    return !doc.failed;
}

static void release(void)
{
    free(doc.head.data), free(doc.settings.data), free(doc.rows.data), free(doc.refs.data);
    memset(&doc, 0, sizeof doc);
}

int tk_bench_json_end(int commit)
{
    if (!doc.active) return 1;
    int ok = 1;
    if (commit && doc.failed) {
        tk_cli_error("tk-bench", "%s: out of memory for the JSON results", doc.path);
        ok = 0;
    }
    if (commit && ok) {
        fprintf(doc.out.file, "%s,\n  \"settings\": {%s},\n  \"rows\": [%s%s\n  ],\n  \"references\": [%s\n  ]\n}\n",
                doc.head.data, doc.settings.data ? doc.settings.data : "", doc.rows.data ? doc.rows.data : "",
                doc.row_open ? "}" : "", doc.refs.data ? doc.refs.data : "");
        ok = tk_output_commit(&doc.out, "tk-bench");
    } else {
        tk_output_abort(&doc.out);
    }
    release();
    return ok;
}

void tk_bench_json_setting_str(const char *key, const char *value)
{
    if (!doc.active) return;
    put_key(&doc.settings, key, doc.settings.len == 0);
    put_string(&doc.settings, value);
}

void tk_bench_json_setting_num(const char *key, double value)
{
    if (!doc.active) return;
    put_key(&doc.settings, key, doc.settings.len == 0);
    put_number(&doc.settings, value);
}

void tk_bench_json_row(const char *table)
{
    if (!doc.active) return;
    put(&doc.rows, "%s\n    {", doc.row_open ? "}," : "");
    doc.row_open = 1;
    put_key(&doc.rows, "table", 1);
    put_string(&doc.rows, table);
}

void tk_bench_json_str(const char *key, const char *value)
{
    if (!doc.active || !doc.row_open) return;
    put_key(&doc.rows, key, 0);
    if (value) put_string(&doc.rows, value);
    else put(&doc.rows, "null");
}

void tk_bench_json_num(const char *key, double value)
{
    if (!doc.active || !doc.row_open) return;
    put_key(&doc.rows, key, 0);
    put_number(&doc.rows, value);
}

void tk_bench_json_bool(const char *key, int value)
{
    if (!doc.active || !doc.row_open) return;
    put_key(&doc.rows, key, 0);
    put(&doc.rows, value ? "true" : "false");
}

void tk_bench_json_reference(const char *name, double value, const char *unit, const char *source)
{
    if (!doc.active) return;
    text probe = {0, 0, 0};
    put(&probe, "{\"name\": ");
    put_string(&probe, name);
    int seen = probe.data && doc.refs.data && strstr(doc.refs.data, probe.data);
    free(probe.data);
    if (seen) return;
    put(&doc.refs, "%s\n    {\"name\": ", doc.refs.len ? "," : "");
    put_string(&doc.refs, name);
    put(&doc.refs, ", \"value\": ");
    put_number(&doc.refs, value);
    put(&doc.refs, ", \"unit\": ");
    put_string(&doc.refs, unit);
    put(&doc.refs, ", \"source\": ");
    put_string(&doc.refs, source);
    put(&doc.refs, "}");
}
