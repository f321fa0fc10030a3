/* Machine-readable tk-bench results (`tk-bench SUITE ... --json FILE`), for plots and
 * tracking: the suite, its settings, one object per printed result row (named fields,
 * numbers as numbers, null for what was not measured) and the reference figures each
 * result is printed against.  tk_bench.c opens the file for the run; a suite adds to it
 * through the calls below, which do nothing when no --json was given.  Written to a
 * temporary and renamed when the suite succeeds, so a failed run leaves no file. */
#ifndef TK_BENCH_JSON_H
#define TK_BENCH_JSON_H

/* tk_bench.c: take `--json FILE` (or --json=FILE) out of argv; 0 and a message when the
 * value is missing.  *path stays NULL without the option. */
int tk_bench_json_take_option(int *argc, char **argv, const char **path);
/* Start the run's document (path NULL: no document); 0 when out of memory. */
int tk_bench_json_begin(const char *path, const char *suite, int argc, char **argv);
/* Write it (commit) or drop it; 0 when it cannot be written (reported). */
int tk_bench_json_end(int commit);

/* "settings": {key: value} */
void tk_bench_json_setting_str(const char *key, const char *value);
void tk_bench_json_setting_num(const char *key, double value);
/* "rows": a new row of the named table ("table_6_1", "dmri", ...), then its fields. */
void tk_bench_json_row(const char *table);
void tk_bench_json_str(const char *key, const char *value);
void tk_bench_json_num(const char *key, double value); /* NaN and infinities: null */
void tk_bench_json_bool(const char *key, int value);
/* "references": a figure a result is compared with (a seed paper's, a goal, a reference
 * program's measurement); a second call with the same name is ignored. */
void tk_bench_json_reference(const char *name, double value, const char *unit, const char *source);

#endif
