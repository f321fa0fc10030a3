/** itk::StreamlineSetToPolyData: an itk::StreamlineSet as a vtkPolyData of polylines, for
 * the caller's VTK. \file
 *
 * Header-only and outside the module's build: only a program that includes it needs VTK
 * (CommonCore, CommonDataModel); the module itself neither includes nor links VTK.
 * \ingroup tk_group_tk_itk */
#ifndef itkStreamlineSetToVTK_h
#define itkStreamlineSetToVTK_h

#include <cstring>

#include <vtkCellArray.h>
#include <vtkFieldData.h>
#include <vtkFloatArray.h>
#include <vtkPoints.h>
#include <vtkPolyData.h>
#include <vtkSmartPointer.h>
#include <vtkStringArray.h>
#include <vtkTypeInt64Array.h>

#include "itkStreamlineSet.h"

namespace itk
{
/** One polyline cell per streamline, the points in LPS mm as the set holds them, and the
 * field-data string array SPACE = "LPS" (what 3D Slicer reads to place a model or fiber
 * bundle; Documentation/tracking.md, "Why LPS for VTK files").  Three bulk copies (points,
 * offsets, connectivity 0..n-1): the polydata owns its arrays, the set may go. */
inline vtkSmartPointer<vtkPolyData> StreamlineSetToPolyData(const StreamlineSet *set)
{
    const vtkIdType numPoints = static_cast<vtkIdType>(set->GetNumberOfPoints());
    auto coordinates = vtkSmartPointer<vtkFloatArray>::New();
    coordinates->SetNumberOfComponents(3);
    coordinates->SetNumberOfTuples(numPoints);
    if (numPoints) std::memcpy(coordinates->GetPointer(0), set->GetPoints().data(), sizeof(float) * 3 * numPoints);
    auto points = vtkSmartPointer<vtkPoints>::New();
    points->SetData(coordinates);

    // VTK 9's cell array is exactly offsets (cells + 1) and connectivity: the set's layout
    const auto &offsets = set->GetOffsets();
    auto offsetArray = vtkSmartPointer<vtkTypeInt64Array>::New();
    offsetArray->SetNumberOfTuples(static_cast<vtkIdType>(offsets.size()));
    for (size_t i = 0; i < offsets.size(); ++i) offsetArray->SetValue(static_cast<vtkIdType>(i), static_cast<vtkTypeInt64>(offsets[i]));
    auto connectivity = vtkSmartPointer<vtkTypeInt64Array>::New();
    connectivity->SetNumberOfTuples(numPoints);
    for (vtkIdType i = 0; i < numPoints; ++i) connectivity->SetValue(i, i);
    auto lines = vtkSmartPointer<vtkCellArray>::New();
    lines->SetData(offsetArray, connectivity);

    auto polyData = vtkSmartPointer<vtkPolyData>::New();
    polyData->SetPoints(points);
    polyData->SetLines(lines);
    auto space = vtkSmartPointer<vtkStringArray>::New();
    space->SetName("SPACE");
    space->InsertNextValue("LPS");
    polyData->GetFieldData()->AddArray(space);
    return polyData;
}
} // namespace itk
#endif
