/* tk-eig's SlicerExecutionModel description. */
#ifndef TK_EIG_XML_H
#define TK_EIG_XML_H
#include "cli_xml.h"
extern const tk_xml_module tk_eig_xml;
#endif
