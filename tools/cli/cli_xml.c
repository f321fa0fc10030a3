/* SlicerExecutionModel XML from a tool's parameter table (cli_xml.h). */
#include "cli_xml.h"

#include <ctype.h>
#include <string.h>

#include "tk_types.h" /* TK_VERSION_STRING */

/* Project-wide values, set once in tools/CMakeLists.txt from the CMake project. */
#ifndef TK_DOCUMENTATION_URL
#define TK_DOCUMENTATION_URL ""
#endif
#ifndef TK_LICENSE
#define TK_LICENSE ""
#endif

static const char *kind_tag(tk_xml_kind k)
{
    switch (k) {
    case TK_XML_IMAGE: return "image";
    case TK_XML_GEOMETRY: return "geometry";
    case TK_XML_FILE: return "file";
    case TK_XML_DIRECTORY: return "directory";
    case TK_XML_INTEGER: return "integer";
    case TK_XML_DOUBLE: return "double";
    case TK_XML_BOOLEAN: return "boolean";
    case TK_XML_STRING: return "string";
    case TK_XML_STRING_ENUMERATION: return "string-enumeration";
    }
    return "string";
}

static void put_escaped(FILE *f, const char *s)
{
    for (; *s; ++s) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

static void element(FILE *f, int indent, const char *tag, const char *text)
{
    if (!text) return;
    fprintf(f, "%*s<%s>", indent, "", tag);
    put_escaped(f, text);
    fprintf(f, "</%s>\n", tag);
}

static int is_identifier(const char *s)
{
    if (!s || !(isalpha((unsigned char)*s) || *s == '_')) return 0;
    for (++s; *s; ++s)
        if (!(isalnum((unsigned char)*s) || *s == '_')) return 0;
    return 1;
}

static int is_longflag(const char *s)
{
    if (!s || !isalpha((unsigned char)*s)) return 0;
    for (++s; *s; ++s)
        if (!(isalnum((unsigned char)*s) || *s == '_' || *s == '-')) return 0;
    return 1;
}

/* Is word one of the '|'-separated elements? */
static int in_elements(const char *elements, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = elements; p && *p;) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && !strncmp(p, word, n)) return 1;
        p = bar ? bar + 1 : NULL;
    }
    return 0;
}

static int param_error(const tk_xml_param *p, const char *why)
{
    fprintf(stderr, "tk_xml_print: parameter '%s': %s\n", p->name ? p->name : "(null)", why);
    return 0;
}

static int check(const tk_xml_module *m)
{
    if (!m->category || !m->title || !m->description || !m->contributor || !m->count) {
        fprintf(stderr, "tk_xml_print: the module needs a category, title, description, contributor and a group\n");
        return 0;
    }
    int positional = 0;
    for (size_t g = 0; g < m->count; ++g)
        for (size_t i = 0; i < m->groups[g].count; ++i) {
            const tk_xml_param *p = &m->groups[g].params[i];
            if (!is_identifier(p->name)) return param_error(p, "the name must be a C identifier");
            if (!p->label || !p->description) return param_error(p, "needs a label and a description");
            int flagged = p->longflag || p->flag;
            if (flagged == (p->index >= 0)) return param_error(p, "needs either an index or a flag, not both");
            if (p->longflag && !is_longflag(p->longflag)) return param_error(p, "bad longflag (no dashes: \"mask\")");
            if (p->flag && !isalpha((unsigned char)p->flag)) return param_error(p, "the flag must be a letter");
            if (p->index >= 0) ++positional;
            int has_channel = p->kind == TK_XML_IMAGE || p->kind == TK_XML_GEOMETRY || p->kind == TK_XML_FILE ||
                              p->kind == TK_XML_DIRECTORY;
            if (has_channel != (p->channel != TK_XML_NO_CHANNEL))
                return param_error(p, "images, geometry, files and directories (only) need a channel");
            /* Slicer picks the node type from it: a model node, or a fiber bundle (SlicerDMRI) */
            if (p->kind == TK_XML_GEOMETRY &&
                (!p->image_type || (strcmp(p->image_type, "model") && strcmp(p->image_type, "fiberbundle"))))
                return param_error(p, "geometry needs the type model or fiberbundle");
            if (p->kind == TK_XML_BOOLEAN && (p->index >= 0 || !p->default_value ||
                                              (strcmp(p->default_value, "true") && strcmp(p->default_value, "false"))))
                return param_error(p, "a boolean needs a flag and the default true or false");
            if (p->kind == TK_XML_STRING_ENUMERATION &&
                (!p->elements || !p->default_value || !in_elements(p->elements, p->default_value)))
                return param_error(p, "an enumeration needs elements and a default among them");
            int limits = !!p->minimum + !!p->maximum + !!p->step;
            if (limits && (limits != 3 || (p->kind != TK_XML_INTEGER && p->kind != TK_XML_DOUBLE)))
                return param_error(p, "constraints need minimum, maximum and step, on a number");
            for (size_t h = 0; h < m->count; ++h)
                for (size_t j = 0; j < m->groups[h].count; ++j) {
                    const tk_xml_param *q = &m->groups[h].params[j];
                    if (q == p) continue;
                    if (!strcmp(q->name, p->name)) return param_error(p, "the name is used twice");
                    if (p->longflag && q->longflag && !strcmp(p->longflag, q->longflag))
                        return param_error(p, "the longflag is used twice");
                    if (p->flag && p->flag == q->flag) return param_error(p, "the flag is used twice");
                    if (p->index >= 0 && p->index == q->index) return param_error(p, "the index is used twice");
                }
        }
    /* Slicer appends the positional arguments in index order: 0..n-1 with no gap. */
    for (size_t g = 0; g < m->count; ++g)
        for (size_t i = 0; i < m->groups[g].count; ++i)
            if (m->groups[g].params[i].index >= positional)
                return param_error(&m->groups[g].params[i], "indices must be 0..n-1 with no gap");
    return 1;
}

static void print_param(FILE *f, const tk_xml_param *p)
{
    fprintf(f, "    <%s", kind_tag(p->kind));
    if (p->image_type) fprintf(f, " type=\"%s\"", p->image_type);
    if (p->file_extensions) fprintf(f, " fileExtensions=\"%s\"", p->file_extensions);
    if (p->hidden) fputs(" hidden=\"true\"", f);
    fputs(">\n", f);
    element(f, 6, "name", p->name);
    element(f, 6, "label", p->label);
    element(f, 6, "description", p->description);
    if (p->flag) fprintf(f, "      <flag>-%c</flag>\n", p->flag);
    if (p->longflag) fprintf(f, "      <longflag>--%s</longflag>\n", p->longflag);
    if (p->index >= 0) fprintf(f, "      <index>%d</index>\n", p->index);
    if (p->channel != TK_XML_NO_CHANNEL)
        fprintf(f, "      <channel>%s</channel>\n", p->channel == TK_XML_INPUT ? "input" : "output");
    element(f, 6, "default", p->default_value);
    if (p->minimum) {
        fputs("      <constraints>\n", f);
        element(f, 8, "minimum", p->minimum);
        element(f, 8, "maximum", p->maximum);
        element(f, 8, "step", p->step);
        fputs("      </constraints>\n", f);
    }
    for (const char *e = p->kind == TK_XML_STRING_ENUMERATION ? p->elements : NULL; e && *e;) {
        const char *bar = strchr(e, '|');
        int len = bar ? (int)(bar - e) : (int)strlen(e);
        fprintf(f, "      <element>%.*s</element>\n", len, e);
        e = bar ? bar + 1 : NULL;
    }
    fprintf(f, "    </%s>\n", kind_tag(p->kind));
}

int tk_xml_print(FILE *f, const tk_xml_module *m)
{
    if (!check(m)) return 0;
    fputs("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<executable>\n", f);
    element(f, 2, "category", m->category);
    element(f, 2, "title", m->title);
    element(f, 2, "description", m->description);
    element(f, 2, "version", m->version ? m->version : TK_VERSION_STRING);
    element(f, 2, "documentation-url", m->documentation_url ? m->documentation_url : TK_DOCUMENTATION_URL);
    element(f, 2, "license", m->license ? m->license : TK_LICENSE);
    element(f, 2, "contributor", m->contributor);
    element(f, 2, "acknowledgements", m->acknowledgements);
    for (size_t g = 0; g < m->count; ++g) {
        const tk_xml_group *grp = &m->groups[g];
        fprintf(f, "  <parameters%s>\n", grp->advanced ? " advanced=\"true\"" : "");
        element(f, 4, "label", grp->label);
        element(f, 4, "description", grp->description);
        for (size_t i = 0; i < grp->count; ++i) print_param(f, &grp->params[i]);
        fputs("  </parameters>\n", f);
    }
    fputs("</executable>\n", f);
    return fflush(f) == 0 && !ferror(f);
}

int tk_xml_requested(int argc, char **argv) { return argc == 2 && !strcmp(argv[1], "--xml"); }
