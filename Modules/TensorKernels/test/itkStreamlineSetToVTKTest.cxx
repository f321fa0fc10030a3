// itk::StreamlineSetToPolyData: a tracked set as VTK polylines, point for point, tagged LPS.
#include <gtest/gtest.h>

#include <vtkCellArray.h>
#include <vtkFieldData.h>
#include <vtkIdList.h>
#include <vtkStringArray.h>

#include "itkStreamlineSetToVTK.h"

TEST(StreamlineSetToPolyData, EachStreamlineIsOnePolylineOfItsPoints)
{
    // three streamlines of 2, 0 and 3 points (an empty one too: VTK keeps an empty cell)
    const size_t counts[3] = {2, 0, 3};
    const uint64_t seeds[3] = {4, 5, 9};
    const float points[15] = {0, 1, 2, 3, 4, 5, -1, -2, -3, 7.5f, 8.5f, 9.5f, 10, 11, 12};
    auto set = itk::StreamlineSet::New();
    set->Initialize();
    set->Append(2, counts, seeds, points);       // two appends, as chunks arrive
    set->Append(1, counts + 2, seeds + 2, points + 6);
    auto poly = itk::StreamlineSetToPolyData(set);
    ASSERT_EQ(poly->GetNumberOfPoints(), 5);
    ASSERT_EQ(poly->GetNumberOfLines(), 3);
    auto ids = vtkSmartPointer<vtkIdList>::New();
    size_t point = 0;
    for (vtkIdType c = 0; c < 3; ++c) {
        poly->GetLines()->GetCellAtId(c, ids);
        ASSERT_EQ(static_cast<size_t>(ids->GetNumberOfIds()), counts[c]);
        for (vtkIdType i = 0; i < ids->GetNumberOfIds(); ++i, ++point) {
            double p[3];
            poly->GetPoint(ids->GetId(i), p);
            for (int r = 0; r < 3; ++r) EXPECT_EQ(p[r], points[3 * point + r]) << "cell " << c << " point " << i;
        }
    }
    auto space = vtkStringArray::SafeDownCast(poly->GetFieldData()->GetAbstractArray("SPACE"));
    ASSERT_NE(space, nullptr);
    EXPECT_EQ(space->GetValue(0), "LPS");
    EXPECT_EQ(set->GetSeedIndices(), (std::vector<uint64_t>{4, 5, 9}));
}
