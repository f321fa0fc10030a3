// Reading and writing SH and peak volumes the way MRtrix3 and DIPY store them: 4-D NIfTI
// or MRtrix3 .mif with the coefficients (or peak components) on the 4th axis, or 3-D vector
// images (NRRD, MHA).  One path per format:
//   NIfTI (.nii, .nii.gz): voxel data through ITK; the geometry from the header by the
//     NIfTI rule as nibabel and MRtrix3 apply it (nifti_header.h: the sform where
//     sform_code > 0, else the qform, else pixdim), not ITK's choice; written by
//     nifti_header.c, keeping the input's qform and sform with their codes;
//   MRtrix3 (.mif, .mif.gz; .mih read): mif_io.h, reading and writing;
//   NRRD (.nrrd, .nhdr) and MetaImage (.mha, .mhd): ITK.
// Every input is first recognised by its bytes, not its name, and validated whole, data
// included (tools/io/image_probe.h): ITK then reads only what was proven well-formed,
// with the reader of the format the bytes say.
// ITK reads 4-D images as 4-D scalar images; these convert to and from
// itk::VectorImage<float, 3>.  Geometry in ITK's images is LPS, as always.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "itkImage.h"
#include "itkVectorImage.h"
#include "nifti_header.h"
#include "tk_output_set.h"

namespace tk {

using VectorImage3 = itk::VectorImage<float, 3>;
using MaskImage3 = itk::Image<unsigned char, 3>;
using ScalarImage3 = itk::Image<float, 3>;

// Dimension and components per pixel from the header alone.
struct VolumeShape {
    unsigned dimensions, components;
};
VolumeShape probe_volume(const std::string &path);

// An ITK exception's description as one line for a tool's message: without ITK's
// "ITK ERROR: Class(0x...): " prefix, the first line and (for multi-line reports such as
// NRRD's) the innermost reason.
std::string itk_message(const itk::ExceptionObject &e);

// What a file's header says beyond ITK's origin, spacing and direction: a NIfTI input's
// header as read (both transforms, both codes, pixdim, units).  A NIfTI output of the same
// grid keeps them; other outputs (or another grid) get both transforms from the image's
// geometry with code 1 (scanner), as ITK and MRtrix3 write them.
struct FileGeometry {
    bool nifti = false;
    tk_nifti_header header{};
};

// Throws std::runtime_error naming the file and the problem (an image too large for this
// machine's memory is refused from its header, before any allocation).  geometry, where
// given, receives what the header said beyond ITK's geometry.
VectorImage3::Pointer read_vector_volume(const std::string &path, FileGeometry *geometry = nullptr);
MaskImage3::Pointer read_mask(const std::string &path);
ScalarImage3::Pointer read_scalar_volume(const std::string &path);

// What a vector volume's components are.  Values (SH coefficients, amplitudes, anything)
// are written as they are.  RasVectors (peaks: triples of world RAS vectors) are written in
// the frame each format declares: RAS for NIfTI and .mif (as sh2peaks writes them), LPS
// for NRRD (with "space: left-posterior-superior" and an identity "measurement frame", so
// that NRRD readers such as 3D Slicer get the same world directions) and MetaImage (ITK's
// LPS physical space).
enum class Components { Values, RasVectors };

// 4-D for NIfTI and .mif names (.nii, .nii.gz, .mif, .mif.gz), a vector image otherwise;
// written through an output set (tk_output_set.h): a private temporary beside path, every
// file's size checked (a full disk is an error even where ITK does not report it), then
// renamed, so a failure leaves nothing behind.  Returns the files written: path, and before
// it the data file of a detached header (.nhdr, .mhd).
std::vector<std::string> write_vector_volume(const VectorImage3 *image, const std::string &path,
                                             Components what = Components::Values,
                                             const FileGeometry *geometry = nullptr);
std::vector<std::string> write_scalar_volume(const ScalarImage3 *image, const std::string &path);

// The same into output idx of set (added by add_volume_output), for a tool whose outputs
// are committed together by tk_outset_commit.  Throw std::runtime_error naming the output.
void write_vector_volume(const VectorImage3 *image, tk_outset *set, int idx, Components what = Components::Values,
                         const FileGeometry *geometry = nullptr);
void write_scalar_volume(const ScalarImage3 *image, tk_outset *set, int idx);
// Registers the volume at path (with a detached header's data file) as an output of set:
// tk_outset_add's index, or minus an exit code after its message.
int add_volume_output(tk_outset *set, const char *flag, const std::string &path);

// A command writing one volume (tk-tucker complete, tk-pltf complete): its output set with
// the inputs (flag, path; empty paths skipped; a detached header's data file included) and
// the output, registered before any work.  0, or the exit code after the set's message.
struct VolumeOutput {
    std::unique_ptr<tk_outset, void (*)(tk_outset *)> set{nullptr, tk_outset_free};
    int idx = -1;
};
int register_volume_output(const char *prog, const std::vector<std::pair<const char *, std::string>> &inputs,
                           const char *flag, const std::string &output, VolumeOutput &out);

// A 4-D scalar image (e.g. a 4-D NIfTI) as it is, with its 4-D geometry (the 4th axis'
// spacing, such as a frame time, included); written atomically as above.
using ScalarImage4 = itk::Image<float, 4>;
ScalarImage4::Pointer read_scalar_image4(const std::string &path);
std::vector<std::string> write_scalar_image4(const ScalarImage4 *image, const std::string &path);
void write_scalar_image4(const ScalarImage4 *image, tk_outset *set, int idx);

// Before any work: "" when path ends in an extension the volume writers know (.nii,
// .nii.gz, .mif, .mif.gz, .nrrd, .nhdr, .mha, .mhd), else why not (naming path).
std::string volume_output_problem(const std::string &path);
// The extensions above, for messages: ".nii, .nii.gz, .mif, ...".
const char *volume_output_extensions();
// The files of a volume at path: path, and before it, for a detached header (.nhdr, .mhd,
// .hdr), the data file ITK writes beside it (the name without the extension, then .raw; .img
// for .hdr).  For
// telling, before any work, that two outputs (or an output and an input) share a file.
std::vector<std::string> volume_files(const std::string &path);
// Before any work: "" when a file can be created in path's folder now (one is created
// there and removed), else "PATH: cannot create: REASON".
std::string creation_problem(const std::string &path);

}  // namespace tk
