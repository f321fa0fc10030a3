/* The option table's parser, --help printer and Slicer description (cli_options.h). */
#define _POSIX_C_SOURCE 200809L
#include "cli_options.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "tk_device.h"

static int parse_backend(const char *prog, const char *flag, const char *value, void *dest)
{
    (void)flag; /* tk_cli_parse_backend names --backend itself */
    return tk_cli_parse_backend(prog, value, 1, (tk_backend *)dest);
}

const tk_option tk_standard_options[TK_STANDARD_OPTION_COUNT] = {
    {.name = "backend", .value_name = "auto|cpu|omp|cuda", .kind = TK_OPT_CUSTOM, .parse = parse_backend,
     .offset = offsetof(tk_standard_values, backend),
     .help = "auto (default): cuda where a usable GPU is found, else the CPU\n(omp) with a warning on stderr",
     .xml = {.kind = TK_XML_STRING_ENUMERATION, .name = "backend", .label = "Backend",
             .description = "auto: the GPU where a usable one is found, else all cores (with a warning); "
                            "omp: all cores; cpu: one core; cuda: the GPU",
             .default_value = "auto", .elements = "auto|omp|cpu|cuda"}},
    {.name = "device", .value_name = "D", .kind = TK_OPT_INT, .min = 0, .max = 1024,
     .offset = offsetof(tk_standard_values, device), .help = "CUDA device (default 0)",
     .xml = {.name = "device", .label = "CUDA device", .description = "The GPU to run on (cuda backend)",
             .default_value = "0"}},
    {.name = "threads", .value_name = "P", .kind = TK_OPT_INT, .min = 0, .max = 4096,
     .offset = offsetof(tk_standard_values, threads), .help = "threads of the CPU backend; 0 (default): all cores",
     .xml = {.name = "threads", .label = "Threads",
             .description = "Threads of the CPU backend; 0: all cores",
             .default_value = "0"}},
    {.name = "quiet", .short_name = 'q', .kind = TK_OPT_FLAG, .offset = offsetof(tk_standard_values, quiet),
     .help = "no progress bar or warnings (the CPU fallback's included)",
     .xml = {.name = "quiet", .label = "Quiet", .description = "No progress bar or warnings on stderr",
             .default_value = "false"}},
    {.name = "force", .kind = TK_OPT_FLAG, .offset = offsetof(tk_standard_values, force),
     .help = "replace existing outputs (without it an existing output is\nrefused before any work)",
     .xml = {.name = "force", .label = "Replace existing outputs",
             .description = "Without it, an output that exists already is refused before any work",
             .default_value = "false"}},
    {.name = "version", .kind = TK_OPT_META, .help = "print the tool's name and TensorKernels version,\nthen exit"},
    {.name = "help", .short_name = 'h', .kind = TK_OPT_META, .help = "print this help, then exit"},
};

const tk_option tk_gpus_options[TK_GPUS_OPTION_COUNT] = {
    {.name = "gpus", .value_name = "N", .kind = TK_OPT_INT, .min = 0, .max = 64, .offset = 0,
     .help = "cuda backend: how many GPUs share the work, from --device on\n(the command's notes say how); 0 (default): every visible GPU",
     .xml = {.name = "gpus", .label = "GPUs",
             .description = "cuda backend: how many GPUs (from the CUDA device on) share the work; 0: every visible GPU",
             .default_value = "0"}},
};

int tk_cli_resolve_gpus(const char *prog, int gpus, int given, tk_backend requested, tk_backend run, int device,
                        int *count)
{
    *count = 1;
    if (run != TK_BACKEND_CUDA) {
        /* 0, the default, asks for no GPU in particular ("every visible one"): 3D Slicer passes
         * every parameter, the default included, whatever backend the user chose */
        if (!given || gpus == 0) return 1;
        if (requested == TK_BACKEND_AUTO)
            tk_cli_error(prog, "--gpus %d: no usable CUDA GPU here, so --backend auto runs on the CPU (%s); drop --gpus "
                               "to run there, or run where the GPUs are", gpus, tk_backend_name(run));
        else
            tk_cli_error(prog, "--gpus %d applies to the cuda backend, and --backend %s was given; drop --gpus, or use "
                               "--backend cuda", gpus, tk_backend_name(run));
        return 0;
    }
    const int visible = tk_cuda_device_count(), available = visible > device ? visible - device : 0;
    if (gpus > available) {
        tk_cli_error(prog, "--gpus %d: %d CUDA device%s visible (devices 0 to %d), %d of them from --device %d on; "
                           "give --gpus %d or fewer (0: all of them)", gpus, visible, visible == 1 ? " is" : "s are",
                     visible - 1, available, device, available);
        return 0;
    }
    *count = gpus ? gpus : available > 0 ? available : 1;
    return 1;
}

/* ---- lookup -------------------------------------------------------------------- */

typedef struct {
    int group, index;
    const tk_option *opt;
} found_option;

static int find_option(const tk_command *cmd, const char *arg, found_option *f)
{
    for (size_t g = 0; g < cmd->count; ++g)
        for (size_t i = 0; i < cmd->groups[g].count; ++i) {
            const tk_option *o = &cmd->groups[g].options[i];
            int match = o->name && arg[0] == '-' && arg[1] == '-' && tk_cli_is(arg + 2, o->name);
            if (!match && o->short_name) match = arg[0] == '-' && arg[1] == o->short_name && !arg[2];
            if (match) {
                f->group = (int)g, f->index = (int)i, f->opt = o;
                return 1;
            }
        }
    return 0;
}

/* ---- values -------------------------------------------------------------------- */

/* The listed words: "a, b or c" (sep ", ", last " or ") or "a|b|c". */
static void choice_list(const tk_opt_choice *c, char *buf, size_t size, const char *sep_, const char *last_sep)
{
    size_t shown = 0, total = 0;
    for (const tk_opt_choice *k = c; k->word; ++k) total += !k->hidden;
    buf[0] = '\0';
    for (; c->word; ++c) {
        if (c->hidden) continue;
        size_t len = strlen(buf);
        const char *sep = shown == 0 ? "" : shown + 1 == total ? last_sep : sep_;
        snprintf(buf + len, size - len, "%s%s", sep, c->word);
        ++shown;
    }
}

static int parse_seed(const char *prog, const char *flag, const char *v, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long s = strtoull(v, &end, 10);
    if (!*v || *end || *v == '-' || errno) {
        tk_cli_error(prog, "%s expects a non-negative integer, got '%s'; give a whole number >= 0", flag, v);
        return 0;
    }
    *out = (uint64_t)s;
    return 1;
}

static int store_value(const char *prog, const tk_option *o, const char *v, char *dest)
{
    char flag[64];
    snprintf(flag, sizeof flag, "--%s", o->name);
    switch (o->kind) {
    case TK_OPT_INT: {
        long iv;
        if (!tk_cli_parse_int(prog, flag, v, (long)o->min, (long)o->max, &iv)) return 0;
        *(int *)dest = (int)iv;
        return 1;
    }
    case TK_OPT_LONG: return tk_cli_parse_int(prog, flag, v, (long)o->min, (long)o->max, (long *)dest);
    case TK_OPT_DOUBLE: return tk_cli_parse_double(prog, flag, v, o->min, o->max, (double *)dest);
    case TK_OPT_SEED: return parse_seed(prog, flag, v, (uint64_t *)dest);
    case TK_OPT_TEXT: *(const char **)dest = v; return 1;
    case TK_OPT_CHOICE:
        for (const tk_opt_choice *c = o->choices; c->word; ++c)
            if (!strcmp(v, c->word)) {
                *(int *)dest = c->value;
                return 1;
            }
        {
            char words[256];
            choice_list(o->choices, words, sizeof words, ", ", " or ");
            tk_cli_error(prog, "%s expects %s, got '%s'; use one of those", flag, words, v);
        }
        return 0;
    case TK_OPT_CUSTOM: return o->parse(prog, flag, v, dest);
    case TK_OPT_FLAG:
    case TK_OPT_META: break;
    }
    return 0;
}

/* ---- parsing ------------------------------------------------------------------- */

static void print_version(const tk_command *cmd) { printf("%s TensorKernels %s\n", cmd->prog, tk_version()); }

static void list_options(const tk_command *cmd)
{
    for (size_t g = 0; g < cmd->count; ++g)
        for (size_t i = 0; i < cmd->groups[g].count; ++i) {
            const tk_option *o = &cmd->groups[g].options[i];
            if (o->name && !o->hidden)
                printf("--%s %s\n", o->name, o->kind == TK_OPT_META ? "meta" : o->xml.name ? "xml" : "cli");
        }
    if (cmd->xml) printf("--xml meta\n");
}

/* --help, --version, --xml, --list-options: print and exit. */
static void answer_meta(const tk_command *cmd, const char *name)
{
    int ok = 1;
    if (!strcmp(name, "help")) tk_cli_print_help(stdout, cmd);
    else if (!strcmp(name, "version")) print_version(cmd);
    else if (!strcmp(name, "xml")) ok = tk_cli_print_xml(stdout, cmd);
    else list_options(cmd);
    exit(ok && fflush(stdout) == 0 ? 0 : TK_EXIT_FAILURE);
}

static const char *for_subcommand(const tk_command *cmd, char *buf, size_t size)
{
    if (cmd->subcommand) snprintf(buf, size, " for %s; see %s %s --help", cmd->subcommand, cmd->prog, cmd->subcommand);
    else snprintf(buf, size, "; see --help");
    return buf;
}

int tk_cli_parse_options(const tk_command *cmd, int argc, char **argv, int first, void *values, tk_parsed *parsed)
{
    memset(parsed, 0, sizeof *parsed);
    for (size_t g = 0; g < cmd->count; ++g) /* the standard group's defaults, the same in every tool */
        if (cmd->groups[g].options == tk_standard_options)
            *(tk_standard_values *)((char *)values + cmd->groups[g].base) = (tk_standard_values){.backend = TK_BACKEND_AUTO};
    char where[128];
    for (int i = first; i < argc; ++i) {
        const char *arg = argv[i];
        found_option f;
        if (arg[0] == '-' && arg[1]) {
            if (!strcmp(arg, "--list-options") || (cmd->xml && !strcmp(arg, "--xml"))) answer_meta(cmd, arg + 2);
            if (!find_option(cmd, arg, &f)) {
                tk_cli_error(cmd->prog, "unknown option '%s'%s for the options", arg,
                             for_subcommand(cmd, where, sizeof where));
                return 0;
            }
            const tk_option *o = f.opt;
            char *dest = (char *)values + cmd->groups[f.group].base + o->offset;
            parsed->seen[f.group & 7][f.index & 31] = 1;
            if (o->kind == TK_OPT_FLAG || o->kind == TK_OPT_META) {
                if (strchr(arg, '=')) {
                    tk_cli_error(cmd->prog, "--%s takes no value, got '%s'; give it alone", o->name, arg);
                    return 0;
                }
                if (o->kind == TK_OPT_META) answer_meta(cmd, o->name);
                *(int *)dest = !o->clears;
                continue;
            }
            char flag[64];
            snprintf(flag, sizeof flag, "--%s", o->name);
            const char *v = tk_cli_value(cmd->prog, argc, argv, &i, flag);
            if (!v || !store_value(cmd->prog, o, v, dest)) return 0;
        } else if (parsed->num_positional < cmd->max_positional && parsed->num_positional < 8) {
            parsed->positional[parsed->num_positional++] = arg;
        } else if (cmd->max_positional == 0) {
            tk_cli_error(cmd->prog, "unknown option '%s'%s for the options", arg, for_subcommand(cmd, where, sizeof where));
            return 0;
        } else {
            tk_cli_error(cmd->prog, "unexpected argument '%s'; %s (see --help)", arg, cmd->positional_hint);
            return 0;
        }
    }
    return 1;
}

int tk_cli_given(const tk_command *cmd, const tk_parsed *parsed, const char *long_name)
{
    for (size_t g = 0; g < cmd->count && g < 8; ++g)
        for (size_t i = 0; i < cmd->groups[g].count && i < 32; ++i) {
            const tk_option *o = &cmd->groups[g].options[i];
            if (o->name && !strcmp(o->name, long_name)) return parsed->seen[g][i];
        }
    return 0;
}

/* ---- --help --------------------------------------------------------------------- */

/* text with every line after the first indented to column indent. */
static void put_indented(FILE *f, const char *text, int indent)
{
    for (; *text; ++text) {
        fputc(*text, f);
        if (*text == '\n') fprintf(f, "%*s", indent, "");
    }
}

static void print_option_help(FILE *f, const tk_option *o)
{
    enum { column = 26 };
    char head[128];
    if (o->short_name) snprintf(head, sizeof head, "-%c, --%s", o->short_name, o->name);
    else snprintf(head, sizeof head, "--%s", o->name);
    if (o->value_name) {
        size_t len = strlen(head);
        snprintf(head + len, sizeof head - len, " %s", o->value_name);
    }
    if (strlen(head) + 3 > column) fprintf(f, "  %s\n%*s", head, column, "");
    else fprintf(f, "  %-*s", column - 2, head);
    put_indented(f, o->help ? o->help : "", column);
    fputc('\n', f);
}

void tk_cli_print_help(FILE *f, const tk_command *cmd)
{
    fputs("usage: ", f);
    fputs(cmd->usage, f);
    fputs("\n\n", f);
    if (cmd->description) {
        fprintf(f, cmd->description, cmd->help_arg);
        fputc('\n', f);
    }
    for (size_t g = 0; g < cmd->count; ++g) {
        const tk_option_group *grp = &cmd->groups[g];
        int any = 0;
        for (size_t i = 0; i < grp->count; ++i) {
            const tk_option *o = &grp->options[i];
            if (!o->name || o->hidden) continue;
            if (!any++) fprintf(f, "%s:\n", grp->title);
            print_option_help(f, o);
        }
        if (grp->options == tk_standard_options && cmd->xml)
            print_option_help(f, &(tk_option){.name = "xml", .help = "print the 3D Slicer CLI module description\n"
                                                                      "(SlicerExecutionModel), then exit"});
        if (any) fputc('\n', f);
    }
    if (cmd->epilog) fputs(cmd->epilog, f);
}

/* ---- --xml ---------------------------------------------------------------------- */

/* The Slicer parameter of an option: the table's xml fields, completed from the option. */
static tk_xml_param xml_param(const tk_option *o, char *elements, size_t size)
{
    tk_xml_param p = o->xml;
    p.longflag = o->name;
    p.flag = o->short_name;
    p.index = o->position ? o->position - 1 : -1;
    switch (o->kind) {
    case TK_OPT_FLAG: p.kind = TK_XML_BOOLEAN; break;
    case TK_OPT_INT:
    case TK_OPT_LONG:
    case TK_OPT_SEED: p.kind = TK_XML_INTEGER; break;
    case TK_OPT_DOUBLE: p.kind = TK_XML_DOUBLE; break;
    case TK_OPT_CHOICE:
        p.kind = TK_XML_STRING_ENUMERATION;
        if (!p.elements) {
            choice_list(o->choices, elements, size, "|", "|");
            p.elements = elements;
        }
        break;
    default: break;
    }
    return p;
}

int tk_cli_print_xml(FILE *f, const tk_command *cmd)
{
    if (!cmd->xml) return 0;
    size_t total = 0;
    for (size_t g = 0; g < cmd->count; ++g) total += cmd->groups[g].count;
    tk_xml_param *params = calloc(total ? total : 1, sizeof *params);
    tk_xml_group *groups = calloc(cmd->count ? cmd->count : 1, sizeof *groups);
    char (*elements)[256] = calloc(total ? total : 1, sizeof *elements);
    int ok = 0;
    if (params && groups && elements) {
        size_t n = 0, ng = 0;
        for (size_t g = 0; g < cmd->count; ++g) {
            const tk_option_group *grp = &cmd->groups[g];
            tk_xml_group *xg = &groups[ng];
            *xg = (tk_xml_group){.label = grp->label ? grp->label : grp->title, .description = grp->description, .advanced = grp->advanced,
                                 .params = params + n};
            for (size_t i = 0; i < grp->count; ++i) {
                const tk_option *o = &grp->options[i];
                if (!o->xml.name || o->hidden || o->kind == TK_OPT_META) continue;
                params[n] = xml_param(o, elements[n], sizeof elements[n]);
                ++n, ++xg->count;
            }
            if (xg->count) ++ng;
        }
        tk_xml_module m = *cmd->xml;
        m.groups = groups;
        m.count = ng;
        ok = tk_xml_print(f, &m);
    } else {
        tk_cli_error(cmd->prog, "out of memory; free memory and run again");
    }
    free(params);
    free(groups);
    free(elements);
    return ok;
}

/* ---- --force -------------------------------------------------------------------- */

int tk_cli_check_new_output(const char *prog, const tk_standard_values *std, const char *path, int is_dir,
                            const char *const *inputs)
{
    int code = tk_cli_check_output(prog, path, is_dir, inputs);
    return code ? code : tk_cli_refuse_existing(prog, std, path, is_dir);
}

static int folder_is_empty(const char *path)
{
    DIR *d = opendir(path);
    if (!d) return 0;
    int empty = 1;
    for (struct dirent *e; empty && (e = readdir(d));) empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
    closedir(d);
    return empty;
}

int tk_cli_refuse_existing(const char *prog, const tk_standard_values *std, const char *path, int is_dir)
{
    struct stat st;
    if (!path || !strcmp(path, "-") || std->force || stat(path, &st) != 0) return 0;
    /* a file where a folder output goes: the writer's own message says so; an empty
     * folder holds nothing to lose */
    if (is_dir && (!S_ISDIR(st.st_mode) || folder_is_empty(path))) return 0;
    tk_cli_error(prog, "%s: exists already: refusing to overwrite it; add --force to replace it, or choose another "
                       "output path", path);
    return TK_EXIT_USAGE;
}
