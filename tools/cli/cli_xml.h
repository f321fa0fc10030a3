/* SlicerExecutionModel descriptions of the command-line tools: a tool describes its
 * parameters in a table, and `TOOL --xml` prints the <executable> document 3D Slicer
 * (and other SEM hosts: MITK, GIMIAS, Nipype's SEM wrapper) reads to build its panel and
 * command line.  Slicer then calls the tool with `--longflag value` options (booleans as
 * a bare `--longflag` when true) followed by the positional images in <index> order. */
#ifndef TK_CLI_XML_H
#define TK_CLI_XML_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    TK_XML_IMAGE,
    TK_XML_GEOMETRY, /* a model (mesh, lines) file: Slicer passes a model node, .vtp by default */
    TK_XML_FILE,
    TK_XML_DIRECTORY,
    TK_XML_INTEGER,
    TK_XML_DOUBLE,
    TK_XML_BOOLEAN,
    TK_XML_STRING,
    TK_XML_STRING_ENUMERATION
} tk_xml_kind;

typedef enum { TK_XML_NO_CHANNEL, TK_XML_INPUT, TK_XML_OUTPUT } tk_xml_channel;

/* One parameter.  Either index >= 0 (positional) or longflag/flag set; the strings are
 * plain text (escaped when printed).  Unused fields stay NULL / 0. */
typedef struct tk_xml_param {
    tk_xml_kind kind;
    const char *name;        /* C identifier: Slicer's name for the value */
    const char *label;       /* shown in the panel */
    const char *description; /* tooltip */
    const char *longflag;    /* "mask" for --mask; NULL for a positional parameter */
    char flag;               /* 'm' for -m; 0 for none */
    int index;               /* position among the positional arguments, -1 when flagged */
    tk_xml_channel channel;  /* images, geometry, files, directories */
    const char *image_type;  /* the type attribute: image "scalar", "label", "vector", "diffusion-weighted", ...;
                              * geometry "model" (Slicer's model node) or "fiberbundle" */
    const char *file_extensions; /* image/geometry/file: ".nii.gz,.nrrd" (Slicer's save format: the first) */
    const char *default_value;
    const char *elements;    /* string-enumeration: "a|b|c" */
    const char *minimum, *maximum, *step; /* integer/double constraints, all three or none */
    int hidden;              /* hidden="true": passed but not shown */
} tk_xml_param;

typedef struct tk_xml_group {
    const char *label;
    const char *description;
    int advanced; /* collapsed in Slicer's panel */
    const tk_xml_param *params;
    size_t count;
} tk_xml_group;

typedef struct tk_xml_module {
    const char *category; /* "Diffusion.TensorKernels": dots nest menus */
    const char *title;
    const char *description;
    const char *version;           /* NULL: the project's version */
    const char *documentation_url; /* NULL: the project's user guide */
    const char *license;           /* NULL: the project's license */
    const char *contributor;
    const char *acknowledgements;
    const tk_xml_group *groups;
    size_t count;
} tk_xml_module;

/* A TensorKernels tool's module: its menu area ("Diffusion": Slicer lists it under
 * Diffusion > TensorKernels), its title (shown as "TITLE (TensorKernels)"), description and
 * acknowledgements; the contributor is the project's, as are the version, documentation and
 * license (filled in when printed). */
#define TK_XML_TOOL_MODULE(area, title_, description_, acknowledgements_)                                       \
    {.category = area ".TensorKernels", .title = title_ " (TensorKernels)", .description = description_,       \
     .contributor = "TensorKernels developers", .acknowledgements = acknowledgements_}

/* Checks the table (names, flags, indices, constraints: a mistake is a bug of the tool,
 * reported on stderr and returned as 0) and prints the XML to f; 1 on success. */
int tk_xml_print(FILE *f, const tk_xml_module *m);

/* 1 when the command line is exactly `TOOL --xml` (what Slicer runs at start-up). */
int tk_xml_requested(int argc, char **argv);

#define TK_XML_COUNT(array) (sizeof(array) / sizeof((array)[0]))

#ifdef __cplusplus
}
#endif
#endif
