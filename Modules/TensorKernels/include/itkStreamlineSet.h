/** itk::StreamlineSet: the streamlines a tractography run kept, as flat arrays a VTK
 * polyline cell array takes as they are. \file
 * \ingroup tk_group_tk_itk */
#ifndef itkStreamlineSet_h
#define itkStreamlineSet_h

#include <cstdint>
#include <vector>

#include "itkDataObject.h"
#include "itkObjectFactory.h"
#include "itkPoint.h"
#include "itkTensorKernelsMacro.h"

namespace itk
{
/** \class StreamlineSet
 * \brief Streamlines as one array of points and one of offsets (the layout of a VTK
 * vtkCellArray of polylines and of a TRX file), in ITK's physical space: LPS millimetres,
 * the frame of every ITK point (Image::TransformIndexToPhysicalPoint).
 *
 * Why not an itk::Mesh: ITK 5.2 (Debian's) has no PolyLineCell, and a Mesh of LineCells
 * costs a cell object and a cell-links entry per segment (millions per run), while these
 * two arrays are what the tracker hands out chunk by chunk and what VTK stores: a VTK user
 * builds a vtkPolyData from them in bulk copies (itkStreamlineSetToVTK.h, header-only, or
 * Documentation/tracking.md, "The ITK process object").  The module does not depend on VTK.
 *
 * Streamline s has the points Offsets[s] .. Offsets[s + 1] - 1; Points holds x, y, z of each
 * point (float, as the core computes them); SeedIndices[s] is the seed it grew from (the
 * core's seed numbering, tk_tracking.h).
 * \ingroup tk_group_tk_itk */
class StreamlineSet : public DataObject
{
public:
    itkTensorKernelsClassMacro(StreamlineSet, DataObject);
    itkNewMacro(Self);

    using PointType = Point<float, 3>;

    SizeValueType GetNumberOfStreamlines() const { return m_Offsets.size() - 1; }
    SizeValueType GetNumberOfPoints() const { return m_Points.size() / 3; }
    /** The points of streamline \p s. */
    SizeValueType GetNumberOfPoints(SizeValueType s) const { return m_Offsets[s + 1] - m_Offsets[s]; }
    /** Point \p i of streamline \p s, LPS mm. */
    PointType GetPoint(SizeValueType s, SizeValueType i) const
    {
        const float *p = &m_Points[3 * (m_Offsets[s] + i)];
        PointType out;
        out[0] = p[0], out[1] = p[1], out[2] = p[2];
        return out;
    }

    /** x, y, z of every point, LPS mm (3 x GetNumberOfPoints() floats). */
    const std::vector<float> &GetPoints() const { return m_Points; }
    /** GetNumberOfStreamlines() + 1 point offsets; the first is 0, the last the point count. */
    const std::vector<std::uint64_t> &GetOffsets() const { return m_Offsets; }
    const std::vector<std::uint64_t> &GetSeedIndices() const { return m_SeedIndices; }

    /** Appends \p n streamlines of \p counts points each, their points (3 floats each) taken as
     * they are and \p seeds their seed indices. */
    void Append(SizeValueType n, const std::size_t *counts, const std::uint64_t *seeds, const float *points)
    {
        std::uint64_t total = 0;
        for (SizeValueType s = 0; s < n; ++s) total += counts[s];
        m_Points.insert(m_Points.end(), points, points + 3 * total);
        for (SizeValueType s = 0; s < n; ++s) m_Offsets.push_back(m_Offsets.back() + counts[s]);
        m_SeedIndices.insert(m_SeedIndices.end(), seeds, seeds + n);
    }

    /** No streamline (what a run starts from). */
    void Initialize() override
    {
        Superclass::Initialize();
        m_Points.clear();
        m_Offsets.assign(1, 0);
        m_SeedIndices.clear();
    }

protected:
    StreamlineSet() = default;
    ~StreamlineSet() override = default;
    void PrintSelf(std::ostream &os, Indent indent) const override
    {
        Superclass::PrintSelf(os, indent);
        os << indent << "NumberOfStreamlines: " << GetNumberOfStreamlines() << '\n'
           << indent << "NumberOfPoints: " << GetNumberOfPoints() << '\n';
    }

private:
    std::vector<float> m_Points;
    std::vector<std::uint64_t> m_Offsets{0};
    std::vector<std::uint64_t> m_SeedIndices;
};
} // namespace itk
#endif
