// The command line 3D Slicer builds from a tool's --xml description: each flagged
// parameter with its value (the given one, else its <default>; a boolean's bare flag only
// when true), then the positional parameters in <index> order; and the tool run on it.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "itkImage.h"
#include "tk_cli_runner.h"

namespace tk_test {

// The images 3D Slicer passes for a label map (a mask chosen in Slicer is one).
using SlicerLabelMap = itk::Image<short, 3>;

struct SlicerParameter {
    std::string tag, name, flag, value;  // flag empty for positional ones
    int index = -1;
};

inline std::string xml_child(const std::string &block, const std::string &tag)
{
    size_t at = block.find("<" + tag + ">");
    if (at == std::string::npos) return "";
    at += tag.size() + 2;
    return block.substr(at, block.find('<', at) - at);
}

// The parameters of the description our cli_xml prints (one element per "    <tag" line).
inline std::vector<SlicerParameter> slicer_parameters(const std::string &xml)
{
    std::vector<SlicerParameter> params;
    for (size_t at = 0; (at = xml.find("\n    <", at)) != std::string::npos;) {
        at += 6;
        if (xml[at] == '/' || xml.compare(at, 5, "label") == 0 || xml.compare(at, 11, "description") == 0) continue;
        size_t end = xml.find("\n    </", at);
        std::string block = xml.substr(at, end - at);
        SlicerParameter p;
        p.tag = block.substr(0, block.find_first_of(" >"));
        p.name = xml_child(block, "name");
        p.flag = xml_child(block, "longflag");
        p.value = xml_child(block, "default");
        std::string index = xml_child(block, "index");
        if (!index.empty()) p.index = std::stoi(index);
        params.push_back(p);
        at = end;
    }
    return params;
}

// values: by parameter name, overriding the defaults (images have none).
inline std::string slicer_command_line(const std::string &xml, const std::map<std::string, std::string> &values,
                                       int *flagged = nullptr)
{
    auto params = slicer_parameters(xml);
    std::string args;
    std::map<int, std::string> positional;
    int count = 0;
    for (auto &p : params) {
        auto given = values.find(p.name);
        std::string value = given != values.end() ? given->second : p.value;
        if (p.index >= 0) {
            positional[p.index] = value;
        } else if (p.tag == "boolean") {
            if (value == "true") args += " " + p.flag;
            ++count;
        } else if (!value.empty()) {  // Slicer leaves out an unset optional image
            args += " " + p.flag + " " + value;
            ++count;
        }
    }
    for (auto &kv : positional) args += " " + kv.second;
    if (flagged) *flagged = count;
    return args;
}

// What running a tool as Slicer does gave: the tool's --xml, the command line built from it,
// how many flagged parameters that line holds, and the tool's run on it.
struct SlicerRun {
    std::string xml, args;
    int flagged = 0;
    RunResult result;
};

// exe --xml, then exe on the command line Slicer builds from that description with values
// (both run in dir).  A fatal failure where either exits non-zero, or where the line does not
// end with positional_tail (Slicer puts the positional arguments last; "": not checked).
inline void run_as_slicer(const std::string &exe, const std::string &dir, const std::map<std::string, std::string> &values,
                          SlicerRun *run, const std::string &positional_tail = "")
{
    const RunResult xml = run_tool(exe + " --xml", dir);
    ASSERT_EQ(xml.exit_code, 0) << xml.err;
    run->xml = xml.out;
    run->args = slicer_command_line(xml.out, values, &run->flagged);
    if (!positional_tail.empty()) {
        ASSERT_EQ(run->args.substr(run->args.size() - positional_tail.size()), positional_tail)
            << "positional arguments last: " << run->args;
    }
    run->result = run_tool(exe + run->args, dir);
    ASSERT_EQ(run->result.exit_code, 0) << run->args << "\n" << run->result.err;
}

// A complete command (tk-tucker complete, tk-pltf complete: one set of parameter names) run
// as Slicer runs it on dir/in.nrrd and the mask dir/mask.nrrd, to dir/out.nrrd, with the
// other parameters' values given.
inline void run_complete_as_slicer(const std::string &exe, const std::string &dir,
                                   std::map<std::string, std::string> values, SlicerRun *run)
{
    values["inputVolume"] = dir + "/in.nrrd";
    values["outputVolume"] = dir + "/out.nrrd";
    values["mask"] = dir + "/mask.nrrd";
    run_as_slicer(exe, dir, values, run, " complete " + dir + "/in.nrrd " + dir + "/out.nrrd");
}

}  // namespace tk_test
