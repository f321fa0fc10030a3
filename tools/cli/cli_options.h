/* One declarative option table per command, from which its parsing, `--help` and `--xml`
 * (the SlicerExecutionModel description, cli_xml.h) all come, so the three cannot drift.
 * The pattern is MRtrix3's usage() with shared option groups and Slicer's GenerateCLP.
 *
 * A command is a list of option groups; every command includes tk_standard_options
 * (--backend, --device, --threads, --quiet, --force, --version, --help) and its own groups.
 * An option names where its parsed value goes (an offset into the tool's argument struct,
 * relative to the group's base), so the parser stores values itself. */
#ifndef TK_CLI_OPTIONS_H
#define TK_CLI_OPTIONS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cli_xml.h"
#include "tk_types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    TK_OPT_FLAG,   /* no value: stores 1 (0 where .clears) in an int */
    TK_OPT_INT,    /* an int in [min, max] */
    TK_OPT_LONG,   /* a long in [min, max] */
    TK_OPT_DOUBLE, /* a double in [min, max] */
    TK_OPT_SEED,   /* a uint64_t: any whole number >= 0 */
    TK_OPT_TEXT,   /* a const char *: a path, a model, a list */
    TK_OPT_CHOICE, /* an int: the value of the chosen word of .choices */
    TK_OPT_CUSTOM, /* .parse stores it */
    TK_OPT_META    /* --help, --version, --xml, --list-options: answered by the parser */
} tk_opt_kind;

typedef struct tk_opt_choice {
    const char *word; /* NULL ends the list */
    int value;
    int hidden; /* an accepted alias not listed in --help, the error or --xml ("eu" for euclidean) */
} tk_opt_choice;

/* parse for TK_OPT_CUSTOM: 1 after storing the value at dest, else 0 after a message
 * naming flag (exit TK_EXIT_USAGE). */
typedef int (*tk_opt_parse_fn)(const char *prog, const char *flag, const char *value, void *dest);

typedef struct tk_option {
    const char *name;       /* the long name without dashes ("threads"); NULL for a positional */
    char short_name;        /* 'q' for -q; 0 for none */
    int position;           /* a positional argument: 1, 2, ...; 0 for an option */
    const char *value_name; /* "P" of --threads P; a positional's name in the usage ("INPUT.npy") */
    const char *help;       /* --help text; each '\n' starts a new, indented line */
    tk_opt_kind kind;
    size_t offset;          /* where the value goes, from the group's base in the tool's struct */
    double min, max;        /* TK_OPT_INT, TK_OPT_LONG and TK_OPT_DOUBLE */
    int clears;             /* TK_OPT_FLAG: store 0 ("--no-balance" clears balance) */
    const tk_opt_choice *choices; /* TK_OPT_CHOICE */
    tk_opt_parse_fn parse;  /* TK_OPT_CUSTOM */
    int hidden;             /* parsed, but neither in --help nor --xml (an internal knob) */
    /* The Slicer description; xml.name NULL: not in --xml (options Slicer cannot use).  The
     * printer fills longflag/flag/index from the option; kind, elements and constraints
     * follow from TK_OPT_FLAG/INT/DOUBLE/CHOICE where xml leaves them out. */
    tk_xml_param xml;
} tk_option;

typedef struct tk_option_group {
    const char *title;        /* the --help heading ("options") */
    const char *label;        /* Slicer's group label; NULL: the title */
    const char *description;  /* Slicer's group description */
    int advanced;             /* collapsed in Slicer's panel */
    const tk_option *options;
    size_t count;
    size_t base; /* offset of the group's values in the tool's struct (TK_OPT_GROUP) */
} tk_option_group;

/* A command: a tool, or one subcommand of a tool. */
typedef struct tk_command {
    const char *prog;        /* "tk-tucker": errors and --version name it */
    const char *subcommand;  /* "train"; NULL for a tool without subcommands */
    const char *usage;       /* after "usage: ": the synopsis; '\n' + spaces for more lines */
    const char *description; /* the paragraphs before the options (may hold one %d: .help_arg) */
    int help_arg;
    const char *epilog;      /* the paragraphs after the options; NULL for none */
    const tk_option_group *groups;
    size_t count;
    const tk_xml_module *xml; /* category, title, ...; NULL: no --xml */
    /* Positional arguments: at most max_positional (the rest is "unexpected argument"). */
    int max_positional;
    const char *positional_hint; /* "give INPUT.npy and OUTPUT.npy once"; with max_positional 0,
                                  * a positional is an unknown option */
} tk_command;

/* The values of the standard group; embed one in each tool's argument struct. */
typedef struct tk_standard_values {
    tk_backend backend; /* --backend: auto unless given */
    int device;         /* --device: the CUDA device, 0 unless given */
    int threads;        /* --threads: 0 (all cores) unless given */
    int quiet;          /* --quiet / -q */
    int force;          /* --force: existing outputs may be replaced */
} tk_standard_values;

/* --backend, --device, --threads, --quiet, --force, --version, --help: in every command. */
#define TK_STANDARD_OPTION_COUNT 7
extern const tk_option tk_standard_options[TK_STANDARD_OPTION_COUNT];

/* --gpus N: the commands whose core spreads a batch over several GPUs (tk-fibers, tk-teig,
 * tk-eig; Documentation/multi_gpu.md).  Its own group, not the standard one: the other
 * tools run on one GPU, and an option they took and ignored would mislead.  The value: an
 * int, 0 (every visible GPU from --device on) unless given; tk_cli_resolve_gpus reads it. */
#define TK_GPUS_OPTION_COUNT 1
extern const tk_option tk_gpus_options[TK_GPUS_OPTION_COUNT];
#define TK_GPUS_GROUP(TYPE, member)                                                                             \
    {.title = "GPU options", .label = "GPUs", .description = "How many GPUs share the work", .advanced = 1,    \
     .options = tk_gpus_options, .count = TK_GPUS_OPTION_COUNT, .base = offsetof(TYPE, member)}

/* The devices a run spreads over: *count = gpus, or with gpus 0 every visible GPU from
 * `device` on, where `run` (the backend `requested` resolved to) is cuda; 1 elsewhere.
 * `given`: --gpus was on the command line.  0 after a message naming --gpus (exit
 * TK_EXIT_USAGE) where more GPUs are asked for than exist from `device` on, or a count
 * above 0 is given for a run that is not on cuda (--backend cpu/omp, or auto without a
 * usable GPU): a user who names a GPU count expects GPUs, not a silent CPU run.  --gpus 0
 * (the default, which 3D Slicer passes along with every other parameter) never is. */
int tk_cli_resolve_gpus(const char *prog, int gpus, int given, tk_backend requested, tk_backend run, int device,
                        int *count);
/* The line the per-voxel tools' help ends with on what --gpus does to their results. */
#define TK_GPUS_SHARE_NOTE \
    "--gpus: each GPU takes a contiguous share of the batch; the results are one GPU's,\nbit for bit.\n"

/* A group of options whose offsets are relative to member of TYPE. */
#define TK_OPT_COUNT(array) (sizeof(array) / sizeof((array)[0]))
#define TK_STANDARD_GROUP(TYPE, member)                                                                        \
    {.title = "standard options", .label = "Standard options", .description = "Where and how it runs",         \
     .advanced = 1,                                                                                            \
     .options = tk_standard_options, .count = TK_STANDARD_OPTION_COUNT, .base = offsetof(TYPE, member)}

/* What parsing left besides the stored values. */
typedef struct tk_parsed {
    const char *positional[8]; /* in order; the rest NULL */
    int num_positional;
    unsigned char seen[8][32]; /* seen[g][i]: option i of group g was given (see tk_cli_given) */
} tk_parsed;

/* Parse argv[first..argc-1] (`--opt value`, `--opt=value`, `-x value`, flags) into values
 * (the tool's struct, its own defaults set by the caller; the standard group's set here:
 * --backend auto, the rest 0) by cmd's table.
 * --help prints the help and exits 0; --version prints "PROG TensorKernels X.Y.Z" and exits
 * 0; --xml prints the Slicer description (where cmd has one); --list-options prints the
 * table's long options one a line (for the test that help, parser and XML agree).
 * Returns 1, or 0 after a message naming the flag (exit TK_EXIT_USAGE). */
int tk_cli_parse_options(const tk_command *cmd, int argc, char **argv, int first, void *values, tk_parsed *parsed);

/* 1 when the option long_name was on the command line. */
int tk_cli_given(const tk_command *cmd, const tk_parsed *parsed, const char *long_name);

/* The help text of cmd, from its table. */
void tk_cli_print_help(FILE *f, const tk_command *cmd);

/* The Slicer description of cmd (cmd->xml's module with the table's parameters); 1 on success. */
int tk_cli_print_xml(FILE *f, const tk_command *cmd);

/* tk_cli_check_output (cli.h), then: an existing path is refused unless std->force, with a
 * message naming it and saying to add --force.  Call it for every output before the work. */
int tk_cli_check_new_output(const char *prog, const tk_standard_values *std, const char *path, int is_dir,
                            const char *const *inputs);
/* Only the second half: path (a file, or a folder where is_dir) exists and std->force is
 * not given: a message, TK_EXIT_USAGE.  For outputs inside a folder made on commit. */
int tk_cli_refuse_existing(const char *prog, const tk_standard_values *std, const char *path, int is_dir);

#ifdef __cplusplus
}
#endif
#endif
