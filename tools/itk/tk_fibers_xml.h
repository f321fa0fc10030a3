/* tk-fibers' SlicerExecutionModel description. */
#ifndef TK_FIBERS_XML_H
#define TK_FIBERS_XML_H
#include "cli_xml.h"
#ifdef __cplusplus
extern "C" {
#endif
extern const tk_xml_module tk_fibers_xml;
#ifdef __cplusplus
}
#endif
#endif
