// cli_xml: the SlicerExecutionModel document a parameter table prints (structure, escaping,
// flags, indices, constraints, enumerations) and the table mistakes it refuses to print.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "cli_xml.h"

namespace {

tk_xml_param image(const char *name, int index, tk_xml_channel channel)
{
    tk_xml_param p{};
    p.kind = TK_XML_IMAGE, p.name = name, p.label = "Image", p.description = "an image";
    p.index = index, p.channel = channel, p.image_type = "scalar";
    return p;
}

tk_xml_param number(tk_xml_kind kind, const char *name, const char *longflag, const char *def)
{
    tk_xml_param p{};
    p.kind = kind, p.name = name, p.label = "Number", p.description = "a number";
    p.longflag = longflag, p.index = -1, p.default_value = def;
    return p;
}

// Prints the module with the given parameters; "" when tk_xml_print refuses.
std::string print(const std::vector<tk_xml_param> &params, std::string *errors = nullptr)
{
    tk_xml_group group{};
    group.label = "IO", group.description = "Inputs & outputs", group.params = params.data(), group.count = params.size();
    tk_xml_module m{};
    m.category = "Diffusion.TensorKernels", m.title = "Test <tool>", m.description = "Says \"hi\" & more";
    m.contributor = "us", m.groups = &group, m.count = 1;
    char *buf = nullptr;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    std::fflush(stderr);
    int ok = tk_xml_print(f, &m);
    std::fclose(f);
    std::string out(buf, len);
    std::free(buf);
    if (errors) *errors = ok ? "" : "refused";
    return ok ? out : "";
}

}  // namespace

TEST(CliXml, PrintsTheDocumentSlicerReads)
{
    auto num = number(TK_XML_INTEGER, "count", "num", "3");
    num.flag = 'n', num.minimum = "1", num.maximum = "64", num.step = "1";
    auto choice = number(TK_XML_STRING_ENUMERATION, "basis", "basis", "tournier");
    choice.elements = "tournier|descoteaux";
    auto flag = number(TK_XML_BOOLEAN, "legacy", "legacy", "false");
    auto mask = image("mask", -1, TK_XML_INPUT);
    mask.longflag = "mask", mask.image_type = "label";
    auto out = image("output", 1, TK_XML_OUTPUT);
    out.file_extensions = ".nrrd,.nii.gz";
    std::string xml = print({image("input", 0, TK_XML_INPUT), out, mask, num, choice, flag});
    ASSERT_FALSE(xml.empty());
    EXPECT_EQ(xml.rfind("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<executable>\n", 0), 0u) << xml;
    // Each part verbatim: the header's escaping, then every kind of parameter.
    const char *const parts[] = {
        "<category>Diffusion.TensorKernels</category>\n  <title>Test &lt;tool&gt;</title>\n"
        "  <description>Says &quot;hi&quot; &amp; more</description>\n  <version>",
        "<parameters>\n    <label>IO</label>\n    <description>Inputs &amp; outputs</description>",
        "<image type=\"scalar\" fileExtensions=\".nrrd,.nii.gz\">\n      <name>output</name>\n"
        "      <label>Image</label>\n      <description>an image</description>\n"
        "      <index>1</index>\n      <channel>output</channel>\n    </image>",
        "<image type=\"label\">\n      <name>mask</name>\n      <label>Image</label>\n"
        "      <description>an image</description>\n      <longflag>--mask</longflag>\n"
        "      <channel>input</channel>\n    </image>",
        "<flag>-n</flag>\n      <longflag>--num</longflag>\n      <default>3</default>\n"
        "      <constraints>\n        <minimum>1</minimum>\n        <maximum>64</maximum>\n"
        "        <step>1</step>\n      </constraints>\n    </integer>",
        "<default>tournier</default>\n      <element>tournier</element>\n"
        "      <element>descoteaux</element>\n    </string-enumeration>",
        "<boolean>\n      <name>legacy</name>",
    };
    for (const char *part : parts) EXPECT_NE(xml.find(part), std::string::npos) << part << "\nnot in:\n" << xml;
    EXPECT_EQ(xml.substr(xml.size() - 30), "  </parameters>\n</executable>\n");
}

// A geometry output (tk-fibers' glyphs): Slicer offers a model node for it, names a temporary
// file with the first extension and loads what the tool wrote there into that node.
TEST(CliXml, PrintsAGeometryOutputSlicerLoadsAsAModel)
{
    tk_xml_param glyphs{};
    glyphs.kind = TK_XML_GEOMETRY, glyphs.name = "glyphs", glyphs.label = "Glyphs", glyphs.description = "lines";
    glyphs.longflag = "vtp", glyphs.index = -1, glyphs.channel = TK_XML_OUTPUT;
    glyphs.image_type = "model", glyphs.file_extensions = ".vtp";
    std::string xml = print({image("input", 0, TK_XML_INPUT), glyphs});
    EXPECT_NE(xml.find("    <geometry type=\"model\" fileExtensions=\".vtp\">\n      <name>glyphs</name>\n"
                       "      <label>Glyphs</label>\n      <description>lines</description>\n"
                       "      <longflag>--vtp</longflag>\n      <channel>output</channel>\n    </geometry>\n"),
              std::string::npos) << xml;
    std::string errors;
    auto untyped = glyphs;
    untyped.image_type = nullptr;
    EXPECT_EQ(print({untyped}, &errors), "") << "geometry without a type";
    auto odd = glyphs;
    odd.image_type = "vector";
    EXPECT_EQ(print({odd}, &errors), "") << "geometry of an image's type";
    auto no_channel = glyphs;
    no_channel.channel = TK_XML_NO_CHANNEL;
    EXPECT_EQ(print({no_channel}, &errors), "") << "geometry without a channel";
    EXPECT_EQ(errors, "refused");
}

TEST(CliXml, RefusesTablesSlicerWouldMisread)
{
    auto in = image("input", 0, TK_XML_INPUT);
    struct Case {
        const char *why;
        std::vector<tk_xml_param> params;
    };
    std::vector<Case> cases;
    auto bad_name = in;
    bad_name.name = "in put";
    cases.push_back({"name not an identifier", {bad_name}});
    auto both = in;
    both.longflag = "input";
    cases.push_back({"index and flag", {both}});
    auto neither = in;
    neither.index = -1;
    cases.push_back({"neither index nor flag", {neither}});
    cases.push_back({"index twice", {in, image("other", 0, TK_XML_INPUT)}});
    cases.push_back({"index gap", {in, image("other", 2, TK_XML_OUTPUT)}});
    cases.push_back({"name twice", {in, image("input", 1, TK_XML_OUTPUT)}});
    cases.push_back({"longflag twice", {number(TK_XML_DOUBLE, "a", "x", "0"), number(TK_XML_DOUBLE, "b", "x", "0")}});
    cases.push_back({"dashes in the longflag", {number(TK_XML_DOUBLE, "a", "--x", "0")}});
    auto no_channel = in;
    no_channel.channel = TK_XML_NO_CHANNEL;
    cases.push_back({"image without channel", {no_channel}});
    cases.push_back({"boolean default", {number(TK_XML_BOOLEAN, "b", "b", "yes")}});
    auto positional_bool = number(TK_XML_BOOLEAN, "b", nullptr, "true");
    positional_bool.index = 0;
    cases.push_back({"positional boolean", {positional_bool}});
    auto enum_default = number(TK_XML_STRING_ENUMERATION, "e", "e", "c");
    enum_default.elements = "a|b";
    cases.push_back({"enumeration default not an element", {enum_default}});
    auto enum_prefix = number(TK_XML_STRING_ENUMERATION, "e", "e", "a");
    enum_prefix.elements = "ab|b";
    cases.push_back({"enumeration default only a prefix", {enum_prefix}});
    auto partial = number(TK_XML_DOUBLE, "d", "d", "0");
    partial.minimum = "0";
    cases.push_back({"constraints without maximum and step", {partial}});
    auto string_limits = number(TK_XML_STRING, "s", "s", "x");
    string_limits.minimum = "0", string_limits.maximum = "1", string_limits.step = "1";
    cases.push_back({"constraints on a string", {string_limits}});
    for (const auto &c : cases) {
        std::string errors;
        EXPECT_EQ(print(c.params, &errors), "") << c.why;
        EXPECT_EQ(errors, "refused") << c.why;
    }
}

TEST(CliXml, RecognizesOnlyABareXmlRequest)
{
    char tool[] = "tk-x", xml[] = "--xml", other[] = "in.nrrd";
    char *just_xml[] = {tool, xml, nullptr}, *more[] = {tool, xml, other, nullptr}, *none[] = {tool, nullptr};
    EXPECT_TRUE(tk_xml_requested(2, just_xml));
    EXPECT_FALSE(tk_xml_requested(3, more));
    EXPECT_FALSE(tk_xml_requested(1, none));
}
