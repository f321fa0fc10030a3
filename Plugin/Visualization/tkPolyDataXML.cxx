// tk::WritePolyDataXML (declared in tkFiberGlyphOutput.h) on its own, with VTK's XML writer
// alone: tk-fixels' --vtp links this and not the rendering, whose ~30 shared libraries cost a
// process ~25 ms to load.
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

#include "tkFiberGlyphOutput.h"
#include "tkTemporaryFile.h"
#include "vtkPolyData.h"
#include "vtkSmartPointer.h"
#include "vtkXMLPolyDataWriter.h"

namespace tk {

void WritePolyDataXML(vtkPolyData *poly, const std::string &path)
{
    const std::string tmp = TemporaryBeside(path);
    auto writer = vtkSmartPointer<vtkXMLPolyDataWriter>::New();
    writer->SetFileName(tmp.c_str());
    writer->SetInputData(poly);
    writer->SetDataModeToAppended();
    writer->SetCompressorTypeToZLib();
    writer->GlobalWarningDisplayOff();  // its messages name the temporary; ours name the file
    if (writer->Write() != 1 || writer->GetErrorCode() != 0 || !WrittenFile(tmp)) {
        std::string why = writer->GetErrorCode() ? std::strerror(writer->GetErrorCode()) : "VTK's XML writer failed";
        std::remove(tmp.c_str());
        throw std::runtime_error(path + ": cannot write: " + why);
    }
    RenameIntoPlace(tmp, path);
}

}  // namespace tk
